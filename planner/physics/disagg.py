"""Disaggregated serving on one system type: prompts prefilled on a prefill pool, tokens decoded on
a decode pool, the KV cache sent between them over the system's scale-up link.

Sized inside one scale-up domain of D accelerators (so the KV moves over its link), each pool for
its own bound, n_p x TP_p + n_d x TP_d <= D (the comparison TensorRT-LLM's disaggregation blog
makes at a fixed GPU count, reference/scaleout-moe.md §2.4):
    decode replica  TP_d accelerators, the largest batch b whose pure decode step (no prompt chunk
                    beside it) meets the per-user speed and whose KV fits: TPOT_d = step(b, 0)
    prompt load     each user sends a prompt every OSL x TPOT_d seconds, so one decode replica asks
                    b x s_in / (OSL x TPOT_d) prompt tokens per second of the prefill pool
    prefill replica TP_p accelerators at R = chunk / step(0, chunk) prompt tokens per second
                    (chunk: the engine's per-step budget), run at utilisation rho <= RHO_MAX
                    (rho = n_d x that load / (n_p R))
    unit output     = min(n_d b / TPOT_d, n_p RHO_MAX R x OSL / s_in) output tokens/s, over
                    n_p TP_p + n_d TP_d accelerators (the pool that runs out first binds)
    TTFT            = one prompt alone on a prefill replica (ttft alone) + its M/D/1 queue wait
                      rho D / (2 (1 - rho)) (DistServe's prefill-instance model, §C4 of
                      serving-benchmarks.md) + KV transfer: s_in x KV bytes per token / link
Against the best aggregated split at the same per-user speed (serving.max_throughput), the gain
is the ratio of output tokens per second per accelerator. Pools on two system types, the KV over
the network between them, are physics/crossdisagg.py. Not modelled: prefix caching, and load
imbalance between the pools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.data.catalog import Accelerator, Model
from planner.data.jobs import Workload
from planner.physics import arch, serving, step, ttft
from planner.physics.calibration import Calibration, default

RHO_MAX = 0.7
"""Highest utilisation the prefill pool is sized for (the M/D/1 wait is then 0.78 prefills)."""


@dataclass
class DisaggEstimate:
    prefill_tp: int
    decode_tp: int
    prefill_replicas: int
    decode_replicas: int
    decode_batch: int
    """users per decode replica: its largest batch within the targets, fewer when prefill binds"""
    tokens_per_s_per_accelerator: float
    tokens_per_s_per_user: float
    ttft_ms: float
    kv_transfer_ms: float
    aggregated_tokens_per_s_per_accelerator: float
    gain: float
    """disaggregated / aggregated output tokens per second per accelerator"""

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def _decode_pool(m, acc, wl, tp, min_tps, cal, engine) -> tuple[int, float]:
    """(largest batch, its TPOT) of a decode-only replica within memory, the engine cap and min_tps."""
    r = step.replica(m, acc, wl, tp, 1, None, cal, engine)
    cap = r.users_cap

    def tpot(b: int) -> float:
        return r.time(b, 0.0)

    if cap < 1 or (min_tps and 1.0 / tpot(1) < min_tps):
        return 0, 0.0
    lo, hi = 1, cap
    if not min_tps or 1.0 / tpot(cap) >= min_tps:
        return cap, tpot(cap)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if 1.0 / tpot(mid) >= min_tps else (lo, mid)
    return lo, tpot(lo)


def prefill_rate(m: Model, acc: Accelerator, wl: Workload, tp: int, cal: Calibration,
                 engine: str | None) -> float:
    """Prompt tokens per second one prefill replica of TP accelerators processes at full load."""
    r = step.replica(m, acc, wl, tp, 1, None, cal, engine)
    chunk = float(min(r.chunk_total, max(wl.input_tokens, 1) * 8))
    return chunk / r.time(0.0, chunk)


def kv_transfer_s(m: Model, acc: Accelerator, wl: Workload, cal: Calibration) -> float:
    """Seconds to send one prompt's KV cache to the decode pool over the system's scale-up link."""
    nbytes = arch.kv_bytes_for_sequence(m, wl.kv_precision, wl.input_tokens)
    return nbytes / (cal.link_efficiency * acc.scaleup_gbps * 1e9) if acc.scaleup_gbps else float("inf")


def best(m: Model, acc: Accelerator, wl: Workload, domain: int, min_tokens_per_s_per_user: float | None = None,
         cal: Calibration | None = None, engine: str | None = None) -> DisaggEstimate | None:
    """The disaggregated pair (TP_p, TP_d) with the most output tokens/s per accelerator inside one
    scale-up domain, and its gain over the best aggregated split of the domain at the same speed."""
    cal = cal or default()
    splits = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= domain]
    found = None
    for tp_d in splits:
        b, tpot = _decode_pool(m, acc, wl, tp_d, min_tokens_per_s_per_user, cal, engine)
        if b < 1:
            continue
        load = b * wl.input_tokens / (wl.output_tokens * tpot)  # prompt tokens/s one decode replica asks
        for tp_p in splits:
            if tp_p + tp_d > domain or step.max_batch_by_memory(m, acc, wl, tp_p, 1, cal) < 1:
                continue
            rate = prefill_rate(m, acc, wl, tp_p, cal, engine)
            for n_d in range(1, (domain - tp_p) // tp_d + 1):
                n_p = (domain - n_d * tp_d) // tp_p
                out = min(n_d * b / tpot, n_p * RHO_MAX * rate * wl.output_tokens / wl.input_tokens)
                per_acc = out / (n_p * tp_p + n_d * tp_d)
                if found is None or per_acc > found[0] * (1 + 1e-9):
                    rho = min(RHO_MAX, n_d * load / (n_p * rate))
                    users = min(b, max(1, round(out * tpot / n_d)))  # fewer when the prefill pool binds
                    found = (per_acc, tp_p, tp_d, users, tpot, n_p, n_d, rho, rate)
    if found is None:
        return None
    per_acc, tp_p, tp_d, b, tpot, n_p, n_d, rho, rate = found
    alone = serving.ttft_s(m, acc, wl, tp_p, 1, cal=cal, engine=engine)
    service = wl.input_tokens / rate
    wait = rho * service / (2 * (1 - rho))
    kv = kv_transfer_s(m, acc, wl, cal)
    agg = serving.max_throughput(m, acc, wl, domain, domain, min_tokens_per_s_per_user, cal=cal, engine=engine)
    agg_per_acc = agg.tokens_per_s / domain if agg is not None else 0.0
    return DisaggEstimate(tp_p, tp_d, n_p, n_d, b, per_acc, 1.0 / tpot, (alone + wait + kv) * 1e3, kv * 1e3,
                          agg_per_acc, per_acc / agg_per_acc if agg_per_acc > 0 else float("inf"))


NOTE = "disaggregated:"
"""How a serving placement's basis_note starts when its replica is a prefill pool plus a decode pool
(options.disagg writes it; the verifier and the explanations read it back with parse_note)."""


@dataclass
class Unit:
    """One disaggregated replica: n_p prefill replicas of TP_p and n_d decode replicas of TP_d."""

    prefill_tp: int
    prefill_replicas: int
    decode_tp: int
    decode_replicas: int
    users: int
    tokens_per_s_per_user: float
    ttft_s: float
    kv_transfer_s: float
    binding: str
    """decode (the decode replicas' batch limit) or prefill (the prefill pool at RHO_MAX)"""
    decode_batch: int
    """users per decode replica"""

    @property
    def accelerators(self) -> int:
        return self.prefill_replicas * self.prefill_tp + self.decode_replicas * self.decode_tp

    def note(self) -> str:
        return (f"{NOTE} {self.prefill_replicas}x TP{self.prefill_tp} prefill + {self.decode_replicas}x "
                f"TP{self.decode_tp} decode")


def parse_note(text: str) -> tuple[int, int, int, int] | None:
    """(n_p, TP_p, n_d, TP_d) from a basis note written by Unit.note (None if it is not one)."""
    hit = re.match(re.escape(NOTE) + r" (\d+)x TP(\d+) prefill \+ (\d+)x TP(\d+) decode", text or "")
    return tuple(int(g) for g in hit.groups()) if hit else None


def decode_pool(m: Model, acc: Accelerator, wl: Workload, tp: int, min_tokens_per_s_per_user: float | None = None,
                cal: Calibration | None = None, engine: str | None = None) -> tuple[int, float]:
    """(largest batch, its TPOT) of one decode-only replica of TP accelerators (0 if none)."""
    return _decode_pool(m, acc, wl, tp, min_tokens_per_s_per_user, cal or default(), engine)


def unit(m: Model, acc: Accelerator, wl: Workload, tp_p: int, n_p: int, tp_d: int, n_d: int,
         min_tokens_per_s_per_user: float | None = None, cal: Calibration | None = None,
         engine: str | None = None, decode: tuple[int, float] | None = None) -> Unit | None:
    """The users one disaggregated replica serves within the per-user speed and memory (None if
    either pool cannot run): n_d decode replicas at their largest batch, fewer when the prefill
    pool at RHO_MAX cannot keep up; TTFT as in the module docstring. `decode`: decode_pool's
    answer for TP_d, when the caller already has it."""
    cal = cal or default()
    b, tpot = decode or _decode_pool(m, acc, wl, tp_d, min_tokens_per_s_per_user, cal, engine)
    prefill = step.replica(m, acc, wl, tp_p, 1, None, cal, engine)
    if b < 1 or prefill.max_batch < 1:
        return None
    rate = prefill_rate(m, acc, wl, tp_p, cal, engine)
    decoder = step.replica(m, acc, wl, tp_d, 1, None, cal, engine)

    def tpot_at(users: int) -> float:
        return decoder.time(-(-users // n_d), 0.0)

    # a user sends a prompt every OSL x TPOT seconds; fewer users per decode replica decode faster
    # and so send prompts more often: iterate down to the users the prefill pool keeps up with
    users, tpot_used = n_d * b, tpot
    for _ in range(8):
        by_prefill = int(n_p * RHO_MAX * rate * wl.output_tokens * tpot_used / wl.input_tokens)
        if by_prefill >= users:
            break
        users = by_prefill
        if users < 1:
            return None
        tpot_used = tpot_at(users)
    per = -(-users // n_d)
    rho = min(RHO_MAX, users * wl.input_tokens / (wl.output_tokens * tpot_used) / (n_p * rate))
    service = wl.input_tokens / rate
    kv = kv_transfer_s(m, acc, wl, cal)
    first = ttft.of(prefill) + rho * service / (2 * (1 - rho)) + kv
    return Unit(tp_p, n_p, tp_d, n_d, users, 1.0 / tpot_used, first, kv,
                "decode" if users == n_d * b else "prefill", per)
