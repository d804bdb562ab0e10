"""From a parsed scenario to a plan: resolve the catalog, build the options, solve the MILP (one
period or years), diagnose an infeasible one, read the answer out and explain it; all of it within
one wall-clock budget (data.deadline: time_limit_s, else solver.time_limit_s), whose cuts the plan
lists in solver.cut_short."""

from __future__ import annotations

import dataclasses
import time

from planner.app import beside, early, narrowing
from planner.data import consistency as checks
from planner.data import deadline
from planner.data.errors import InfeasibleError, SolverError
from planner.data.scenario import Scenario
from planner.data.years import check_multiyear
from planner.explain import narrative
from planner.explain.diagnosis import (
    diagnose,
    no_option_diagnosis,
    unplaceable,
)
from planner.explain.narrative import explain_plan, explain_years
from planner.explain.replan import OWN_TIME
from planner.milp import fleet as model
from planner.milp import covers, lagrangian, mipbound, prune, screening
from planner.milp.readout import read_plan, trimmed
from planner.milp.readout_years import read_multiyear
from planner.milp.relaxation import relaxation
from planner.milp.solve import SolveResult
from planner.options import build as options

BOUND_SHARE = 0.5
"""A shortlisted model's full LP bound (milp/prune.py: the whole model built and relaxed, about as
long as the options build on 500 jobs) is left out when less than this share of the time limit is
left after the options and the model: the search gets the time, the plan says it was cut."""

BOUND_STEP_SHARE = 0.6
"""The share of the time left that the full LP bound may take (the full model's build, then its LP:
prune.full_model_bound); past it the bound is left out and said cut short. Not started when it is
expected to take longer (_full_bound_s): 500 generated jobs, limit 60 s, used to spend 75 s on the
bound (CBC's LP of the full model could not be stopped) and then had no time left for a plan (exit
4 after 88 s). The rest, at least 40%, is the search's, which must find a plan: at 80%, the 500
jobs' bound fitted and the search, left 8 s, ended on a plan 5% dearer or on none."""
BOUND_S_10K, BOUND_GROWTH = 2.6, 1.25
"""the full LP bound's time (the full model built, its LP loaded and solved) for 10,000 candidate
pairs, and how it grows with them (seconds = BOUND_S_10K x (pairs / 10,000) ** BOUND_GROWTH),
measured on benchmarks/milp.py's generated jobs (seed 3, this machine): 2.6 s for 9,917 pairs
(60 jobs), 10.4 s for 32,501 (200: 11.5 by the formula), 37.5 s for about 83,000 (500)"""

LAGRANGIAN_BESIDE_SHARE = 0.6
"""Where no prover starts with the search (the second search holds its core: 200 generated jobs
and more on two cores), the full model's Lagrangian bound (milp/lagrangian.py) runs in a thread
beside the search for this share of the time left, and the plan is measured against it too.
benchmarks/milp.py's 200 generated jobs, limit 30 s, --explain none, seeds 3-8 (one draw each),
the plan's gap without -> with it: 3.06 -> 3.01%, 2.39 -> 1.71%, 2.60 -> 2.49%, 2.92 -> 2.97%,
4.58 -> 2.96%, 2.78 -> 2.18% (mean 3.06 -> 2.55%; the plans themselves move with the load). Computed
before the search instead (0.15 of the time left), the search lost that time: mean 2.68%. Its
cuts are added to the full LP before the prover that follows the search starts. Where the prover
runs beside the search (60 jobs), its child computes the cuts itself (milp/mipbound.py): a third
process on two cores, this thread, moved the gaps both ways (seed 5 4.38 -> 5.00%, seed 6 2.63 ->
2.50%)."""

