"""From a parsed scenario to a plan: resolve the catalog, build the options, solve the MILP (one
period or years), diagnose an infeasible one, read the answer out and explain it; all of it within
one wall-clock budget (data.deadline: time_limit_s, else solver.time_limit_s), whose cuts the plan
lists in solver.cut_short."""

from __future__ import annotations

from planner.data import consistency as checks
from planner.data import deadline
from planner.data.errors import InfeasibleError, SolverError
from planner.data.scenario import Scenario
from planner.data.years import check_multiyear
from planner.explain.diagnosis import (
    diagnose,
    no_option_diagnosis,
    unplaceable,
)
from planner.explain.narrative import explain_plan, explain_years
from planner.milp import fleet as model
from planner.milp import prune
from planner.milp.readout import read_plan, trimmed
from planner.milp.readout_years import read_multiyear
from planner.milp.solve import SolveResult, solve
from planner.options import build as options

BOUND_SHARE = 0.5
"""A shortlisted model's full LP bound (milp/prune.py: the whole model built and relaxed, about as
long as the options build on 500 jobs) is left out when less than this share of the time limit is
left after the options and the model: the search gets the time, the plan says it was cut."""

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


def solve_scenario(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None):
    """Returns (catalog, options, fleet model, result) for a solved plan, one period or years; raises
    InfeasibleError (exit 3) with a diagnosis, or SolverError (exit 4)."""
    cat, opts = prepare(s, catalog_paths)
    deadline.step("solve")
    fm = model.build(s, cat, opts)
    bound = None
    b = deadline.current()
    if fm.pairs_pruned and b is not None and b.left() < BOUND_SHARE * b.seconds:
        deadline.cut("bound")  # the time left goes to the search; the plan is then never called optimal
        bound = prune.FullBound(None, {}, 0)
    elif fm.pairs_pruned:  # a shortlist: widen it with the full LP's pairs, measure against its bound
        deadline.step("bound")
        bound = prune.full_model_bound(fm)
        deadline.step("solve")
        fm = model.build(s, cat, opts, keep_pairs=bound.support)
    res = solve(fm, time_limit_s=time_limit_s)
    if res.status == "infeasible" and not fm.pairs_pruned:
        deadline.step("diagnosis")
        raise InfeasibleError(diagnose(s, cat, opts, time_limit_s))
    if res.status == "infeasible":  # the shortlist lost every feasible plan: solve every pair
        fm, bound = model.build(s, cat, opts, prune=False), None
        res = solve(fm, time_limit_s=time_limit_s)
        if res.status == "infeasible":
            deadline.step("diagnosis")
            raise InfeasibleError(diagnose(s, cat, opts, time_limit_s))
    require_solution(res, s)
    if bound is not None:
        measured = prune.against_full_model(res, bound, s.solver.gap)
        b = deadline.current()
        left = b.left() if b is not None else time_limit_s or s.solver.time_limit_s
        if measured.status == "feasible" and measured.gap is not None and measured.gap > s.solver.gap \
                and (b is None or left >= BOUND_SHARE * b.seconds):
            deadline.step("bound")  # a tighter valid bound: the full model's root node, with cuts
            bound = prune.root_bound(bound, min(time_limit_s or s.solver.time_limit_s, left / 2))
            measured = prune.against_full_model(res, bound, s.solver.gap)
        res = measured
    return cat, opts, fm, trimmed(fm, res)


def make_plan(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
              explain: bool | str = True) -> dict:
    """The plan for a scenario: one year, or years 1..H when it has per-year settings (the same
    model, read out and explained for its kind); explain: none | brief | full
    (explain.narrative), True for full, False for the bare plan (sweeps and tests)."""
    multi = s.multi_year
    if multi:
        check_multiyear(s)
    with deadline.budget(time_limit_s or s.solver.time_limit_s):
        cat, opts, fm, res = solve_scenario(s, catalog_paths, time_limit_s)
        plan = (read_multiyear if multi else read_plan)(s, fm, res)
        if explain:
            deadline.step("explanations")
            (explain_years if multi else explain_plan)(plan, s, cat, opts, fm, res, time_limit_s,
                                                       "full" if explain is True else explain)
        return with_cuts(plan)


def with_cuts(plan: dict) -> dict:
    """The plan with what the wall-clock budget cut short (solver.cut_short; absent when nothing)."""
    cuts = deadline.cuts()
    if cuts:
        plan["solver"]["cut_short"] = [CUTS.get(c, c) for c in cuts]
    return plan


make_multiyear_plan = make_plan
"""(the name multi-year callers used; make_plan plans either kind)"""
