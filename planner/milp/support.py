"""Step 3 of the screened search (milp/screening.py): a plan with the pools fixed as steps 1-2 left
them, found in the relaxation's own HiGHS object (Relaxation.mip: the model is neither written nor
built again), in two MIPs:

1. The LP's support. The LP with the pools fixed leaves most integer columns at 0 (60 generated
   jobs of benchmarks/milp.py: 50-70 of 1,500-1,800 above 0); with those held at 0 the MIP is a
   small one (a neighbourhood of the LP's point in the manner of RENS, Berthold, "RENS: the optimal
   rounding", Math. Prog. Comp. 2014, with only the zeros fixed: the replicas and systems the LP
   uses may still round either way). HiGHS searches it in SUPPORT_SHARE of the step's time at most.
2. The whole model with the pools fixed, started from that plan, for the rest of the step's time:
   the replicas may move to columns the LP left at 0.

Each plan is checked against every row and bound of the PuLP model (plans.start_plan) before it
is taken. On those 60 jobs (seeds 7, 3, 8; limit 10 s, --explain none, this 2-core machine) the
support's MIP took 0.10, 0.07 and 0.36 s for 1,235,754 (the optimum), 2,140,728 and 3,553,238 $/yr
(0.4% above seed 3's optimum, seed 8's best plan known); the whole model from it 0.21, 0.83 and
0.67 s (seed 3: 2,132,406), against 1.59, 1.28 and 3.68 s from no start, and 1.2-1.9 s through
PuLP's HiGHS interface before this module. On a loaded machine that step had found 15,869,561 $/yr
on seed 7 in the 1.2 s it had (a 93% gap). Rounding the LP's point up instead gave plans 18-20%
dearer than the optimum (every row is a cover, but a rounded pooled replica buys systems whole).
"""

from __future__ import annotations

import dataclasses
import time

from planner.milp.fleet import FleetModel
from planner.milp.plans import start_plan
from planner.milp.relaxation import Relaxation
from planner.milp.solve import SolveResult

SUPPORT_SHARE = 0.5
"""the share of step 3's time the support's MIP may take (it ends in 0.1-0.4 s on 60 jobs)"""
ZERO = 1e-9


def first_plan(fm: FleetModel, lp: Relaxation, fixed, seconds: float, gap: float,
               max_nodes: int | None = None) -> SolveResult | None:
    """The cheapest plan the two MIPs find in `seconds` with the pools fixed (`fixed`: a context
    manager holding them so in the LP), as a feasible SolveResult (cut_short where the time limit,
    not max_nodes, ended a node-limited search), or None where neither finds one or the LP has none."""
    import numpy as np

    start = time.perf_counter()
    with fixed:
        if not np.isfinite(lp.solve()):
            return None
        support = np.abs(lp.point()) > ZERO
        lower, upper = lp.bounds()
    ints = np.asarray(lp.integer, dtype=bool)
    best = point = None
    timed_out = False
    for share, high in ((SUPPORT_SHARE, np.where(ints & ~support, np.minimum(upper, 0.0), upper)), (1.0, upper)):
        left = seconds - (time.perf_counter() - start)
        if left <= 0:
            timed_out = True
            break
        found = lp.mip(lower, high, share * left, gap, point, max_nodes)
        timed_out = timed_out or found.timed_out
        plan, exact = _plan(fm, lp, found.point)
        if plan is not None and (best is None or plan.objective < best.objective):
            best, point = plan, exact
    if best is None:
        return None
    return dataclasses.replace(best, seconds=time.perf_counter() - start, cut_short=timed_out and max_nodes is not None)


def _plan(fm: FleetModel, lp: Relaxation, point) -> tuple[SolveResult | None, object]:
    """The MIP's point as a plan of the model (its integers rounded) where it meets every row and
    bound of the PuLP model (plans.start_plan), and that point; (None, None) otherwise."""
    if point is None:
        return None, None
    import numpy as np


    exact = np.where(np.asarray(lp.integer, dtype=bool), np.round(point), point)
    plan = start_plan(fm, {name: float(exact[j]) for name, j in lp.column.items()})
    return (None, None) if plan is None else (plan, exact)
