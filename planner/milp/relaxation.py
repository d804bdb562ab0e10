"""A fleet model's LP relaxation held in process (HiGHS, through highspy), for the many small
re-solves of one model with a few bounds changed (milp/screening.py): each re-solve starts from
the last basis and takes milliseconds, where one CBC run through PuLP (write the model, start the
process, read the answer) takes 50-100 ms.

The LP is the model as PuLP holds it (every row, valid inequalities included) with integrality
dropped; its objective includes the objective's constant. Objective values, primal points and
reduced costs are read; rows are added (add_rows) where a lazy model's held cuts are separated
(covers.separated). None when highspy cannot be imported (the search then runs as before, without it).
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from contextlib import contextmanager

import pulp

LP_PRESOLVE = "off"
"""HiGHS's presolve for the LPs solved here (solve; a MIP of the same object presolves: mip). Our
LPs are sparse covers and capacities that presolve barely shrinks, and dual simplex from scratch
is faster without it: the full model's LP of benchmarks/milp.py's generated jobs, this 2-core
machine, 200 jobs (44,862 columns) 1.85 -> 1.06 s, 60 jobs (16,496) 0.37 -> 0.27 s, the 200 jobs'
LP with its MIR cuts 4.4 -> 2.0 s; the rounds that add those cuts (covers.separated) 5.5-5.9 ->
4.3-4.4 s; the mid-size plan of tests/test_consistency.py (216 LPs of a screened search) 11.3 /
10.0 -> 10.4 / 9.0 s. A re-solve after fix or free starts from the basis either way."""

_LOCK = threading.Lock()
_HELD = [0, None]  # solves in progress, the saved stdout descriptor


@contextmanager
def stdout_silenced(active: bool):
    """HiGHS prints a banner on file descriptor 1 even when told not to: point descriptor 1 at
    /dev/null while any HiGHS solve runs (counted, so threads of explanation solves nest)."""
    if not active:
        yield
        return
    with _LOCK:
        if _HELD[0] == 0:
            import sys

            sys.stdout.flush()
            _HELD[1] = os.dup(1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
        _HELD[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _HELD[0] -= 1
            if _HELD[0] == 0:
                os.dup2(_HELD[1], 1)
                os.close(_HELD[1])


class Relaxation:
    """The LP relaxation of `prob`; bounds are changed with fix() and put back with free()."""

    def __init__(self, prob: pulp.LpProblem, highspy):
        import numpy as np

        self._hs = highspy
        self.constant = prob.objective.constant or 0.0
        variables = prob.variables()
        self.column = {v.name: j for j, v in enumerate(variables)}
        self._bounds = {v.name: (v.lowBound, v.upBound) for v in variables}
        self.integer = [v.cat != pulp.LpContinuous for v in variables]
        """whether each column is an integer in the model (the LP drops that; mipbound.py puts it back)"""
        inf = highspy.kHighsInf
        with stdout_silenced(True):  # its banner
            h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        lower = np.array([-inf if v.lowBound is None else v.lowBound for v in variables], dtype=float)
        upper = np.array([inf if v.upBound is None else v.upBound for v in variables], dtype=float)
        cost = np.array([prob.objective.get(v, 0.0) for v in variables], dtype=float)
        empty = np.array([], dtype=np.int32)
        h.addCols(len(variables), cost, lower, upper, 0, empty, empty, np.array([], dtype=float))
        self._h = h
        none = {"starts": np.int32, "index": np.int32, "value": float, "row_lower": float, "row_upper": float}
        self.arrays = {"cost": cost, "lower": lower, "upper": upper, **{k: np.array([], dtype=t) for k, t in none.items()}}
        """the LP as HiGHS was given it (columns, then rows in compressed form): mipbound.py's input"""
        self.add_rows(prob.constraints())
        self.solves = 0

    def add_rows(self, constraints: list) -> None:
        """Rows added to the LP (and to arrays, for mipbound.py): the model's, then the cuts a
        separation round found violated (covers.separate). Their variables are columns of the LP."""
        if not constraints:
            return
        inf = self._hs.kHighsInf
        rows = []
        for c in constraints:
            terms = [(self.column[v.name], x) for v, x in c.items() if x]
            lb, ub = c.getLb(), c.getUb()
            rows.append(([j for j, _ in terms], [x for _, x in terms], -inf if lb is None else lb, inf if ub is None else ub))
        self.add_array_rows(rows)

    def add_array_rows(self, rows: list) -> None:
        """Rows (column indices, coefficients, lower, upper) added to the LP and to arrays: add_rows'
        form, and that of the Lagrangian cuts (lagrangian.Found, app/planning.py)."""
        import numpy as np

        if not rows:
            return
        a = self.arrays
        columns, coefficients, lower, upper = zip(*rows)
        index = np.concatenate([np.asarray(c, dtype=np.int32) for c in columns])
        value = np.concatenate([np.asarray(x, dtype=float) for x in coefficients])
        local = np.cumsum([0] + [len(c) for c in columns[:-1]]).astype(np.int32)
        starts = local + len(a["index"])
        self._h.addRows(len(lower), np.array(lower, dtype=float), np.array(upper, dtype=float), len(index), local,
                        index, value)
        for key, more, kind in (("row_lower", lower, float), ("row_upper", upper, float),
                                ("starts", starts, np.int32), ("index", index, np.int32), ("value", value, float)):
            a[key] = np.concatenate([a[key], np.array(more, dtype=kind)])

    def point(self):
        """the last LP's value of every column (numpy, in column order)"""
        import numpy as np

        return np.asarray(self._h.getSolution().col_value)

    def fix(self, var: pulp.LpVariable, low: float, up: float | None) -> None:
        """var's bounds in the LP (up None: none)"""
        self._h.changeColBounds(self.column[var.name], low, self._hs.kHighsInf if up is None else up)

    def free(self, var: pulp.LpVariable) -> None:
        """var's bounds as the model has them"""
        low, up = self._bounds[var.name]
        inf = self._hs.kHighsInf
        self._h.changeColBounds(self.column[var.name], -inf if low is None else low, inf if up is None else up)

    def solve(self, time_limit_s: float | None = None) -> float:
        """The LP's optimum (objective constant included); inf when it is infeasible or not solved
        (time_limit_s: HiGHS stops there, and the LP counts as not solved; HiGHS counts its limit
        against the run time of every solve so far, so the limit set is that plus this one's)."""
        self.solves += 1
        limit = self._hs.kHighsInf if time_limit_s is None else self._h.getRunTime() + max(0.0, time_limit_s)
        self._h.setOptionValue("time_limit", limit)
        self._h.setOptionValue("presolve", LP_PRESOLVE)
        self._h.run()
        if self._h.getModelStatus() != self._hs.HighsModelStatus.kOptimal:
            return math.inf
        return self._h.getInfo().objective_function_value + self.constant

    def basis(self):
        """The last LP's optimal basis as two int8 arrays (columns' and rows' HighsBasisStatus), for a
        child that loads the same LP (mipbound.py: its first solve then starts there, where cold it
        took 0.7 s of a prover's 4-5 s on 60 generated jobs); None where the last solve was not optimal."""
        import numpy as np

        if self._h.getModelStatus() != self._hs.HighsModelStatus.kOptimal:
            return None
        b = self._h.getBasis()
        if not b.valid:
            return None
        return (np.array([int(v) for v in b.col_status], dtype=np.int8),
                np.array([int(v) for v in b.row_status], dtype=np.int8))

    def bounds(self):
        """every column's bounds now (numpy lower, upper, in column order: fix's included)"""
        import numpy as np

        lp = self._h.getLp()
        return np.array(lp.col_lower_, dtype=float), np.array(lp.col_upper_, dtype=float)

    def mip(self, lower, upper, seconds: float, gap: float, start=None, max_nodes: int | None = None) -> Mip:
        """The model's MILP (its integer columns integer again) with every column's bounds (lower,
        upper) in place of the LP's, searched by HiGHS's branch and cut in this object for at most
        `seconds` (from `start`, a point, where given; at most max_nodes nodes), without writing or
        building the model again (milp/support.py). The LP is left as it was: its bounds, every
        column continuous."""
        import numpy as np

        h, hs = self._h, self._hs
        before = self.bounds()
        count = len(before[0])
        every = np.arange(count, dtype=np.int32)
        ints = np.flatnonzero(np.asarray(self.integer, dtype=bool)).astype(np.int32)
        h.changeColsBounds(count, every, np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))
        h.changeColsIntegrality(len(ints), ints, np.full(len(ints), hs.HighsVarType.kInteger))
        try:
            h.setOptionValue("presolve", "choose")  # (a MIP's presolve pays; LP_PRESOLVE is the LPs')
            h.setOptionValue("mip_rel_gap", gap)
            h.setOptionValue("mip_max_nodes", hs.kHighsIInf if max_nodes is None else int(max_nodes))
            h.setOptionValue("time_limit", h.getRunTime() + max(0.0, seconds))
            if start is not None:
                point = hs.HighsSolution()
                point.col_value = [float(v) for v in start]
                point.value_valid = True
                h.setSolution(point)
            with stdout_silenced(True):
                _interruptible(h, time.monotonic() + max(0.0, seconds))
            status = h.getModelStatus()
            found = h.getInfo().primal_solution_status == hs.SolutionStatus.kSolutionStatusFeasible
            point = np.array(h.getSolution().col_value, dtype=float) if found else None
            return Mip(point, status == hs.HighsModelStatus.kOptimal,
                       status in (hs.HighsModelStatus.kTimeLimit, hs.HighsModelStatus.kInterrupt))
        finally:
            h.changeColsIntegrality(len(ints), ints, np.full(len(ints), hs.HighsVarType.kContinuous))
            h.changeColsBounds(count, every, *before)

    def values(self, variables: list[pulp.LpVariable]) -> list[float]:
        """the variables' values in the last LP solved (point, by name)"""
        col = self.point()
        return [col[self.column[v.name]] for v in variables]

    def optimum(self, objective: float) -> Optimum:
        """The LP just solved, at its optimum `objective` (solve()'s value): its point, reduced
        costs and row duals, copied, for reduced-cost tightening (Optimum.within) once the LP has moved on."""
        import numpy as np

        sol = self._h.getSolution()
        return Optimum(objective, np.array(sol.col_value, dtype=float), np.array(sol.col_dual, dtype=float),
                       np.array(sol.row_dual, dtype=float))

    def reduced_costs(self, variables: list[pulp.LpVariable]) -> list[float]:
        """the variables' reduced costs in the last LP solved (the objective's rise per unit a
        variable at its lower bound is raised; a basic variable's is 0)"""
        dual = self._h.getSolution().col_dual
        return [dual[self.column[v.name]] for v in variables]


