"""The hardware and model catalog: data tables validated once by pydantic row models.

Tables (units in column names; every row has `source` and `as_of`):
  accelerators.csv  one row per chip
  systems.csv       what is bought or rented: a node, a rack, a workstation, a cloud instance
  offers.csv        a system x acquisition mode x provider, with its price
  models.yaml       LLM architectures from their published configs

The bundled catalog is the default. A user catalog (a folder holding any of these files, or one
file) overrides rows by id and adds new ones.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.data.errors import InputError, Problem, printable

Stack = Literal["cuda", "rocm", "xla", "neuron", "gaudi", "metal"]
Acquisition = Literal["buy", "on-demand", "reserved-1y", "reserved-3y", "spot"]
ACQUISITIONS: tuple[str, ...] = ("buy", "on-demand", "reserved-1y", "reserved-3y", "spot")
PolicyAcquisition = Literal["buy", "on-demand", "reserved-1y", "reserved-3y", "spot", "api"]
"""What policy.acquisition may name: the catalog's modes and 'api' (hosted token-priced endpoints,
api_offers.csv)."""
Tier = Literal["hyperscaler", "gpu-cloud", "marketplace", "oem", "used", "quote"]
"""Provider tier: hyperscaler (AWS, GCP, Azure, OCI), gpu-cloud (Lambda, Nebius, CoreWeave, ...),
marketplace (third-party hosts: Vast, Akash, RunPod Community), oem (new hardware bought), used
(secondary market), quote (an offer you hold; the default for offers without a tier)."""
REGION_PATTERN = r"^(global|[a-z]{2})$"
"""A region: 'global' (capacity in several regions) or a two-letter code: us, eu, uk, cn, jp, in, ..."""


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$", description="unique id: lower-case letters, digits, . and -")
    source: str = Field(min_length=3, description="where the numbers come from: a URL, a document, a quote")
    as_of: dt.date = Field(description="date the numbers were read, YYYY-MM-DD")


class Accelerator(Row):
    name: str
    vendor: str
    memory_gb: float = Field(gt=0, le=100_000)
    mem_bw_tbps: float = Field(gt=0, le=10_000)
    bf16_tflops: Optional[float] = Field(default=None, gt=0, le=1e7)
    fp8_tflops: Optional[float] = Field(default=None, gt=0, le=1e7)
    fp4_tflops: Optional[float] = Field(default=None, gt=0, le=1e7)
    int8_tops: Optional[float] = Field(default=None, gt=0, le=1e7)
    tdp_w: Optional[float] = Field(default=None, gt=0, le=1e6)
    scaleup_kind: str
    scaleup_gbps: float = Field(gt=0, le=1e6, description="scale-up bandwidth per accelerator per direction, GB/s")
    scaleup_domain: int = Field(ge=1, le=1_000_000)
    stack: Stack
    cooling: Literal["air", "liquid"]
    form_factor: str
    mamf_bf16_fraction: Optional[float] = Field(default=None, gt=0, le=1)

    def peak_tflops(self, precision: str) -> float:
        """Dense peak for matmuls in `precision`, falling back to the next wider format."""
        order = {"fp4": ["fp4", "fp8", "bf16"], "int4": ["fp8", "bf16"], "nf4": ["bf16"],
                 "fp8": ["fp8", "bf16"], "int8": ["int8", "fp8", "bf16"], "bf16": ["bf16"]}
        for p in order.get(precision, ["bf16"]):
            value = self.int8_tops if p == "int8" else getattr(self, f"{p}_tflops")
            if value:
                return value
        return self.bf16_tflops or self.fp8_tflops or self.fp4_tflops or 1.0


class System(Row):
    name: str
    accelerator: str
    accelerators: int = Field(ge=1, le=100_000, description="accelerators per system (an NVL72 rack: 72)")
    scaleup_domain: int = Field(ge=1, le=100_000, description="accelerators one tensor-parallel group may span")
    power_kw: float = Field(gt=0, le=100_000, description="whole system at full load, host included")
    cooling: Literal["air", "liquid"]
    kind: Literal["server", "rack", "workstation", "edge", "cloud-instance", "tpu-slice"]
    scaleout_gbps: Optional[float] = Field(default=None, gt=0, le=1e5, description=(
        "scale-out network (NICs to other systems) per accelerator per direction, GB/s; empty: not "
        "known (no KV transfer between systems is modelled for it)"))


UNQUOTED = ("ESTIMATE", "ASSUMPTION")
"""the words, in capitals, a row's source carries where no public price stands behind its price: at its
start ('ESTIMATE: ...') or where the price is worked out ('derived: 8 x $17k MI325X (ASSUMPTION: ...)');
a lower-case '(estimate: ...)' qualifies something else, such as max_systems"""
_UNQUOTED = re.compile(r"\b(?:" + "|".join(UNQUOTED) + r")\b")


def unquoted_kind(source: str | None) -> str | None:
    """'estimate' or 'assumption': the first UNQUOTED word of a source (at its start in any case); None if neither."""
    m = re.match(r"(?:" + "|".join(UNQUOTED) + r")\b", str(source or "").upper()) or _UNQUOTED.search(str(source or ""))
    return m.group(0).lower() if m else None


def unquoted(source: str | None) -> bool:
    """A price whose source says it is a catalog estimate or assumption, not a published price (an expert
    review: a plan buying MI325X nodes on an assumed price said nothing, the source beginning 'derived:')."""
    return unquoted_kind(source) is not None


class Offer(Row):
    system: str = Field(description="what one unit of the offer is: a system id from `plan catalog systems`")
    acquisition: Acquisition = Field(description="buy, on-demand, reserved-1y, reserved-3y or spot")
    provider: str = Field(description="who sells it (the names in `plan catalog providers`)")
    region: str = Field("global", pattern=REGION_PATTERN, description="where the capacity sits: us, eu, uk, "
                        "cn, jp, in, ... or global")
    tier: Tier = Field("quote", description="provider tier (see Tier)")
    price_usd_per_hour: Optional[float] = Field(default=None, gt=0, le=1e6, description="per system-hour")
    purchase_usd: Optional[float] = Field(default=None, ge=0, le=1e10, description=(
        "per system (0: a system already held, the scenario's owned)"))
    useful_life_years: Optional[float] = Field(default=None, ge=0.5, le=50, description=(
        "depreciation life of a purchase, years (buy offers)"))
    max_systems: Optional[int] = Field(default=None, ge=0, le=10_000_000, description=(
        "most systems available (None: policy.max_systems_per_offer)"))
    payment: Literal["monthly", "upfront"] = Field("monthly", description=(
        "how a reservation is paid: monthly (its fees each year of the term, the default) or upfront (the "
        "whole term's fees when it starts: the rate of an all-upfront savings plan assumes it)"))


class ApiOffer(Row):
    """A hosted, token-priced endpoint serving one catalog model (id = {model}-api-{provider})."""

    model: str
    provider: str
    region: str = Field("global", pattern=REGION_PATTERN)
    usd_per_m_input_tokens: float = Field(ge=0, le=1e4, description="USD per million prompt tokens")
    usd_per_m_output_tokens: float = Field(ge=0, le=1e4, description="USD per million generated tokens")
    max_tokens_per_minute: Optional[float] = Field(default=None, gt=0, le=1e12,
                                                   description="rate limit, input + output tokens per minute")
    max_input_tokens_per_minute: Optional[float] = Field(default=None, gt=0, le=1e12, description=(
        "rate limit on prompt tokens not served from the provider's cache, per minute"))
    max_output_tokens_per_minute: Optional[float] = Field(default=None, gt=0, le=1e12, description=(
        "rate limit on generated tokens per minute"))
    max_requests_per_minute: Optional[float] = Field(default=None, gt=0, le=1e12, description=(
        "rate limit on requests per minute"))

    def limits(self) -> list[tuple[str, float]]:
        """(what, per minute) of each rate limit the provider publishes for this endpoint."""
        named = (("tokens", self.max_tokens_per_minute), ("input tokens", self.max_input_tokens_per_minute),
                 ("output tokens", self.max_output_tokens_per_minute), ("requests", self.max_requests_per_minute))
        return [(what, limit) for what, limit in named if limit is not None]


class Model(Row):
    name: str = Field(description="display name")
    family: str = Field(description="architecture family (llama, qwen2, deepseek-v3, gpt-oss, ...): it decides "
                                    "which projections carry biases")
    params_b: float = Field(gt=0, le=1e6, description=(
        "total parameters, billions, as the model card states (checked against the architecture)"))
    active_params_b: float = Field(gt=0, le=1e6, description=(
        "parameters one token uses, billions (an MoE's active parameters; params_b for a dense model)"))
    layers: int = Field(ge=1, le=10_000, description="transformer layers (config.json num_hidden_layers)")
    hidden_size: int = Field(ge=1, le=1_000_000, description="model width (hidden_size)")
    attention_heads: int = Field(ge=1, le=100_000, description="query heads (num_attention_heads)")
    kv_heads: int = Field(ge=1, le=100_000, description="key/value heads (num_key_value_heads)")
    head_dim: int = Field(ge=1, le=100_000, description="dimension of one attention head (head_dim)")
    ffn_size: int = Field(ge=1, le=10_000_000, description="dense MLP intermediate size")
    vocab_size: int = Field(ge=1, le=100_000_000, description="vocabulary size, tokens (vocab_size)")
    tied_embeddings: bool = Field(False, description="the lm head reuses the input embedding (tie_word_embeddings)")
    attention: Literal["mha", "gqa", "mla"] = Field("gqa", description=(
        "mha, gqa, or mla (DeepSeek's latent attention, which needs the MLA ranks below)"))
    experts: int = Field(default=0, ge=0, le=100_000, description="routed experts per MoE layer (0: a dense model)")
    experts_per_token: int = Field(default=0, ge=0, description="routed experts each token uses (num_experts_per_tok)")
    shared_experts: int = Field(default=0, ge=0, description="always-used shared experts per MoE layer")
    moe_ffn_size: Optional[int] = Field(default=None, ge=1, description="MLP width of one expert")
    dense_layers: int = Field(default=0, ge=0, description="leading layers with a dense MLP in an MoE")
    kv_lora_rank: Optional[int] = Field(default=None, ge=1, description="MLA: rank of the compressed KV latent")
    q_lora_rank: Optional[int] = Field(default=None, ge=1, description="MLA: query latent rank (None: full-rank)")
    rope_head_dim: Optional[int] = Field(default=None, ge=1, description="MLA: rotary dims per head (qk_rope_head_dim)")
    qk_nope_head_dim: Optional[int] = Field(default=None, ge=1, description="MLA: non-rotary dims per query/key head")
    v_head_dim: Optional[int] = Field(default=None, ge=1, description="MLA: dims per value head (v_head_dim)")
    sliding_window: Optional[int] = Field(default=None, ge=1, description="tokens, local layers")
    sliding_window_layers: int = Field(default=0, ge=0, description="layers with sliding-window attention")
    max_context_tokens: Optional[int] = Field(default=None, ge=1, description=(
        "longest context the model supports, tokens (max_position_embeddings)"))
    native_precision: str = Field("bf16", description="precision the weights are published in")
    checkpoints: tuple[str, ...] = Field((), description=(
        "Hugging Face repos of this exact architecture (base, instruct, ...), which a scenario may name "
        "instead of the id (data.checkpoints)"))

    @model_validator(mode="after")
    def _computable(self):
        """An architecture the physics can compute with: no more experts per token than experts, and
        an MLA model's latent ranks."""
        if self.experts_per_token > max(self.experts, 1):
            raise ValueError(f"experts_per_token ({self.experts_per_token}) exceeds experts ({self.experts}); "
                             "set it to at most experts")
        if self.attention == "mla":
            missing = [k for k in ("kv_lora_rank", "rope_head_dim", "qk_nope_head_dim", "v_head_dim")
                       if getattr(self, k) is None]
            if missing:
                raise ValueError(f"attention 'mla' needs {', '.join(missing)} (from the model's config.json)")
        return self

    @property
    def is_moe(self) -> bool:
        return self.experts > 0


