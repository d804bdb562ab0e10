"""Large scenarios: the shortlist (options/shortlist.py) keeps the MILP small, and this module keeps
it honest.

The full model (every candidate pair) is built, its MIR cuts held back, and its LP relaxation
solved with the cuts it violates added round after round (covers.separated; or by the prover's
child, in a process of its own, full_model_bound's `defer`): that is cheap, and
  - its objective is a valid lower bound on the cost of every plan the scenario allows, so the
    shortlisted plan's gap is measured against it (the plan says "optimal" only when that gap is
    within solver.gap, otherwise "feasible" with the gap);
  - the pairs it uses (y, x > 0, or a rental of the pair's offer for that demand) are added to the
    shortlist: what the relaxation finds worth sharing is not pruned by a ranking that prices each
    demand alone; so are, for the screened search, each demand's NEAREST pairs by the LP's reduced
    costs (those whose use would raise the LP least, rises).
The bound has a share of the time left (app/planning.py, BOUND_STEP_SHARE): HiGHS solves the LP in
process with a time limit, the build stops past it, and a bound that cannot fit is left out and
said cut short (the plan is then feasible, its gap unknown), never paid for with the plan's search.
While the search runs, HiGHS's branch and cut raises the bound in a process of its own
(mipbound.py), read when the plan is measured (raised).
"""

from __future__ import annotations

import dataclasses
import math
import time

from planner.data import deadline
from planner.data.errors import SolverError
from planner.milp import colocation, covers, fleet, screening
from planner.milp.plans import fitted
from planner.milp.pooling import pool_key
from planner.milp.relaxation import available as relaxation_available
from planner.milp.relaxation import relaxation
from planner.milp.solve import SolveResult, solve
from planner.options.shortlist import pair_cost

CBC_LP_OVER_HIGHS = 2.5
"""CBC's time for a full model's LP through PuLP (the MPS file written, the LP, the answer read)
over HiGHS's in process (the LP loaded and solved), measured on benchmarks/milp.py's generated
jobs, this 2-core machine: 0.9x on 60 jobs (15,122 variables: 1.39 s against 1.50 s), 2.1x on 200
(44,655: 13.6 s against 6.6 s), 2.5x on 500 (104,286: 56 s against 22 s). The LP is HiGHS's; the
root node (root_bound) is CBC's and starts by solving the LP again: its time is budgeted with this."""


NEAREST = 12
"""pairs per demand a shortlist searched by screening.py keeps from the full LP's reduced costs
(_nearest). benchmarks/milp.py's 60 generated jobs, limit 10 s, --explain none (this 2-core machine,
one draw each): seed 3 2.68% -> 1.52% ($2,196,923 -> $2,171,300 a year: the screened search's
incumbent could reach pairs its best plan needs), seed 4 1.40% -> 1.35%, seed 5 5.06% -> 5.08% (its
gap was the bound's); 16 per demand: the same on seeds 3-4, 5.76% on seed 5. Once the prover started
from the Lagrangian cuts (mipbound.py), the plans held the gaps back, and 12 per demand (two draws)
against 8: seed 5 $1,035,397 -> $1,015,149 a year (3.88% -> 1.87 / 1.98%; its optimum is
$1,009,718, which uses pairs its jobs rank 10th to 64th), seed 6 $2,245,072 -> $2,239,183 (1.50-2.35%
-> 1.24 / 1.72%), seed 3 $2,168,234 -> $2,168,035, seeds 3, 4 and 8 proven as before, seed 7 the
same plan but 1.15% where 8 proved it in two draws of three (its first plan, and so the prover's
narrowing, comes later); mean gap 1.57-1.72% -> 1.21 / 1.31%. 16: seed 4's plan dearer ($3,506,264,
1.10%), mean 1.21%. Not where CBC alone
searches the shortlist (above screening.MAX_COLUMNS, app/planning.py): on 200 jobs the model grew
and CBC's plans got dearer (seed 4: 1.54% -> 2.81% with 8, 12.3% with 16)."""