SEARCHES_SHARE = 0.7
"""Where a second search holds the prover's core (200 generated jobs and more on two cores), the two
searches of the shortlist get this share of the time left, and the prover that follows them (from
the Lagrangian cuts) the rest, CBC's root node not fitting there. benchmarks/milp.py's 200 jobs,
limit 30 s, --explain none, seeds 3-8, the gap with the root's share (0.9, the prover left about
1.5 s) -> 0.7: 3.03 -> 3.01%, 1.71 -> 1.63%, 2.48 -> 2.36%, 3.03 -> 2.89%, 2.94 -> 2.83%, 2.19 ->
1.81% (mean 2.56 -> 2.42%); limit 60 s, seeds 3, 6, 8: 1.80 -> 1.48%, 1.35 -> 1.34%, 1.54 ->
1.60%. At 0.5 the plans were dearer (seed 8: $6,900,823 against $6,666,480; mean 3.19%)."""

SHORTLIST_SHARE = 0.5
"""Of the time left once the full model's LP bound is known, the share the shortlisted model's
search may take when the plan has a wall-clock budget: the rest goes to the full model's root node
(ROOT_SHARE of what is left then), whose bound is what the plan's gap is measured against. When what
would be left could not hold a root node (_root_fits), the search gets the root node's share of the
time instead (200 generated jobs, limit 30 s, --explain none: the search had 5.3 s, the root node did
not run and the command ended at 24 s of 30)."""
SEARCH_OVERRUN_S = 1.0
"""how far past its limit the shortlisted search may end (CBC checks its clock between nodes; 0.5 s
on 200 generated jobs), set aside when deciding whether a root node fits after it: without it, 200
jobs seed 3 with 60 s found after the search that the root node no longer fitted, and ended at
35 s with 25 s unused"""
ROOT_SHARE = 0.6
ROOT_SHARE_ALONE = 0.9
"""ROOT_SHARE when no explanations follow the solve (--explain none): only the readout and the
verifier are left to run, so the root nodes may take nearly all of the time left"""
ROOT_SHARE_UNBUDGETED = 0.25
"""share of the solver's time limit the full model's root node may take when the solve has no
wall-clock budget (solve_scenario called outside make_plan: tests, sweeps)"""
READOUT_S_PER_COLUMN = 1.6e-4
"""time set aside, per column of the model searched, for what follows the search (the second
search's plan read and checked, the plan trimmed, read out and verified, what explanations fit) and
for CBC's overrun past its limit: 2,000 generated jobs (benchmarks/milp.py --only scale), 61,697
columns: 6.4-8.2 s from the search's end to the command's, the search ending up to 2.2 s past its
limit (the command ran 67 s against its limit of 60 s before this time was set aside, 62.5-63.7 s
with 1.2e-4, 61.0 s with this; 62.1 s in one draw with 1.8e-4: the rest is the run's own spread)"""
ROOT_MIN_S = 2.0
"""the full model's root node is not started with less time than this for it, nor with less than its
LP took (a root node solves the LP first: 500 generated jobs, LP 7.5 s, a root node given 2.4 s
ran 8.6 s past it and found nothing)"""

CUTS = {"solve": "the MILP search (the plan is the best found in time: feasible, not proven optimal)",
        "bound": "the full model's LP bound (the shortlisted plan is not proven optimal; its gap is unknown)",
        "explanations": "the explanations (the prices, why-not bounds and re-planned alternatives the "
                        "time left could not cover are missing)",
        "diagnosis": "the diagnosis", "gap": "the LP re-solve that bounds the solver's gap"}


def prepare(s: Scenario, catalog_paths: tuple[str, ...] = ()):
    """The scenario's catalog and options; exit 3 at once if some job has no option at all."""
    deadline.step("options")
    cat = checks.resolve(s, catalog_paths)
    opts = options.build(s, cat)
    missing = unplaceable(opts)
    if missing and s.budget.mode != "max-coverage":
        raise InfeasibleError(no_option_diagnosis(missing, opts, s, cat))
    return cat, opts


def require_solution(res: SolveResult, s: Scenario) -> None:
    """Exit 4 unless the solver returned a plan (infeasibility is diagnosed by the caller)."""
    b = deadline.current()
    if not res.ok and b is not None and "solve" in b.cuts:
        ran = (f"the solver found no feasible plan in the {res.seconds:.1f} s left" if res.seconds >= 0.05
               else "no time was left for the solver")
        raise SolverError(f"no plan within the time limit of {b.seconds:g} s: {ran} after "
                          f"{b.elapsed() - res.seconds:.1f} s of building the options and the model.\n"
                          "    To fix: raise --time-limit (or solver.time_limit_s in the scenario), or split the "
                          "scenario")
    if not res.ok:
        raise SolverError(f"no plan within the solver's limits (status: {res.status}).\n"
                          f"    To fix: raise solver.time_limit_s (now {s.solver.time_limit_s:g} s) "
                          "or solver.gap in the scenario")