TABLES: dict[str, type[Row]] = {
    "accelerators": Accelerator,
    "systems": System,
    "offers": Offer,
    "models": Model,
    "api_offers": ApiOffer,
}


@dataclass
class Catalog:
    accelerators: dict[str, Accelerator] = field(default_factory=dict)
    systems: dict[str, System] = field(default_factory=dict)
    offers: dict[str, Offer] = field(default_factory=dict)
    models: dict[str, Model] = field(default_factory=dict)
    api_offers: dict[str, ApiOffer] = field(default_factory=dict)

    def table(self, name: str) -> dict[str, Row]:
        return getattr(self, name)

    def accelerator_of(self, system_id: str) -> Accelerator:
        return self.accelerators[self.systems[system_id].accelerator]

    def best_scaleout_gbps(self, accelerator_id: str) -> float | None:
        """The scale-out network (GB/s per accelerator) of the best-networked system of an
        accelerator, where one is given (systems.scaleout_gbps); None otherwise."""
        nets = [sy.scaleout_gbps for sy in self.systems.values() if sy.accelerator == accelerator_id and sy.scaleout_gbps]
        return max(nets) if nets else None

    def offers_for(self, system_id: str) -> list[Offer]:
        return [o for o in self.offers.values() if o.system == system_id]

    def check_references(self) -> list[Problem]:
        problems = []
        for s in self.systems.values():
            if s.accelerator not in self.accelerators:
                problems.append(Problem(f"system '{s.id}' names unknown accelerator '{s.accelerator}'",
                                        "systems", "add the accelerator row or fix the id"))
            elif s.scaleup_domain > s.accelerators and s.kind != "rack":
                problems.append(Problem(f"system '{s.id}' has a scale-up domain of {s.scaleup_domain} "
                                        f"but only {s.accelerators} accelerators", "systems",
                                        "make scaleup_domain at most accelerators"))
        for o in self.offers.values():
            if o.system not in self.systems:
                problems.append(Problem(f"offer '{o.id}' names unknown system '{o.system}'", "offers",
                                        "add the system row or fix the id"))
            if o.acquisition == "buy" and (o.purchase_usd is None or o.useful_life_years is None):
                problems.append(Problem(f"offer '{o.id}' buys but lacks purchase_usd or useful_life_years",
                                        "offers", "fill both columns for a purchase"))
            if o.acquisition != "buy" and o.price_usd_per_hour is None:
                problems.append(Problem(f"offer '{o.id}' rents but lacks price_usd_per_hour", "offers",
                                        "fill price_usd_per_hour (per system-hour)"))
        for a in self.api_offers.values():
            if a.model not in self.models:
                problems.append(Problem(f"API offer '{a.id}' names unknown model '{a.model}'", "api_offers",
                                        "add the model to models.yaml or fix the id"))
        return problems


