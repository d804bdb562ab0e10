"""A shortlist searched while the full model's bound is computed (app/planning.py).

A shortlisted model's search waits on the full model's LP bound: the full model is built and its
LP solved (prune.full_model_bound), and the shortlist is widened with the LP's pairs before CBC
searches it. On 200 generated jobs (benchmarks/milp.py) that takes 9-10 s of a 30 s limit on one
core while the second waits. Here HiGHS's search (mipbound.start_search, its heuristics on)
searches the first shortlist in a child meanwhile. The widened shortlist holds every pair of the
first (fleet.build's keep_pairs only adds pairs), so the child's plan, every variable at its value
and the added ones at 0 (prune.warm_start), is a plan of it: CBC alone starts from it (warm), with
a plan to prune and improve around from its first node; the screened search (milp/screening.py)
takes it for its incumbent where its own first plan is dearer or missing (search_from). Where a
prover starts beside the search as soon as the bound is known (a screened shortlist on two cores),
the child is stopped then, its plan kept.

benchmarks/milp.py's generated jobs on this 2-core machine, --explain none, one draw each, the gap
without -> with it (interleaved): 200 jobs in 30 s, seeds 3-8: 11.05 -> 2.41%, 8.30 -> 2.52, 3.90 ->
2.06, 5.01 -> 1.82, 13.44 -> 4.80, 9.26 -> 2.46. 60 jobs in 10 s, two draws: 1.82 -> 1.05% and 1.11
-> 1.05, 1.96 -> 2.01 and 6.60 -> 2.01, 22.14 -> 4.20 and 4.21 -> 5.63, 1.25 -> 1.21 and 1.41 ->
7.49, 2.26 -> 2.17 and 5.40 -> 2.32, 91.79 -> 3.92 and 13.45 -> 3.64 (seeds 3-8: where the dive's
plan comes late, or as a plan 20x the optimum, the child's stands in).
"""

from __future__ import annotations

import contextlib
import dataclasses

from planner.data import deadline
from planner.milp import mipbound, prune, screening, support
from planner.milp.relaxation import relaxation
from planner.milp.solve import SolveResult


def start(fm, seconds_left: float | None):
    """HiGHS's search of the first shortlist `fm` in a child for the time left, or None where it
    cannot run (mipbound.start_search: one core, no HiGHS, less than a second; no wall clock)."""
    if seconds_left is None or fm.scenario.solver.name != "cbc":
        return None
    return mipbound.start_search(relaxation(fm.prob), seconds_left)


NAME = "highs (branch and cut on the first shortlist, while the full model's bound was computed)"
"""the solver named in a plan that the child found (no later search found a cheaper one)"""


def warmed(child, first, fm) -> SolveResult | None:
    """Stop the child and, where it found a plan of the first shortlist `first`, give the model `fm`
    (the widened shortlist) that plan as its start (prune.warm_start): that plan of fm, or None."""
    if child is None:
        return None
    child.stop()
    found = prune.plan_of(first, child.lp, child.plan, NAME)
    if found is None:
        return None
    prune.warm_start(fm, first, found.values)
    plan = screening.start_plan(fm)
    return None if plan is None else dataclasses.replace(plan, solver=NAME)


def search_from(fm, plan: SolveResult | None) -> dict:
    """screening.search's arguments for a search from `plan` (warmed): the screened search takes it as
    a candidate for its incumbent beside its own first plan (`known`: the dive's plan is the better
    where it has the time, 60 generated jobs seed 3: 2,132,406 against the child's 2,296,596 $/yr);
    CBC alone starts from it (`warm`)."""
    if plan is None:
        return {}
    return {"known": plan} if screening.eligible(fm) else {"warm": True}


POOR = 1.10
"""floored: the first shortlist's plan is replaced where it costs more than this times the full
model's LP bound (or is missing) and a plan of the LP's support is cheaper"""
FLOOR_S, FLOOR_SHARE = 2.0, 0.2
"""the most seconds, and the most of the time left, the support's MIP may take in floored"""


def floored(fm, plan: SolveResult | None, bound: float | None) -> SolveResult | None:
    """CBC's start on a shortlist it searches alone (the screened search packs its own: support.py):
    the first shortlist's plan (warmed), or where that is missing or dearer than POOR x the full LP
    `bound`, a plan of the widened shortlist over the replicas and systems its LP uses
    (support.first_plan, no pools fixed) where cheaper, set as the variables' start. 200 generated
    jobs, limit 30 s: in one draw of seed 8 the child's plan was 30,428,245 $/yr and CBC's search,
    started there, found none cheaper in its 10 s (a 94.9% gap); the support's plan on seeds 3 and
    8 was 9.34 and 6.84 M$/yr (optima near 9.0 and 6.7) after 1.6-1.8 s."""
    b = deadline.current()
    if bound is None or screening.eligible(fm) or (plan is not None and plan.objective <= POOR * bound):
        return plan
    lp = fm.relaxed or relaxation(fm.prob)  # (add_weighted's, where it made one)
    if lp is None:
        return plan
    seconds = min(FLOOR_S, FLOOR_SHARE * b.left()) if b is not None else FLOOR_S
    found = support.first_plan(fm, lp, contextlib.nullcontext(), seconds, fm.scenario.solver.gap)
    if found is None or (plan is not None and found.objective >= plan.objective):
        return plan
    for v in fm.prob.variables():
        v.setInitialValue(found.values.get(v.name, 0.0))
    return found  # (CBC's start only: its plan names CBC)