def solve_scenario(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
                   explained: bool = True):
    """Returns (catalog, options, fleet model, result) for a solved plan, one period or years; raises
    InfeasibleError (exit 3) with a diagnosis, or SolverError (exit 4). explained: explanations
    follow (they share the time limit)."""
    cat, opts = prepare(s, catalog_paths)
    deadline.step("solve")
    fm = model.build(s, cat, opts, weighted=False)  # (a shortlist is built again below: its weighted covers then)
    first = fm
    bound = None
    b = deadline.current()
    if fm.pairs_pruned and b is not None and (b.left() < BOUND_SHARE * b.seconds
                                              or _full_bound_s(fm) > BOUND_STEP_SHARE * b.left()):
        deadline.cut("bound")  # the time left goes to the search; the plan is then never called optimal
        bound = prune.FullBound(None, {}, 0)
    prover = searcher = lagrange = child = start = None
    try:
        if fm.pairs_pruned and bound is None:  # a shortlist: widen it with the full LP's pairs, measure against its bound
            child = early.start(fm, b.left() if b is not None else None)
            deadline.step("bound")
            screened = screening.eligible(fm)  # nearest pairs only for the screened search (prune._nearest)
            now = screened or mipbound.cores() >= 3  # (the prover starts once the bound is in)
            defer = b is not None and now and mipbound.cores() >= mipbound.MIN_CORES
            bound = prune.full_model_bound(fm, BOUND_STEP_SHARE * b.left() if b is not None else None, defer)
            deadline.step("solve")  # (defer: the prover below separates the cuts, in a process of its own)
            if bound.objective is not None:
                keep = bound.widened(screened)
                if now:  # no second search to share its core: start it now
                    if child is not None and mipbound.cores() < 3 and not defer:
                        child.stop()  # (its core is the prover's; its plan is kept)
                    # (deferred, the bound ends 2 s sooner and the child runs on until the shortlist is
                    # built: stopped here, its plan, the search's fallback, was 15.7 M$/yr against
                    # 3.65 M$/yr in 2 of 3 draws of 60 generated jobs seed 8, limit 10 s: 94% gaps)
                    prover = beside.prover(bound)
                elif bound.optimum is not None:  # (an LP of HiGHS's: its duals)
                    seconds = LAGRANGIAN_BESIDE_SHARE * (b.left() if b is not None else time_limit_s or s.solver.time_limit_s)
                    lagrange = lagrangian.Beside(bound.model, bound.lp, bound.optimum, seconds)
                fm = model.build(s, cat, opts, keep_pairs=keep)
                if screened and not screening.eligible(fm):
                    fm = model.build(s, cat, opts, keep_pairs=bound.support)
            start, child = early.warmed(child, first, fm), None  # (its plan: the search's start)
            start = early.floored(fm, start, bound.objective)  # (or the LP's support's, where that is poor)
        if fm is first:  # (the model searched as built: not shortlisted, or its bound cut)
            covers.add_weighted(fm)
        b = deadline.current()
        searcher = _second_search(fm, b) if (prover is None and start is None) or mipbound.cores() >= 3 else None
        # (with a plan of the first shortlist to start from, the second core is the prover's: _second_search)
        if prover is None and bound is not None and (searcher is None or mipbound.cores() >= 3):
            prover = beside.prover(bound)  # the full model's bound raised apart
        return _searched(s, cat, opts, fm, bound, prover, time_limit_s, explained, searcher, lagrange, start)
    finally:
        for started in (prover, searcher, lagrange, child):
            if started is not None:
                started.stop()