def bundled_dir() -> Path:
    """The catalog shipped in the wheel (planner/_catalog) or, in a checkout, ../catalog."""
    here = Path(__file__).resolve().parent.parent  # planner/
    for candidate in (here / "_catalog", here.parent / "catalog"):
        if (candidate / "accelerators.csv").exists():
            return candidate
    raise InputError(Problem("the bundled catalog is missing", str(here),
                             "reinstall the package: pip install --force-reinstall ."))


def _read_rows(path: Path) -> list[dict]:
    """Rows of one catalog file, read with the scenario's guards (size, binary data, UTF-8, and for
    YAML duplicate keys, depth and alias expansion)."""
    from planner.data.yamlio import load_yaml, read_text

    try:
        text = read_text(path, "catalog file")
    except OSError as exc:
        raise InputError(Problem(f"cannot read catalog file: {exc}", str(path), "check the path"))
    if path.suffix == ".csv":
        reader = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
        rows = []
        try:
            for row in reader:
                if None in row:
                    raise InputError(Problem(f"row {reader.line_num} has more cells than the header",
                                             str(path), "quote cells that contain commas"))
                rows.append({k.strip(): v.strip() for k, v in row.items() if v is not None and v.strip() != ""})
        except csv.Error as exc:
            raise InputError(Problem(f"malformed CSV at row {reader.line_num}: {exc}", str(path),
                                     "check the quoting on that row"))
        header = [h.strip() for h in reader.fieldnames or ()]
        if "id" not in header:  # (a file whose first line is a row: DictReader takes it for the header)
            raise InputError(Problem("the first line is not a header naming the columns (no 'id' column)" if header
                                     else "the file holds no header and no rows", str(path),
                                     f"start it with the bundled table's header line (plan catalog {path.stem.split('-')[0]}"
                                     " --format csv | head -1), then one row per line"))
        if not rows:
            raise InputError(Problem("the file holds a header but no rows", str(path),
                                     "add the rows to override, or leave the file out"))
        return rows
    data, _ = load_yaml(text, str(path))
    if not isinstance(data, list):
        raise InputError(Problem("expected a list of rows", str(path), "write one '- id: ...' entry per row"))
    return data


