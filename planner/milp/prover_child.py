"""The prover's child process (mipbound.py starts it: python -m planner.milp.prover_child MODEL
SECONDS PRESOLVE MODE LAUNCHER): HiGHS's branch and cut on the model file the planner wrote, each
higher dual bound and each cheaper plan written beside it (mipbound.BOUND_FILE, PLAN_FILE), the
Lagrangian cuts first where the file holds their inputs (lagrangian.in_child), and an end it
cannot outlive (_watchdog)."""

from __future__ import annotations

import math
import os
import sys
import time

from planner.milp.mipbound import BOUND_FILE, CUTS_FILE, HELD_FILE, OPTIMUM_FILE, PLAN_FILE, READY_FILE, SEPARATED_FILE
from planner.milp.relaxation import LP_PRESOLVE

OVERRUN_S = 2.0
"""how far past its time limit a child may run before the kernel ends it (_watchdog)"""


def _watchdog(seconds: float, launcher: str = "parent") -> None:
    """The child ends past its time limit, or with the planner, whatever HiGHS is doing: SIGALRM
    (its default action ends the process) OVERRUN_S after the limit, and on Linux SIGKILL when the
    parent dies (PR_SET_PDEATHSIG). HiGHS checks its own limit and the callback the parent only
    between steps: a stand-alone prover of 200 generated jobs given 12 s ran 195 s, and a planner
    killed outright would have left it running that long. Linux sends that signal when the thread
    that started the child ends, not the process: a child started from a thread (launcher "thread":
    a narrowing on a plan CBC's log shows, cbclog.Tail) goes without it, and ends by the alarm or
    when its callback sees the planner gone."""
    import signal

    if hasattr(signal, "alarm"):
        signal.alarm(max(1, math.ceil(seconds + OVERRUN_S)))
    if sys.platform.startswith("linux") and launcher == "parent":
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _prove(path: str, seconds: float, presolve: str, mode: str = "bound", launcher: str = "parent") -> None:
    """The child: load the model, run branch and cut, write each higher dual bound (BOUND_FILE; mode
    bound, heuristics off) and each cheaper plan (PLAN_FILE; mode search: heuristics as HiGHS sets
    them, no bound written)."""
    started = time.monotonic()
    _watchdog(seconds, launcher)
    import highspy
    import numpy as np

    m = np.load(path)
    cutoff = float(m["cutoff"]) if "cutoff" in m.files else math.inf  # (a narrowed model's: Prover.narrow)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    bounding = mode == "bound"
    # (presolve: the LPs' first, for the separation, the Lagrangian cuts and lpbranch; the MIP's below)
    for name, value in (("threads", 1), ("presolve", LP_PRESOLVE), ("time_limit", float(seconds)), ("mip_rel_gap", 0.0)):
        h.setOptionValue(name, value)
    if bounding:
        h.setOptionValue("mip_heuristic_effort", 0.0)
        if "proving" in m.files and math.isfinite(cutoff):  # (Prover.narrow: a target below the optimum)
            h.setOptionValue("objective_bound", cutoff)
    n = len(m["cost"])
    h.addCols(n, m["cost"], m["lower"], m["upper"], 0, np.array([], dtype=np.int32),
              np.array([], dtype=np.int32), np.array([], dtype=float))
    h.addRows(len(m["row_lower"]), m["row_lower"], m["row_upper"], len(m["index"]), m["starts"], m["index"], m["value"])
    if "col_basis" in m.files:  # (the planner's optimal basis of this LP: Relaxation.basis)
        basis = highspy.HighsBasis()
        basis.col_status = [highspy.HighsBasisStatus(int(v)) for v in m["col_basis"]]
        basis.row_status = [highspy.HighsBasisStatus(int(v)) for v in m["row_basis"]]
        basis.valid = True
        h.setBasis(basis)
    out = os.path.join(os.path.dirname(path), BOUND_FILE)
    solved = _separated(h, m, os.path.dirname(path), out) if "held_s" in m.files else None
    integer = np.flatnonzero(m["integer"]).astype(np.int32)
    h.changeColsIntegrality(len(integer), integer, np.full(len(integer), highspy.HighsVarType.kInteger))
    if not bounding and "start" in m.files:  # (mipbound.start_search from a plan: HiGHS's incumbent)
        start = highspy.HighsSolution()
        start.col_value, start.value_valid = list(m["start"]), True
        h.setSolution(start)
    parent, best = os.getppid(), [-math.inf] if solved is None else [solved["objective"]]
    plan = os.path.join(os.path.dirname(path), PLAN_FILE)
    improving = None  # the callback kind of a cheaper plan (set where highspy has callbacks)

    def report(value: float) -> None:
        value = min(value, cutoff)  # (a bound under a cutoff holds for the plans cheaper than it)
        if bounding and math.isfinite(value) and value > best[0] + 1e-9 * max(1.0, abs(value)):
            best[0] = value
            _write_bound(out, value)

    def keep(objective: float, x) -> None:
        if math.isfinite(objective) and len(x) == n:
            np.save(plan + ".new.npy", np.concatenate(([objective], np.asarray(x, dtype=float))))
            os.replace(plan + ".new.npy", plan)  # whole, as the bound

    def callback(kind, message, data_out, data_in, user):
        if kind == improving:
            keep(data_out.objective_function_value, data_out.mip_solution)
        report(data_out.mip_dual_bound)
        if data_in is not None and (os.getppid() != parent or best[0] >= cutoff):  # the planner has gone,
            data_in.user_interrupt = True  # or the bound is the narrowed model's cutoff: stop

    if bounding and "block" in m.files:  # the Lagrangian cuts first: branch and cut starts from their bound
        from planner.milp import lagrangian

        lagrangian.in_child(h, m, os.path.join(os.path.dirname(path), CUTS_FILE), report, solved)
    if "held_s" in m.files:  # (done separating and adding its cuts: mipbound.Prover._read_cuts)
        open(os.path.join(os.path.dirname(path), READY_FILE), "w").close()
    if bounding and "branch" in m.files:  # branch and bound on the LP alone (lpbranch.py), not HiGHS's
        from planner.milp import lpbranch

        h.changeColsIntegrality(len(integer), integer, np.full(len(integer), highspy.HighsVarType.kContinuous))
        lpbranch.raised(h, m["integer"], m["cost"], report, started + float(seconds), cutoff, keep)
        return
    h.setOptionValue("presolve", presolve)
    h.setOptionValue("time_limit", h.getRunTime() + max(0.01, float(seconds) - (time.monotonic() - started)))
    # (HiGHS reads its limit against its clock over every run of h: cutpool.run_limited)
    try:
        kinds = highspy.cb.HighsCallbackType
        improving = kinds.kCallbackMipImprovingSolution
        h.setCallback(callback, None)
        h.startCallback(kinds.kCallbackMipInterrupt)
        h.startCallback(improving)
    except (AttributeError, TypeError):  # an older highspy without callbacks: the final bound only
        pass
    h.run()
    report(h.getInfo().mip_dual_bound)  # (valid however the run ended: optimal, or stopped by its time)
    if math.isfinite(cutoff) and h.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
        report(cutoff)  # the narrowed model has no plan: none is cheaper than the cutoff


