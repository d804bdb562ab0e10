"""What CBC's log says (solve.py hands CBC a log file): its final bound, an infeasibility its bound
tightening proved, and, while it runs, the cost of each cheaper plan it finds (Tail).

The plans' costs are read for the prover (mipbound.py, app/planning.py), which proves the plan
within the gap asked fastest when it knows a target below the optimum: (1 - gap) x a plan's cost,
as soon as CBC finds the plan, not when its search ends. CBC finds its best plan early (60
generated jobs, limit 10 s: seed 5's 1,016,910 $/yr 0.45 s into a search of 4.2 s, seed 7's final
plan at 0.035 s, seed 6's at 0.9 s of 4.0 s), and its log is written as it goes. A cost read here
is a hint, never a plan: the plan is what CBC returns, and a log this module cannot read changes
nothing but when the prover learns of a plan.

Lines read as a plan's cost (CBC's objective, without the model's objective constant, which PuLP
does not write into the MPS file):
  Cbc0004I / Cbc0012I ...   Integer solution of <cost> found ...           (CBC 2.10, cbcbox)
  Cbc0045I                  MIPStart provided solution with cost <cost>    (the warm start)
  cbcbox's tree table       ★? <nodes> <on tree> <depth> <best plan> ...   (after "Branch and bound")
  cbcbox's root heuristics  ★<heuristic> solution <cost> <seconds>
"""

from __future__ import annotations

import math
import re
import threading

LOWER_BOUND = re.compile(r"^Lower bound:\s*([-+0-9.eE]+|-?inf)", re.MULTILINE)
PROVED_INFEASIBLE = re.compile(r"^Bound tightening: infeasibility proved", re.MULTILINE)

_NUMBER = r"([-+]?\d[\d.]*(?:[eE][-+]?\d+)?)"
_MESSAGES = re.compile(rf"(?:Integer solution of|provided solution with cost)\s+{_NUMBER}")
_HEURISTIC = re.compile(rf"^\s*★\s*\S+\s+solution\s+{_NUMBER}\s")
_TREE_ROW = re.compile(rf"^\s*★?\s*\d+\s+\d+\s+\d+\s+{_NUMBER}\s")
_TREE_START = "Branch and bound"


def _read(log: str | None) -> str | None:
    if not log:
        return None
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def bound(log: str | None) -> float | None:
    """CBC's best bound from its log ('Lower bound: X' in its final statistics), if it wrote one."""
    text = _read(log)
    found = LOWER_BOUND.findall(text) if text else []
    try:
        return float(found[-1]) if found else None
    except ValueError:
        return None


def proved_infeasible(log: str | None) -> bool:
    """Whether CBC's bound tightening (cbcbox, before the LP or the search) proved the model
    infeasible: it then skips the solve and reports 'Status unknown' on an LP (initialSolve), which
    PuLP reads as not solved; the integer bounds it tightens hold for every integer point, so the
    MILP has no plan (its LP relaxation may still have a fractional one)."""
    text = _read(log)
    return bool(text and PROVED_INFEASIBLE.search(text))


class Plans:
    """The plans' costs in a log read line by line (lines): each line's cost, if it names one.
    cbcbox's tree rows are read only past the tree's heading (earlier tables have rows of numbers
    too)."""

    def __init__(self):
        self.in_tree = False

    def cost(self, line: str) -> float | None:
        if _TREE_START in line:
            self.in_tree = True
        found = _MESSAGES.search(line) or _HEURISTIC.search(line) or (self.in_tree and _TREE_ROW.search(line))
        if not found:
            return None
        try:
            value = float(found.group(1))
        except ValueError:
            return None
        return value if math.isfinite(value) else None

    def lines(self, text: str) -> list[float]:
        return [c for c in map(self.cost, text.splitlines()) if c is not None]


POLL_S = 0.1
"""how often Tail reads what CBC has added to its log"""


