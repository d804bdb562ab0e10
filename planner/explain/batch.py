"""LP relaxations of several independent models in one solver run.

The explanations solve many small LPs (the why-not bound of every unused accelerator, the
relaxation of every re-planned variant). With CBC each solve is a process of its own (write the
model, start cbc, read the answer back: 15-25 ms even for ten variables), which dominated the
explanations of a small plan. Independent LPs are solved together as one block-diagonal LP:

    min sum_k c_k x_k   s.t.  A_k x_k (sense) b_k,  bounds_k,   k = 1..K

The blocks share no variable and no row, so a point is optimal for the whole exactly when each
block's part is optimal for its block: block k's objective at the joint optimum is its own LP
optimum (the same value a separate solve gives, up to the solver's tolerances). Only objective
values and primal points are read; duals are not (a degenerate block may have several dual
solutions, and the prices are read from LPs solved one at a time, prices.py). When the joint LP is
not optimal (one block infeasible makes the whole infeasible), it is halved until each part is
optimal or one block alone (solved on its own, as before). HiGHS solves in process (no start-up to save): one LP at a time there.
"""

from __future__ import annotations

import dataclasses

import pulp

from planner.data import deadline
from planner.milp.fleet import FleetModel
from planner.milp.solve import SolveResult, solve

EPS_INT = 1e-6
"""an integer variable within this of an integer counts as integral (CBC's own tolerance is 1e-7
after its cleanup; the readout rounds counts)"""


def _one(fm: FleetModel, time_limit_s: float | None) -> SolveResult:
    return solve(fm, time_limit_s=time_limit_s, gap=0.0, mip=False)


def joint(models: list[FleetModel], time_limit_s: float | None, mip: bool = False,
          max_nodes: int | None = None) -> list[SolveResult] | None:
    """Every model solved as one block-diagonal problem (see the module docstring), at gap 0: each
    block's part of a proven optimum is a proven optimum of its block, LP or MILP. None unless the
    joint problem was solved to optimality (then the caller solves the blocks one at a time)."""
    problem = pulp.LpProblem("explain_joint", pulp.LpMinimize)
    renamed: list[tuple[pulp.LpVariable, str]] = []
    blocks = []
    objective = pulp.LpAffineExpression()
    try:
        for k, fm in enumerate(models):
            own = fm.prob.variables()
            for v in own:
                renamed.append((v, v.name))
                v.name = f"k{k}_{v.name}"
            for i, c in enumerate(fm.prob.constraints()):
                problem.addConstraint(c.copy(), f"k{k}_{i}")
            objective += fm.prob.objective
            blocks.append(own)
        problem.setObjective(objective)
        res = solve(dataclasses.replace(models[0], prob=problem, rows={}), time_limit_s=time_limit_s, gap=0.0,
                    mip=mip, max_nodes=max_nodes)
    finally:
        for v, name in renamed:
            v.name = name
    if res.status != "optimal":
        return None
    share = res.seconds / len(models)
    return [SolveResult("optimal", share, 0.0, pulp.value(fm.prob.objective) or 0.0, res.solver,
                        {v.name: v.varValue or 0.0 for v in own})
            for fm, own in zip(models, blocks)]


def solve_lps(models: list[FleetModel], time_limit_s: float | None = None) -> list[SolveResult]:
    """The LP relaxation of every model (SolveResult with the model's own variable names), in one
    solver run where that is exact and saves time (see the module docstring)."""
    if models and deadline.left() <= 0:  # the time limit passed: building joint models (and halving them
        deadline.cut(deadline.current().step or "a solve")  # down to one) would run on past it (500 jobs: 17 s)
        return [SolveResult("not-solved", 0.0, None, None, models[0].scenario.solver.name, cut_short=True)
                for _ in models]
    if len(models) < 2 or models[0].scenario.solver.name != "cbc":
        return [_one(fm, time_limit_s) for fm in models]
    got = joint(models, time_limit_s)
    if got is not None:
        return got
    half = len(models) // 2  # a block is infeasible: halve until it is alone (its own solve says so)
    return solve_lps(models[:half], time_limit_s) + solve_lps(models[half:], time_limit_s)


def integral(fm: FleetModel, res: SolveResult) -> bool:
    """Whether an LP solution of fm takes an integer value on every integer variable: then it is
    also optimal for the MILP (the MILP's optimum lies between the LP's and any integer point)."""
    if not res.ok:
        return False
    return all(abs(res.values.get(v.name, 0.0) - round(res.values.get(v.name, 0.0))) <= EPS_INT
               for v in fm.prob.variables() if v.cat == pulp.LpInteger)
