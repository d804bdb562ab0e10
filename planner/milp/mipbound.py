"""The full model's bound raised by branch and cut in a process of its own, while the plan's search
runs (large scenarios: app/planning.py, prune.py).

A shortlisted plan's gap is measured against a valid lower bound of the full model: its LP
relaxation (prune.full_model_bound), or CBC's root node when time is left after the search
(prune.root_bound). The LP leaves most of that gap: it buys fractions of the systems that are
bought, whose rounding costs up to a system per offer. HiGHS's branch and cut on the full model
(the LP the bound step loaded, integrality put back) raises the bound within a second of its root
LP: on 60 generated jobs of every acquisition mode (seed 3, optimum 2,158,706 $/yr) from the LP's
2,118,430 to 2,134,374 one second after it, 2,139,352 five seconds after (without presolve; with
it, PRESOLVE_OVER_LP, 2,147,006 after 9 s). benchmarks/milp.py --only large (--explain none, this
2-core machine), before rental-mir (covers.py) and this module -> with them: 60 jobs seed 3, limit
10 s / 60 s, 4.93% -> 2.68% / 2.38% -> 0.59%, optimal; seed 4 2.72% -> 1.40% / 1.12% -> 0.76%,
optimal; 200 jobs seed 4, 30 s, 2.15% -> 1.54%. On 200 jobs seed 3 HiGHS alone, heuristics on,
finds 8,919,682 $/yr in 273 s, its bound then 8,724,890.

The search runs CBC in a process of its own, one core; the prover takes another (the machine must
have two): a child Python process (python -m planner.milp.prover_child) reads the model from a file,
runs HiGHS with its heuristics off (its bound is what it is for), and writes each higher dual bound
to a file (replaced whole, so a read never sees half of one). A bound is valid whenever it was
written: every bound branch and cut reports is below every plan. When the search and the root node
are done and the plan's gap is still above the one asked, the planner waits on the child
(Prover.wait) until its bound is within that gap, it ends, or the root node's share of the time
left passes (60 jobs seed 5, limit 60 s: the search was done at 20 s, gap 4.67%; waiting, 2.74% at
54 s in one draw, 4.27% in another: when the bound rises moves with the load). Then the child is
stopped and its last bound read (Prover.stop): its time is the plan's, never more.

Branch and cut also finds plans of the full model (every pair, none shortlisted), heuristics off or
not: the child writes its cheapest so far (PLAN_FILE), and when it is cheaper than the search's the
planner plans that (prune.prover_plan reads it back onto the full model, checks every row and bound,
and the independent verifier checks the plan as any other). 60 jobs seed 5, limit 60 s: the
search's plan 1,029,532 $/yr, the prover's 1,020,745 (gap 4.27% -> 3.44%, the same bound).

Once the screened search (screening.py, 60 generated jobs) has a first plan of cost C, the child is
restarted narrowed (Prover.narrow, app/planning.py): on the plans cheaper than (1 - gap) x C, the
bound that proves C (and every cheaper plan found after it) within the gap asked. The full LP's
reduced costs fix at 0 the columns no such plan uses (relaxation.Optimum.within: 2,606 of 15,122
on seed 3), and the child stops once its bound, capped there, reaches it; it is not restarted for a
model less than NARROW_MIN_LEFT_OUT smaller. benchmarks/milp.py --only large, --explain none, this
2-core machine, limit 10 s, seeds 3-8, mean of two draws 2.30% -> 2.11% (seed 4 proven). Not taken:
the first plan handed to the running child as its incumbent (kCallbackMipUserSolution) without a
restart (seed 6: 2,159,048 against 2,190,580 without it; seed 3 2,128,773 against 2,136,630).

A cheaper plan, read from CBC's log while it searches (cbclog.Tail), restarts the child as a proof
(narrow's `proving`) where app/narrowing.py says it pays: HiGHS is capped at the target
(objective_bound), which prunes every node at or above it, and presolves. Below the optimum that
ends the search far sooner than a child that only raises its bound (60 jobs, the narrowed model's
own time: seed 7 1.6 s against 9.1 s, seed 5 6.2 s and seed 6 8.3 s against more than 10), above it
the cap and presolve slowed the bound (seed 8's first target: 3,514,537 $/yr after 10 s against
3,516,640 after 3), so the first narrowing, whose target is the first plan's, is not capped.
benchmarks/milp.py --only large, limit 10 s, seeds 3-8 (two draws each, interleaved with the code
before): seed 7 proven in 8.2 s both times (1.06 / 1.15% before); the others as before (seeds 3, 4
and 8 proven, seed 5 2.10 / 1.88% against 2.21 / 2.79%, seed 6 2.10 / 2.09% against 2.09 / 1.83%).
Limit 60 s: seed 6 proven in 12.6 s (37.6 s before: CBC's search, which had found its plan, is
stopped once the prover proves it), seed 5 in 15-18 s (27 s). Capping the child that follows the
200-job searches the same way made each of seeds 3-8 worse at 30 s (mean 2.40 -> 2.57%): their plans
are seldom within the gap of the optimum, so the cap lies above it.
A narrowed start also follows the second search (200 jobs) once CBC's plan is in; at 30 s it gets
no time to show.

Where it starts with the search (the screened search's shortlists, app/planning.py), the first child
also separates the MIR cuts the full model holds back (covers.py, cutpool.separated_lp) on its LP
before anything else, in place of the planner (prune.full_model_bound's `defer`): its first bound is
that LP's, and the rows it added and that LP's optimum are read back (Prover.separating). After its
Lagrangian cuts it raises the bound by branch and bound on the LP alone (lpbranch.py), not HiGHS's
branch and cut, and it is not narrowed (Prover.branching).

The first child on the full model starts from the Lagrangian cuts (lagrangian.py, LAGRANGIAN_SHARE of
its time): each job's or pool's own integer problem at the LP's prices, c'_B x_B >= v_B, added before
branch and cut, so its root LP is at least the Lagrangian bound (written as its first bound); the
planner reads them back (CUTS_FILE) and every later child on the LP (a narrowed restart) starts with
them too. Same benchmark, two draws each, before -> after: seed 3 1.05% / 1.05% -> optimal at 9.0 s
(both), seed 4 optimal at 8.7 / 8.3 s -> 8.4 / 8.7 s, seed 5 4.55 / 4.38% -> 3.88 / 3.88%, seed 6
2.63 / 2.63% -> 1.70 / 1.50%, seed 7 optimal at 7.2 / 7.2 s -> 7.1 / 7.2 s, seed 8 1.11 / 1.06% ->
optimal at 9.3 / 8.8 s: four of six proven within 1% in 10 s (two before), mean 1.87 -> 1.57%.
Added in the planner before the prover started (the search 1.1 s later), they proved three. The
narrowing keeps the reduced costs of the LP without the cuts: those with them fix fewer columns.

The same child also searches (start_search: HiGHS's heuristics on, no bound written), beside CBC,
a shortlist too large for the screened search (above screening.MAX_COLUMNS: 200 generated jobs and
more), where CBC alone searches: the two are each the better on some fleets (the shortlisted
models of 200 generated jobs, 15 s each, $/yr CBC against HiGHS: seed 3 9,411,322 against 8,980,400,
seed 4 7,962,709 against 7,992,686, seed 5 14,274,877 against 14,473,117), and the cheaper plan is
the plan (app/planning.py). On a machine of two cores the search takes the prover's core until it
ends; the prover starts then, on what time is left.

Once the plan's search has ended with time left and the plan's gap above the one asked, the same
child searches the searched model from that plan (start_search's `plan`: HiGHS's incumbent) on the
core the search has left, while the planner waits on the prover (app/planning._polish). CBC ends
at the gap asked of the shortlist's own bound, above the full model's, and so may end on a plan a
little dearer than the shortlist's best: 60 generated jobs seed 6 (limit 10 s), CBC's 2,233,835
$/yr ended its search at 6.4 s; HiGHS from it found 2,231,589 (the shortlist's and the full
model's optimum is 2,230,199), and the prover's bound, 2,210,577 at 9 s, proved that plan within
1% (1.04% before). Seeds 3-8, two draws each: 3 of 6 proven within 1% in 10 s (2 before).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

MIN_CORES = 2
"""the prover runs beside the search only where the machine has this many cores or more"""
WAIT_POLL_S = 0.05
"""how often Prover.wait reads the child's bound"""
BOUND_FILE = "bound"
"""the file, beside the model's, that holds the child's best bound so far (replaced whole each time)"""
PLAN_FILE = "plan.npy"
"""the file, beside the model's, that holds the child's cheapest plan so far: its objective, then
each column's value (replaced whole each time)"""
CUTS_FILE = "cuts.npz"
"""the file, beside the model's, that holds the Lagrangian cuts the child added (written once, whole)"""
HELD_FILE, SEPARATED_FILE, OPTIMUM_FILE, READY_FILE = "held.pkl", "separated.npz", "optimum.npz", "ready"
"""the cuts the planner held back for the child to separate (pickled: cutpool.stripped), the rows it
added, its LP's optimum with them, and the mark that it has done so and added its Lagrangian cuts
(prover_child._separated)"""
HELD_SHARE = 0.5
"""the most of its time a child spends separating the held cuts"""
LAGRANGIAN_SHARE, LAGRANGIAN_MAX_S = 0.2, 2.0
"""the share of its time a prover child started on the full model spends on the Lagrangian cuts
(lagrangian.py) before its branch and cut, and the most seconds: the search's first plan narrows
the child (restarts it) 2-3 s after it starts on 60 generated jobs, and cuts not written by then are
lost to every later child (limit 60 s, seed 8: 10.8 s given, the cuts lost, proven only at 53 s
against 7.7 s at a 10 s limit)"""


