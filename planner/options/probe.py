"""The batch search behind a serving option, shared within one options build.

options.build asks, for each system a serving demand may use and each TP x PP split, the largest
batch one replica serves within the targets (physics.serving.largest_batch) and, for the
configurations it keeps, the estimate at that batch (physics.serving.estimate). Both answers
depend only on model, accelerator, workload, split, targets and engine, so systems sharing an
accelerator and jobs sharing a workload reuse them through the build's cache dict.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from planner.physics import moe, serving, step


def largest(m, acc, wl: serving.Workload, tp: int, pp: int, min_tps: float, max_ttft: float | None,
            cache: dict | None, engine: str | None = None) -> tuple[int, str]:
    """(largest batch, its limit) of one TP x PP replica; systems sharing an accelerator (an 8-GPU
    node and a 1-GPU instance) and jobs sharing a workload reuse it."""
    key = (m.id, acc.id, wl, tp, pp, min_tps, max_ttft, engine)
    if cache is not None and key in cache:
        return cache[key]
    got = serving.largest_batch(m, acc, wl, tp, pp, min_tps, max_ttft, engine=engine)
    if cache is not None:
        cache[key] = got
    return got


def estimate(m, acc, wl: serving.Workload, tp: int, pp: int, batch: int, cache: dict | None,
             engine: str | None) -> serving.ServeEstimate:
    """The estimate at a batch the search found, asked only for the configurations kept (and
    shared by the speed targets that find the same batch); callers must not change it."""
    key = ("estimate", m.id, acc.id, wl, tp, pp, batch, engine)
    if cache is not None and key in cache:
        return cache[key]
    est = serving.estimate(m, acc, wl, tp, pp, batch, engine=engine)
    if cache is not None:
        cache[key] = est
    return est


def most_users(m, acc, wl: serving.Workload, tp: int, pp: int, engine: str | None) -> int:
    """The most users layouts() may find for a split: the larger memory-and-engine cap of the
    layouts it weighs (largest_batch never passes its replica's cap)."""
    bound = step.replica(m, acc, wl, tp, pp, None, None, engine).users_cap
    if pp == 1 and moe.applies(m, tp) and not wl.attention_dp:
        dp = dataclasses.replace(wl, attention_dp=True)
        bound = max(bound, step.replica(m, acc, dp, tp, pp, None, None, engine).users_cap)
    return bound


def known(m, acc, wl: serving.Workload, tp: int, pp: int, min_tps: float, max_ttft: float | None,
          cache: dict | None, engine: str | None):
    """layouts()'s answer if the build has it already, else None."""
    return cache.get(("layouts", m.id, acc.id, wl, tp, pp, min_tps, max_ttft, engine)) if cache is not None else None


def layouts(m, acc, wl: serving.Workload, tp: int, pp: int, min_tps: float, max_ttft: float | None,
            cache: dict | None, engine: str | None):
    """(batch, limit, workload) of the better layout of one TP x PP split: plain tensor
    parallelism, or, for an MoE over more than one rank on one stage, expert parallelism with
    data-parallel attention (physics.moe) when it serves more users (or as many, faster)."""
    key = ("layouts", m.id, acc.id, wl, tp, pp, min_tps, max_ttft, engine)
    if cache is not None and key in cache:
        return cache[key]
    best = (*largest(m, acc, wl, tp, pp, min_tps, max_ttft, cache, engine), wl)
    if pp == 1 and moe.applies(m, tp) and not wl.attention_dp:
        dp = dataclasses.replace(wl, attention_dp=True)
        alt = (*largest(m, acc, dp, tp, pp, min_tps, max_ttft, cache, engine), dp)
        if alt[0] >= 1 and (alt[0] > best[0] or alt[0] == best[0] and (
                estimate(m, acc, dp, tp, pp, alt[0], cache, engine).tokens_per_s_per_user >
                estimate(m, acc, wl, tp, pp, best[0], cache, engine).tokens_per_s_per_user)):
            best = alt
    if cache is not None:
        cache[key] = best
    return best


class Split(NamedTuple):
    """A split the batch search found users for, before its estimate (what build._pareto reads)."""

    tp: int
    pp: int
    accelerators_per_replica: int
    accelerator_slots: float
    users_per_replica: int
    limit: str
    workload: serving.Workload
