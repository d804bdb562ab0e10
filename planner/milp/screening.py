"""The search of a fleet model: a plan found first, the pools it proves unused screened out, then
CBC proves the rest.

A pool is what a plan opens at a fixed price: under N+1, a pool's spare u (one system type's owned
systems at one site in a year, or one demand's rentals of an offer; fleet.define_spare_variables), a
whole idle system;
without spares, an owned offer's purchases in a year (p[o,t] >= 1), a whole system however little
of it is used. The LP relaxation opens many pools a little, and CBC alone spends most of its search
on which pools to open, long before it has a plan to prune with (20 generated N+1 jobs, seed 6: its
first plan after 5 s). This module gives it one, and a smaller model:

1. Dive (LP relaxation in process, milp/relaxation.py): while some pool is partly open in the LP
   (0 < u < 1, or 0 < p < 1), the one whose opening gives the lowest LP is fixed open; the others
   are open where the LP opens them. A set of open pools.
2. Local search over that set: open one more pool, close one, or swap an open one for a closed
   one, each move judged by the LP with every pool fixed open or closed; the best move is taken
   while one lowers that LP (at most _lp_budget LPs in steps 1-2: a work bound, so the answer does
   not depend on the machine's speed; and at most STEPS_SHARE of the search's limit).
3. The incumbent: the MILP with the pools fixed open or closed as that set has them, searched by
   HiGHS in the relaxation's own object, first over the LP's support (support.py).
4. Screening: a pool whose LP when open is above the incumbent's cost C is in no plan cheaper than
   C: it is closed (u = 0, p = 0); a pool whose LP when closed is above C is open in every such
   plan: opened (u = 1, p >= 1). Each probe keeps the pools decided before it (by induction every
   plan cheaper than C satisfies them all), and rounds repeat until none changes (MAX_ROUNDS).
5. CBC on the screened model, with cutoff C, started from the incumbent: it finds a cheaper plan
   (proven within solver.gap, or with its gap) or proves there is none, and then the incumbent is
   the optimum. Its improvement heuristics (RINS, VND: solvers.CBC_OPTIONS; DINS on a shortlist:
   solve) search around a plan, which the cutoff alone does not give them: benchmarks/milp.py's 60 generated jobs, limit
   10 s, --explain none (seeds 3-8, one draw each), plans cheaper on four, dearer on one (seed 7,
   0.17%): seed 6 2,250,223 -> 2,239,183 $/yr, seed 3 2,170,599 -> 2,168,234. The explanations'
   node-limited re-plans (max_nodes) start cold as before, unless they start warm: with the start
   there too, 15 generated N+1 jobs (seed 4) took 9.6 s for the whole command against 8.6 s (three
   draws each), a cost not settled against this machine's spread and not taken.

Valid bound: a plan that uses a closed pool (or leaves an opened one unused) costs more than C,
so every plan cheaper than C is a plan of the screened model; the least of CBC's bound on the
screened model and C bounds every plan of the full model. Nothing is pruned on a heuristic: the
pools closed are proven unused by every plan cheaper than one in hand.

Measured on 30 generated buy-only N+1 fleets of 10-20 jobs (benchmarks/milp.py's generator, seeds
3-12, this 2-core machine): the core solves took 165.8 s in all with CBC alone and 94.0 s this
way, every optimum the same; 20 jobs seed 7: not proven in 60 s (a plan 4.1% dearer) -> proven in
26 s. With the optimum known beforehand as the cutoff they take 69 s: most of what is left is CBC
proving that no cheaper plan exists. The 18 fleets of seeds 3-8 without N+1 (pools: offers
bought): 193.9 -> 137.1 s, every optimum the same; 20 jobs seed 3 23.4 -> 3.4 s, seed 8 not proven
in 60 s -> proven in 10.6 s, but seed 7 34.5 -> 58.1 s (CBC's search of the screened model is not
always the shorter). The explanations' re-planned variants use it too (replan.py): on 20 N+1 jobs
seed 6 the next-best fleet went from $1,824,016/yr, not proven, to the proven $1,682,368/yr,
within the same time.
"""

from __future__ import annotations

import dataclasses
import math
import time
from contextlib import contextmanager

from planner.data import deadline
from planner.data.errors import SolverError
from planner.milp.fleet import FleetModel
from planner.milp.plans import load_values, start_plan
from planner.milp.registry import bounds_held
from planner.milp.relaxation import Relaxation, relaxation
from planner.milp.solve import MIN_LIMIT_S, SolveResult, solve
from planner.milp.support import first_plan

