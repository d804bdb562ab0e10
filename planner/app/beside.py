"""A model CBC does not prove quickly: HiGHS's branch and cut on the same model beside CBC's search
(app/planning.py's search of a model that is not shortlisted).

A shortlisted model's plan is measured against the full model's bound, which a prover child raises
while CBC searches (mipbound.py). A model searched whole has had only CBC's own bound, and CBC's
tree can stall far from the optimum where HiGHS's closes: an expert's four-year plan of two serving
jobs with N+1 and yearly budgets (1,416 columns, 908 integer) ended its 60 s at 956,057 $ NPV with
CBC's bound at 864,236 (gap 9.6%), where HiGHS alone proves 956,057 optimal in 27 s.

So where CBC's search has not proven its plan within the gap asked after HARD_SHARE of the time
limit (at least HARD_MIN_S), the model's own LP relaxation is solved (HiGHS) and a prover child
(mipbound.start) raises its bound on the second core, while CBC searches again from its plan (warm)
with the narrowing of app/narrowing.py: the child narrowed to the plans that would beat CBC's, CBC
stopped once the child proves its plan within the gap. The plan is then measured against the
highest valid bound (the LP's, CBC's own, the child's), and the child's plan is taken where cheaper
(planning._measured, as for a shortlist). A model CBC proves in that first share is planned as
before, by CBC alone, and nothing else runs.
"""

from __future__ import annotations

import dataclasses
import time

from planner.app import narrowing
from planner.data import deadline
from planner.milp import lagrangian, mipbound, prune, screening
from planner.milp.relaxation import available as relaxation_available
from planner.milp.relaxation import relaxation

HARD_SHARE, HARD_MIN_S = 0.25, 2.0
"""CBC searches a model alone for HARD_SHARE of the time left (at least HARD_MIN_S seconds);
unproven then, the prover starts beside its next search, which starts CBC's tree again: at 0.1 a
model CBC proves alone in 5.8 s (benchmarks/speed.py's 8 jobs, limit 45 s) took 8.9 s, at 0.25
6.4 s; the expert's four-year plan is proven in 31 s at 0.1, 41.5 s at 0.25 (60 s limit)"""
POLISH_MIN_S = 1.0
"""the least time left in which a search from the plan (polish) is started"""


WHOLE_MIN_S = 20.0
"""the least time left in which CBC's search of a model searched whole is split (its first share,
then the prover beside it): a search that finds no plan in its share starts again, and on a 5 s
limit the 2 s lost left an infeasible scenario's diagnosis no time (fuzz seed 6767 case 190: exit 4,
where one search of the whole time proved it infeasible and diagnosed it)"""


def possible(s, seconds_left: float) -> bool:
    """Whether a prover can join CBC's search of a model searched whole: CBC the scenario's solver, a
    second core, HiGHS importable, WHOLE_MIN_S left. Where not, CBC searches alone for the whole time."""
    return (s.solver.name == "cbc" and seconds_left >= WHOLE_MIN_S and mipbound.cores() >= mipbound.MIN_CORES
            and relaxation_available())


def first_limit(seconds_left: float) -> float:
    """How long CBC searches alone before a prover joins it."""
    return max(HARD_MIN_S, HARD_SHARE * seconds_left)


def unproven(res, gap: float) -> bool:
    """Whether a search ended on a plan not proven within the gap asked."""
    return res.status == "feasible" and (res.gap is None or res.gap > gap)


def own_bound(fm, res, seconds: float):
    """The bound of a model searched whole, for its prover (prover): its LP relaxation
    solved by HiGHS within `seconds`, raised to CBC's bound (res.bound, valid for this model), as a
    prune.FullBound whose model is the model itself; None where HiGHS cannot solve the LP."""
    started = time.perf_counter()
    lp = relaxation(fm.prob)
    objective = lp.solve(seconds) if lp is not None else float("inf")
    if lp is None or objective == float("inf"):
        return None
    bound = prune.FullBound(objective, {}, fm.pairs, fm, lp_seconds=time.perf_counter() - started, by_highs=True,
                            lp=lp, optimum=lp.optimum(objective), whole=True)
    return prune.raised(bound, res.bound)


def prover(bound):
    """The prover of the full model's bound (mipbound.start) for the time left, or None: no bound,
    no budget, or no core for it."""
    b = deadline.current()
    if b is None or bound.objective is None:
        return None
    lagrange = None if bound.optimum is None else (lagrangian.labels(bound.model, bound.lp), bound.optimum)
    return mipbound.start(bound.lp, b.left(), bound.lp_seconds, lagrange=lagrange, held=bound.held)


def polish(fm, res, seconds: float):
    """HiGHS's search of the searched model from its plan (mipbound.start_search) on the core the
    search has left, while the prover raises the bound (app/planning._measured), or None: no time for it (less
    than a second), no second core. A search that has ended leaves a plan it could not better in
    its own way (CBC stops at the gap asked, of the shortlist's bound, not of the full model's),
    and HiGHS's heuristics from it find cheaper ones: benchmarks/milp.py's 60 generated jobs, seed
    6, CBC's 2,233,835 $/yr became 2,231,590 in 1.7 s on the shortlist (its optimum 2,230,199), and
    the prover's bound then proved it within 1%."""
    if seconds < POLISH_MIN_S or not res.ok:
        return None
    lp = relaxation(fm.prob)
    if lp is None:
        return None
    import numpy as np

    plan = np.zeros(len(lp.column))
    for name, j in lp.column.items():
        plan[j] = res.values.get(name, 0.0)
    return mipbound.start_search(lp, seconds, plan)


def proven_beside(fm, res, seconds: float, limit: float | None):
    """(bound, prover, plan) of a model searched whole that CBC did not prove in its first share
    (the module docstring): the model's own LP bound and its prover (where more than twice
    HARD_MIN_S are left), and CBC's search again from its plan beside it (stopped once the prover proves the plan: narrowing.py); CBC's first plan,
    values reloaded, where the second search found none cheaper; the bound raised to what CBC proved."""
    bound = own_bound(fm, res, seconds) if seconds > 2 * HARD_MIN_S else None  # (time to prove it: a prover)
    found = prover(bound) if bound is not None else None
    first = narrowing.narrower(bound, found, fm.scenario.solver.gap) if found is not None else None
    again = screening.search(fm, time_limit_s=limit, warm=True, first=first)  # (no prover: CBC alone, on)
    if again.ok and again.objective <= res.objective:
        res = total_of(res, again)
    else:
        screening.load_values(fm, res.values)  # (the second search moved them)
    if bound is None:  # (no LP bound of HiGHS's: the plan as CBC measured it)
        return None, found, res
    proved = res.objective * (1 - (res.gap or 0.0)) if res.status == "optimal" else res.bound
    return prune.raised(bound, proved), found, res


def total_of(first, then):
    """`then`, its seconds counted from the first search's start."""
    return dataclasses.replace(then, seconds=first.seconds + then.seconds)
