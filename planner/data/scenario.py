"""The scenario file: pydantic models, strict (unknown keys are errors, with "did you mean").

A scenario is global settings (horizon, site, policy, budget, solver) and a list of jobs, each one of five
stages: serve, finetune, pretrain, rl, edge. Each field documents its default; see `plan schema`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Optional, Union

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from planner.data.catalog import REGION_PATTERN, Model, Offer, PolicyAcquisition, Tier
from planner.data.errors import InputError, Problem
from planner.data.scenario_parts import (  # noqa: F401  (re-exported: the scenario's parts)
    Budget,
    HardwareTrend,
    OwnedSystems,
    PriceOverride,
    Solver,
    Strict,
    YearBudget,
)
from planner.data.scenario_words import NAME_PATTERN, line_for, problem
from planner.data.yamlio import Lines, load_yaml, read_text

ServePrecision = Literal["bf16", "fp8", "int8", "int4", "fp4"]
KVPrecision = Literal["bf16", "fp8", "int8"]
Positive = Annotated[float, Field(gt=0, le=1e6)]


class Site(Strict):
    ownership: Literal["on-prem", "colo", "cloud", "hybrid"] = Field(
        "cloud", description="where owned hardware would live; 'cloud' still allows buying if policy does, the "
                             "systems bought then hosted in a colocation facility at hosting_usd_per_kw_year")
    power_usd_per_kwh: float = Field(0.12, ge=0, le=10, description="electricity price, USD per kWh")
    pue: float = Field(1.3, ge=1, le=5, description="power usage effectiveness of the site")
    kind: Literal["datacenter", "office"] = Field(
        "datacenter", description="'datacenter' buys rack servers only (GeForce and workstation "
                                  "licences and form factors do not belong there); 'office' also buys workstations")
    cooling: Literal["air", "liquid"] = Field(
        "liquid", description="'air' excludes liquid-cooled systems; 'liquid' allows both")
    power_cap_kw: Optional[float] = Field(None, gt=0, le=1e7, description="IT power available to owned systems, kW")
    hosting_usd_per_kw_year: float = Field(
        1800, ge=0, le=1e6, description="space, cooling and networking per kW of owned IT load per year "
                                "(colocation list prices run about $150/kW-month, the default whatever the "
                                "ownership: an on-prem site's own facility costs per kW go here)")
    region: str = Field("us", pattern=REGION_PATTERN, description=(
        "where the site and its users are: us, eu, uk, cn, jp, in, ...; policy.regions defaults to it and 'global'"))
    ops_usd_per_system_year: float = Field(1258, ge=0, le=1e7, description=(
        "operations staff per owned system per year, USD: 1 FTE per 100 GPU systems at $125,840 loaded "
        "(BLS OEWS May 2024 median sysadmin pay $96,800 x 1.3; ratio an estimate between 1 per 20 and 1 per "
        "1,000 servers, economics.md s4 D10); support and spares are support_fraction_per_year, space hosting"))
    support_fraction_per_year: float = Field(
        0.08, ge=0, le=1, description="vendor support and spares per year, as a share of purchase price")


class Policy(Strict):
    acquisition: list[PolicyAcquisition] = Field(
        default_factory=lambda: ["buy", "on-demand", "reserved-1y", "reserved-3y"],
        description="acquisition modes the plan may use; 'api' allows hosted token-priced endpoints (api_offers.csv)")
    regions: Optional[list[Annotated[str, Field(pattern=REGION_PATTERN)]]] = Field(
        None, description="regions offers may come from (None: the site's region and 'global')")
    provider_tiers: Optional[list[Tier]] = Field(
        None, description="provider tiers every job may use (None: any tier, except that serving jobs that are "
                          "latency_critical or under n+1 redundancy never use marketplace offers)")
    cost_per_system_type_usd_year: float = Field(
        0, ge=0, le=1e8, description="fleet complexity: USD per year for each distinct system type in the fleet "
                                     "(images, drivers, spares, runbooks per type)")
    providers: Optional[list[str]] = Field(None, description="only these providers (None: any)")
    exclude_providers: list[str] = Field(default_factory=list, description=(
        "providers never to use (names from `plan catalog providers`)"))
    accelerators: Optional[list[str]] = Field(None, description="only these accelerator ids (None: any)")
    exclude_accelerators: list[str] = Field(default_factory=list, description="accelerator ids never to use")
    export_licences: list[str] = Field(default_factory=list, description=(
        "accelerator ids the buyer holds a US export licence for: a site in China (site.region cn, mo) may buy "
        "them (options/export.py)"))
    stacks: Optional[list[Literal["cuda", "rocm", "xla", "neuron", "gaudi", "metal"]]] = Field(
        None, description="software stacks the team can run (None: any)")
    redundancy: Literal["none", "n+1"] = Field(
        "none", description=("n+1: every serving job still meets demand with any one system down: one idle "
                             "system per pool (a system type at your site, owned and bought together, or at one "
                             "provider's region; a job's rentals of one offer)"))
    spot_for_serving: bool = Field(False, description="allow interruptible spot capacity for serving")
    discount_rate: float = Field(0.08, ge=0, le=1, description="for annuitising purchases (0, or at least "
                                                               "1e-6: a smaller rate is 0 in the arithmetic)")
    max_systems_per_offer: int = Field(512, ge=1, le=1_000_000, description="upper bound per offer when none is listed")
    end_of_horizon: Literal["sell", "keep"] = Field("sell", description=(
        "bought systems still within their useful life when the horizon ends: sell (the default: credited with "
        "what a broker sale realises, 0.61 x the used market's price) or keep (the service goes on: credited "
        "with the used market's price itself, 0.72^age of the purchase, no sale's discount); a system "
        "retired at the end of its life is sold either way"))
    pool_jobs: bool = Field(True, description="serve jobs (and request_mix buckets) of one model, precision, KV "
                            "precision, engine, hours/day and latency_critical share replicas, split by load, and "
                            "serve jobs running the same hours a day share systems rented by the hour (and their "
                            "N+1 spare); false: whole replicas and rented systems per job")

    @model_validator(mode="after")
    def _rate_computable(self):
        if 0 < self.discount_rate < 1e-6:
            raise ValueError(f"discount_rate {self.discount_rate:g} is too small to compute with; "
                             "use 0 (no discounting) or at least 1e-6")
        return self


class JobBase(Strict):
    name: str = Field(min_length=1, max_length=80, pattern=NAME_PATTERN,
                      description="the job's name, unique in the scenario (letters, digits, space, _ . -)")
    model: str = Field(description="model id from `plan catalog models` or from this file's models: list")
    priority: float = Field(1.0, gt=0, le=1e6, description=(
        "weight in max-coverage mode, on the share of the job's demand left unserved (not on its users: "
        "10% of a 200-user job weighs as 10% of a 100-user one at the same priority)"))
    growth_per_year: float = Field(0.0, ge=-0.9, le=10, description="demand growth per year, fraction")
    demand_multipliers: Optional[list[Positive]] = Field(None, description="per-year demand factors")


class RequestBucket(Strict):
    """One request size of a serve job's traffic: its share of the requests."""
    input_tokens: int = Field(ge=1, le=10_000_000, description="prompt tokens per request (not already cached)")
    output_tokens: int = Field(ge=1, le=1_000_000, description="generated tokens per request")
    share: float = Field(1.0, gt=0, le=1, description="fraction of the job's requests of this size")


