"""CBC's log read while it runs (milp/cbclog.py): the plans' costs in the order found, whichever CBC
wrote them, and a search told it has enough stopped with its best plan."""

from __future__ import annotations

import sys
import time

import pytest
from test_milp_core import generated_nplus1

from planner.milp import cbclog

# lines as cbcbox (pulp[cbc]) writes them, from a search of 60 generated jobs, and as CBC 2.10 does
CBCBOX = """\
Cbc0045I MIPStart provided solution with cost 1.03478e+06
Cbc0012I Integer solution of 1034777.970701 found by Reduced search after 0 iterations and 0 nodes 0 depth 0 ontree (0.14 seconds)
▶ Preprocessing

   Pass   Fixed Tightened Strengthened  Subst Time(s)
  ───── ─────── ───────── ──────────── ────── ───────
      1       0         0           20      0   0.048
  DINS                     no solution                    0.016
 ★RINS                     solution        1.02575e+06    0.035
▶ Branch and bound

     Nodes   OnTree  Depth         BestSol Method                 BestBound     Gap%   Time(s)
  ──────── ──────── ────── ─────────────── ──────────────── ─────────────── ──────── ─────────
 ★       0        1      0     1.01691e+06 DINS                      994541    2.20%     0.450
        72       23     13     1.01691e+06                           994541    2.20%      1.19
      1017       63     19     1.01515e+06                           994541    2.03%      4.01
"""
CLASSIC = """\
Cbc0012I Integer solution of 1118649.4 found by feasibility pump after 0 iterations and 0 nodes (0.54 seconds)
Cbc0010I After 0 nodes, 1 on tree, 1118649.4 best solution, best possible 1087942.4 (0.74 seconds)
Cbc0004I Integer solution of 1115583.4 found after 1322 iterations and 41 nodes (1.13 seconds)
"""


def test_the_plans_a_log_shows_are_read_in_order_and_no_other_row_of_numbers():
    assert cbclog.Plans().lines(CBCBOX) == [1.03478e6, 1034777.970701, 1.02575e6, 1.01691e6, 1.01691e6, 1.01515e6]
    assert cbclog.Plans().lines(CLASSIC) == [1118649.4, 1115583.4]


def test_a_tail_reports_each_cheaper_plan_as_the_log_grows_with_the_objectives_constant(tmp_path):
    log = tmp_path / "cbc.log"
    log.write_text("")
    found: list[float] = []
    tail = cbclog.Tail(str(log), found.append, constant=10.0)
    try:
        star = "★".encode()
        with open(log, "ab") as f:
            for chunk in (b"Cbc0012I Integer solution of 200 found by DiveCoefficient (0.1 s", b"econds)\n",
                          b"Cbc0012I Integer solution of 250 found by rounding\n",
                          b"Cbc0004I Integer solution of 150 found after 10 iterations\n",
                          "▶ Branch and bound\n".encode() + b" " + star[:1], star[1:] + b"  9  2  3  140 DINS  99  1%  0.4\n"):
                f.write(chunk)
                f.flush()
                time.sleep(2.5 * cbclog.POLL_S)  # (a line, or a character, split across two reads is read whole)
    finally:
        tail.stop()
    assert found == [210.0, 160.0, 150.0]  # (250 is not cheaper: not reported)


def test_a_search_told_it_has_enough_stops_with_its_best_plan(tmp_path):
    """solve's on_plan with an `enough` that holds once a plan is in: CBC is interrupted (SIGINT) and
    returns the plan its log showed, feasible, where the same search with no gap left to close
    proves its optimum (20 generated buy-only N+1 jobs)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the CBC process is found under /proc (Linux)")
    from planner.milp import fleet
    from planner.milp.solve import solve

    s, cat, opts = generated_nplus1(tmp_path)

    class Told:
        def __init__(self):
            self.seen: list[float] = []

        def __call__(self, cost):
            self.seen.append(cost)

        def enough(self):
            return bool(self.seen)

    told = Told()
    res = solve(fleet.build(s, cat, opts), gap=0.0, time_limit_s=30, on_plan=told)
    whole = solve(fleet.build(s, cat, opts), gap=0.01, time_limit_s=30)  # (its bound is all the last line needs)
    assert whole.status == "optimal"
    assert res.status == "feasible" and told.seen
    # its best plan: the one the log showed (6 significant digits), or one CBC found between that log
    # line and the interrupt (a busy machine: $2,371,977 returned where the log had shown $2,372,590)
    assert res.objective <= min(told.seen) * (1 + 1e-5)
    assert res.objective >= (whole.bound if whole.bound is not None else whole.objective * (1 - 0.01)) - 1e-6


def test_a_search_running_past_its_limit_is_interrupted_and_returns_its_best_plan(tmp_path, monkeypatch):
    """solve interrupts CBC once it runs OVERRUN_STOP_S past its time limit (a large model's cut pass
    can take seconds past it: 2,000 generated jobs, 17.7 s for a limit of 11.2 s). Here the stop is
    brought forward to 2 s into a 30 s search of 20 generated N+1 jobs (seed 7: 12.7 s to prove
    alone on this machine): the search ends then, with the best plan it had, feasible."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the CBC process is found under /proc (Linux)")
    from planner.milp import fleet, solve as solving

    s, cat, opts = generated_nplus1(tmp_path, seed=7)
    fm = fleet.build(s, cat, opts)
    monkeypatch.setattr(solving, "OVERRUN_STOP_S", 2.0 - 30)
    started = time.monotonic()
    res = solving.solve(fm, gap=0.0, time_limit_s=30)
    assert time.monotonic() - started < 15 and res.status == "feasible" and res.objective is not None


HANGS_ON_A_START = """
    if "-mips" in args:  # cbcbox's CBC, crashed on a warm start, hangs in its stack trace for good
        print("double free or corruption (out)\\n\\n\\nERROR while running Cbc. Signal SIGABRT caught. Getting stack trace.",
              flush=True)
        import time
        time.sleep(20)
        sys.exit(134)
    sys.exit(subprocess.call([{real!r}] + args))
"""


def test_a_cbc_that_crashes_on_its_warm_start_and_hangs_is_killed_and_run_again_cold(tmp_path, monkeypatch):
    """cbcbox's CBC can crash on a warm start that its preprocessing, cut short by the time limit, made
    infeasible ("double free or corruption", 5 of 20 runs of one model) and then hang in its signal
    handler for good: the planner waited 10 minutes. The crash in its log kills it at once, and the
    search runs again without the start: the same plan, within seconds."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the CBC process is found under /proc (Linux)")
    from test_cli_contract import fake_cbc, real_cbc

    from planner.milp import fleet, solve as solving

    s, cat, opts = generated_nplus1(tmp_path, n=5, seed=3)
    fm = fleet.build(s, cat, opts)
    cold = solving.solve(fm, gap=0.0, time_limit_s=30)
    assert cold.status == "optimal"
    monkeypatch.setenv("PLANNER_CBC", str(fake_cbc(tmp_path, HANGS_ON_A_START.format(real=real_cbc()))))
    started = time.monotonic()
    res = solving.solve(fm, gap=0.0, time_limit_s=5, warm=True)  # (the values: the plan above)
    assert time.monotonic() - started < 4
    assert res.status == "optimal" and res.objective == pytest.approx(cold.objective, rel=1e-9)