@dataclasses.dataclass
class FullBound:
    objective: float | None  # USD per year (or NPV); None when the LP did not solve
    support: dict  # demand -> {(option index, offer)} the LP uses
    pairs: int  # candidate pairs in the full model
    model: object = None  # the full model, to tighten the bound at its root node (root_bound)
    lp_seconds: float = 0.0
    """how long the full model's LP took (HiGHS: loading it too)"""
    by_highs: bool = False
    lp: object = None
    """the full model's LP relaxation in HiGHS (relaxation.Relaxation; None when CBC solved it), for
    mipbound.py's branch and cut"""
    optimum: object = None
    """that LP's optimum (relaxation.Optimum): the prover's model narrowed to the plans cheaper than
    one in hand (mipbound.Prover.narrow)"""
    whole: bool = False
    """the bound of a model searched whole (app/beside.own_bound), not of the full model behind a
    shortlist: its prover's plans are named so (prover_plan)"""
    held: list | None = None
    """the cuts left to the prover's child to separate (full_model_bound's `defer`: cutpool.stripped);
    the LP above is without them"""

    def widened(self, nearest: bool) -> dict:
        """the pairs a shortlist keeps from the full LP: its support, and with `nearest` each
        demand's NEAREST pairs by the LP's reduced costs too (HiGHS's LP only; read while the LP is
        the one solved)"""
        if not nearest or self.lp is None or self.model is None:
            return self.support
        near = _nearest(self.model, self.lp, NEAREST)
        return {dk: self.support.get(dk, set()) | near.get(dk, set()) for dk in self.support.keys() | near.keys()}

    @property
    def cbc_lp_seconds(self) -> float:
        """CBC's expected time for the full model's LP: about one cut pass of its root node, the
        step by which CBC overruns a time limit (it checks the clock between passes)."""
        return self.lp_seconds * (CBC_LP_OVER_HIGHS if self.by_highs else 1.0)


def full_model_bound(fm: fleet.FleetModel, seconds: float | None = None, defer: bool = False) -> FullBound:
    """The full model's LP relaxation: its objective and the pairs it uses. HiGHS in process solves
    it (CBC when highspy is missing): on 500 generated jobs (104,286 variables) CBC through PuLP
    took 56 s and could not be stopped by its time limit, HiGHS 22 s. seconds: the time the bound may
    take (the full model's build and its LP); past it the bound is left out (said cut short: the
    plan is then never called optimal) and the shortlist's search gets the time left. defer: the held
    cuts are left to the prover's child (FullBound.held), which separates them on the LP in a
    process of its own while this one builds the shortlist and searches it (app/planning.py): the
    LP here is solved once, without them, and the shortlist is widened by its reduced costs. The
    rounds took 2.1 s of a 10 s plan of 60 generated jobs (seed 7: LP 1,146,601 -> 1,216,325 $/yr)
    before its search could start; deferred, that search starts about 2 s sooner (benchmarks/milp.py's
    60 jobs, limit 10 s, --explain none, seeds 3-8, interleaved with the code before: gap 1.00 ->
    1.00% (proven both), 2.02 -> 1.42, 5.63 -> 3.19 and 3.98, 7.49 -> 2.13 and 2.42, 5.63 -> 1.51
    (seed 7's optimum, 1,235,754, found), 3.92 and 4.36 -> 4.32 and 4.36). Where the prover starts
    only after the searches (200 jobs: app/planning.py) the cuts stay here: deferred there, the first
    shortlist's search that starts CBC's had 6 s less and three plans of six got dearer (seed 8:
    6,757,820 -> 31,668,811 $/yr)."""
    end = None if seconds is None else time.monotonic() + seconds
    try:
        full = fleet.build(fm.scenario, fm.catalog, fm.options, elastic=fm.elastic, prune=False, until=end,
                           lazy=relaxation_available())
    except SolverError:  # the budget ran out building it: the shortlist's search gets what is left
        deadline.cut("bound")
        return FullBound(None, {}, 0)
    pairs = full.pairs
    started = time.perf_counter()
    lp = relaxation(full.prob)
    if lp is None:
        res = solve(full, gap=0.0, mip=False)
        values, objective, seconds_taken = res.values, res.objective if res.ok else None, res.seconds
        optimum = None
    else:
        objective = covers.separated(full, lp, end) if not defer else lp.solve(None if end is None else end - time.monotonic())
        seconds_taken = time.perf_counter() - started
        stores = [v for store in (full.y, full.x, full.r) for v in store.values()]
        values = dict(zip((v.name for v in stores), lp.values(stores))) if math.isfinite(objective) else {}
        optimum = lp.optimum(objective) if math.isfinite(objective) else None
        objective = objective if math.isfinite(objective) else None
    if objective is None:
        if end is not None and time.monotonic() >= end:  # the time stopped it (not an infeasible LP)
            deadline.cut("bound")
        return FullBound(None, {}, pairs, full)
    used: dict = {}
    rented = {key[:2] for key, v in full.r.items() if values.get(v.name, 0.0) > 1e-7}
    for store in (full.y, full.x):
        for (dk, i, oid, _), v in store.items():
            if values.get(v.name, 0.0) > 1e-7 or (dk, oid) in rented:
                used.setdefault(dk, set()).add((i, oid))
    held = covers.held_for_child(full, lp.column) if defer and lp is not None and full.held_cuts else None
    return FullBound(objective, used, pairs, full, lp_seconds=seconds_taken, by_highs=lp is not None, lp=lp,
                     optimum=optimum, held=held)