class Tail:
    """A thread that reads CBC's log while it runs and calls found(cost + constant) for each plan
    cheaper than every one before it; stop() reads the rest, ends the thread, and raises what found
    raised. With `enough` (a callable), CBC is interrupted (interrupt) once it returns true: the
    plan in hand is proven well enough, and CBC's search would only spend the time."""

    def __init__(self, log: str, found, constant: float = 0.0, enough=None):
        self.log, self.found, self.constant, self.enough = log, found, constant, enough
        self.interrupted = False
        self.best = math.inf
        self._plans, self._offset, self._partial = Plans(), 0, b""
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.wait(POLL_S):
                self._read()
                if self.enough is not None and not self.interrupted and self.best < math.inf and self.enough():
                    self.interrupted = interrupt(self.log)
            self._read()
        except BaseException as e:  # (raised again by stop)
            self._error = e

    def _read(self) -> None:
        try:
            with open(self.log, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return
        self._offset += len(chunk)
        whole, _, self._partial = (self._partial + chunk).rpartition(b"\n")  # (whole lines, whole characters)
        for cost in self._plans.lines(whole.decode("utf-8", errors="replace")):
            if cost < self.best - 1e-9 * max(1.0, abs(cost)):
                self.best = cost
                self.found(cost + self.constant)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is not None:
            raise self._error


def interrupt(log: str) -> bool:
    """Stop the CBC process of this process that writes `log` (its standard output) as its time
    limit would: SIGINT, on which CBC ends its search and writes its best plan, which PuLP reads as
    a plan found, not proven (checked with cbcbox: a search of 60 generated jobs interrupted after
    3 s came back feasible with its best plan). Linux only (the process is found under /proc); False
    where it was not found."""
    import signal

    return signalled(log, signal.SIGINT) is not None


def signalled(log: str, sig: int) -> int | None:
    """Send `sig` to the CBC process of this process that writes `log`; its process id, or None
    where none was found (Linux only: /proc)."""
    import os

    if not os.path.isdir("/proc"):
        return None
    target, me = os.path.realpath(log), os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/fd/1") != target:
                continue
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            if parent == me:
                os.kill(int(entry), sig)
                return int(entry)
        except (OSError, ValueError, IndexError):
            continue
    return None


CRASHED = re.compile(r"ERROR while running Cbc|Signal SIG[A-Z]+ caught")
"""what cbcbox's CBC writes when it crashes: its signal handler then tries to print a stack trace
and can hang for good (a futex, no CPU): a warm start that CBC's preprocessing, cut short by a time
limit of 0.25 s, made infeasible ended in "double free or corruption" in 5 of 20 runs of one model
(60 generated jobs seed 5, the screened search's last step), and the planner waited 10 minutes"""
CARRY = 80
"""characters of the log read before that are read again with what follows (CRASHED across two reads)"""
HANG_S = 30.0
"""a CBC past its time limit, OVERRUN_STOP_S and the interrupt, by this much or by its limit again,
whichever is more, is killed: no log line says why it runs on, and a plan must not wait forever"""


class Watch:
    """A thread that watches one CBC run by its log `log`: the process is killed (SIGKILL) as soon as
    its log shows a crash (CRASHED), interrupted (SIGINT, as its time limit would) once `interrupt_s`
    have passed, and killed once HANG_S (or interrupt_s) more have passed; a run killed leaves no
    solution file, which PuLP reports as an error (solve.py runs it again without its warm start).
    A run started again writes the same log from its start, and is watched the same way."""

    def __init__(self, log: str, interrupt_s: float):
        self.log, self.interrupt_s = log, interrupt_s
        self._offset, self._carry, self._stop = 0, "", threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import os
        import signal
        import time

        start, interrupted = time.monotonic(), set()
        while not self._stop.wait(POLL_S):
            if CRASHED.search(self._new_text()):
                self._carry = ""  # (read once: a run started again is not killed for it)
                signalled(self.log, signal.SIGKILL)
            elapsed = time.monotonic() - start
            if elapsed > self.interrupt_s + max(HANG_S, self.interrupt_s):
                signalled(self.log, signal.SIGKILL)
            elif elapsed > self.interrupt_s:
                pid = signalled(self.log, 0)  # (which process: each is interrupted once)
                if pid is not None and pid not in interrupted:
                    interrupted.add(pid)
                    try:
                        os.kill(pid, signal.SIGINT)
                    except OSError:  # (it ended meanwhile)
                        pass

    def _new_text(self) -> str:
        import os

        try:
            size = os.path.getsize(self.log)
            if size < self._offset:  # written again from its start: a new run
                self._offset, self._carry = 0, ""
            with open(self.log, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return ""
        self._offset += len(chunk)
        text = self._carry + chunk.decode("utf-8", errors="replace")
        self._carry = text[-CARRY:]  # (a line read in two halves)
        return text

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
