"""Sweeps in parallel: the variants of planner.app.sweep solved by local worker processes, or by the
tasks of a Ray cluster (an optional extra: pip install ".[ray]").

Each variant is independent (its own MILP, its own CBC process), so the entries are the same as a
one-by-one sweep's, in the same order; only the wall time changes. Ray is imported only here and
only when asked for.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from planner.app.sweep import solve_entry
from planner.data.errors import InputError, Problem
from planner.options import forked

BACKENDS = ("local", "ray")


def default_workers() -> int:
    """The CPUs this process may use (the affinity mask, not the machine's count: forked.cpus)."""
    return max(1, forked.cpus())


def run(items, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None, progress=None,
        workers: int | None = None, backend: str = "local", address: str | None = None) -> list[dict]:
    """Like planner.app.sweep.run, on `workers` local processes (default: one per CPU) or on Ray.
    `progress(entry, seconds)` is called in the order variants finish; the result is in variant order."""
    if backend not in BACKENDS:
        raise InputError(Problem(f"unknown backend '{backend}'", "--backend", "use local or ray"))
    jobs = [(n, settings, s) for n, (settings, s) in enumerate(items, 1)]
    if backend == "ray":
        out = _ray(jobs, catalog_paths, time_limit_s, progress, address)
    else:
        workers = min(workers or default_workers(), len(jobs)) or 1
        out = _serial(jobs, catalog_paths, time_limit_s, progress) if workers == 1 else \
            _local(jobs, catalog_paths, time_limit_s, progress, workers)
    return sorted(out, key=lambda e: e["variant"])


def _serial(jobs, catalog_paths, time_limit_s, progress) -> list[dict]:
    out = []
    for n, settings, s in jobs:
        entry, seconds = solve_entry(n, settings, s, catalog_paths, time_limit_s)
        out.append(entry)
        if progress:
            progress(entry, seconds)
    return out


def _local(jobs, catalog_paths, time_limit_s, progress, workers: int) -> list[dict]:
    out = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending = {pool.submit(solve_entry, n, settings, s, catalog_paths, time_limit_s) for n, settings, s in jobs}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: f.result()[0]["variant"]):
                    entry, seconds = fut.result()
                    out.append(entry)
                    if progress:
                        progress(entry, seconds)
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
    return out


def _ray(jobs, catalog_paths, time_limit_s, progress, address: str | None) -> list[dict]:
    try:
        import ray
    except ImportError:
        raise InputError(Problem("the ray backend needs Ray, which is not installed", "--backend ray",
                                 'install the extra: pip install ".[ray]" (or use --backend local)')) from None
    started_here = not ray.is_initialized()
    if started_here:
        kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address:  # a cluster elsewhere: ship this package's code to its workers
            kwargs["runtime_env"] = {"py_modules": [str(Path(__file__).resolve().parents[1])]}
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(Problem(f"cannot reach a Ray cluster at {address or 'a new local one'}: {exc}",
                                     "--address", "start one with `ray start --head` and pass its address, "
                                                  "or leave --address out for a local Ray")) from None
    try:
        task = ray.remote(num_cpus=1)(_timed_entry)
        started = {}
        refs = []
        for n, settings, s in jobs:
            ref = task.remote(n, settings, s, catalog_paths, time_limit_s)
            started[ref] = time.perf_counter()
            refs.append(ref)
        out = []
        while refs:
            done, refs = ray.wait(refs, num_returns=1)
            entry, seconds = ray.get(done[0])
            out.append(entry)
            if progress:
                progress(entry, seconds)
        return out
    finally:
        if started_here:
            ray.shutdown()


def _timed_entry(n, settings, s, catalog_paths, time_limit_s):
    return solve_entry(n, settings, s, catalog_paths, time_limit_s)
