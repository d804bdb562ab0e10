"""Serving one replica: its estimate at a batch, the largest batch within targets, the best split.

A replica is TP x PP accelerators holding one copy of the model; its `batch` is the number of
sequences it decodes concurrently (users served at once). Memory and the engine step are in
planner.physics.step, time to first token (alone and under load) in planner.physics.ttft.

    TPOT       = PP x the average stage step while `batch` sequences decode and the other
                 clients' prompts arrive in chunks (step.steady_parts, others only): the
                 inter-token latency a user sees, as benchmarks define it
    tokens/s   = batch / (PP x the average step with every prompt's prefill)
    TTFT       = ttft.ttft_s at this batch (the closed-loop convention); ttft_ms_alone at batch 1
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.data.catalog import Accelerator, Model
from planner.data.jobs import Workload  # noqa: F401  (re-exported: the request shape)
from planner.physics import engines, step, ttft
from planner.physics.calibration import Calibration, default
from planner.physics.step import (  # noqa: F401  (re-exported for callers of serving)
    GB,
    Link,
    gib,
    kv_per_seq_per_acc,
    max_batch_by_memory,
    mem_bytes_per_acc,
    reserve_per_acc,
    weights_per_acc,
)


@dataclass
class ServeEstimate:
    fits: bool
    reason: str
    tensor_parallel: int
    pipeline_parallel: int
    batch: int
    memory_gb_per_accelerator: float
    memory_gb_capacity: float
    weights_gb: float
    kv_gb: float
    tpot_ms: float
    ttft_ms: float
    ttft_ms_alone: float
    tokens_per_s_per_user: float
    tokens_per_s: float
    regime: str
    max_batch_memory: int
    engine: str | None = None
    parts_ms: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def ttft_s(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int, link: Link | None = None,
           cal: Calibration | None = None, batch: int = 1, engine: str | None = None) -> float:
    """Mean time to first token at `batch` concurrent clients (1: one prompt alone); see ttft."""
    return ttft.ttft_s(m, acc, wl, tp, pp, batch, link, cal, engine)


def tpot_s(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int, batch: int, link: Link | None = None,
           cal: Calibration | None = None, engine: str | None = None) -> float:
    """Inter-token latency at `batch` sequences: the average step with the other clients' prompts."""
    return step.replica(m, acc, wl, tp, pp, link, cal, engine).tpot(batch)


def regime_of(parts: dict[str, float]) -> str:
    """The resource that dominates a decode step."""
    core = {"bandwidth": parts["memory"], "compute": parts["compute"] + parts["prefill"],
            "interconnect": parts["comm"], "overhead": parts["fixed"]}
    return max(core, key=core.get)


def estimate(m: Model, acc: Accelerator, wl: Workload, tp: int = 1, pp: int = 1, batch: int = 1,
             link: Link | None = None, cal: Calibration | None = None, engine: str | None = None) -> ServeEstimate:
    """Everything about one replica at a fixed configuration and batch (`batch` concurrent
    clients): TPOT and per-user speed as a benchmark measures them, total tokens/s with every
    prompt's prefill, TTFT loaded at this batch and alone."""
    cal = cal or default()
    engines.get(engine)  # ValueError for an unknown engine
    batch = max(int(batch), 1)
    weights = weights_per_acc(m, wl.precision, tp, pp, wl.attention_dp)
    kv_seq = kv_per_seq_per_acc(m, wl, tp, pp)
    reserve = reserve_per_acc(tp, pp, cal)
    capacity = mem_bytes_per_acc(acc)
    r = step.replica(m, acc, wl, tp, pp, link, cal, engine)
    max_b = r.max_batch
    used = weights + reserve + batch * kv_seq
    reason = ""
    if max_b < 1:
        reason = (f"weights need {gib(weights):.1f} GiB per accelerator at TP{tp} PP{pp}, more than the "
                  f"{gib(capacity - reserve):.1f} GiB free beside the runtime reserve on {acc.name}")
    elif batch > max_b:
        reason = (f"{batch} sequences need {gib(used):.1f} GiB per accelerator; the KV cache of {acc.name} "
                  f"({gib(capacity):.1f} GiB) holds at most {max_b}")
    whole = r.steady_parts(batch)
    tpot = r.tpot(batch)
    loaded = ttft.of(r, batch)
    alone = ttft.of(r, 1)
    return ServeEstimate(
        fits=not reason, reason=reason, tensor_parallel=tp, pipeline_parallel=pp, batch=batch,
        memory_gb_per_accelerator=gib(used), memory_gb_capacity=gib(capacity), weights_gb=gib(weights),
        kv_gb=gib(batch * kv_seq), tpot_ms=tpot * 1e3, ttft_ms=loaded * 1e3, ttft_ms_alone=alone * 1e3,
        tokens_per_s_per_user=1.0 / tpot, tokens_per_s=batch / step.tpot_from(whole, pp, engine),
        regime="capacity" if max_b < 1 else regime_of(whole), max_batch_memory=max_b, engine=engine,
        parts_ms={k: v * 1e3 for k, v in whole.items() if k != "step"})


