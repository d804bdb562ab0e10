"""A large options build's serving searches shared with a second process.

The serving search (build.serve_configs: for each split, the largest batch within the targets)
takes most of a large build: 60 generated jobs (benchmarks/milp.py) ask 1,944 searches, 3/4 of
the build, while the machine's second core waits. Searches of different (model, accelerator)
share nothing (their inner answers are keyed by both), so the distinct searches are split by that
pair into two shares of about equal count: a child forked from this process computes one and sends
its answers back (pickled, through a pipe), this process computes the other meanwhile.

The answers are the same as computed here, pure functions of the catalog rows and the workload, so
the options are the same: a child that fails, or whose answers cannot be read, leaves its share to
be computed here as before. Only on Linux (fork, which shares the loaded catalog and modules at no
cost: a new interpreter would import them again), with two CPUs or more for this process, and from
MIN_SEARCHES distinct searches up (below, the fork and the answers' transfer cost about what they
save). The child resets SIGINT and SIGTERM to end at once (the command's own handler ends every
child on its way out: cli/signals.py) and stops at the command's time limit like the build. Where
no process can be forked (a container's process limit), everything is computed here.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import time

MIN_SEARCHES = 300


def cpus() -> int:
    """The CPUs this process may use (its affinity mask)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (no affinity call: not Linux)
        return os.cpu_count() or 1


def possible() -> bool:
    """Whether a child can share the work here (the module docstring: Linux's fork, two CPUs)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and cpus() >= 2


def shared(tasks: list, compute, group, end: float | None) -> dict:
    """{key: compute(*args)} for tasks [(key, args)] (distinct keys), one share computed by a forked
    child, the other here; {} where it does not pay or cannot run (the module docstring): the caller
    computes them. `group(key)`: tasks of one group stay in one share. `end`: time.monotonic() past
    which neither process starts a task (what is missing is left to the caller)."""
    if len(tasks) < MIN_SEARCHES or not possible():
        return {}
    mine, theirs = _split(tasks, group)
    try:
        read, write = os.pipe()
    except OSError:  # (no descriptors left: the caller computes them all, as without a second process)
        return {}
    try:
        pid = os.fork()
    except OSError:  # (no process allowed: a container's limit, or memory)
        os.close(read)
        os.close(write)
        return {}
    if pid == 0:  # the child: its share, pickled into the pipe, then gone without running the parent's clean-up
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.close(read)
            data = pickle.dumps(_computed(theirs, compute, end), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write, "wb") as f:
                f.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    ended = False
    try:
        out = _computed(mine, compute, end)
        with os.fdopen(read, "rb") as f:
            data = f.read()
        os.waitpid(pid, 0)
        ended = True
    finally:
        if not ended:  # (interrupted, or this share failed: the child ends with it)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    try:
        out.update(pickle.loads(data))
    except Exception:  # noqa: BLE001 (a child that failed wrote nothing: its share is computed by the caller)
        pass
    return out


def _split(tasks: list, group) -> tuple[list, list]:
    """Two shares of whole groups, the largest group first to the smaller share (ties to the first)."""
    groups: dict = {}
    for key, args in tasks:
        groups.setdefault(group(key), []).append((key, args))
    shares: tuple[list, list] = ([], [])
    for _, members in sorted(groups.items(), key=lambda g: (-len(g[1]), repr(g[0]))):
        min(shares, key=len).extend(members)
    return shares


def _computed(tasks: list, compute, end: float | None) -> dict:
    out = {}
    for key, args in tasks:
        if end is not None and time.monotonic() >= end:
            break
        out[key] = compute(*args)
    return out
