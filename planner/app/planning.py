"""From a parsed scenario to a plan: resolve the catalog, build the options, solve the MILP (one
period or years), diagnose an infeasible one, read the answer out and explain it."""

from __future__ import annotations

from planner.data import consistency as checks
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


def prepare(s: Scenario, catalog_paths: tuple[str, ...] = ()):
    """The scenario's catalog and options; exit 3 at once if some job has no option at all."""
    cat = checks.resolve(s, catalog_paths)
    opts = options.build(s, cat)
    missing = unplaceable(opts)
    if missing and s.budget.mode != "max-coverage":
        raise InfeasibleError(no_option_diagnosis(missing, opts, s, cat))
    return cat, opts


def require_solution(res: SolveResult, s: Scenario) -> None:
    """Exit 4 unless the solver returned a plan (infeasibility is diagnosed by the caller)."""
    if not res.ok:
        raise SolverError(f"no plan within the solver's limits (status: {res.status}).\n"
                          f"    To fix: raise solver.time_limit_s (now {s.solver.time_limit_s:g} s) "
                          "or solver.gap in the scenario")


def solve_scenario(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None):
    """Returns (catalog, options, fleet model, result) for a solved plan, one period or years; raises
    InfeasibleError (exit 3) with a diagnosis, or SolverError (exit 4)."""
    cat, opts = prepare(s, catalog_paths)
    fm = model.build(s, cat, opts)
    bound = None
    if fm.pairs_pruned:  # a shortlist: widen it with the full LP's pairs, measure against its bound
        bound = prune.full_model_bound(fm)
        fm = model.build(s, cat, opts, keep_pairs=bound.support)
    res = solve(fm, time_limit_s=time_limit_s)
    if res.status == "infeasible" and not fm.pairs_pruned:
        raise InfeasibleError(diagnose(s, cat, opts, time_limit_s))
    if res.status == "infeasible":  # the shortlist lost every feasible plan: solve every pair
        fm, bound = model.build(s, cat, opts, prune=False), None
        res = solve(fm, time_limit_s=time_limit_s)
        if res.status == "infeasible":
            raise InfeasibleError(diagnose(s, cat, opts, time_limit_s))
    require_solution(res, s)
    if bound is not None:
        measured = prune.against_full_model(res, bound, s.solver.gap)
        if measured.status == "feasible" and measured.gap is not None and measured.gap > s.solver.gap:
            bound = prune.root_bound(bound, time_limit_s or s.solver.time_limit_s)  # a tighter valid bound
            measured = prune.against_full_model(res, bound, s.solver.gap)
        res = measured
    return cat, opts, fm, trimmed(fm, res)


def make_plan(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
              explain: bool | str = True) -> dict:
    """A single-period plan; explain: none | brief | full (explain.narrative.explain_plan), True for
    full, False for the bare plan (sweeps and tests)."""
    cat, opts, fm, res = solve_scenario(s, catalog_paths, time_limit_s)
    plan = read_plan(s, fm, res)
    if explain:
        explain_plan(plan, s, cat, opts, fm, res, time_limit_s, "full" if explain is True else explain)
    return plan


def make_multiyear_plan(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
                        explain: bool | str = True) -> dict:
    check_multiyear(s)
    cat, opts, ym, res = solve_scenario(s, catalog_paths, time_limit_s)
    plan = read_multiyear(s, ym, res)
    if explain:
        explain_years(plan, s, cat, opts, ym, res, time_limit_s, "full" if explain is True else explain)
    return plan