def _interruptible(h, end: float) -> None:
    """h's run in a thread of its own while this thread waits in short steps, so that a signal's
    handler (cli/signals.py: Ctrl-C, SIGTERM) runs at once: the search is then interrupted at
    HiGHS's next check (its MIP, simplex and interior-point interrupt callbacks: with the MIP's
    alone, a SIGINT in a root LP went unanswered for 30 s in CI) and waited for before the exception goes on. Run
    in this thread, HiGHS held it until its time limit (a 24-job N+1 plan interrupted by SIGTERM went
    on for more than 30 s). It is interrupted the same way once time.monotonic() passes `end`: HiGHS
    reads its own time limit only between some steps (60 generated jobs, seed 5: a MIP given 1.5 s
    ran 2.8 s, and the plan ended at 10.6 s of a 10 s limit). The callback sets the interrupt flag
    on every call, not only to stop: HiGHS keeps a flag once set, and every later run on the object
    stopped at once. Not highspy's startSolve: its locks are the class's, shared by every object,
    and two explanations' re-plans searching at once in threads failed ("Solver is already running")."""
    stop, done, failed = [False], threading.Event(), []

    def check(event) -> None:
        event.data_in.user_interrupt = stop[0]

    def run() -> None:
        try:
            h.run()
        except BaseException as e:  # (handed to the waiting thread)
            failed.append(e)
        finally:
            done.set()

    checks = (h.cbMipInterrupt, h.cbSimplexInterrupt, h.cbIpmInterrupt)  # (the MIP's LPs too: presolve's, the root's)
    for event in checks:
        event.subscribe(check)
    try:
        threading.Thread(target=run, daemon=True).start()
        try:
            while not done.wait(WAIT_STEP_S):
                if time.monotonic() > end:
                    stop[0] = True
        except BaseException:
            stop[0] = True
            done.wait()
            raise
    finally:
        for event in checks:
            event.unsubscribe(check)
    if failed:
        raise failed[0]