__all__ = ["eligible", "load_values", "pools", "search", "start_plan"]

LP_WORK = 400_000
MIN_LPS = 40
"""LP_WORK / variables LPs for the dive and the local search together, at least MIN_LPS: a work
bound, not a clock, so the answer does not depend on the machine (20 jobs, 1,400 variables: 285
LPs of 2-5 ms; 40 jobs, 3,800 variables: 105 of 8 ms)"""
SWAP_WITH = 4
MAX_ROUNDS = 4
STEPS_SHARE, SCREEN_SHARE = 0.4, 0.6
"""steps 1-2 end once this share of the search's limit has passed, step 4 once SCREEN_SHARE has
(what they have then: the pools opened so far, the best pattern, the pools decided so far, each
valid as it stands), whatever is left of LP_WORK: the work bound keeps the answer the same on any
machine where the limit is generous, the clock keeps a tight one for the plan's own solves. 60
generated jobs, limit 10 s, on a machine about 1.6x slower than the one LP_WORK was set on: the
local search took 1.97 s of a 1.43 s limit and the search ended with no plan (exit 4)."""
MIN_COLUMNS, MIN_COLUMNS_PURCHASES, MAX_COLUMNS = 300, 1000, 5000
"""models outside this many variables are searched by CBC alone: below, CBC alone takes a tenth of
a second and the screened search's second CBC run costs as much (the test suite, of mostly small
plans: 3m17s -> 3m42s of CPU without this floor); above, each LP would cost too much. Without
spares the floor is higher: on the generated fleets of 10 jobs without N+1 (about 700 variables)
the screened search was as often slower as faster (seed 3: 1.1 -> 3.7 s, seed 7: 6.1 -> 2.0 s); on
20 jobs (1,200-1,400) it gains (seed 3: 23.4 -> 3.4 s)"""
REL_TOL = 1e-6
"""a pool is screened out only when its LP bound is above the incumbent's cost by this share (the
LP's own tolerances are far below it)"""
FRACTIONAL = 1e-6
LAST_STEP_MIN_S = 0.5
"""step 5 is not started with less than this left of the search's limit: CBC writing the model,
reading the start and preprocessing take about that (60 generated jobs seed 5: given 0.06 s, it
ran 0.37 s and found nothing cheaper), and a warm start cut short in preprocessing is what
cbcbox's CBC crashed on (cbclog.CRASHED)"""
FIRST_NAME = "highs (the screened search's first plan; cbc's search found none cheaper)"
"""the solver a plan names when step 3's plan is the plan"""


def pools(fm: FleetModel) -> dict:
    """The model's pools, key -> the variable that opens it: the N+1 spares where the model has
    them, else the purchases of each owned offer (p[o,t] >= 1: bought in year t)."""
    return dict(fm.u) if fm.u else dict(fm.p)


def eligible(fm: FleetModel) -> bool:
    columns = len(fm.prob.variables())
    return (len(pools(fm)) >= 2 and fm.scenario.solver.name == "cbc" and not fm.elastic
            and (MIN_COLUMNS if fm.u else MIN_COLUMNS_PURCHASES) <= columns <= MAX_COLUMNS)


def _bounds(var, state: int) -> tuple[float, float | None]:
    """A pool's bounds when open (at least one: a spare held, a system bought) or closed (0)."""
    return (1, var.upBound) if state else (0, 0)


