"""What the screened search's plans do to the prover of the full model's bound (app/planning.py
passes a Narrower as screening.search's `first`): narrow it to the plans that would beat them
(mipbound.Prover.narrow), restart it on a cheaper one where that pays, and stop CBC's search once
the cheapest is proven within the gap asked (cbclog.Tail)."""

from __future__ import annotations

import math

from planner.data import deadline

NARROW_MIN_S = 2.0
"""the prover is narrowed (narrower) only with at least this much time left: a narrowed child
starts its root node again"""
LOG_ROUNDING = 1e-5
"""a plan's cost read from CBC's log (cbcbox's tree rows: 6 significant digits) may be this share
below the plan's; the prover's target (narrower) is raised by it, so that reaching the target
proves the plan within the gap asked"""
REACH_PER_S = 0.001
"""_restarts: a restarted prover is expected to raise its bound by this share of the target per
second left. Narrowed children with a target below the optimum, from their start (benchmarks/milp.py's
60 generated jobs, this machine, presolve on): seed 7 proved 1,223,392 $/yr in 1.6 s (its running
child's bound 0.15% below), seed 5 1,004,998 in 6.2 s (3.3%), seed 6 2,216,791 in 8.3 s (1.3%);
restarted at 5-6 s of a 10 s limit, seeds 5 and 6 ended 1.0 and 0.8 points above the gap the
running child reached (2.0 and 1.2%), seed 7 was proven."""


def narrower(bound, prover, gap: float):
    """What the screened search calls with each plan it finds (screening.search's `first`: its first
    plan, then those CBC's log shows), Narrower; None where no prover runs."""
    if prover is None or bound is None or bound.optimum is None:
        return None
    return Narrower(bound, prover, gap)


class Narrower:
    """Called with a plan's cost: the prover restarted on the full model narrowed to the plans
    cheaper than (1 - gap) x that cost (mipbound.Prover.narrow), the bound that proves the plan
    within the gap asked; on the first plan at once, on a cheaper one when _restarts says so (then
    capped there: mipbound.py, a proof). enough(): the cheapest plan seen is proven within the gap,
    and CBC's search, which would only go on looking, is interrupted (solve's on_plan)."""

    def __init__(self, bound, prover, gap: float):
        self.bound, self.prover, self.gap = bound, prover, gap
        self.narrowed: float | None = None  # the cost of the plan last narrowed to
        self.cheapest = math.inf

    def target(self, cost: float) -> float:
        return (1 - self.gap) * cost * (1 + LOG_ROUNDING)

    def __call__(self, cost: float) -> None:
        if cost < self.bound.objective - 1e-6 * max(1.0, abs(self.bound.objective)):
            return  # (below a valid bound: no plan's cost, a line of CBC's log misread; taken, it would stop CBC)
        self.cheapest = min(self.cheapest, cost)
        left, target = deadline.left(), self.target(cost)
        if left < NARROW_MIN_S or target <= self.bound.objective:  # (the LP proves it)
            return
        restart = self.narrowed is not None
        if restart and (cost >= self.narrowed or not _restarts(self.prover, cost, target, left)):
            return
        self.narrowed = cost
        self.prover.narrow(target, self.bound.optimum, left, self.bound.lp_seconds, proving=restart)

    def enough(self) -> bool:
        best = self.prover.read()
        return best is not None and best >= self.target(self.cheapest)


def _restarts(prover, cost: float, target: float, left: float) -> bool:
    """Whether a cheaper plan (`cost`, CBC's log: screening.search's `first`) restarts the prover
    narrowed to its target: when the running child cannot prove it (not narrowed, or capped above
    the plan's cost, so above the optimum) and its bound is within REACH_PER_S x the seconds left of
    the target (a restart starts its root node again)."""
    best = prover.read()
    unreachable = prover.cutoff is None or cost < prover.cutoff
    return unreachable and best is not None and target - best <= REACH_PER_S * left * target
