"""Large scenarios: the shortlist (options/shortlist.py) keeps the MILP small, and this module keeps
it honest.

The full model (every candidate pair) is built and its LP relaxation solved: that is cheap, and
  - its objective is a valid lower bound on the cost of every plan the scenario allows, so the
    shortlisted plan's gap is measured against it (the plan says "optimal" only when that gap is
    within solver.gap, otherwise "feasible" with the gap);
  - the pairs it uses (y, x > 0, or a rental of the pair's offer for that demand) are added to the
    shortlist: what the relaxation finds worth sharing is not pruned by a ranking that prices each
    demand alone.
"""

from __future__ import annotations

import dataclasses

from planner.milp import fleet
from planner.milp.solve import SolveResult, solve

ROOT_SHARE = 0.25
"""share of the solver's time limit the full model's root node (cuts) may take to tighten the bound"""


@dataclasses.dataclass
class FullBound:
    objective: float | None  # USD per year (or NPV); None when the LP did not solve
    support: dict  # demand -> {(option index, offer)} the LP uses
    pairs: int  # candidate pairs in the full model
    model: object = None  # the full model, to tighten the bound at its root node (root_bound)
    basis: str = "LP relaxation"


def full_model_bound(fm: fleet.FleetModel) -> FullBound:
    """The full model's LP relaxation: its objective and the pairs it uses."""
    full = fleet.build(fm.scenario, fm.catalog, fm.options, elastic=fm.elastic, prune=False)
    res = solve(full, gap=0.0, mip=False)
    pairs = sum(map(len, full.serve_pairs.values())) + sum(map(len, full.batch_pairs.values()))
    if not res.ok:
        return FullBound(None, {}, pairs, full)
    used: dict = {}
    rented = {key[:2] for key, v in full.r.items() if res.values.get(v.name, 0.0) > 1e-7}
    for store in (full.y, full.x):
        for (dk, i, oid, _), v in store.items():
            if res.values.get(v.name, 0.0) > 1e-7 or (dk, oid) in rented:
                used.setdefault(dk, set()).add((i, oid))
    return FullBound(res.objective, used, pairs, full)


def root_bound(bound: FullBound, time_limit_s: float) -> FullBound:
    """The full model's bound after CBC's root node (cuts, no branching): still a valid lower bound
    on every plan the scenario allows, and tighter than the LP relaxation's. Kept only if higher."""
    if bound.model is None or bound.objective is None:
        return bound
    res = solve(bound.model, time_limit_s=max(1.0, ROOT_SHARE * time_limit_s), gap=0.0, max_nodes=1)
    if res.bound is not None and res.bound > bound.objective:
        return dataclasses.replace(bound, objective=res.bound, basis="root node of the full model (cuts)")
    return bound


def against_full_model(res: SolveResult, bound: FullBound, gap_asked: float) -> SolveResult:
    """A shortlisted plan's status and gap measured against the full model's bound."""
    if not res.ok or res.objective is None:
        return res
    if bound.objective is None:
        return dataclasses.replace(res, status="feasible", gap=None)
    gap = max(0.0, (res.objective - bound.objective) / max(abs(res.objective), 1e-9))
    proven = res.status == "optimal" and gap <= gap_asked + 1e-12
    return dataclasses.replace(res, status="optimal" if proven else "feasible", gap=max(gap, res.gap or 0.0))