def search(fm: FleetModel, time_limit_s: float | None = None, gap: float | None = None,
           max_nodes: int | None = None, warm: bool = False, spares_only: bool = False,
           first=None, known: SolveResult | None = None) -> SolveResult:
    """The model's plan (milp.solve.solve's result, and its arguments): screened as the module
    docstring says when the model has two pools or more, else one CBC search. max_nodes bounds each
    of the two CBC searches. spares_only: screen N+1 models only (the explanations' re-plans,
    bounded by work and by their share of time: on a model without spares the screened search is
    not reliably the shorter, and on small ones CBC alone is quicker), except from a warm start.
    warm: the variables' initial values are a plan (a lifted cap's re-plan starts from the plan):
    when it meets every row it is the incumbent (steps 1-3 are skipped) and the screened search
    starts from it; else one CBC search from it. first: called with the incumbent's cost once step 3
    has it, then (from a thread) with each cheaper plan's cost CBC's log shows while step 5 runs
    (solve's on_plan): app/narrowing.py narrows the full model's prover to the plans that would beat it.
    known: a plan of the model found before (start_plan's; app/early.py), the incumbent where step 3
    finds none or a dearer one."""
    screened = eligible(fm) and (bool(fm.u) or not spares_only or warm)
    found = start_plan(fm) if screened and warm else None
    lp = relaxation(fm.prob) if screened and (found is not None or not warm) else None
    if lp is None:
        return solve(fm, time_limit_s=time_limit_s, gap=gap, max_nodes=max_nodes, warm=warm)
    start = time.perf_counter()
    limit = time_limit_s or fm.scenario.solver.time_limit_s
    gap = fm.scenario.solver.gap if gap is None else gap

    def left() -> float:
        return max(0.0, limit - (time.perf_counter() - start))

    opens = pools(fm)
    keys = sorted(opens, key=repr)
    root = lp.solve()
    if found is None:
        budget = _Work(_lp_budget(fm), start + STEPS_SHARE * limit)
        pattern = _dive(lp, opens, keys, budget) if math.isfinite(root) else None
        if pattern is None and known is None:
            return _total(solve(fm, time_limit_s=left(), gap=gap, max_nodes=max_nodes), start)
        if pattern is not None:
            pattern = _improve(lp, opens, keys, pattern, budget)
            found = first_plan(fm, lp, _lp_fixed(lp, opens, pattern), min(left(), deadline.left()), gap, max_nodes)
            if found is not None:
                found = dataclasses.replace(found, solver=FIRST_NAME)
        if known is not None and (found is None or known.objective < found.objective):
            found = known  # (the model's values are the plan's from here: load_values before step 5)
        if found is None:  # no plan of whole systems in that set of pools: the search alone
            return _total(solve(fm, time_limit_s=left(), gap=gap, max_nodes=max_nodes), start)
    cost = found.objective
    if first is not None:
        first(cost)
    above = cost + REL_TOL * max(1.0, abs(cost))  # (above the incumbent: CBC may find it again)
    if deadline.left() <= 0 or left() < LAST_STEP_MIN_S:  # no time left to prove it: a feasible plan, cut short
        if deadline.current() is not None and deadline.left() <= max(left(), MIN_LIMIT_S):  # (the command's
            deadline.cut(deadline.current().step or "a solve")  # budget would have stopped it, not this search's)
        final = SolveResult("not-solved", 0.0, None, None, found.solver, cut_short=True)
    else:
        with _pools_fixed(opens, _screen(lp, opens, keys, above, start + SCREEN_SHARE * limit)):
            from_first = warm or max_nodes is None  # (the plan's own search: step 5 starts from the incumbent)
            if from_first:
                load_values(fm, found.values)
            try:
                final = solve(fm, time_limit_s=left(), gap=gap, max_nodes=max_nodes, cutoff=above, warm=from_first,
                              on_plan=first)
            except SolverError:  # (CBC crashed twice: solve._again) the incumbent stands, feasible
                final = SolveResult("not-solved", 0.0, None, None, found.solver)
    return _total(_best(fm, found, final, root, gap), start)


def _best(fm: FleetModel, found: SolveResult, final: SolveResult, root: float, gap: float) -> SolveResult:
    """The plan the two searches leave: the screened search's if it found one no dearer than the
    incumbent; else the incumbent, optimal when the screened search proved no plan cheaper (it
    came back infeasible under the cutoff, or optimal at no lower cost), otherwise feasible with
    its gap against the best valid bound (the LP's, or the screened search's capped at the
    incumbent's cost)."""
    if final.ok and final.objective <= found.objective:
        return final
    load_values(fm, found.values)  # the model's values back to the incumbent's
    if final.status in ("infeasible", "optimal"):
        return dataclasses.replace(found, status="optimal", gap=gap, bound=None, cut_short=False)
    bound = max(root, min(final.bound, found.objective)) if final.bound is not None else root
    short = max(0.0, (found.objective - bound) / abs(found.objective)) if found.objective else None
    return dataclasses.replace(found, status="feasible", gap=short, bound=bound, cut_short=final.cut_short)


def _total(res: SolveResult, start: float) -> SolveResult:
    return dataclasses.replace(res, seconds=time.perf_counter() - start)


def _pools_fixed(opens: dict, fixed: dict):
    """The pools in `fixed` held open (1) or closed (0) for the duration (bounds restored after)."""
    return bounds_held([(opens[k], *_bounds(opens[k], state)) for k, state in fixed.items()])


def _set(lp: Relaxation, var, state: int) -> None:
    lp.fix(var, *_bounds(var, state))


@contextmanager
def _lp_fixed(lp: Relaxation, opens: dict, pattern: dict):
    """The pools held open or closed in the LP as `pattern` has them (freed after)."""
    for k, state in pattern.items():
        _set(lp, opens[k], state)
    try:
        yield
    finally:
        for k in pattern:
            lp.free(opens[k])