def _second_search(fm, b):
    """HiGHS's search of a large shortlist beside CBC's (mipbound.start_search), where CBC alone
    searches it (above the screened search's size, screening.MAX_COLUMNS), or None. On a
    machine of two cores it takes the prover's core until CBC's search ends, and the prover starts
    then (_searched): on 200 generated jobs the plans, not the bound, leave most of the gap, and
    CBC's and HiGHS's searches are each the better on some. Measured and not taken: this search for
    half the time, then the prover (limit 30 s, --explain none, one draw each: seed 3 4.39% -> 5.15%,
    a dearer plan, seed 4 2.19% -> 2.25%, seed 5 2.95% -> 2.72%). Not started where the first
    shortlist's plan (app/early.py) starts CBC's search: the prover takes that core from the start
    (200 jobs, limit 30 s, seeds 3-8, two draws on a machine about 1.6x slower than the one above:
    mean gap 2.79 -> 2.61% and 2.85 -> 2.46%; seed 8 4.22 -> 2.47%, seed 5 2.05 -> 1.31%, seeds 3, 4
    and 6 within 0.13% either way)."""
    if not fm.pairs_pruned or b is None or fm.scenario.solver.name != "cbc" or len(fm.prob.variables()) <= screening.MAX_COLUMNS:
        return None
    return mipbound.start_search(fm.relaxed or relaxation(fm.prob), b.left())  # (add_weighted's, where it made one)


def _searched(s: Scenario, cat, opts, fm, bound, prover, time_limit_s, explained: bool, searcher=None, lagrange=None,
              start=None):
    """solve_scenario's search of the (shortlisted) model, and its plan measured against the full
    model's bound: its LP's, raised by CBC's root node and by the prover's branch and cut
    (mipbound.py: waited on while the plan's gap is above the one asked, then stopped; its own plan,
    when cheaper, is the plan)."""
    b = deadline.current()
    short_limit = time_limit_s
    share = ROOT_SHARE if explained else ROOT_SHARE_ALONE
    if fm.pairs_pruned and b is not None and bound.objective is not None:
        short_limit = max(1.0, SHORTLIST_SHARE * b.left())  # the rest: the full model's root (below)
        if not _root_fits(share * (b.left() - short_limit - SEARCH_OVERRUN_S), bound.cbc_lp_seconds):
            short_limit = max(1.0, share * b.left())  # no root node would fit after it: its time too
        if searcher is not None and prover is None:  # the prover follows the two searches: its share
            short_limit = max(1.0, SEARCHES_SHARE * b.left())
    reserve = READOUT_S_PER_COLUMN * len(fm.prob.variables())

    def within(limit: float | None) -> float | None:
        """a search's limit within the time left less the plan's readout (reserve)"""
        if b is None:
            return limit
        room = max(1.0, b.left() - reserve)
        return room if limit is None else min(limit, room)

    whole = bound is None and b is not None and beside.possible(s, b.left())  # (not shortlisted: CBC alone, first)
    first_s = beside.first_limit(b.left()) if whole else short_limit
    res = screening.search(fm, time_limit_s=within(first_s), first=narrowing.narrower(bound, prover, s.solver.gap),
                           **early.search_from(fm, start))
    own = late = None  # (children started here: stopped however this ends)
    try:
        if whole and beside.unproven(res, s.solver.gap) and deadline.left() > ROOT_MIN_S + reserve:  # a hard model:
            bound, prover, res = beside.proven_beside(fm, res, b.left() - reserve, within(time_limit_s))
            own = prover  # (HiGHS's prover joins CBC's next search)
        elif whole and res.status == "not-solved" and deadline.left() > ROOT_MIN_S + reserve:
            res = beside.total_of(res, screening.search(fm, time_limit_s=within(time_limit_s)))  # no plan yet: the rest
        if not res.ok and res.status == "not-solved" and short_limit != time_limit_s and deadline.left() > ROOT_MIN_S + reserve:
            res = screening.search(fm, time_limit_s=within(time_limit_s))  # no plan in the search's share: it gets the root's too
        if searcher is not None:
            res = _cheaper(fm, res, searcher)
        if not res.ok and res.status == "not-solved" and prover is not None:
            fm, res = _prover_instead(fm, res, bound, prover)
        if res.status == "infeasible" and not fm.pairs_pruned:
            deadline.step("diagnosis")
            raise InfeasibleError(diagnose(s, cat, opts, time_limit_s))
        if res.status == "infeasible":  # the shortlist lost every feasible plan: solve every pair
            fm, bound = model.build(s, cat, opts, prune=False), None
            res = screening.search(fm, time_limit_s=time_limit_s)
            if res.status == "infeasible":
                deadline.step("diagnosis")
                raise InfeasibleError(diagnose(s, cat, opts, time_limit_s))
        require_solution(res, s)
        if bound is not None and lagrange is not None and bound.lp is not None:
            found = lagrange.result()  # (its cuts for the late prover below: it starts from their bound)
            bound = prune.raised(bound, found.value)
            bound.lp.add_array_rows(found.rows)
        if bound is not None and prover is None and searcher is not None and bound.objective is not None:
            prover = late = mipbound.start(bound.lp, deadline.left(), bound.lp_seconds,  # the second search's core is
                                           (1 - s.solver.gap) * res.objective, bound.optimum)  # free: narrowed (narrowing.py)
        return _measured(s, cat, opts, fm, res, bound, prover, time_limit_s, share)
    finally:
        for child in (late, own):
            if child is not None:
                child.stop()