def largest_batch(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int,
                  min_tokens_per_s_per_user: float | None = None, max_ttft_s: float | None = None,
                  link: Link | None = None, cal: Calibration | None = None,
                  engine: str | None = None) -> tuple[int, str]:
    """The most sequences one replica serves within memory, the engine's batch cap, the per-user
    speed target and the TTFT limit (loaded, at that many concurrent clients); returns (batch,
    what limits it: memory, batch-cap, latency or ttft). Batch 0 means not even one fits or meets
    the targets. Step time and loaded TTFT grow with batch, so a binary search finds the edge."""
    cal = cal or default()
    r = step.replica(m, acc, wl, tp, pp, link, cal, engine)
    engine_cap = step.batch_cap(m, wl, tp, cal)
    cap = r.users_cap
    if cap < 1:
        return 0, "memory"

    def speed_ok(b: int) -> bool:
        return min_tokens_per_s_per_user is None or 1.0 / r.tpot(b) >= min_tokens_per_s_per_user

    def ttft_ok(b: int) -> bool:
        return max_ttft_s is None or ttft.of(r, b) <= max_ttft_s

    if not ttft_ok(1):
        return 0, "ttft"
    if not speed_ok(1):
        return 0, "latency"
    if speed_ok(cap) and ttft_ok(cap):
        return cap, "memory" if cap < engine_cap else "batch-cap"
    lo, hi = 1, cap  # ok(lo), not ok(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if speed_ok(mid) and ttft_ok(mid) else (lo, mid)
    return lo, "latency" if not speed_ok(hi) else "ttft"


def memory_limited(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int,
                   min_tokens_per_s_per_user: float | None = None, max_ttft_s: float | None = None,
                   link: Link | None = None, cal: Calibration | None = None, engine: str | None = None) -> bool:
    """Whether largest_batch's limit is memory, without its search: no room for one sequence, or
    one sequence and the memory cap both meet the targets and the cap is below the engine's."""
    cal = cal or default()
    r = step.replica(m, acc, wl, tp, pp, link, cal, engine)
    cap = r.users_cap
    if cap < 1:
        return True

    def ok(b: int) -> bool:
        return ((min_tokens_per_s_per_user is None or 1.0 / r.tpot(b) >= min_tokens_per_s_per_user)
                and (max_ttft_s is None or ttft.of(r, b) <= max_ttft_s))

    return cap < step.batch_cap(m, wl, tp, cal) and ok(1) and ok(cap)


def parallel_splits(count: int, domain: int, layers: int) -> list[tuple[int, int]]:
    """(TP, PP) pairs for replicas of up to `count` accelerators: TP a power of two inside one
    scale-up domain, PP any divisor-friendly depth up to the layer count."""
    out = []
    tp = 1
    while tp <= min(count, domain):
        pp = 1
        while tp * pp <= count and pp <= layers:
            out.append((tp, pp))
            pp *= 2
        tp *= 2
    return out


def max_throughput(m: Model, acc: Accelerator, wl: Workload, count: int, domain: int | None = None,
                   min_tokens_per_s_per_user: float | None = None, link: Link | None = None,
                   cal: Calibration | None = None, engine: str | None = None,
                   max_ttft_s: float | None = None) -> ServeEstimate | None:
    """The split of `count` accelerators into replicas x TP x PP, and the batch, that maximise
    total output tokens/s (as a throughput-tuned engine would), within the per-user speed and the
    TTFT limit when given. None if nothing fits."""
    cal = cal or default()
    domain = domain or acc.scaleup_domain
    best: tuple[float, ServeEstimate] | None = None
    for tp, pp in parallel_splits(count, max(domain, 1), m.layers):
        replicas = count // (tp * pp)
        batch, _ = largest_batch(m, acc, wl, tp, pp, min_tokens_per_s_per_user, max_ttft_s, link, cal, engine)
        if batch < 1:
            continue
        est = estimate(m, acc, wl, tp, pp, batch, link, cal, engine)
        total = est.tokens_per_s * replicas
        if best is None or total > best[0] * (1 + 1e-9):
            best = (total, est)
    if best is None:
        return None
    est = best[1]
    replicas = count // (est.tensor_parallel * est.pipeline_parallel)
    est.tokens_per_s *= replicas
    return est


def smallest_fit(m: Model, acc: Accelerator, wl: Workload, domain: int, max_count: int | None = None,
                 cal: Calibration | None = None) -> tuple[int, int] | None:
    """The smallest (TP, PP) whose replica holds the weights and at least one sequence."""
    cal = cal or default()
    for tp, pp in sorted(parallel_splits(max_count or 4096, domain, m.layers), key=lambda s: (s[0] * s[1], s[1])):
        if max_batch_by_memory(m, acc, wl, tp, pp, cal) >= 1:
            return tp, pp
    return None