@dataclasses.dataclass(frozen=True)
class _Work:
    """Steps 1-2's bound: `lps` LPs in all (counted by the relaxation) and a clock time `end`
    (time.perf_counter), whichever comes first (STEPS_SHARE)."""
    lps: int
    end: float

    def spent(self, lp: Relaxation, more: int = 0) -> bool:
        return lp.solves + more > self.lps or time.perf_counter() >= self.end


def _lp_budget(fm: FleetModel) -> int:
    """LPs the dive and the local search may solve together: LP_WORK over the model's columns
    (an LP's time grows about with them), at least MIN_LPS."""
    return max(MIN_LPS, LP_WORK // max(1, len(fm.prob.variables())))


def _dive(lp: Relaxation, opens: dict, keys: list, budget: _Work) -> dict | None:
    """Step 1: the pools opened one at a time, the cheapest opening first, until none is partly
    open in the LP; past the budget the partly open ones left are opened (more pools open: a plan
    of the LP still). None when the LP has no solution."""
    opened: list = []
    try:
        while True:
            if not math.isfinite(lp.solve()):
                return None
            values = dict(zip(keys, lp.values([opens[k] for k in keys])))
            fractional = [k for k in keys if k not in opened and FRACTIONAL < values[k] < 1 - FRACTIONAL]
            if not fractional or budget.spent(lp, len(fractional)):
                return {k: 1 if k in opened or values[k] > FRACTIONAL else 0 for k in keys}
            cheapest, best = None, math.inf
            for k in fractional:
                if cheapest is not None and budget.spent(lp):
                    break  # (the clock: the cheapest so far is opened, and the next round ends the dive)
                _set(lp, opens[k], 1)
                got = lp.solve()
                lp.free(opens[k])
                if got < best:
                    cheapest, best = k, got
            if cheapest is None:
                return None
            opened.append(cheapest)
            _set(lp, opens[cheapest], 1)
    finally:
        for k in opened:
            lp.free(opens[k])


def _improve(lp: Relaxation, opens: dict, keys: list, pattern: dict, budget: _Work) -> dict:
    """Step 2: best-improvement local search over the open pools, each set judged by the LP with
    every spare fixed to it. A round tries every pool toggled, then each open pool swapped for one
    of the SWAP_WITH closed pools whose opening alone scored best in the toggles."""

    def tried(change: tuple) -> float:
        for k in change:
            _set(lp, opens[k], 1 - pattern[k])
        got = lp.solve()
        for k in change:
            _set(lp, opens[k], pattern[k])
        return got

    with _lp_fixed(lp, opens, dict(pattern)):  # (every pool freed after, as the model has it)
        value = lp.solve()
        while not budget.spent(lp, 1):
            best, move, opening = value, None, []
            for k in keys:
                if budget.spent(lp, 1):
                    break
                got = tried((k,))
                if not pattern[k]:
                    opening.append((got, repr(k), k))
                if got < best - REL_TOL * abs(best):
                    best, move = got, (k,)
            closed = [k for _, _, k in sorted(opening)[:SWAP_WITH]]
            for a in (k for k in keys if pattern[k]):
                for b in closed:
                    if budget.spent(lp, 1):
                        break
                    got = tried((a, b))
                    if got < best - REL_TOL * abs(best):
                        best, move = got, (a, b)
            if move is None:
                return pattern
            pattern = {**pattern, **{k: 1 - pattern[k] for k in move}}
            for k in move:
                _set(lp, opens[k], pattern[k])
            value = best
        return pattern


def _screen(lp: Relaxation, opens: dict, keys: list, above: float, end: float = math.inf) -> dict:
    """Step 4: {spare: 0 or 1} for the pools proven closed or open in every plan cheaper than
    `above` (the incumbent's cost and REL_TOL), those decided by clock time `end` (SCREEN_SHARE)."""
    fixed: dict = {}
    try:
        for _ in range(MAX_ROUNDS):
            changed = False
            for k in keys:
                if k in fixed:
                    continue
                if time.perf_counter() >= end:
                    return fixed
                for state in (1, 0):
                    _set(lp, opens[k], state)
                    got = lp.solve()
                    lp.free(opens[k])
                    if got > above:  # no plan cheaper than the incumbent has the pool so
                        fixed[k] = 1 - state
                        _set(lp, opens[k], 1 - state)
                        changed = True
                        break
            if not changed:
                break
        return fixed
    finally:
        for k in fixed:
            lp.free(opens[k])
