"""A shortlist searched while the full model's bound is computed (app/planning.py).

A shortlisted model's search waits on the full model's LP bound: the full model is built and its
LP solved (prune.full_model_bound), and the shortlist is widened with the LP's pairs before CBC
searches it. On 200 generated jobs (benchmarks/milp.py) that takes 9-10 s of a 30 s limit on one
core while the second waits. Here HiGHS's search (mipbound.start_search, its heuristics on)
searches the first shortlist in a child meanwhile. The widened shortlist holds every pair of the
first (fleet.build's keep_pairs only adds pairs), so the child's plan, every variable at its value
and the added ones at 0 (prune.warm_start), is a plan of it: CBC's search starts from it (warm),
with a plan to prune and improve around from its first node.

Only where the child would not take a core something else needs: two cores or more, the bound to
be computed, and, on two cores, no prover started beside the search as soon as the bound is known
(a screened shortlist's: the child is stopped then and its plan kept, as here).
"""

from __future__ import annotations

from planner.milp import mipbound, prune
from planner.milp.relaxation import relaxation


def start(fm, seconds_left: float | None):
    """HiGHS's search of the first shortlist `fm` in a child for the time left, or None where it
    cannot run (mipbound.start_search: one core, no HiGHS, less than a second; no wall clock)."""
    if seconds_left is None or fm.scenario.solver.name != "cbc":
        return None
    return mipbound.start_search(relaxation(fm.prob), seconds_left)


def warmed(child, first, fm) -> bool:
    """Stop the child and, where it found a plan of the first shortlist `first`, give the model `fm`
    (the widened shortlist) that plan as its start (prune.warm_start); whether it did."""
    if child is None:
        return False
    child.stop()
    found = prune.plan_of(first, child.lp, child.plan, prune.SEARCHER_NAME)
    if found is None:
        return False
    prune.warm_start(fm, first, found.values)
    return True