WAIT_STEP_S = 0.05


@dataclasses.dataclass(frozen=True)
class Mip:
    """Relaxation.mip's answer: the best plan's point (None where it found none), whether it is
    proven within the gap asked, and whether the time limit ended the search."""

    point: object
    proven: bool
    timed_out: bool


TIGHTEN_SLACK = 1e-6
"""Optimum.within widens the room below a cutoff by this share of it (at least this much): the
LP's dual tolerances (1e-7 per reduced cost) never let a tightened bound cut off a plan"""


@dataclasses.dataclass(frozen=True)
class Optimum:
    """An LP relaxation's optimum: its objective (constant included), point x* and reduced costs d
    (numpy, in column order)."""

    objective: float
    x: object
    reduced: object
    rows: object = None
    """the row duals y (d = c - A'y): milp/lagrangian.py prices the rows that couple demands with them"""

    def within(self, cutoff: float, lower, upper, integer) -> tuple:
        """The column bounds (lower, upper) every plan cheaper than `cutoff` keeps: reduced-cost
        tightening (Nemhauser and Wolsey, Integer and Combinatorial Optimization, II.6). With row
        duals y optimal, d = c - A'y, and every point x of the LP costs c x >= L + sum_j d_j
        (x_j - x*_j), L the LP's optimum: each term is >= 0 (a column at its lower bound has d_j >= 0,
        at its upper d_j <= 0, a basic one d_j = 0). The points are the plans that meet the LP's rows,
        its valid inequalities included: the minimal plans (fleet.py), among them a cheapest. So
        such a plan cheaper than C = cutoff has d_j (x_j - lower_j) < C - L for a column at its lower bound: x_j <=
        lower_j + (C - L) / d_j, rounded down for an integer; and for a column at its upper bound
        x_j >= upper_j - (C - L) / |d_j|, rounded up. 60 generated jobs (benchmarks/milp.py, seed 3),
        C 1.4% above L: 2,606 of the 15,122 columns fixed at 0, 494 others' upper bounds lowered."""
        import numpy as np

        room = cutoff - self.objective + TIGHTEN_SLACK * max(1.0, abs(cutoff))
        lower, upper = np.array(lower, dtype=float), np.array(upper, dtype=float)
        if room < 0:  # (the cutoff is below the LP: no plan is cheaper; nothing to tighten against)
            return lower, upper
        ints = np.asarray(integer, dtype=bool)
        x, d = self.x, self.reduced
        with np.errstate(divide="ignore", invalid="ignore"):
            reach = room / np.abs(d)
        at_low = (d > 0) & (x <= lower + 1e-9) & np.isfinite(lower)
        top = np.where(ints, np.floor(lower + reach + 1e-9), lower + reach)
        upper = np.where(at_low & (top < upper), top, upper)
        at_up = (d < 0) & (x >= upper - 1e-9) & np.isfinite(upper)
        bottom = np.where(ints, np.ceil(upper - reach - 1e-9), upper - reach)
        lower = np.where(at_up & (bottom > lower), bottom, lower)
        return lower, upper


def available() -> bool:
    """whether highspy can be imported (relaxation returns an LP)"""
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return True


def relaxation(prob: pulp.LpProblem) -> Relaxation | None:
    """prob's LP relaxation in HiGHS, or None when highspy is not installed (available)."""
    if not available():
        return None
    import highspy

    return Relaxation(prob, highspy)
