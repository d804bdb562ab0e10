"""`plan estimate`: the performance model for one model on one accelerator type, as a what-if."""

from __future__ import annotations

from dataclasses import dataclass

from planner.app import estimate_cross
from planner.data.catalog import load_catalog
from planner.data.consistency import read_as, suggest_model
from planner.data.errors import InputError, Problem, suggest
from planner.data.jobs import kv_precision_of
from planner.data.scenario import FinetuneJob, PretrainJob
from planner.physics import arch, disagg, serving, training

PRECISIONS = ("bf16", "fp8", "int8", "int4", "fp4")
KV_PRECISIONS = ("bf16", "fp8", "int8")
TRAIN_PRECISIONS = ("bf16", "fp8")
"""the precisions a fine-tuning or pretraining job computes in (as the scenario's training jobs)"""
ENGINES = ("vllm", "sglang", "trtllm")


@dataclass
class EstimateRequest:
    model: str
    accelerator: str
    count: int = 1
    precision: str = "bf16"
    kv_precision: str | None = None
    input_tokens: int = 1024
    output_tokens: int = 256
    batch: int | None = None
    max_throughput: bool = False
    min_tokens_per_s_per_user: float | None = None
    tp: int | None = None
    pp: int | None = None
    stage: str = "serve"
    method: str | None = None
    """full, lora or qlora (a fine-tune; None: lora); never set for pretraining"""
    tokens: float = 1e8
    engine: str | None = None
    layout: str | None = None
    """tp (tensor parallelism) or ep-dp (an MoE: expert parallelism, data-parallel attention)."""
    disaggregated: bool = False
    """Also size separate prefill and decode pools on --count accelerators (physics.disagg)."""
    decode_accelerator: str | None = None
    """Decode on this accelerator's node, prefill on --accelerator's (app.estimate_cross; implies
    --disaggregated)."""
    decode_tp: int | None = None
    max_ttft_s: float | None = None
    """First-token limit the cross-system prefill half is sized for (none: utilisation RHO_MAX)."""
    sequence_tokens: int | None = None
    open_loop: bool = False
    """Requests arrive at a rate (data.jobs.Workload.open_loop): TTFT as a requests_per_s job's."""
    context_tokens: int | None = None
    """KV held per sequence, as a serve job's context_tokens (None: input + output tokens)."""
    """Training sequence length (finetune, pretrain); None: the scenario's default for the stage."""


LAYOUTS = ("tp", "ep-dp")


def training_sequence_default(stage: str) -> int:
    """The sequence length a scenario's job of this stage trains on when it names none (FinetuneJob,
    PretrainJob): an estimate and a plan of the same run agree."""
    job = PretrainJob if stage == "pretrain" else FinetuneJob
    return job.model_fields["sequence_tokens"].default


def _check(req: EstimateRequest, cat) -> list[Problem]:
    problems = []
    if req.model not in cat.models:
        problems.append(Problem(f"unknown model '{req.model}'", "--model", suggest_model(req.model, cat.models)))
    if req.accelerator not in cat.accelerators:
        problems.append(Problem(f"unknown accelerator '{req.accelerator}'", "--accelerator",
                                suggest(req.accelerator, cat.accelerators, "accelerators")))
    choices = {"--precision": (req.precision, PRECISIONS), "--stage": (req.stage, ("serve", "finetune", "pretrain")),
               "--method": (req.method or "lora", ("full", "lora", "qlora"))}
    if req.kv_precision is not None:
        choices["--kv-precision"] = (req.kv_precision, KV_PRECISIONS)
    if req.engine is not None:
        choices["--engine"] = (req.engine, ENGINES)
    if req.layout is not None:
        choices["--layout"] = (req.layout, LAYOUTS)
    for flag, (value, allowed) in choices.items():
        if value not in allowed:
            problems.append(Problem(f"unknown value '{value}'", flag, "use one of: " + ", ".join(allowed)))
    if req.stage != "serve" and req.precision in PRECISIONS and req.precision not in TRAIN_PRECISIONS:
        problems.append(Problem(f"{req.precision} is a serving precision; training computes in "
                                "bf16 or fp8", "--precision", "use one of: " + ", ".join(TRAIN_PRECISIONS)))
    if req.batch is not None and req.max_throughput:
        problems.append(Problem("--batch and --max-throughput exclude each other", "--batch",
                                "give one of them"))
    if req.max_throughput and req.disaggregated and req.decode_accelerator is None:  # (a cross split: estimate_cross.check)
        problems.append(Problem("--max-throughput searches the aggregated splits alone; a prefill/decode split is "
                                "compared at a batch or a per-user target", "--max-throughput",
                                "drop --max-throughput, and give --min-tokens-per-s-per-user or --batch"))
    acc = cat.accelerators.get(req.accelerator)
    if acc is not None and req.stage == "serve" and req.tp is not None and req.tp > acc.scaleup_domain:
        problems.append(Problem(f"TP{req.tp} spans beyond {acc.id}'s scale-up domain of {acc.scaleup_domain}: tensor "
                                "parallelism across the scale-out network is not modelled, and no plan uses it",
                                "--tp", f"use --tp {acc.scaleup_domain} or less, and --pp for more accelerators"))
    if req.stage == "pretrain" and req.method is not None:
        problems.append(Problem("--method chooses how a fine-tune trains; pretraining trains every weight",
                                "--method", "drop --method, or use --stage finetune"))
    for flag, value in (("--tp", req.tp), ("--pp", req.pp)):
        if value is not None and req.stage != "serve":
            problems.append(Problem(f"{flag} splits a serving replica; a training estimate lays its run out itself "
                                    "(its parallelism row says how)", flag, f"drop {flag} for --stage {req.stage}"))
        elif value is not None and value > req.count:
            problems.append(Problem(f"{flag} {value} exceeds --count {req.count}", flag, "raise --count"))
    m = cat.models.get(req.model)
    held = max(req.input_tokens + req.output_tokens, req.context_tokens or 0)
    if m is not None and req.stage == "serve" and m.max_context_tokens and held > m.max_context_tokens:
        problems.append(Problem(f"{held:,} tokens a sequence, above {m.id}'s maximum context of "
                                f"{m.max_context_tokens:,}", "--input-tokens" if req.context_tokens is None else
                                "--context-tokens", f"keep input + output (and --context-tokens) within "
                                f"{m.max_context_tokens:,}, or choose a model with a longer context"))
    if m is not None and req.stage == "serve":  # splits an engine can run (the planner's own: powers of two)
        if req.tp is not None and (req.tp & (req.tp - 1) or not arch.tp_splits(m, req.tp)):
            kv = "" if m.attention == "mla" else f" and {m.kv_heads} KV heads"
            problems.append(Problem(f"TP{req.tp} does not split {m.id}'s {m.attention_heads} attention heads{kv} "
                                    "evenly", "--tp", "use one of: " + ", ".join(str(t) for t in (1, 2, 4, 8, 16, 32, 64)
                                                                        if arch.tp_splits(m, t))))
        if req.pp is not None and req.pp > m.layers:
            problems.append(Problem(f"{req.pp} pipeline stages for {m.id}'s {m.layers} layers", "--pp",
                                    f"use at most {m.layers} stages"))
    return problems


