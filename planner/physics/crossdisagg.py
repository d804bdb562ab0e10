"""Disaggregated serving across two system types: prompts prefilled on one (say a compute-rich
H100 node), tokens decoded on another (say a memory-rich H200 node), each prompt's KV cache sent
between them over the systems' scale-out network (catalog systems.scaleout_gbps: GB/s per
accelerator per direction, its NICs).

The two halves are sized independently, so a fleet may hold any number of each (the MILP links
them: milp/crossdisagg.py):
    decode half   TP_d accelerators of the decode system at the largest batch b whose pure decode
                  step (no prompt chunk beside it) meets the per-user speed and whose KV fits
                  (physics.disagg.decode_pool): b users at TPOT_d = step(b, 0). A user sends a
                  prompt every OSL x TPOT_d seconds, so one replica asks the prefill side for
                  L = b / (OSL x TPOT_d) prompts per second (an upper bound when it holds fewer
                  users: fewer users decode faster, but the replica's output b / TPOT rises with b).
    KV transfer   kv_s = s_in x KV bytes per token / (e x min(TP_p x net_p, TP_d x net_d) x 1e9):
                  each tensor-parallel rank sends its share of the heads over its own NIC, the
                  slower side binds; e = NETWORK_EFFICIENCY = 0.86, the share of a 400 Gb/s
                  ConnectX-7's 50 GB/s that DeepEP's internode RDMA kernels reach (43 GB/s at EP16 on
                  H800, deepseek-ai/DeepEP docs/legacy.md; reference/scaleout-moe.md §2). Not
                  overlapped with the prefill (engines that send it layer by layer hide part of it:
                  an upper bound).
    prefill half  TP_p accelerators of the prefill system at R = chunk / step(0, chunk) prompt
                  tokens per second (physics.disagg.prefill_rate), run at utilisation rho:
                  TTFT = one prompt alone + its M/D/1 queue wait rho S / (2 (1 - rho)) (S = s_in / R,
                  DistServe's prefill-instance model) + kv_s. rho is the most that meets the TTFT
                  limit, at most RHO_MAX: with w = max_ttft - alone - kv_s > 0,
                  rho = min(RHO_MAX, 2 w / (S + 2 w)). One replica then admits P = rho R / s_in
                  prompts per second.
    link          prefill halves of a pair cover the decode halves' prompts:
                  sum P y_prefill >= sum L y_decode (per demand and pair of systems).
Not modelled: prefix caching, load imbalance between replicas, a KV layout conversion between two
engines or accelerator vendors (the pair is offered only between accelerators of the same vendor),
and, where several request sizes share prefill replicas (policy.pool_jobs), the queue of mixed
prompt sizes: each size is sized at its own rho and service time (an M/G/1 wait with E[S^2] of the
mix would be longer for the short prompts' share).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.data.catalog import Accelerator, Model, System
from planner.data.jobs import Workload
from planner.physics import arch, disagg, serving
from planner.physics.calibration import Calibration, default


NETWORK_EFFICIENCY = 0.86
"""Share of a NIC's line rate a bulk RDMA transfer reaches (see the module docstring)."""


@dataclass(frozen=True)
class DecodeHalf:
    tp: int
    users: int
    tpot_s: float
    prompts_per_s: float
    """prompts per second one replica asks of the prefill side: users / (OSL x TPOT)"""


@dataclass(frozen=True)
class PrefillHalf:
    tp: int
    prompt_tokens_per_s: float
    """R: prompt tokens per second at full load"""
    rho: float
    prompts_per_s: float
    """P = rho R / s_in: prompts per second one replica admits within the TTFT limit"""
    ttft_s: float
    kv_transfer_s: float


def linked(system_p: System, system_d: System, acc_p: Accelerator, acc_d: Accelerator) -> bool:
    """May a prefill half on system_p send its KV to a decode half on system_d? Both need a
    scale-out network in the catalog and accelerators of one vendor (a shared KV layout)."""
    return (bool(system_p.scaleout_gbps) and bool(system_d.scaleout_gbps) and acc_p.id != acc_d.id
            and acc_p.vendor == acc_d.vendor)


def kv_network_s(m: Model, wl: Workload, system_p: System, tp_p: int, system_d: System, tp_d: int) -> float:
    """Seconds to send one prompt's KV cache from a TP_p prefill replica to a TP_d decode replica."""
    nbytes = arch.kv_bytes_for_sequence(m, wl.kv_precision, wl.input_tokens)
    gbps = min(tp_p * (system_p.scaleout_gbps or 0.0), tp_d * (system_d.scaleout_gbps or 0.0))
    return nbytes / (NETWORK_EFFICIENCY * gbps * 1e9) if gbps > 0 else float("inf")


def decode_half(m: Model, acc: Accelerator, wl: Workload, tp: int, min_tokens_per_s_per_user: float | None,
                cal: Calibration | None = None, engine: str | None = None) -> DecodeHalf | None:
    b, tpot = disagg.decode_pool(m, acc, wl, tp, min_tokens_per_s_per_user, cal, engine)
    if b < 1:
        return None
    return DecodeHalf(tp, b, tpot, b / (max(wl.output_tokens, 1) * tpot))


def prefill_half(m: Model, acc: Accelerator, wl: Workload, tp: int, max_ttft_s: float | None, kv_s: float,
                 cal: Calibration | None = None, engine: str | None = None) -> PrefillHalf | None:
    """The prompts per second one prefill replica admits within the TTFT limit (None if none)."""
    cal = cal or default()
    if serving.max_batch_by_memory(m, acc, wl, tp, 1, cal) < 1:
        return None
    rate = disagg.prefill_rate(m, acc, wl, tp, cal, engine)
    service = max(wl.input_tokens, 1) / rate
    alone = serving.ttft_s(m, acc, wl, tp, 1, cal=cal, engine=engine)
    rho = disagg.RHO_MAX
    if max_ttft_s is not None:
        w = max_ttft_s - alone - kv_s
        if w <= 0:
            return None
        rho = min(rho, 2 * w / (service + 2 * w))
    ttft = alone + rho * service / (2 * (1 - rho)) + kv_s
    return PrefillHalf(tp, rate, rho, rho / service, ttft, kv_s)
