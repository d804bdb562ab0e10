"""A plan of a fleet model given as values by variable name: checked against every row and bound of
the model and costed (start_plan), or loaded into the model's variables (load_values). The
screened search's incumbents (screening.py, support.py), the first shortlist's plan (app/early.py)
and the prover's plans (prune.py) are taken through it."""

from __future__ import annotations

import pulp

from planner.milp.fleet import FleetModel
from planner.milp.registry import room
from planner.milp.solve import SolveResult

START_TOL = 1e-6
"""a start's row may miss by this share of its right-hand side (at least this much) and count as met"""


def start_plan(fm: FleetModel, values: dict | None = None) -> SolveResult | None:
    """The warm start (the variables' initial values), or `values` (by variable name), as a plan,
    when it meets every row of the model and every variable's bounds; None otherwise (its cost
    would not be a plan's). Its values are fitted to the bounds (a HiGHS point's -6e-14 is 0: PuLP
    refuses an initial value below a lower bound, and CBC's start on choose-go.yaml shortlisted,
    gap 1%, ended in a traceback)."""
    variables = fm.prob.variables()  # (PuLP walks every row for them: once)
    values = {v.name: (v.varValue if values is None else values.get(v.name)) or 0.0 for v in variables}
    for v in variables:
        x = values[v.name]
        if (v.lowBound is not None and x < v.lowBound - START_TOL) or (v.upBound is not None and x > v.upBound + START_TOL):
            return None
    for c in fm.prob.constraints():
        if room(c, values) < -START_TOL * max(1.0, abs(c.constant)):
            return None
    objective = sum(a * values[v.name] for v, a in fm.prob.objective.items()) + (fm.prob.objective.constant or 0.0)
    fit = {v.name: fitted(v, values[v.name]) for v in variables}
    return SolveResult("feasible", 0.0, None, objective, fm.scenario.solver.name, fit)


def load_values(fm: FleetModel, values: dict) -> None:
    """The model's variables set to a plan's values (by name, 0 where it has none): rows read at the
    current values (registry.row_value) then read that plan."""
    for v in fm.prob.variables():
        v.varValue = values.get(v.name, 0.0)


def fitted(v: pulp.LpVariable, x: float) -> float:
    """x rounded if v is an integer, and clipped to v's bounds."""
    if v.cat != pulp.LpContinuous:
        x = round(x)
    if v.lowBound is not None:
        x = max(v.lowBound, x)
    if v.upBound is not None:
        x = min(v.upBound, x)
    return x
