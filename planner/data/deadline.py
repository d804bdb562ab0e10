"""The wall-clock budget of one plan: `plan run --time-limit SECONDS`, else the scenario's
solver.time_limit_s, bounds the options build, the solve and the explanations together.

One budget is open at a time in a process (`with budget(60): ...`; sweeps plan their variants one
per process or one after another). The layers below read it without being handed it:
  - the options build checks it between demands and stops with exit 4 (SolverError) when it runs
    out before any plan exists;
  - every solve is given at most the seconds left (planner.milp.solve); a solve the budget stopped
    is recorded as a cut of the current step;
  - the explanations skip what the budget leaves no time for, and say so.
A plan records what was cut short (solver.cut_short in the JSON, a warning on stderr), so a plan
without cuts depends on work done only, never on how busy the machine was, and --no-timings
output stays byte-identical from run to run. One share of time is not the budget's: the re-planned
alternatives of --explain full may take as long as the plan's own search (explain.narrative:
milp_budget); what that share stops is said in solver.explanations_stopped, and on a machine busy
enough to stop some, those rows differ from run to run (--explain brief and none never do).
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager

RESERVE_FRACTION = 0.05
"""Of the budget, kept back from the work (options, solves, explanations) for reading the plan out
and verifying it, which always run."""


class Budget:
    """Seconds for the whole command, the step under way (for progress) and the cuts so far."""

    def __init__(self, seconds: float, clock=time.monotonic, start: float | None = None):
        self.seconds = float(seconds)
        self.clock = clock
        self.start = clock() if start is None else start
        self.step = ""
        self.cuts: list[str] = []
        self._lock = threading.Lock()

    def elapsed(self) -> float:
        return self.clock() - self.start

    def left(self) -> float:
        """Seconds left for work: the budget less what has run and the reserve for reading the
        plan out and verifying it (RESERVE_FRACTION)."""
        return self.seconds * (1 - RESERVE_FRACTION) - self.elapsed()

    def expired(self) -> bool:
        return self.left() <= 0

    def cut(self, what: str) -> None:
        """Record that the budget stopped `what` (said once, in the order it happened)."""
        with self._lock:
            if what not in self.cuts:
                self.cuts.append(what)


_CURRENT: list[Budget] = []


@contextmanager
def budget(seconds: float | None, start: float | None = None):
    """Open a budget of `seconds` for the block (None or inf: no budget), counted from `start`
    (time.monotonic(); default now); inside an open budget, the block shares it."""
    if _CURRENT or seconds is None or not math.isfinite(seconds):
        yield current()
        return
    b = Budget(seconds, start=start)
    _CURRENT.append(b)
    try:
        yield b
    finally:
        _CURRENT.remove(b)


def current() -> Budget | None:
    return _CURRENT[-1] if _CURRENT else None


def left() -> float:
    """Seconds left of the open budget (inf without one)."""
    b = current()
    return b.left() if b is not None else math.inf


def step(name: str) -> None:
    """Name the step under way (progress on stderr shows it)."""
    b = current()
    if b is not None:
        b.step = name


def cut(what: str) -> None:
    b = current()
    if b is not None:
        b.cut(what)


def cuts() -> list[str]:
    b = current()
    return list(b.cuts) if b is not None else []