def _write_bound(out: str, value: float) -> None:
    """A bound written whole to `out` (the planner never reads half a number)."""
    with open(out + ".new", "w") as f:
        f.write(repr(value))
    os.replace(out + ".new", out)


def _separated(h, m, folder: str, out: str) -> dict | None:
    """The cuts the planner held back (HELD_FILE: prune.full_model_bound's `defer`) separated on the
    LP loaded in `h` (cutpool.separated_lp, for m["held_s"] seconds), before integrality is put back:
    its objective written as the first bound (every plan meets the cuts), the rows added saved
    (SEPARATED_FILE) and its optimum (OPTIMUM_FILE: x, reduced costs, objective) for the planner's
    narrowed restarts (mipbound.Prover.narrow); returned, with the rows and duals, for the
    Lagrangian cuts (lagrangian.in_child). None where the LP did not solve in time."""
    import pickle

    import numpy as np

    from planner.milp import cutpool, lagrangian

    with open(os.path.join(folder, HELD_FILE), "rb") as f:
        held = pickle.load(f)
    objective, added = cutpool.separated_lp(h, held, time.monotonic() + float(m["held_s"]))
    if objective is None:
        return None
    _write_bound(out, objective)
    a = {k: m[k] for k in ("cost", "lower", "upper", "row_lower", "row_upper", "starts", "index", "value")}
    if added:
        starts, index, value, rhs = lagrangian.joined(added)
        lagrangian.save(os.path.join(folder, SEPARATED_FILE), starts=starts, index=index, value=value, rhs=rhs)
        a = lagrangian.with_rows(a, starts, index, value, rhs)
    solution = h.getSolution()
    x, reduced = np.asarray(solution.col_value), np.asarray(solution.col_dual)
    lagrangian.save(os.path.join(folder, OPTIMUM_FILE), x=x, reduced=reduced, objective=np.array(objective))
    return {"a": a, "duals": np.asarray(solution.row_dual), "point": x, "objective": objective}


if __name__ == "__main__":
    _prove(sys.argv[1], float(sys.argv[2]), *sys.argv[3:6])