def _nearest(full: fleet.FleetModel, lp, keep: int) -> dict:
    """demand -> its `keep` pairs the full model's LP prices closest to entering a plan (rises), ties
    by the pair's standalone cost (options/shortlist.pair_cost). The LP's support is kept besides:
    these are the pairs a plan near the LP's would reach for, which a ranking that prices each
    demand alone misses (60 generated jobs, seed 3: the full model's best plan used 6 pairs outside
    that ranking, each among its demand's 16 nearest)."""
    ranked: dict = {}
    for (dk, i, oid), rise in rises(full, lp).items():
        ranked.setdefault(dk, []).append((rise, i, oid))
    out = {}
    for dk, pairs in ranked.items():
        pairs.sort(key=lambda p: p[0])
        last = pairs[min(keep, len(pairs)) - 1][0]  # (the standalone cost only where rises tie)
        near = [(rise, pair_cost(full.scenario, full.catalog, full.options, dk, i, oid), oid, i)
                for rise, i, oid in pairs if rise <= last]
        out[dk] = {(i, oid) for _, _, oid, i in sorted(near)[:keep]}
    return out


def openers(full: fleet.FleetModel) -> dict:
    """(demand, option, offer, year) -> the integers a plan using that pair holds at 1 or more: its
    replicas y, or its pool's replicas Y (pooling.py); its own rentals r, or its pool's shared
    rentals R; a batch run's placement b on an owned offer, else its share x (continuous: a share of
    a run, not a whole one)."""
    out: dict = {}
    for (dk, i, oid, t), v in full.y.items():
        d = full.options.demands[dk]
        if d.pool:
            found = [full.yp.get(pool_key(full, dk, i, oid, t)),
                     full.rp.get((oid, d.hours_per_day, t))]
        else:
            found = [v, full.r.get((dk, oid, t))]
        out[(dk, i, oid, t)] = [w for w in found if w is not None]
    for key, v in full.x.items():
        out[key] = [full.b.get(key, v)]
    return out


def rises(full: fleet.FleetModel, lp) -> dict:
    """(demand, option, offer) -> the least rise of the full LP's objective (just solved) were the
    pair used in some year: the sum of the reduced costs of its openers at 0 in the LP. A valid lower
    bound on that rise: at an optimal basis every plan's cost is the LP's plus each nonbasic
    variable's reduced cost times its distance from its bound, every term >= 0, and an opener at 0
    that the pair holds at 1 adds at least its reduced cost (a continuous x: its reduced cost per
    whole share, a ranking, not a bound)."""
    opening = openers(full)
    variables = list({v.name: v for vs in opening.values() for v in vs}.values())
    rise = {v.name: max(0.0, rc) if x <= 1e-7 else 0.0
            for v, rc, x in zip(variables, lp.reduced_costs(variables), lp.values(variables))}
    out: dict = {}
    for (dk, i, oid, _), vs in opening.items():
        cost = sum(rise[v.name] for v in vs)
        out[(dk, i, oid)] = min(cost, out.get((dk, i, oid), cost))
    return out


def raised(bound: FullBound, value: float | None) -> FullBound:
    """The bound raised to `value`, another valid lower bound of the full model (mipbound.py's),
    when that is higher."""
    if value is None or bound.objective is None or value <= bound.objective:
        return bound
    return dataclasses.replace(bound, objective=value)


def root_bound(bound: FullBound, time_limit_s: float, short: fleet.FleetModel | None = None,
               incumbent: SolveResult | None = None) -> tuple[FullBound, SolveResult | None]:
    """The full model's bound after CBC's root node (cuts, no branching): still a valid lower bound
    on every plan the scenario allows, and tighter than the LP relaxation's. Kept only if higher.
    With the shortlisted model and its plan (`short`, `incumbent`), the root node starts from that
    plan (warm_start): its heuristics search the full model for a cheaper one, returned second
    (None when it found none cheaper; its gap is then against the full model's own bound).
    While a root node finds a cheaper plan and the time left holds another, the root node runs
    again from that plan: CBC's improvement heuristics (RINS, VND: solvers.CBC_OPTIONS; DINS on a
    shortlist: solve) search the neighbourhood of the plan they start from, and a cheaper plan gives
    them a new one. On 60
    generated jobs of every acquisition mode (benchmarks/milp.py --only large, seed 3, limit 60 s)
    the first root node lowers the shortlisted plan 2,226,927 -> 2,208,662 $/yr, the second to
    2,191,230, the third to 2,185,886 (gap 3.61% -> 2.35%); the fourth finds nothing cheaper."""
    if bound.model is None or bound.objective is None:
        return bound, None
    end = time.perf_counter() + max(1.0, time_limit_s)
    better, start_model, start = None, short, incumbent
    while True:
        warm = start_model is not None and start is not None and start.ok
        if warm:
            warm_start(bound.model, start_model, start.values)
        res = solve(bound.model, time_limit_s=max(1.0, end - time.perf_counter()), gap=0.0, max_nodes=1, warm=warm)
        if res.bound is not None and res.bound > bound.objective:
            bound = dataclasses.replace(bound, objective=res.bound)
        if not (warm and res.ok and res.objective is not None and start.objective is not None
                and cheaper(res.objective, start.objective)):
            return bound, better
        better, start_model, start = res, bound.model, res
        if end - time.perf_counter() < res.seconds:  # another root node would not end in time
            return bound, better