def _measured(s: Scenario, cat, opts, fm, res, bound, prover, time_limit_s, share: float):
    """_searched's plan measured against the full model's bound: CBC's root node on it from the
    plan, the prover waited on and stopped, the cheaper of their plans taken."""
    if bound is not None:
        searched = res.seconds + bound.lp_seconds  # the plan's solve: the shortlist's, the full LP, the roots
        if prover is not None:  # (what it proved already: no root node for a plan proven within the gap)
            bound = prune.raised(bound, prover.read())
        measured = prune.against_full_model(res, bound, s.solver.gap)
        b = deadline.current()
        root_s = share * b.left() if b is not None else ROOT_SHARE_UNBUDGETED * (time_limit_s or s.solver.time_limit_s)
        if measured.status == "feasible" and measured.gap is not None and measured.gap > s.solver.gap \
                and fm.pairs_pruned and _root_fits(root_s, bound.cbc_lp_seconds):  # (a model searched whole: CBC's had its root)
            root_s -= bound.cbc_lp_seconds  # (CBC's overrun past its limit: one cut pass, about one LP)
            deadline.step("bound")  # a tighter valid bound: the full model's root node, with cuts,
            started = time.perf_counter()
            bound, better = prune.root_bound(bound, root_s, fm, res)  # started from the plan found
            searched += time.perf_counter() - started
            if better is not None:  # its heuristics found a cheaper plan among every pair: plan that
                fm, res = bound.model, better
        if prover is not None:
            bound = prune.raised(bound, prover.read())
            b = deadline.current()
            if prune.against_full_model(res, bound, s.solver.gap).status == "feasible" and b is not None:
                started = time.perf_counter()  # the search is done, the gap is not: the prover raises
                polish = beside.polish(fm, res, share * b.left())  # the bound on (root's share), and HiGHS
                try:  # searches from the plan
                    prover.wait(s.solver.gap, res.objective, share * b.left(), polish)
                finally:
                    if polish is not None:
                        polish.stop()  # (its plan read: _cheaper below takes it)
                if polish is not None:
                    res = _cheaper(fm, res, polish, prune.POLISH_NAME)
                searched += time.perf_counter() - started
            bound = prune.raised(bound, prover.stop())
            dearer = prover.plan is None or not prune.cheaper(prover.plan[0], res.objective) or _late(fm, bound)
            found = None if dearer else prune.prover_plan(bound, prover.plan)  # (checked only if cheaper:
            if found is not None and prune.cheaper(found.objective, res.objective):  # 0.2 s on 60 jobs)
                fm, res = bound.model, found  # the prover's branch and cut found a cheaper plan: plan that
                screening.load_values(fm, res.values)
        measured = prune.against_full_model(res, bound, s.solver.gap)
        res = dataclasses.replace(measured, seconds=searched)
    return cat, opts, fm, trimmed(fm, res)