def _validate_rows(kind: str, rows: list[dict], path: Path) -> dict[str, Row]:
    model = TABLES[kind]
    out: dict[str, Row] = {}
    problems = []
    for i, raw in enumerate(rows):
        if not isinstance(raw, dict):
            problems.append(Problem("row is not a mapping", f"{path} row {i + 1}"))
            continue
        try:
            row = model.model_validate(raw)
        except ValidationError as exc:
            rid = printable(str(raw.get("id", f"row {i + 1}")), 60)
            for err in exc.errors():  # a column name is shown short and escaped: never a file's content
                loc = printable(".".join(str(x) for x in err["loc"]), 40)
                problems.append(Problem(f"{loc}: {err['msg']}", f"{path} [{rid}]",
                                        "see the column descriptions in the bundled catalog"))
            continue
        if row.id in out:
            problems.append(Problem(f"duplicate id '{row.id}'", str(path), "ids must be unique in a file"))
        out[row.id] = row
    if problems:
        raise InputError(problems)
    return out


def _files_in(path: Path) -> dict[str, Path]:
    names = "accelerators.csv, systems.csv, offers.csv, api_offers.csv or models.yaml"
    if path.is_dir():
        found = {}
        for kind in TABLES:
            for ext in (".csv", ".yaml", ".yml"):
                if (path / f"{kind}{ext}").exists():
                    found[kind] = path / f"{kind}{ext}"
        if not found:
            raise InputError(Problem("the catalog folder holds no catalog table", str(path),
                                     f"put {names} in it, or name one such file"))
        return found
    for kind in TABLES:  # only a table's own name and suffix: never read an arbitrary file
        if path.stem.startswith(kind) and path.suffix.lower() in (".csv", ".yaml", ".yml"):
            return {kind: path}
    raise InputError(Problem("cannot tell which catalog table this file holds", str(path),
                             f"name it {names} (a name starting with the table's, e.g. offers-2026.csv)"))


