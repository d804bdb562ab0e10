"""Idle owned systems trimmed from a solver's solution (readout.trimmed, before rentals and system
types are trimmed).

Within the solver's gap, and always in a plan the time limit cut short, the MILP may hold owned
systems (bought, or reserved contracts) that no row needs, an N+1 spare for a pool that serves
nothing, or a batch placement that holds a system for runs it does not do (10 generated jobs with
N+1 stopped at 3 s: one idle rtx-6000-ada-x4, $34,817/yr, that no job's cost held, so the verifier
refused the plan): the tie-break of TIE_BREAK_USD per system steers the optimum away from them, not an
incumbent. Such a system costs money and no job uses it, so the plan's cost would not split
over its jobs.

For each owned purchase or contract variable p (and first the binaries that hold systems without
costing anything themselves: a batch run's placement b with no share of runs left on it, and the
N+1 spares u), in a fixed order (b, u, then p and k by offer, the latest purchase year first),
the value is lowered by the most every row holding it allows with the other values as they are:
a row  sum a x  (<=, >=, =)  0  with x's coefficient a can give
  <= row, a < 0:  room / |a|  (room = -(sum a x))       >= row, a > 0:  room / a
and any row where lowering x only loosens it (the other signs) gives no limit; = rows give none.
Lowering by that floor keeps every row satisfied (the model's valid inequalities included), so
the trimmed solution is feasible and costs its objective coefficients times the drop less.
"""

from __future__ import annotations

import math

import pulp

from planner.milp.registry import room

EPS = 1e-6


def _rows_of(fm, names: set[str]) -> dict[str, list]:
    """Variable name -> the model's rows (constraints) that hold it, for the names asked."""
    out: dict[str, list] = {n: [] for n in names}
    for c in fm.rows.values():
        for v in c.expr:
            if v.name in out:
                out[v.name].append(c)
    return out


def _drop(v, rows: list, values: dict[str, float]) -> int:
    """The most v's value can be lowered with every row in `rows` still satisfied."""
    most = math.inf
    for c in rows:
        a = c.expr.get(v, 0.0)
        if c.sense == pulp.LpConstraintEQ and a:
            return 0
        if (c.sense == pulp.LpConstraintLE and a < 0) or (c.sense == pulp.LpConstraintGE and a > 0):
            most = min(most, room(c, values) / abs(a))
    return math.floor(max(most, 0.0) + EPS) if most != math.inf else 10**9


def trim_owned(fm, values: dict[str, float]) -> tuple[dict[str, float], float]:
    """The solution with no owned system (or N+1 spare) that no row needs (module docstring), and
    the objective's cost that saves."""
    free = [v for store in (fm.b, fm.u) for _, v in sorted(store.items(), key=lambda kv: repr(kv[0]))]
    held = [v for store in (fm.p, fm.k) for _, v in sorted(store.items(), key=lambda kv: repr(kv[0]), reverse=True)]
    todo = [v for v in free + held if round(values.get(v.name, 0.0)) > 0]
    if not todo:
        return values, 0.0
    rows = _rows_of(fm, {v.name for v in todo})
    price = fm.prob.objective
    out, saved = dict(values), 0.0
    for v in todo:
        now = round(out.get(v.name, 0.0))
        drop = min(now, _drop(v, rows[v.name], out))
        if drop > 0:
            out[v.name] = float(now - drop)
            saved += price.get(v, 0.0) * drop
    return out, saved