class Prover:
    """HiGHS's branch and cut on a model's LP relaxation `lp` (relaxation.Relaxation: its arrays,
    integer columns and objective constant; its columns name the plan's values, prune.plan_of) in a
    child process for at most `seconds`; stop() ends it and reads its best dual bound and its
    cheapest plan (plan)."""

    def __init__(self, lp, seconds: float, presolve: bool, search: bool = False, cutoff: float | None = None,
                 optimum=None, lagrange: tuple | None = None, start=None, held: list | None = None):
        self.lp, self.constant = lp, lp.constant
        self.separating = self.branching = held is not None
        """separating: the child separates the held cuts (prune.full_model_bound's `defer`), its rows
        and optimum not read yet (_read_cuts); branching: it then raises its bound by branch and bound
        on the LP (lpbranch.py), best first, which no cap would raise sooner: a narrowing does not
        restart it (narrow), which would lose its tree"""
        self.optimum = None
        """the optimum of the LP with the child's cuts (relaxation.Optimum), once read"""
        self.best: float | None = None
        self.plan: tuple[float, object] | None = None
        """the child's cheapest plan read so far: (objective with its constant, column values)"""
        self.proc, self.folder, self.keep = None, None, None
        self.cutoff: float | None = None
        """a narrowed child's cap (narrow), objective constant included; None: not narrowed"""
        self.cuts_read = False
        narrowing = self._narrowed(cutoff, optimum) if cutoff is not None and optimum is not None else None
        self._launch(seconds, presolve, "search" if search else "bound", cutoff, narrowing,
                     lagrange if narrowing is None and not search else None, start=start, held=held)

    def _narrowed(self, cutoff: float, optimum) -> tuple[dict, object]:
        """The LP's arrays narrowed to the plans cheaper than `cutoff` (narrowed, Optimum.within), and
        the columns kept."""
        a = self.lp.arrays
        return narrowed(a, *optimum.within(cutoff, a["lower"], a["upper"], self.lp.integer))

    def _launch(self, seconds: float, presolve: bool, mode: str, cutoff: float | None,
                narrowing: tuple | None, lagrange: tuple | None = None, proving: bool = False, start=None,
                held: list | None = None) -> None:
        """The child started on the LP's model, or on `narrowing` (_narrowed) with its cap `cutoff`;
        with `lagrange` (each column's block, lagrangian.labels, and the LP's optimum) it adds the
        Lagrangian cuts first (lagrangian.in_child); with `start` (a plan: each column's value) a
        search starts from that plan (its incumbent)."""
        import numpy as np

        arrays, integer, extra = dict(self.lp.arrays), np.array(self.lp.integer, dtype=bool), {}
        if lagrange is not None:
            label, optimum = lagrange
            extra.update(block=label, duals=optimum.rows, point=optimum.x,
                         objective=np.array(optimum.objective - self.constant),
                         lagrange_s=np.array(min(LAGRANGIAN_SHARE * seconds, LAGRANGIAN_MAX_S)))
        self.keep, self.cutoff = None, None
        if start is not None:
            extra["start"] = np.asarray(start, dtype=float)
        if narrowing is not None:
            (arrays, self.keep), self.cutoff = narrowing, cutoff
            integer = integer[self.keep]
            extra["cutoff"] = np.array(cutoff - self.constant)
            if proving:
                extra["proving"] = np.array(True)
        self.folder = tempfile.mkdtemp(prefix="planner-bound-")
        if held is not None:
            import pickle

            with open(os.path.join(self.folder, HELD_FILE), "wb") as f:
                pickle.dump(held, f, protocol=pickle.HIGHEST_PROTOCOL)
            extra["held_s"] = np.array(HELD_SHARE * seconds)
            basis = self.lp.basis()  # (the LP the planner solved: the child's first solve starts there)
            if basis is not None and len(basis[1]) == len(arrays["row_lower"]):
                extra.update(col_basis=basis[0], row_basis=basis[1])
            extra["branch"] = np.array(True)  # (its bound raised by lpbranch.py: not restarted, narrow)
        path = os.path.join(self.folder, "model.npz")
        np.savez(path, integer=integer, **arrays, **extra)
        main = threading.current_thread() is threading.main_thread()  # (prover_child._watchdog: a thread's child)
        self.proc = subprocess.Popen([sys.executable, "-m", "planner.milp.prover_child", path, f"{seconds:.3f}",
                                      "on" if presolve else "off", mode, "parent" if main else "thread"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    def narrow(self, cutoff: float, optimum, seconds: float, lp_seconds: float, proving: bool = False) -> bool:
        """The child restarted on the plans cheaper than `cutoff`: the columns the LP's reduced costs
        fix at 0 below it (relaxation.Optimum.within) left out, the others' bounds tightened. The
        narrowed model holds every plan cheaper than the cutoff, so its bound, capped at the cutoff,
        holds for every plan (one that costs more is above the cap); the child stops once its bound
        reaches the cap, and the bound before the restart is kept if higher (read). The cutoff need
        not be a plan's cost: (1 - gap) x a plan's (app/planning.py) is the bound that proves that
        plan within the gap. proving: HiGHS is capped at the cutoff (objective_bound) and presolves
        (the module docstring: a target believed below the optimum). Not restarted (False) when the
        narrowing would leave out less than NARROW_MIN_LEFT_OUT of the columns: the restart would
        cost what the child has done for a model barely smaller; nor a branching child (branching)."""
        if self.branching:
            return False
        self._read_cuts()
        optimum = self.optimum or optimum
        narrowing = self._narrowed(cutoff, optimum)
        if len(narrowing[1]) > (1 - NARROW_MIN_LEFT_OUT) * len(self.lp.arrays["cost"]):
            return False
        self._end()
        self._launch(seconds, proving or seconds >= PRESOLVE_OVER_LP * lp_seconds, "bound", cutoff, narrowing,
                     proving=proving)
        return True

    def incumbent(self) -> tuple[float, object] | None:
        """The child's cheapest plan so far, (objective with its constant, each column's value in the
        LP's order: Relaxation.column), or None: none found yet."""
        a = self._plan_file()
        if a is not None:
            x = a[1:]
            if self.keep is not None:  # (a narrowed child's columns: the others are 0)
                import numpy as np

                x = np.zeros(len(self.lp.arrays["cost"]))
                x[self.keep] = a[1:]
            self.plan = (float(a[0]) + self.constant, x)
        return self.plan

    def _plan_cost(self) -> float | None:
        """The child's cheapest plan's objective, its constant included, without reading the plan
        (the file mapped, its first number read)."""
        a = self._plan_file(mapped=True)
        return None if a is None else float(a[0]) + self.constant

    def _plan_file(self, mapped: bool = False):
        """PLAN_FILE's array (mapped: read on access), or None: none written yet."""
        import numpy as np

        try:
            return np.load(os.path.join(self.folder, PLAN_FILE), mmap_mode="r" if mapped else None)
        except (OSError, ValueError, EOFError):
            return None

    def read(self) -> float | None:
        """The best bound written so far, objective constant included (None: none yet); the child
        runs on."""
        try:
            with open(os.path.join(self.folder, BOUND_FILE)) as f:
                value = float(f.read())
        except (OSError, ValueError):  # none written yet
            return self.best
        if math.isfinite(value) and (self.best is None or value + self.constant > self.best):
            self.best = value + self.constant  # (a narrowed child's first bounds may be below the last child's)
        return self.best

    def wait(self, gap: float, objective: float, seconds: float, beside: Prover | None = None) -> float | None:
        """Wait until the bound is within `gap` of the cheapest of `objective` (the search's plan),
        the child's own plan and that of the search `beside` it (start_search), the child ends, or
        `seconds` pass; the best bound then. The search has ended: its core is the child's (or the
        search's beside it), and the bound it raises after the plan is found is as valid as before."""
        end = time.monotonic() + seconds
        while self.proc is not None and self.proc.poll() is None and time.monotonic() < end:
            best = self.read()
            found = [c for c in (self._plan_cost(), beside and beside._plan_cost()) if c is not None]
            cheapest = min([objective, *found])
            if best is not None and best >= cheapest - gap * abs(cheapest):
                break
            time.sleep(min(WAIT_POLL_S, max(0.0, end - time.monotonic())))
        return self.read()

    def stop(self) -> float | None:
        """Stop the child (if it still runs) and return the best bound it wrote, objective constant
        included (None: none)."""
        self._end()
        return self.best

    def _end(self) -> None:
        """The child ended, its last bound and plan read, its folder removed."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None
            self.read()
            self.incumbent()
            self._read_cuts()
            shutil.rmtree(self.folder, ignore_errors=True)

    def _read_cuts(self) -> None:
        """The Lagrangian cuts a child added (CUTS_FILE), and the held cuts it separated (SEPARATED_FILE)
        with its LP's optimum (optimum), added once to the LP's arrays (rows that hold for every plan): a
        narrowed restart, and any later child on the same LP, start with them."""
        if self.folder is None:
            return
        from planner.milp import lagrangian

        if self.separating and os.path.exists(os.path.join(self.folder, OPTIMUM_FILE)):
            import numpy as np

            from planner.milp.relaxation import Optimum

            self.lp.add_array_rows(lagrangian.load(os.path.join(self.folder, SEPARATED_FILE)) or [])
            with np.load(os.path.join(self.folder, OPTIMUM_FILE)) as f:
                self.optimum = Optimum(float(f["objective"]) + self.constant, f["x"], f["reduced"])
            self.separating = False
        elif self.separating and os.path.exists(os.path.join(self.folder, READY_FILE)):
            self.separating = False  # (its LP did not solve in its time: no rows, no optimum)
        if self.cuts_read or self.separating:  # (the Lagrangian's rows after the separated ones)
            return
        rows = lagrangian.load(os.path.join(self.folder, CUTS_FILE))
        if rows is not None:
            self.lp.add_array_rows(rows)
            self.cuts_read = True


NARROW_MIN_LEFT_OUT = 0.08
"""Prover.narrow restarts the child only when the narrowed model leaves out this share of the columns
or more. benchmarks/milp.py's 60 generated jobs (the first plan's target, limit 10 s): seed 3 leaves
out 17.2%, seed 7 10.5%, seed 4 9.8%, and narrowed they gain (seed 4 proven); seed 5 leaves out 7.2%
and narrowed it lost (limit 60 s: 0.80%, proven, -> 3.28%: its bound 1,006,324 -> 995,059 $/yr, and
the prover's plan, 1,014,393, not found), seed 6 6.9% (no gain)."""
PRESOLVE_OVER_LP = 10.0
"""HiGHS's presolve is run when the prover has this many times the LP's time (lp_seconds) or more:
it delays the root LP (60 generated jobs: 3.4 s against 1.1 s without, the LP alone 0.8 s) but
its cuts go further (2,147,006 against 2,139,352 $/yr after 9 s)"""


def start(lp, seconds: float, lp_seconds: float, cutoff: float | None = None, optimum=None,
          lagrange: tuple | None = None, held: list | None = None) -> Prover | None:
    """A prover of the model whose LP relaxation is `lp` (relaxation.Relaxation), for at most
    `seconds`; None without one, on a machine with fewer than MIN_CORES cores, or with less than a
    second. With a plan's cost (`cutoff`) and the LP's optimum, narrowed to the plans cheaper than
    it from the start (Prover.narrow). held: the cuts the child separates first (Prover.separating)."""
    if lp is None or cores() < MIN_CORES or seconds < 1.0:
        return None
    return Prover(lp, seconds, presolve=seconds >= PRESOLVE_OVER_LP * lp_seconds, cutoff=cutoff, optimum=optimum,
                  lagrange=lagrange, held=held)


def narrowed(arrays: dict, lower, upper) -> tuple[dict, object]:
    """The LP's arrays (relaxation.Relaxation.arrays) with the column bounds (lower, upper) and
    without the columns both fix at 0 (their entries dropped from the rows); and the indices of the
    columns kept, in order."""
    import numpy as np

    keep = np.flatnonzero((lower != 0) | (upper != 0))
    renumbered = np.full(len(lower), -1, dtype=np.int64)
    renumbered[keep] = np.arange(len(keep))
    rows = len(arrays["row_lower"])
    row_of = np.repeat(np.arange(rows), np.diff(np.append(arrays["starts"], len(arrays["index"]))))
    column = renumbered[arrays["index"]]
    kept = column >= 0
    out = dict(arrays, cost=arrays["cost"][keep], lower=lower[keep], upper=upper[keep],
               index=column[kept].astype(np.int32), value=arrays["value"][kept],
               starts=np.searchsorted(row_of[kept], np.arange(rows)).astype(np.int32))
    return out, keep


def start_search(lp, seconds: float, plan=None) -> Prover | None:
    """A second search of a shortlisted model whose LP relaxation is `lp`: HiGHS's branch and cut,
    its heuristics on, beside CBC's search of the same model (app/planning.py), or after it from
    CBC's `plan` (each column's value in the LP's order), for at most `seconds`; its cheapest plan
    is read as the prover's, and it writes no bound (a shortlist's bound is none of the full
    model's). None where the prover's conditions (start) are not met."""
    if lp is None or cores() < MIN_CORES or seconds < 1.0:
        return None
    return Prover(lp, seconds, presolve=True, search=True, start=plan)


def cores() -> int:
    """the machine's cores (the search takes one, each child another)"""
    return os.cpu_count() or 1
