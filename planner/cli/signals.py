"""Ctrl-C and `kill`: stop at once, end the solver's child processes, leave no files behind.

SIGINT exits 130 and SIGTERM 143 (128 + the signal's number, as shells report), with one line on
stderr. While the command runs, every temporary file (the solver's .lp/.mps/.sol files included) lives
in one private folder named by TMPDIR/TMP/TEMP for this process and its children; that folder is
removed on every way out. Output files are written to a temporary name and renamed into place only
when complete (planner.cli.output), so an interrupted command writes nothing under --output.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from contextlib import contextmanager

NAMES = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}


class Interrupted(BaseException):
    """Raised in the main thread by a SIGINT or SIGTERM handler. A BaseException, like
    KeyboardInterrupt, so that no `except Exception` on the way up swallows it, but not a
    KeyboardInterrupt, so that the CLI framework does not turn it into a bare exit status."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(NAMES.get(signum, f"signal {signum}"))

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum)


def _raise(signum, frame):  # the handler: the rest happens while the exception unwinds
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the clean-up
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Interrupted(signum)


def descendants(pid: int | None = None) -> list[int]:
    """Process ids of every descendant of `pid` (this process by default), children first; Linux
    /proc, else `pgrep -P`; an empty list where neither is available."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, int] = {}
    if os.path.isdir("/proc"):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    stat = fh.read().decode("ascii", "replace")
                parents[int(name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, frontier = [], [root]
    while frontier:
        kids = sorted(p for p, pp in parents.items() if pp in frontier and p != root)
        if not parents:  # no /proc: ask pgrep
            kids = _pgrep(frontier)
        kids = [k for k in kids if k not in out]
        out += kids
        frontier = kids
    return out


def _pgrep(parents: list[int]) -> list[int]:
    import subprocess

    found = []
    for p in parents:
        try:
            done = subprocess.run(["pgrep", "-P", str(p)], check=False, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return []
        found += [int(x) for x in done.stdout.split() if x.isdigit()]
    return found


def end_children(grace_s: float = 2.0) -> None:
    """SIGTERM every descendant process (the CBC solver, sweep workers), then SIGKILL what is left
    after `grace_s` seconds."""
    pids = descendants()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            try:
                os.kill(pid, sig)
                alive.append(pid)
            except (ProcessLookupError, PermissionError):
                continue
        pids = alive
        if not alive or sig == signal.SIGKILL:
            break
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_running(p) for p in alive):
            time.sleep(0.02)
        pids = [p for p in alive if _running(p)]
    deadline = time.monotonic() + 1.0  # reap what SIGKILL ended, so none is left a zombie
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if _running(p)]
        time.sleep(0.02)


def _running(pid: int) -> bool:
    """Whether `pid` still runs; our own child counts as running until it is reaped."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done != pid
    except ChildProcessError:
        pass  # not our child (a grandchild): probe it
    except OSError:
        return False
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (ProcessLookupError, PermissionError):
        return False
    except (OSError, IndexError):
        return True


@contextmanager
def guarded():
    """Run the command with SIGINT/SIGTERM handlers and a private temporary folder; on the way out
    (normal, error or signal) end child processes left running and remove the folder."""
    private = tempfile.mkdtemp(prefix="planner-")
    saved_env = {k: os.environ.get(k) for k in ("TMPDIR", "TMP", "TEMP")}
    saved_tempdir = tempfile.tempdir
    previous = {}
    for k in saved_env:
        os.environ[k] = private
    tempfile.tempdir = private
    try:
        for sig in NAMES:
            try:
                previous[sig] = signal.signal(sig, _raise)
            except ValueError:  # not the main thread (an embedding program): leave its handlers alone
                pass
        yield
    except Interrupted:
        end_children()
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        tempfile.tempdir = saved_tempdir
        for k, value in saved_env.items():
            if value is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = value
        shutil.rmtree(private, ignore_errors=True)