def run_estimate(req: EstimateRequest, catalog_paths: tuple[str, ...] = ()) -> dict:
    cat = load_catalog(*catalog_paths)
    for flag, key, known in (("--model", "model", cat.models), ("--accelerator", "accelerator", cat.accelerators),
                             ("--decode-accelerator", "decode_accelerator", cat.accelerators)):
        canonical = getattr(req, key) is not None and read_as(flag, getattr(req, key), known, known is cat.models)
        if canonical:
            setattr(req, key, canonical)
    problems = _check(req, cat)
    if req.decode_accelerator is not None:
        problems += estimate_cross.check(req, cat)
    if req.decode_tp is not None and req.decode_accelerator is None:
        problems.append(Problem("--decode-tp sizes the split across two accelerators", "--decode-tp",
                                "add --decode-accelerator, or drop --decode-tp"))
    if problems:
        raise InputError(problems)
    m, acc = cat.models[req.model], cat.accelerators[req.accelerator]
    base = {"model": m.id, "accelerator": acc.id, "count": req.count, "stage": req.stage}
    if req.stage != "serve":
        method = "pretrain" if req.stage == "pretrain" else (req.method or "lora")
        seq = req.sequence_tokens or training_sequence_default(req.stage)
        est = training.estimate(m, acc, method, req.tokens, req.count, seq=seq, precision=req.precision,
                                scaleout_gbps=cat.best_scaleout_gbps(acc.id))
        out = {**base, "sequence_tokens": seq, **est.as_dict(), "accelerators_needed_for_memory": est.accelerators_min}
        if not est.fits:  # (a run that does not fit has no time: hours at a count it cannot run on mislead)
            out["hours"] = None
        return out
    kv = kv_precision_of(req.precision, req.kv_precision)
    if req.layout == "ep-dp" and not m.is_moe:
        raise InputError([Problem(f"--layout ep-dp needs a mixture-of-experts model; {m.id} is dense",
                                  "--layout", "use --layout tp, or an MoE model")])
    wl = serving.Workload(req.precision, kv, req.input_tokens, req.output_tokens, req.context_tokens,
                          attention_dp=req.layout == "ep-dp", open_loop=req.open_loop)
    if req.max_throughput and req.tp is None and req.pp is None:
        est = serving.max_throughput(m, acc, wl, req.count, acc.scaleup_domain, req.min_tokens_per_s_per_user,
                                     engine=req.engine, max_ttft_s=req.max_ttft_s)
        if est is None and req.min_tokens_per_s_per_user is not None and \
                serving.smallest_fit(m, acc, wl, acc.scaleup_domain, req.count) is not None:
            return {**base, **_not_fitting(m, acc, wl, req.count), "reason": (
                f"no split of {req.count}x {acc.id} reaches {req.min_tokens_per_s_per_user:g} tok/s per user "
                f"for {m.id} at {wl.precision} (memory holds it): a faster accelerator, more of them, or a "
                "lower precision"), "regime": "latency"}
        if est is None:
            return {**base, **_not_fitting(m, acc, wl, req.count)}
        replicas = req.count // (est.tensor_parallel * est.pipeline_parallel)
        return {**base, **est.as_dict(), "replicas": replicas}
    tp, pp = req.tp, req.pp
    if tp is None and pp is None:
        fit = serving.smallest_fit(m, acc, wl, acc.scaleup_domain, req.count)
        if fit is None:
            return {**base, **_not_fitting(m, acc, wl, req.count)}
        tp, pp = fit
    tp, pp = tp or 1, pp or 1
    replicas = max(1, req.count // (tp * pp))
    if req.batch is not None:
        batch = req.batch
    elif req.min_tokens_per_s_per_user is not None or req.max_throughput or req.max_ttft_s is not None:
        # (--max-throughput at a given split: the largest batch it holds, as the search over splits takes for each)
        batch, _ = serving.largest_batch(m, acc, wl, tp, pp, req.min_tokens_per_s_per_user, req.max_ttft_s,
                                         engine=req.engine)
        batch = max(batch, 1)
    else:
        batch = 1  # one stream: the latency a single user sees; max_batch_memory says how many fit
    est = serving.estimate(m, acc, wl, tp, pp, batch, engine=req.engine)
    out = {**base, **est.as_dict(), "replicas": replicas}
    target = req.min_tokens_per_s_per_user
    if target is not None and est.fits and est.tokens_per_s_per_user < target:
        out["meets_target"] = False
        out["warning"] = (f"{est.tokens_per_s_per_user:.1f} tok/s per user at batch {batch}, below the "
                          f"{target:g} asked ({est.regime}-bound): more TP, a faster accelerator or a lower "
                          "precision")
    elif target is not None:
        out["meets_target"] = est.fits
    if m.is_moe:
        out["layout"] = (f"ep-dp: expert parallelism EP{tp} with data-parallel attention (KV split by sequence)"
                         if wl.attention_dp and tp > 1 else "tp: tensor-parallel attention and experts")
    out["ttft_convention"] = (f"ttft_ms: mean time to first token with {batch} requests in flight per replica, "
                              "arriving one by one at a rate (an M/D/1 wait for the prompts ahead at the prefill)"
                              if req.open_loop else
                              f"ttft_ms: mean time to first token in a closed loop of {batch} concurrent "
                              "requests per replica (chunked prefill; waits behind other prompts and decode "
                              "steps included)") + "; ttft_ms_alone: one prompt on an idle replica"
    out["tokens_per_s"] = round(est.tokens_per_s * replicas, 4)
    if req.decode_accelerator is not None:
        out.update(estimate_cross.run(req, cat, m, wl))
    elif req.disaggregated:
        out.update(_disaggregated(m, acc, wl, req))
    return out


def _disaggregated(m, acc, wl, req: EstimateRequest) -> dict:
    """Separate prefill and decode pools inside --count accelerators of one scale-up domain, against
    the best aggregated split at the same per-user speed: when it wins and by how much."""
    d = disagg.best(m, acc, wl, min(req.count, acc.scaleup_domain), req.min_tokens_per_s_per_user, engine=req.engine)
    if d is None:
        return {"disaggregated": "no prefill/decode split fits"}
    verdict = "wins" if d.gain > 1.0 else "loses"
    return {"disaggregated": (f"{verdict}: {d.prefill_replicas}x TP{d.prefill_tp} prefill + {d.decode_replicas}x "
                              f"TP{d.decode_tp} decode ({d.decode_batch} users each), {d.tokens_per_s_per_accelerator:,.0f} output "
                              f"tok/s per accelerator against {d.aggregated_tokens_per_s_per_accelerator:,.0f} "
                              f"aggregated ({d.gain:.2f}x); first token {d.ttft_ms:,.0f} ms incl. "
                              f"{d.kv_transfer_ms:.1f} ms of KV transfer"),
            "disaggregated_gain": round(d.gain, 4),
            "disaggregated_tokens_per_s_per_accelerator": round(d.tokens_per_s_per_accelerator, 4),
            "disaggregated_ttft_ms": round(d.ttft_ms, 4)}


def _not_fitting(m, acc, wl, count) -> dict:
    need = serving.gib(arch.weight_bytes(m, wl.precision))
    return {"fits": False, "reason": f"{m.id} at {wl.precision} needs {need:.1f} GiB of weights; "
                                     f"{count}x {acc.id} ({acc.memory_gb:g} GiB each) cannot hold it with a KV cache",
            "memory_gb_capacity": acc.memory_gb, "tensor_parallel": None, "pipeline_parallel": None,
            "replicas": 0, "batch": 0, "tpot_ms": None, "ttft_ms": None, "ttft_ms_alone": None,
            "tokens_per_s_per_user": None,
            "tokens_per_s": 0.0, "regime": "capacity", "memory_gb_per_accelerator": None}
