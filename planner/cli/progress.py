"""Progress on stderr for work that takes more than about two seconds; never on stdout.

On a terminal one line updates in place (elapsed seconds and the current step) and is cleared at
the end; elsewhere (a pipe, a CI log) a line every few seconds. `--quiet` turns it off. The steps a
plan goes through are named up front (options, solve, explanations); the plan's wall-clock budget
(planner.data.deadline) names the one under way and the limit, or a caller says so with `step()`.
"""

from __future__ import annotations

import sys
import threading
import time

from planner.data import deadline


class Ticker:
    """with Ticker("planning bank.yaml", quiet) as t: ... t.step("solve") ..."""

    def __init__(self, what: str, quiet: bool = False, delay_s: float = 2.0, every_s: float | None = None,
                 stream=None, steps: str = ""):
        self.what, self.quiet, self.delay_s = what, quiet, delay_s
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = every_s if every_s is not None else (0.5 if self.tty else 5.0)
        self.current = steps
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0
        self.printed = 0

    def step(self, name: str) -> None:
        self.current = name

    def __enter__(self) -> "Ticker":
        self._start = time.perf_counter()
        if not self.quiet:
            self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.printed and self.tty:
            self._write("\r\033[K")
        elif self.printed:  # an exception (no plan, failed verification, Ctrl-C) is not "done"
            ended = "stopped after" if exc and exc[0] is not None else "done in"
            self._write(f"{self.what}: {ended} {time.perf_counter() - self._start:.1f} s\n")

    def _run(self) -> None:
        if self._stop.wait(self.delay_s):
            return
        while not self._stop.is_set():
            elapsed = time.perf_counter() - self._start
            b = deadline.current()  # the plan's wall-clock budget names its step and its limit
            current = (b.step if b is not None and b.step else self.current)
            doing = f" ({current})" if current else ""
            of = f" of {b.seconds:g} s" if b is not None else ""
            if self.tty:
                self._write(f"\r\033[K{self.what}{doing}: {elapsed:.0f} s{of}")
            else:
                self._write(f"{self.what}{doing}: {elapsed:.0f} s{of} so far\n")
            self.printed += 1
            self._stop.wait(self.every_s)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is optional
            pass
