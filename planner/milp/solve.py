"""Run the MILP solver on a fleet model and return one typed result; nothing reads values unless
the status allows.

CBC (the default and the tested path): the factory (solvers.py) prefers COIN_CMD with the cbcbox
binary (what pulp[cbc] installs, and the only route in PuLP 4) and falls back to PuLP 3's bundled
PULP_CBC_CMD. HiGHS (solver.name: highs, or --solver highs): in process through highspy, a
dependency of the tool (the relaxation needs it; the "highs" extra stays for old install lines);
where it is missing, exit 2 says how to install it; its banner is kept off stdout. A time limit
is always set; explanation solves also get a node limit (max_nodes) so that their answers depend
on work done, not on how busy the machine is.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass, field

import pulp

from planner.data import deadline
from planner.data.errors import SolverError
from planner.milp import cbclog
from planner.milp.fleet import FleetModel
from planner.milp.relaxation import available as relaxation_available
from planner.milp.relaxation import stdout_silenced
from planner.milp.solvers import MIN_LIMIT_S, cbcbox_path, make_solver

OK = ("optimal", "feasible")
OVERRUN_STOP_S = 1.0
"""CBC past its time limit by this much is interrupted (cbclog.interrupt: SIGINT, on which it ends its
search and writes its best plan): CBC reads its clock between cut passes and nodes, and on a large
model a pass takes seconds (2,000 generated jobs, 65,426 columns: a search given 11.2 s ran 17.7 s).
CBC ignores it before its search starts (500 jobs: interrupted after 1 s it ran its full 30 s): a
model slow to load runs on to its own check, or is killed (cbclog.Watch: HANG_S, or a crash)."""
LP_ENGINE = "highs"
"""the solver of every LP (mip=False: the explanations' prices and bounds) where the scenario's is
CBC and highspy can be imported (it is a dependency): the cbcbox build's LP of a budget-capped plan
(the UX review's on-prem scenario, cash budget $760,000) ended "optimal" at $297,179 where HiGHS's
optimum is $292,922, with row duals of the wrong sign: one more concurrent user priced at -$1,441 a
year, one more run at -$283. HiGHS's duals there are $295 and $22, and one more run re-solved costs
$0.39 more."""


@dataclass
class SolveResult:
    status: str  # optimal | feasible | infeasible | unbounded | not-solved | error
    seconds: float
    gap: float | None
    objective: float | None
    solver: str
    values: dict = field(default_factory=dict)
    message: str = ""
    cut_short: bool = False
    """the time limit, not the search, ended a solve with a work limit (max_nodes): its answer may
    differ on a busier machine"""
    bound: float | None = None
    """the solver's best bound on the objective (CBC's 'Lower bound' after its cuts and search),
    where the solver reports one"""

    @property
    def ok(self) -> bool:
        return self.status in OK

    def value_of(self, expr) -> float:
        """A linear expression of the model at this solution (a variable it does not hold: 0)."""
        return sum(c * self.values.get(v.name, 0.0) for v, c in expr.items()) + expr.constant


def solve(fm: FleetModel, time_limit_s: float | None = None, gap: float | None = None,
          mip: bool = True, max_nodes: int | None = None, warm: bool = False,
          cutoff: float | None = None, engine: str | None = None, on_plan=None) -> SolveResult:
    """warm: start CBC's search from the variables' initial values (LpVariable.setInitialValue),
    a known plan it may improve on (milp/prune.py); other solvers start cold. cutoff (CBC): the
    search drops every node whose bound is above it, as if a plan of that cost were known
    (milp/screening.py); a model with no plan below it comes back infeasible. engine: the solver
    (solvers.SOLVERS) for this solve, in place of the scenario's (solver.name). on_plan (CBC): called, from a
    thread, with the cost of each cheaper plan CBC's log shows while it runs (cbclog.Tail), before
    the search ends; the plan returned is the search's as always. Where on_plan has an `enough`
    method, CBC is interrupted once it returns true (cbclog.interrupt): the search returns its best
    plan then, feasible. A shortlist's model (pairs_pruned: its plan's gap is the full model's bound's)
    is searched with DINS too (solvers.CBC_OPTIONS says why not otherwise)."""
    cfg = fm.scenario.solver
    engine = engine or cfg.name
    if not mip and engine == "cbc" and relaxation_available():
        engine = LP_ENGINE
    limit = cfg.time_limit_s if time_limit_s is None else max(time_limit_s, MIN_LIMIT_S)  # (0 s is no time, not none)
    left = deadline.left()  # the whole command's wall-clock budget (data.deadline)
    budgeted = left < limit
    if budgeted:
        limit = max(left, 0.0)
    solver, name = make_solver(limit, cfg.gap if gap is None else gap, cfg.threads, mip, engine, max_nodes)
    start = time.perf_counter()
    if _constant_row_violated(fm):
        return SolveResult("infeasible", 0.0, None, None, name)
    if budgeted and limit <= 0:  # no time left to start it
        deadline.cut(deadline.current().step or "a solve")
        return SolveResult("not-solved", 0.0, None, None, name, cut_short=True)
    log = order = None
    try:
        if engine == "cbc":
            log = _log_file()
            solver.optionsDict["logPath"] = log
        if mip and engine == "cbc":
            solver.optionsDict["warmStart"] = warm
            if cutoff is not None:
                solver.options = [*solver.options, f"cutoff {cutoff!r}"]
            if fm.pairs_pruned:
                solver.options = [*solver.options, "dins on"]
            order = _spare_search(fm, solver, name)
        tail = (cbclog.Tail(log, on_plan, fm.prob.objective.constant or 0.0, getattr(on_plan, "enough", None))
                if on_plan and log and mip else None)
        stop = cbclog.Watch(log, limit + OVERRUN_STOP_S) if log and mip else None  # (and a crash killed)
        try:
            return _solved(fm, solver, name, limit, cfg, gap, mip, max_nodes, start, log, budgeted, engine)
        finally:
            if stop is not None:
                stop.stop()
            if tail is not None:
                tail.stop()
    finally:
        for path in (log, order):
            if path:
                _unlink(path)


BRANCH_FIRST = ("u", "z")
"""CBC branches first on these stores: the N+1 spares (whether a pool holds one, that is whether
the pool is in the fleet at all) and the system types in use (complexity.py). Each fixes the
fleet's shape; with the spares fixed, the rest is a packing that CBC's root cuts close at once (20
generated jobs, seed 5: the LP bound with the optimal spares fixed is 10% short, the MILP then
takes 0.36 s, against 19 s with the spares free)."""
SPARE_CUTS = ("gomory forceOn", "mixed forceOn", "twoMir forceOn", "passT 1")
"""N+1 models only: Gomory, mixed-integer rounding and two-step MIR cuts at every node of the tree,
one pass each, so each spare branch gets the cuts that close its packing (CBC's default runs them
at the root and rarely in the tree). Measured on 18 generated buy-only N+1 fleets (10-20 jobs,
seeds 3-8; core solve, this 2-core machine): 150.7 s in all with the priorities alone, 85.2 s with
these too (20 jobs seed 5: 19.0 -> 2.0 s; seed 7: not proven in 60 s -> proven in 29 s, a plan
0.4% cheaper); 15 jobs seed 8 became slower (2.4 -> 13.9 s). On models without spares they
cost more than they give (60 generated jobs of every acquisition mode: gap 2.9% -> 4.9% at the
same time), so only spare-bearing models get them."""


def _spare_search(fm: FleetModel, solver, name: str) -> str | None:
    """For a model with N+1 spares: SPARE_CUTS, and a priorities file (csv: name, priority) that
    puts BRANCH_FIRST's variables first, on the CBC command line; returns the file's path, to remove
    after the solve. The priorities go only to the two CBC builds whose command is known (cbcbox:
    readPriorities; PuLP's bundled CBC 2.10: priorityIn; a command cbcbox does not know makes it
    exit) and in a file name without blanks (PuLP splits the command line on them)."""
    if not fm.u or not name.startswith("cbc"):
        return None
    solver.options = [*solver.options, *SPARE_CUTS]
    path = getattr(solver, "path", "") or ""
    word = "priorityIn" if name == "cbc (bundled)" else "readPriorities" if path == cbcbox_path() else None
    if word is None:
        return None
    first = [v for store in BRANCH_FIRST for v in getattr(fm, store).values()]
    _, names, _ = fm.prob.normalisedNames()  # the names PuLP writes the MPS file with (rename=1)
    fd, out = tempfile.mkstemp(prefix="cbc-", suffix=".csv")
    with os.fdopen(fd, "w") as f:
        f.write("name,priority\n")
        f.writelines(f"{names[v.name]},1\n" for v in first if v.name in names)
    if any(c.isspace() for c in out):
        _unlink(out)
        return None
    solver.options = [*solver.options, f"{word} {out}"]
    return out


def _log_file() -> str:
    fd, path = tempfile.mkstemp(prefix="cbc-", suffix=".log")
    os.close(fd)
    return path


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _again(solver, limit: float, start: float) -> None:
    """The solver set for its second run: cold (cbcbox's CBC crashed on a warm start, never without
    one: cbclog.CRASHED), within what is left of its time limit."""
    solver.optionsDict["warmStart"] = False
    if getattr(solver, "timeLimit", None) is not None:
        solver.timeLimit = max(MIN_LIMIT_S, round(limit - (time.perf_counter() - start), 2))


def _solved(fm, solver, name, limit, cfg, gap, mip, max_nodes, start, log, budgeted=False,
            engine: str = "cbc") -> SolveResult:
    try:
        with stdout_silenced(engine == "highs"):
            try:
                fm.prob.solve(solver)
            except (pulp.PulpSolverError, OSError, ValueError, IndexError):  # once more: a solver process lost to
                _again(solver, limit, start)  # a passing fault on a loaded machine, or crashed
                fm.prob.solve(solver)
    except (pulp.PulpSolverError, OSError, ValueError, IndexError) as exc:  # IndexError: a truncated solution file
        raise SolverError(f"the solver ({name}) stopped without a result: it crashed, was killed or "
                          f"could not run ({str(exc).split(',')[0]}).\n    To fix: check that the cbc "
                          "executable runs (or set PLANNER_CBC to one that does), then plan again")
    seconds = time.perf_counter() - start
    status = pulp.LpStatus.get(fm.prob.status, "error").lower()
    sol = fm.prob.sol_status
    if status == "optimal" and sol == pulp.LpSolutionIntegerFeasible:
        status = "feasible"
    elif status == "optimal" and sol not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        status = "not-solved"
    status = {"not solved": "not-solved", "undefined": "not-solved"}.get(status, status)
    if status == "not-solved" and cbclog.proved_infeasible(log):
        status = "infeasible"
    cut_short = max_nodes is not None and status == "feasible" and seconds >= limit - 0.5
    if budgeted and status not in ("optimal", "infeasible", "unbounded") and seconds >= limit - 0.5:
        deadline.cut(deadline.current().step or "a solve")  # the budget, not the search, ended it
    if status not in OK:
        raw = cbclog.bound(log) if log else _highs_bound(fm) if mip else None
        return SolveResult(status, seconds, None, None, name, cut_short=seconds >= limit - 0.5,
                           bound=raw if raw is not None and math.isfinite(raw) else None)
    objective = pulp.value(fm.prob.objective) or 0.0
    values = {v.name: v.varValue or 0.0 for v in fm.prob.variables()}
    bound = cbclog.bound(log) if log else _highs_bound(fm) if mip else None
    if bound is not None and not (math.isfinite(bound) and bound <= objective + 1e-6 * max(1.0, abs(objective))):
        bound = None  # no usable bound in the log (none found, or one above the solution: not a bound)
    # the solver calls a search "optimal" once it is within the relative gap asked for: report that bound
    if status == "optimal":
        gap_value = cfg.gap if gap is None else gap
    elif bound is not None and objective > 0:
        gap_value = max(0.0, (objective - bound) / abs(objective))  # the search's own bound, after its cuts
    else:
        gap_value = _gap(fm, objective, engine)
    return SolveResult(status, seconds, gap_value, objective, name, values, cut_short=cut_short, bound=bound)


def _constant_row_violated(fm: FleetModel) -> bool:
    """A row without variables (demand no allowed option can meet) that cannot hold makes the model
    infeasible before any search; CBC reports such a model as 'undefined', not 'infeasible'."""
    for c in fm.rows.values():
        if not c.keys():
            lhs = c.constant  # the row reads lhs sense 0
            if (c.sense == pulp.LpConstraintGE and lhs < -1e-9) or (c.sense == pulp.LpConstraintLE and lhs > 1e-9) \
                    or (c.sense == pulp.LpConstraintEQ and abs(lhs) > 1e-9):
                return True
    return False


def _highs_bound(fm: FleetModel) -> float | None:
    """HiGHS's best bound on the objective after a MILP solve through PuLP (its dual bound, the
    objective's constant added: PuLP does not hand HiGHS the constant), or None."""
    try:
        value = fm.prob.solverModel.getInfo().mip_dual_bound
    except AttributeError:
        return None
    return value + (fm.prob.objective.constant or 0.0) if math.isfinite(value) else None


def _gap(fm: FleetModel, objective: float, engine: str | None = None) -> float | None:
    """Relative gap against the LP relaxation's bound (CBC's own bound does not reach PuLP):
    an upper estimate of the true gap. Values were read before this re-solve."""
    if deadline.left() <= 0:
        deadline.cut("gap")
        return None
    try:
        cfg = fm.scenario.solver
        engine = engine or cfg.name
        solver, _ = make_solver(min(cfg.time_limit_s, deadline.left()), 0.0, cfg.threads, mip=False, name=engine)
        with stdout_silenced(engine == "highs"):
            fm.prob.solve(solver)
        bound = pulp.value(fm.prob.objective)
    except Exception:
        return None
    if bound is None or objective <= 0:
        return None
    return max(0.0, (objective - bound) / abs(objective))