def _load(path: Path) -> dict[str, dict[str, Row]]:
    if not path.exists():
        raise InputError(Problem("catalog path does not exist", str(path), "check the --catalog path"))
    return {kind: _validate_rows(kind, _read_rows(p), p) for kind, p in _files_in(path).items()}


@lru_cache(maxsize=8)
def _load_cached(path: str) -> dict[str, dict[str, Row]]:
    return _load(Path(path))


def load_catalog(*overrides: str | Path) -> Catalog:
    """The bundled catalog with each override (folder or file) applied in order, by id."""
    cat = Catalog()
    for kind, rows in _load_cached(str(bundled_dir())).items():
        cat.table(kind).update(rows)
    for path in overrides:
        for kind, rows in _load_cached(str(Path(path).resolve())).items():
            cat.table(kind).update(rows)
    problems = cat.check_references()
    if problems:
        raise InputError(problems, source="catalog")
    return cat


OWNED_PROVIDER = "owned"
"""the provider of the offers a scenario's `owned` systems become (held_offer)"""


def held_offer(system: str, count: int, as_of: dt.date) -> Offer:
    """The offer of `count` systems of `system` already held: bought at no price (their capital is
    sunk), never more than `count`; as of the catalog's newest price (`as_of`)."""
    return Offer(id=f"{system}-{OWNED_PROVIDER}", system=system, acquisition="buy", provider=OWNED_PROVIDER,
                 region="global", tier="quote", purchase_usd=0.0, useful_life_years=5.0, max_systems=count,
                 source="the scenario's owned systems: hardware already held (no purchase price, no resale)",
                 as_of=as_of)


def is_held(o: Offer) -> bool:
    """An offer of systems already held (the scenario's owned): policy filters on acquisition,
    provider, region, tier and cooling do not apply to it."""
    return o.provider == OWNED_PROVIDER and o.acquisition == "buy" and o.purchase_usd == 0