class ServeJob(JobBase):
    stage: Literal["serve"] = Field(description="serve: an LLM answering concurrent users")
    precision: ServePrecision = Field("bf16", description=(
        "weight precision: bf16, fp8, int8, int4 or fp4; unset, the model's as published (a checkpoint name's -FP8, "
        "-AWQ, ... suffix, else the catalog's native_precision; bf16 for most models), said in a note"))
    kv_precision: Optional[KVPrecision] = Field(None, description="default: fp8 if precision is fp8 or fp4, else bf16")
    context_tokens: int = Field(4096, ge=1, le=10_000_000, description=(
        "KV held per concurrent user, tokens (a conversation's history); default 4,096, or one request's "
        "input + output tokens where that is more"))
    input_tokens: Optional[int] = Field(None, ge=1, description="prompt tokens per request that are not "
                                       "already cached (default: an eighth of the context, "
                                       "a chat turn with some retrieved text)")
    output_tokens: int = Field(512, ge=1, le=1_000_000, description="tokens generated per request")
    history_tokens: int = Field(0, ge=0, le=10_000_000, description=(
        "a conversation's earlier turns sent with each request, tokens: a self-hosted replica keeps them in its "
        "prefix cache (context_tokens holds them), a hosted API bills them again on every turn"))
    concurrent_users: Optional[int] = Field(None, ge=1, le=100_000_000, description=(
        "users generating at the same time at the daily peak: the demand the fleet is sized for (or requests_per_s)"))
    requests_per_s: Optional[float] = Field(None, gt=0, le=1e7, description=(
        "peak requests per second (or concurrent_users); by Little's law per request_mix bucket: users = ceil("
        "requests_per_s x share x (max_ttft_s, 0 if unset, + output_tokens / min_tokens_per_s_per_user))"))
    request_mix: Optional[list[RequestBucket]] = Field(None, min_length=1, max_length=64, description=(
        "request sizes with their shares of requests (summing to 1), each served as its own part"))
    min_tokens_per_s_per_user: float = Field(10.0, gt=0, le=100_000, description=(
        "speed every user must see while generating, output tokens per second per user"))
    max_tpot_ms: Optional[float] = Field(None, gt=0, le=1e6, description=(
        "longest time per output token while generating, ms (TPOT, inter-token latency): the same target "
        "as min_tokens_per_s_per_user = 1000 / max_tpot_ms; give one of the two"))
    max_ttft_s: Optional[float] = Field(None, gt=0, le=3600, description=(
        "longest time to first token at full load, seconds (None: no limit)"))
    hours_per_day: float = Field(24.0, gt=0, le=24, description=(
        "hours per day the service runs, h; owned accelerators fine-tune in the other hours"))
    active_fraction: float = Field(1.0, gt=0, le=1, description=(
        "share of the hours_per_day the users are actually generating (an internal tool: 0.1); yearly tokens "
        "and token-priced API costs scale with it, sizing still meets the peak of concurrent_users"))
    latency_critical: bool = Field(False, description="never on spot; no shared hours")
    engine: Optional[Literal["vllm", "sglang", "trtllm"]] = Field(
        None, description="serving engine, if fixed: its prefill scheduling and step overhead (default: vLLM's "
                    "scheduling at a tuned stack's step overhead, TensorRT-LLM's; set vllm for stock vLLM's)")

    @model_validator(mode="after")
    def _tpot(self):
        """max_tpot_ms is min_tokens_per_s_per_user written as a latency: 1000 / max_tpot_ms tok/s."""
        if self.max_tpot_ms is None:
            return self
        if "min_tokens_per_s_per_user" in self.model_fields_set:
            raise ValueError("give either min_tokens_per_s_per_user or max_tpot_ms (the same target: "
                             f"{self.max_tpot_ms:g} ms per token is {1000 / self.max_tpot_ms:.4g} tok/s per user), not both")
        given = set(self.model_fields_set)
        self.min_tokens_per_s_per_user = 1000.0 / self.max_tpot_ms
        self.__pydantic_fields_set__ = given  # (derived: the user wrote max_tpot_ms)
        return self

    @model_validator(mode="after")
    def _traffic(self):
        """One of concurrent_users / requests_per_s; a mix's shares sum to 1, its sizes distinct."""
        mix, total = self.request_mix or [], sum(b.share for b in self.request_mix or [])
        problem = ("give either concurrent_users or requests_per_s (peak), not both or neither"
                   if (self.concurrent_users is None) == (self.requests_per_s is None) else
                   f"request_mix shares sum to {total:g}; they must sum to 1" if mix and abs(total - 1) > 1e-6 else
                   "request_mix lists one request size twice; merge the entries (add their shares)"
                   if len({(b.input_tokens, b.output_tokens) for b in mix}) < len(mix) else
                   "give request sizes either as input_tokens/output_tokens or as request_mix"
                   if mix and {"input_tokens", "output_tokens"} & self.model_fields_set else "")
        if problem:
            raise ValueError(problem)
        if mix:  # derived values stay unset: each bucket reserves its own KV unless context_tokens is given
            given = set(self.model_fields_set)
            if "context_tokens" not in given:
                self.context_tokens = max(b.input_tokens + b.output_tokens for b in mix)
            self.input_tokens = round(sum(b.share * b.input_tokens for b in mix))
            self.output_tokens = max(1, round(sum(b.share * b.output_tokens for b in mix)))
            self.__pydantic_fields_set__ &= given
        return self

    @model_validator(mode="after")
    def _tokens(self):
        if self.kv_precision is None:
            self.kv_precision = "fp8" if self.precision in ("fp8", "fp4") else "bf16"
        if self.input_tokens is None:  # (a default: the field stays unset, as context_tokens's below)
            object.__setattr__(self, "input_tokens", max(1, self.context_tokens // 8))
        elif ("context_tokens" not in self.model_fields_set
              and self.history_tokens + self.input_tokens + self.output_tokens > self.context_tokens):
            # sizes given, context not: the KV holds one request and the history before it (a 12,000-token
            # prompt was refused against the 4,096 default, and 6,000 were warned about at plan time only);
            # the field stays unset
            object.__setattr__(self, "context_tokens", self.history_tokens + self.input_tokens + self.output_tokens)
        if self.input_tokens + self.output_tokens > self.context_tokens * 2:
            raise ValueError(f"input_tokens + output_tokens ({self.input_tokens + self.output_tokens}) "
                             f"far exceed context_tokens ({self.context_tokens}); raise context_tokens")
        return self


class FinetuneJob(JobBase):
    stage: Literal["finetune"] = Field(description="finetune: adapt a model on your data, some runs per year")
    method: Literal["full", "lora", "qlora"] = Field("lora", description=(
        "full (every weight), lora (adapters on a bf16 base) or qlora (adapters on an NF4 base)"))
    dataset_tokens: float = Field(ge=1, le=1e15, description="tokens in one epoch of the training set")
    epochs: float = Field(1.0, gt=0, le=1000, description="passes over the dataset per run")
    runs_per_year: float = Field(1.0, gt=0, le=10_000, description="fine-tune runs per year")
    max_hours_per_run: float = Field(72.0, gt=0, le=24 * 365, description="deadline of one run, wall-clock hours")
    sequence_tokens: int = Field(2048, ge=128, le=1_000_000, description="training sequence length, tokens")
    lora_rank: int = Field(16, ge=1, le=4096, description="LoRA rank of the adapters (lora and qlora)")
    precision: Literal["bf16", "fp8"] = Field("bf16", description=(
        "training compute precision: bf16, or fp8 (Transformer Engine recipes, as NVIDIA's MLPerf Llama 2 70B "
        "LoRA runs; an accelerator without FP8 matmuls runs it in bf16); qlora computes in bf16"))

    @model_validator(mode="after")
    def _qlora_bf16(self):
        if self.method == "qlora" and self.precision != "bf16":
            raise ValueError("qlora computes in bf16 over its NF4 base; set precision: bf16, or method: lora for fp8")
        return self


class PretrainJob(JobBase):
    stage: Literal["pretrain"] = Field(description="pretrain: train a model from scratch within a deadline")
    training_tokens: float = Field(ge=1, le=1e16, description="tokens one run trains on")
    max_days: float = Field(90.0, gt=0, le=3650, description="deadline of one run, days")
    runs_per_year: float = Field(1.0, gt=0, le=100, description="pretraining runs per year")
    precision: Literal["bf16", "fp8"] = Field("bf16", description="training compute precision: bf16 or fp8")
    sequence_tokens: int = Field(8192, ge=128, le=1_000_000, description="training sequence length, tokens")


class RLJob(JobBase):
    stage: Literal["rl"] = Field(description="rl: reinforcement learning, rollout replicas feeding trainers")
    method: Literal["full", "lora"] = Field("full", description="the trainer updates every weight (full) or "
                                                             "LoRA adapters (lora)")
    rollout_tokens_per_s: float = Field(gt=0, le=1e9, description="generated tokens per second, all rollouts")
    rollout_context_tokens: int = Field(16384, ge=1, le=10_000_000, description=(
        "context of one rollout, prompt and generated tokens"))
    min_tokens_per_s_per_rollout: float = Field(20.0, ge=0.1, le=100_000, description=(
        "speed every rollout must generate at, tokens per second"))
    rollout_prompt_tokens: int = Field(2048, ge=1, le=10_000_000, description=(
        "longest prompt of a rollout in tokens; a rollout's prompt is a quarter of its context up to this"))
    trainer_sequence_tokens: int = Field(8192, ge=128, le=1_000_000, description=(
        "sequence length of the trainer's steps, tokens (default: rollout_context_tokens, what a rollout holds)"))
    lora_rank: int = Field(16, ge=1, le=4096, description="LoRA rank of the trainer when method is lora")
    precision: ServePrecision = Field("bf16", description=(
        "weight precision of the rollout replicas; unset, the model's as published (see a serve job's precision)"))
    trainer_precision: Literal["bf16", "fp8"] = Field("bf16", description=(
        "the trainer's compute precision: bf16, or fp8 (an accelerator without FP8 matmuls runs it in bf16)"))
    train_tokens_per_day: float = Field(ge=1, le=1e14, description="tokens the trainers consume per day")
    hours_per_day: float = Field(24.0, gt=0, le=24, description="hours per day the RL job runs, h")
    logprob_passes: int = Field(1, ge=0, le=4, description=(
        "forward passes the trainer makes over each token besides its update: 1 recomputes the old policy's "
        "log-probs (verl's recompute_old_log_prob, on by default), 2 adds the reference policy's for a KL "
        "penalty, 0 takes the rollouts' own log-probs and no KL"))
    colocate: bool = Field(True, description=(
        "trainer and rollouts at one site on one software stack: your own systems, or one provider's region "
        "(the new weights reach every rollout after each step); false lets them sit apart"))

    @model_validator(mode="after")
    def _trainer_sequence(self):  # (unset: the trainer trains on whole rollouts; the field stays unset)
        if "trainer_sequence_tokens" not in self.model_fields_set:
            object.__setattr__(self, "trainer_sequence_tokens", min(max(self.rollout_context_tokens, 128), 1_000_000))
        return self


class EdgeJob(JobBase):
    stage: Literal["edge"] = Field(description="edge: one copy of a model on each of many devices")
    devices: int = Field(1, ge=1, le=10_000_000, description="units to deploy, one model per unit")
    device: Literal["robot", "desk", "phone", "any"] = Field("any", description=(
        "device class the units must belong to: robot, desk, phone or any"))
    precision: ServePrecision = Field("fp4", description="weight precision on the device")
    context_tokens: int = Field(4096, ge=1, le=10_000_000, description="context held on the device, tokens")
    min_tokens_per_s: float = Field(10.0, gt=0, le=100_000, description="speed each device must generate at, tokens per second")
    max_power_w: Optional[float] = Field(None, gt=0, le=1e6, description="power limit of one device, W (None: any)")


Job = Annotated[Union[ServeJob, FinetuneJob, PretrainJob, RLJob, EdgeJob], Field(discriminator="stage")]


class Scenario(Strict):
    name: str = Field(min_length=1, max_length=120, description="the scenario's name, shown in plan headlines")
    description: str = Field("", description="free text for readers of the file; the planner ignores it")
    horizon_years: int = Field(1, ge=1, le=20, description=(
        "years the plan covers; above 1 with demand growth, trends or yearly budgets the plan is multi-year"))
    catalog: Optional[str] = Field(None, description="a catalog folder or file overriding the bundled one")
    site: Site = Field(default_factory=Site, description="where owned hardware runs: power price, PUE, cooling")
    policy: Policy = Field(default_factory=Policy, description=(
        "what the plan may use: acquisition modes, providers, accelerators, stacks, redundancy"))
    budget: Budget = Field(default_factory=Budget, description="caps on cost, USD per year or per year of the horizon")
    prices: list[PriceOverride] = Field(default_factory=list, description="override catalog offers by id")
    offers: list[Offer] = Field(default_factory=list, description="extra offers (quotes you hold)")
    owned: list[OwnedSystems] = Field(default_factory=list, description="hardware you already hold: an offer of that "
                                      "many systems at no price (provider 'owned'), whatever policy.acquisition says")
    models: list[Model] = Field(default_factory=list, description="models defined inline")
    trends: list[HardwareTrend] = Field(default_factory=list, description="multi-year price/availability")
    solver: Solver = Field(default_factory=Solver, description="MILP solver settings: time limit, gap, threads")
    jobs: list[Job] = Field(min_length=1, description=(
        "the work to plan for, at least one job; its 'stage' is serve, finetune, pretrain, rl or edge"))
    measurements: list[str] = Field(default_factory=list, description="CSV files of measured TPOT/TTFT "
                                    "(relative to this file) replacing the physics model where they have rows")

    _source: tuple | None = PrivateAttr(default=None)  # (file, lines) it was read from: scenario_words.located

    @model_validator(mode="after")
    def _unique_names(self):
        seen = set()
        for job in self.jobs:
            if job.name in seen:
                raise ValueError(f"two jobs are named '{job.name}'; job names must be unique")
            seen.add(job.name)
        return self

    @property
    def kept(self) -> bool:
        """Bought systems are kept, not sold, when the horizon ends (policy.end_of_horizon)."""
        return self.policy.end_of_horizon == "keep"

    @property
    def multi_year(self) -> bool:
        return self.horizon_years > 1 and (any(j.growth_per_year or j.demand_multipliers for j in self.jobs)
                                           or bool(self.trends) or bool(self.budget.years))


# --- loading -------------------------------------------------------------------------------------

STAGES = {"serve": ServeJob, "finetune": FinetuneJob, "pretrain": PretrainJob, "rl": RLJob, "edge": EdgeJob}


def parse_scenario(data: object, lines: Lines, where: str) -> Scenario:
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise InputError(Problem(f"the top level is a {kind}, not a mapping", f"{where}:1",
                                 "start with 'name: ...' and 'jobs:' keys (see scenarios/bank.yaml)"))
    seen: dict[str, int] = {}
    for i, job in enumerate(data.get("jobs") if isinstance(data.get("jobs"), list) else []):
        name = job.get("name") if isinstance(job, dict) else None
        if isinstance(name, str) and name in seen:  # (said at the second one's line, not the file's top)
            line = line_for(("jobs", i, "name"), lines)
            raise InputError(Problem(f"jobs.{i}.name: two jobs are named '{name}' (jobs {seen[name]} and {i})",
                                     f"{where}:{line}" if line else where, "give each job a name of its own"))
        if isinstance(name, str):
            seen[name] = i
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise InputError([problem(e, lines, where, Scenario, STAGES) for e in exc.errors()])


def load_scenario(path: str | Path) -> Scenario:
    """Read, parse and validate a scenario file; every problem is an InputError (exit 2)."""
    path = Path(path)
    text = read_text(path)
    data, lines = load_yaml(text, str(path))
    scenario = parse_scenario(data, lines, str(path))
    scenario._source = (str(path), lines)
    if scenario.catalog and not Path(scenario.catalog).is_absolute():
        scenario.catalog = str((path.parent / scenario.catalog).resolve())
    scenario.measurements = [m if Path(m).is_absolute() else str((path.parent / m).resolve())
                             for m in scenario.measurements]
    return scenario

