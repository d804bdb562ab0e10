"""Which solver runs a fleet model and how it is set up (solve.py runs it): CBC through PuLP's
COIN_CMD with the cbcbox binary (what pulp[cbc] installs), or PuLP 3's bundled CBC; HiGHS in process
through PuLP's interface, loaded once and taught the status a node limit ends on. Every solver is
silent and time-limited, with CBC's options for the fleet MILP (CBC_OPTIONS)."""

from __future__ import annotations

import functools
import os
import threading

import pulp

from planner.data.errors import InputError, Problem, SolverError

SOLVERS = ("cbc", "highs")
CBC_OPTIONS = ("passC 20", "rins on", "vnd on", "probing off")
"""Root cut passes capped at 20 (CBC's default is 100 on small models): on the fleet MILP the
late passes barely move the bound and cost most of the time (bank.yaml 0.9 -> 0.3 s; 50 random
jobs 35 -> 9 s, same optimum; measured with benchmarks/speed.py).
Probing off: the cbcbox build (CBC devel, git 146ce89) proved a plan "optimal" at $363,014/yr
where a plan of $336,384/yr exists (fuzz seed 34 case 24: an N+1 serving job with a minutes-long
LoRA run; its root node closed the gap after one pass of probing cuts with 7 variables fixed on
cost); with probing off, or with PuLP's bundled CBC 2.10, or with HiGHS, it finds $336,384. On
15 generated N+1 fleets (10-20 jobs) the core solves took 54.5 s in all against 48.6 s with probing
(one draw each; the per-fleet times move both ways).
No DINS: with it (and the options above) the same build proved $258,944/yr "optimal" where a plan of
$243,310/yr exists (fuzz seed 8181 case 230: an RL job on an office site beside one edge device; the
plan the next-best fleet found cheaper); without it, with PuLP's bundled CBC 2.10 or with HiGHS it
finds $243,310 (tests/test_fuzz_regressions.py). A shortlist's last search, whose proof no plan rests
on (its gap is measured against the full model's bound), keeps it (solve: 200 generated jobs seed 3
at 30 s, 3.6% with it, 5.6% without)."""

def _cbc_path() -> str | None:
    env = os.environ.get("PLANNER_CBC")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise SolverError(f"PLANNER_CBC is set to {env}, which is not an executable file.\n"
                              "    To fix: point PLANNER_CBC at a cbc executable, or unset it to use the "
                              "one pulp[cbc] installs")
        return env
    return cbcbox_path()


@functools.lru_cache(maxsize=1)
def cbcbox_path() -> str | None:
    """cbcbox's binary (it reads /proc/cpuinfo to pick one: 4 ms, once per command, not per solve)."""
    try:
        import cbcbox  # installed by pulp[cbc]
        return cbcbox.cbc_bin_path()
    except Exception:
        return None


CBC_THREADS_MIN = 2
"""CBC is given `-threads N` only from this many threads: one thread is CBC's serial search, without
the option. `-threads 1` is not: it runs the tree in one worker thread, which the main thread joins
at the end, and that worker waits on a condition with a 10 s timeout that can miss its wake-up
(gdb: CbcBaseModel::waitForThreadsInTree joining CbcThread::waitThread in
CbcSpecificThread::timedWait, no CPU used). On a loaded machine
(two busy processes on two cores, cbcbox 2.935) a 235-column model solved at its root in 0.1 s
took 10.0 s in 7 of 2,000 runs with `-threads 1`, and in none of 3,000 without it; in the
explanations' re-plans it added 10 s to 5 of 60 commands, and cut short a test's explanations."""
MIN_LIMIT_S = 0.25
"""the shortest time limit a solve is given (CBC reads fractional seconds and stops within a few
hundredths of them; a limit of 0 would be none): an explanation MILP started with 0.4 s of its
budget left used to get 1 s, the whole seconds the limit was truncated to, and ran past the budget;
and a search whose share ran out just before it started stops at once, where 0 read as no limit gave
it the scenario's whole limit (the diff review: a 30 s plan's CBC ran 24.7 s alone past its share)"""


def make_solver(time_limit_s: float, gap: float, threads: int = 1, mip: bool = True, name: str = "cbc",
                max_nodes: int | None = None):
    """The solver `name` (cbc: COIN_CMD with cbcbox if present, else PuLP's bundled CBC; highs:
    highspy in process), silent and time-limited; max_nodes caps the branch-and-bound nodes."""
    if name == "highs":
        return _highs(time_limit_s, gap, threads, mip, max_nodes), "highs"
    options = list(CBC_OPTIONS) + ([f"maxNodes {max_nodes}"] if max_nodes is not None and mip else [])
    kwargs = dict(msg=False, timeLimit=max(MIN_LIMIT_S, round(time_limit_s, 2)), gapRel=gap, mip=mip, options=options,
                  threads=threads if threads >= CBC_THREADS_MIN else None)
    path = _cbc_path()
    if path and os.path.exists(path):
        return pulp.COIN_CMD(path=path, **kwargs), "cbc (cbcbox)"
    if hasattr(pulp, "PULP_CBC_CMD"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            solver = pulp.PULP_CBC_CMD(**kwargs)
        if solver.available():
            return solver, "cbc (bundled)"
    raise SolverError("no CBC solver found.\n    To fix: pip install 'pulp[cbc]>=3.3,<4' "
                      "or set PLANNER_CBC to a cbc executable")


def _highs(time_limit_s: float, gap: float, threads: int, mip: bool, max_nodes: int | None):
    try:
        import highspy  # noqa: F401  (the optional extra)
    except ImportError:
        raise InputError(Problem("solver 'highs' is not installed", "solver.name",
                                 'pip install ".[highs]" (or pip install highspy), or use solver.name: cbc'))
    params = {"mip_max_nodes": int(max_nodes)} if max_nodes is not None and mip else {}
    return _node_limited(_pulp_highs())(msg=False, timeLimit=float(max(MIN_LIMIT_S, time_limit_s)), gapRel=gap,
                                        threads=threads, mip=mip, **params)


_HIGHS_LOADING = threading.Lock()


def _pulp_highs() -> type:
    """PuLP's HiGHS interface, loaded once where PuLP was imported without highspy
    (planner/milp/__init__.py), under a lock: the explanations' re-plans solve their LPs from
    threads at once, and one thread's reload left another with the unavailable class ("HiGHS: Not
    Available", exit 4)."""
    with _HIGHS_LOADING:
        if not pulp.HiGHS().available():
            import importlib

            from pulp.apis import highs_api
            pulp.HiGHS = pulp.apis.HiGHS = importlib.reload(highs_api).HiGHS
        return pulp.HiGHS


@functools.lru_cache(maxsize=None)
def _node_limited(base: type) -> type:
    """PuLP's HiGHS interface that also reads the status a node limit ends on (max_nodes: HiGHS's
    kSolutionLimit), which PuLP 3.3's table lacks (a KeyError: --solver highs failed on every root
    node and every explanation that reached 300 nodes): the plan HiGHS holds when it holds one, as at
    a time limit, else none."""

    class NodeLimited(base):
        def findSolutionValues(self, lp):
            try:
                return super().findSolutionValues(lp)
            except KeyError:
                import highspy

                h = lp.solverModel
                if h.getModelStatus() != highspy.HighsModelStatus.kSolutionLimit:
                    raise
                if h.getInfo().primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible:
                    return pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible  # (solve's "feasible")
                return pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound

    return NodeLimited