def _prover_instead(fm, res, bound, prover):
    """(model, plan): the prover's cheapest plan so far, of the full model, where the search found
    none in its time (a slow machine: 60 generated jobs, limit 10 s, on one about 1.6x slower than
    this module's shares were set on, ended with no plan while the prover beside it held one);
    else (fm, res) as they are."""
    found = prune.prover_plan(bound, prover.incumbent())
    if found is None:
        return fm, res
    screening.load_values(bound.model, found.values)
    return bound.model, dataclasses.replace(found, seconds=res.seconds)


def _late(fm, bound) -> bool:
    """Whether the time left is too short to read out a plan of the full model (READOUT_S_PER_COLUMN
    of its columns) behind a shortlist: the prover's plan is then left, its bound kept. 200
    generated jobs, limit 30 s: a prover's plan found in the last seconds was read out on the full
    model's 45,000 columns, and the command ended at 36.7 s."""
    b = deadline.current()
    return fm.pairs_pruned > 0 and b is not None and b.left() < READOUT_S_PER_COLUMN * len(bound.model.prob.variables())


def _cheaper(fm, res, searcher, name: str = prune.SEARCHER_NAME):
    """CBC's plan, or the second search's (stopped now) when it found a cheaper one, or one where
    CBC found none; the model's values follow the plan taken."""
    searcher.stop()
    found = prune.plan_of(fm, searcher.lp, searcher.plan, name)
    if found is None or (res.ok and not prune.cheaper(found.objective, res.objective)):
        return res
    screening.load_values(fm, found.values)
    return dataclasses.replace(found, seconds=res.seconds)


def _full_bound_s(fm) -> float:
    """The full LP bound's expected time from the full model's candidate pairs (BOUND_S_10K)."""
    return BOUND_S_10K * ((fm.pairs + fm.pairs_pruned) / 10_000) ** BOUND_GROWTH


def _root_fits(seconds: float, lp_seconds: float) -> bool:
    """Whether `seconds` hold the full model's root node: ROOT_MIN_S and its LP (which it solves
    again) once CBC's overrun of one cut pass, about one LP, is set aside."""
    return seconds - lp_seconds >= max(ROOT_MIN_S, lp_seconds)


def make_plan(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
              explain: bool | str = True) -> dict:
    """The plan for a scenario: one year, or years 1..H when it has per-year settings (the same
    model, read out and explained for its kind); explain: none | brief | full
    (explain.narrative), True for full, False for the bare plan (sweeps and tests)."""
    multi = s.multi_year
    check_multiyear(s)  # (a one-year plan's budget.years too: a year past its horizon is an error, not ignored)
    with deadline.budget(time_limit_s or s.solver.time_limit_s):
        cat, opts, fm, res = solve_scenario(s, catalog_paths, time_limit_s, explained=explain not in (False, "none"))
        plan = (read_multiyear if multi else read_plan)(s, fm, res)
        if explain:
            deadline.step("explanations")
            (explain_years if multi else explain_plan)(plan, s, cat, opts, fm, res, time_limit_s,
                                                       "full" if explain is True else explain)
        return with_cuts(plan)


def with_cuts(plan: dict) -> dict:
    """The plan with what the wall-clock budget cut short (solver.cut_short; absent when nothing),
    and solver.explanations_stopped when the explanations' own share of time (as long as the plan's
    search, narrative.milp_budget), not the time limit, left re-planned alternatives out."""
    said = deadline.cuts()
    cuts = [c for c in said if c != OWN_TIME]
    if cuts:
        plan["solver"]["cut_short"] = [CUTS.get(c, c) for c in cuts]
    if OWN_TIME in said:
        plan["solver"]["explanations_stopped"] = (
            "the re-planned alternatives had as long as the plan's own search took (at least "
            f"{narrative.EXPLAIN_FLOOR_S:g} s); those not finished in that time show the LP relaxation's "
            "bound or the best fleet found so far")
    return plan


make_multiyear_plan = make_plan
"""(the name multi-year callers used; make_plan plans either kind)"""