STORES = ("p", "k", "z", "y", "r", "x", "b", "e", "u", "yp", "rp", "api", "unserved", "slack", "w")
"""every variable store of a fleet model (registry.Registry, model.FleetModel), keyed alike in a
shortlisted and a full model of the same scenario"""


def warm_start(full: fleet.FleetModel, short: fleet.FleetModel, values: dict) -> None:
    """Give every variable of the full model its value in the shortlisted model's plan (0 where the
    shortlist has no such variable: a pair it left out), clipped to the variable's bounds and
    integers rounded: a feasible start, since the full model only adds pairs to the shortlist's."""
    for store in STORES:
        mine = getattr(short, store)
        for key, v in getattr(full, store).items():
            sv = mine.get(key)
            v.setInitialValue(fitted(v, values.get(sv.name, 0.0) if sv is not None else 0.0))
    colocation.settle(full)  # (a shortlist with one place left for a job has no w to copy)


def prover_plan(bound: FullBound, plan: tuple[float, object] | None) -> SolveResult | None:
    """The prover's cheapest plan (mipbound.Prover.incumbent: each column of the full model's LP,
    bound.lp) as a plan of the full model (bound.model): plan_of; named as the prover of a model
    searched whole where bound.whole (app/beside.py), else as the prover beside a shortlist's search
    (the model then searched, after planning._prover_instead, is the full model, its name the same)."""
    return plan_of(bound.model, bound.lp, plan, WHOLE_PROVER_NAME if bound.whole else PROVER_NAME)


def plan_of(model: fleet.FleetModel | None, lp, plan: tuple[float, object] | None, solver: str) -> SolveResult | None:
    """A child's cheapest plan (mipbound.Prover.incumbent: each column of `lp`, model's LP
    relaxation) as a plan of `model`, integers rounded: a SolveResult named `solver` when it meets
    every row and bound (screening.start_plan's check and objective), else None."""
    if plan is None or model is None or lp is None:
        return None
    x, values = plan[1], {}
    for v in model.prob.variables():
        j = lp.column.get(v.name)
        if j is None or j >= len(x):
            return None
        values[v.name] = float(fitted(v, float(x[j])))
    found = screening.start_plan(model, values)  # (the model's own values untouched)
    return None if found is None else dataclasses.replace(found, solver=solver)


def cheaper(cost: float, than: float) -> bool:
    """Whether a plan of `cost` is cheaper than one of `than` by more than the solvers' tolerance (a
    millionth of it): a plan found again, or rounded, is not taken for a cheaper one."""
    return cost < than - 1e-6 * max(1.0, abs(than))


PROVER_NAME = "highs (branch and cut on every pair, beside cbc's search of a shortlist)"
"""the solver named in a plan that the prover found (prover_plan)"""
WHOLE_PROVER_NAME = "highs (branch and cut beside cbc's search)"
"""the solver named in a plan that the prover of a model searched whole found (app/beside.py)"""
SEARCHER_NAME = "highs (branch and cut on the shortlist, beside cbc's search of it)"
"""the solver named in a plan that the second search of a shortlist found (mipbound.start_search)"""
POLISH_NAME = "highs (branch and cut from the plan found first: cbc's, or the prover's where cbc found none)"
"""the solver named in a plan that HiGHS's search from the search's plan found (app/planning._polish)"""


def against_full_model(res: SolveResult, bound: FullBound, gap_asked: float) -> SolveResult:
    """A plan's status and gap measured against the full model's bound, the best valid bound known
    (its LP relaxation, or the highest of its root nodes'). The solve's own gap is not kept: it is
    against a shortlisted model's bound (no bound on plans outside the shortlist) or against one
    root node's, which the full model's bound already holds or beats. A plan within the gap asked of
    that bound is optimal (proven: no plan the scenario allows is cheaper by more), whichever search
    found it and however it ended."""
    if not res.ok or res.objective is None:
        return res
    if bound.objective is None:
        return dataclasses.replace(res, status="feasible", gap=None)
    gap = max(0.0, (res.objective - bound.objective) / max(abs(res.objective), 1e-9))
    proven = gap <= gap_asked + 1e-12
    return dataclasses.replace(res, status="optimal" if proven else "feasible", gap=gap)
