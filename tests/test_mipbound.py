"""The full model's bound raised by HiGHS's branch and cut in a child process (milp/mipbound.py):
valid (never above the optimum), higher than the LP where the LP buys fractions, read when the plan
is measured, and its process gone once read."""

from __future__ import annotations

import os

import pytest
from conftest import SCENARIOS
from test_bruteforce import scenario, serve
from test_milp_core import N1, n_plus_1_brute_force
from test_optimizer import shortlist_costs_little

from planner.app import beside, early, narrowing, planning
from planner.data import deadline
from planner.data.scenario import load_scenario
from planner.milp import fleet, mipbound, prover_child, prune, screening
from planner.milp.relaxation import relaxation
from planner.milp.solve import SolveResult
from planner.options import shortlist


def _model(s):
    with deadline.budget(120):
        cat, opts = planning.prepare(s)
        return fleet.build(s, cat, opts)


def test_the_provers_bound_rises_from_the_lp_to_the_optimum_and_no_further():
    # three N+1 serving jobs: the LP holds fractions of the spares and boxes; given the time, branch
    # and cut closes that to the enumerated optimum, a bound no plan is below
    s = scenario([serve("chat", 1500), serve("night", 300, hours=12, precision="bf16"),
                  serve("docs", 60, context=32768, precision="bf16")], N1)
    expected = n_plus_1_brute_force(s)
    lp = relaxation(_model(s).prob)
    at_lp = lp.solve()
    prover = mipbound.start(lp, 60.0, lp_seconds=1.0)
    if prover is None:
        pytest.skip("one core: no prover")
    prover.proc.wait(timeout=60)  # a small model: proven before its time
    got = prover.stop()
    assert at_lp < 0.99 * expected
    assert got == pytest.approx(expected, rel=1e-6)  # (the objective's tie-break of cents per system on top)


def test_a_stopped_prover_leaves_no_process_and_keeps_its_bound(monkeypatch):
    s = scenario([serve("chat", 1500), serve("docs", 60, context=32768, precision="bf16")], N1)
    prover = mipbound.start(relaxation(_model(s).prob), 600.0, lp_seconds=1.0)
    if prover is None:
        pytest.skip("one core: no prover")
    pid, folder = prover.proc.pid, prover.folder
    first = prover.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    assert not os.path.exists(folder) and prover.stop() == first
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert mipbound.start(relaxation(_model(s).prob), 600.0, lp_seconds=1.0) is None


def test_a_shortlisted_plan_is_measured_against_the_raised_bound_and_the_prover_stopped(monkeypatch):
    """choose-go.yaml shortlisted: the prover starts after the full LP, runs while the plan is
    searched, is read and stopped when the plan is measured; the plan's gap is against a bound at
    least the LP's (prune.raised keeps the higher). The plan costs little more than the one over
    every pair (the shortlist's cost: test_optimizer checks it, on this plan)."""
    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    started, lps = [], []
    real_start, real_bound = mipbound.start, prune.full_model_bound

    def recorded(lp, seconds, lp_seconds, *narrowed, **lagrange):
        started.append(real_start(lp, seconds, lp_seconds, *narrowed, **lagrange))
        return started[-1]

    def bound_seen(fm, seconds=None, defer=False):
        lps.append(real_bound(fm, seconds, defer))
        return lps[-1]

    monkeypatch.setattr(mipbound, "start", recorded)
    monkeypatch.setattr(prune, "full_model_bound", bound_seen)
    plan = planning.make_plan(load_scenario(SCENARIOS / "choose-go.yaml"), explain="none")
    assert len(started) == 1 and len(lps) == 1
    if started[0] is not None:
        assert started[0].proc is None  # stopped
    cost, gap = plan["total_cost_usd_per_year"], plan["solver"]["gap"]
    assert gap is not None and cost * (1 - gap) >= lps[0].objective * (1 - 1e-6)
    assert prune.raised(lps[0], None) is lps[0] and prune.raised(lps[0], lps[0].objective - 1) is lps[0]
    assert prune.raised(lps[0], lps[0].objective + 1).objective == lps[0].objective + 1
    shortlist_costs_little(load_scenario(SCENARIOS / "choose-go.yaml"), plan)


def test_waiting_on_the_prover_ends_within_the_gap_asked_and_its_plan_is_a_plan_of_the_model():
    """Prover.wait (a search done, its gap not): returns as soon as the bound is within the gap
    asked of the plan, and no later than the time given when it never is; the prover's own
    cheapest plan (Prover.incumbent), read back onto the full model (prune.prover_plan), meets
    every row and costs the enumerated optimum."""
    import time

    s = scenario([serve("chat", 1500), serve("night", 300, hours=12, precision="bf16"),
                  serve("docs", 60, context=32768, precision="bf16")], N1)
    expected = n_plus_1_brute_force(s)
    fm = _model(s)
    lp = relaxation(fm.prob)
    bound = prune.FullBound(lp.solve(), {}, fm.pairs, fm, lp=lp)
    prover = mipbound.start(lp, 60.0, lp_seconds=1.0)
    if prover is None:
        pytest.skip("one core: no prover")
    try:
        started = time.monotonic()
        got = prover.wait(0.001, expected, 30.0)  # reached in well under a second
        assert got >= 0.999 * expected and time.monotonic() - started < 20.0
        assert got <= expected * (1 + 1e-6)  # valid: never above the optimum
        started = time.monotonic()
        assert prover.wait(0.0, 2 * expected, 0.5) <= expected * (1 + 1e-6)  # its own plan is cheaper
        assert time.monotonic() - started < 5.0
    finally:
        prover.stop()
    assert prover.proc is None and prover.plan is not None
    found = prune.prover_plan(bound, prover.plan)
    assert all(v.varValue is None for v in fm.prob.variables())  # read, not loaded: the model's plan stays its own
    assert found is not None and found.objective == pytest.approx(expected, rel=1e-6)
    assert found.objective == pytest.approx(prover.plan[0], rel=1e-9) and found.solver.startswith("highs")
    shuffled = (prover.plan[0], prover.plan[1][::-1])  # columns read in the wrong order: not a plan
    assert prune.prover_plan(bound, shuffled) is None


def test_where_cbc_alone_searches_a_shortlist_highs_searches_it_beside_and_its_cheaper_plan_is_planned(monkeypatch):
    """choose-go.yaml shortlisted and too large for the screened search (screening.MAX_COLUMNS 0),
    no plan of the first shortlist to start from (app/early.py's child left out: with one, the
    prover takes the second core instead): HiGHS searches the shortlist in a child
    (mipbound.start_search) while CBC does; CBC ending with no plan (as on a large fleet in its
    time), the child's plan is the plan, named as its, verified (make_plan), measured against the
    full bound; on two cores the full-model prover starts once the search is done (the second core
    was the search's), with three as soon as the full LP is solved, beside both searches; a search
    child writes no bound."""
    monkeypatch.setattr(early, "floored", lambda fm, plan, bound: plan)  # (the first plan, or none, kept)
    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    monkeypatch.setattr(screening, "MAX_COLUMNS", 0)
    real_start = mipbound.start_search
    searchers, provers = [], []

    def nothing(fm, time_limit_s=None, **k):
        searchers[-1].proc.wait(timeout=60)  # (CBC's time; the child's search ends first)
        return SolveResult("not-solved", 1.0, None, None, "cbc")

    def searcher(lp, seconds, plan=None):
        searchers.append(real_start(lp, seconds, plan))
        return searchers[-1]

    monkeypatch.setattr(screening, "search", nothing)
    monkeypatch.setattr(early, "start", lambda *a: None)
    monkeypatch.setattr(mipbound, "start_search", searcher)
    monkeypatch.setattr(mipbound, "start", lambda *a, **k: provers.append((len(searchers), searchers[-1].proc is None)))
    monkeypatch.setattr(mipbound, "cores", lambda: 2)
    s = load_scenario(SCENARIOS / "choose-go.yaml")
    with deadline.budget(60):
        plan = planning.make_plan(s, explain="none")
    assert len(searchers) == 1 and searchers[0] is not None and searchers[0].proc is None  # stopped
    assert plan["solver"]["name"] == prune.SEARCHER_NAME and plan["status"] in ("optimal", "feasible")
    assert plan["solver"]["gap"] is not None and provers == [(1, True)]  # once the search's core is free
    assert searchers[0].best is None  # (no bound read from a shortlist's search)
    monkeypatch.setattr(mipbound, "cores", lambda: 3)
    with deadline.budget(60):
        planning.make_plan(s, explain="none")
    assert len(searchers) == 2 and provers[1][0] == 1  # started before the second search, beside it


def test_a_search_child_leaves_its_plan_and_writes_no_bound():
    """min x, x >= 1.5, x integer: the search child (heuristics on, presolve) leaves its plan x = 2
    and no bound (a shortlist's bound is none of the full model's)."""
    import numpy as np

    arrays = {"cost": np.array([1.0]), "lower": np.array([0.0]), "upper": np.array([10.0]),
              "row_lower": np.array([1.5]), "row_upper": np.array([np.inf]), "starts": np.array([0], dtype=np.int32),
              "index": np.array([0], dtype=np.int32), "value": np.array([1.0])}
    from types import SimpleNamespace

    lp = SimpleNamespace(arrays=arrays, integer=[True], constant=0.0, column={"x": 0})
    child = mipbound.Prover(lp, 30.0, presolve=True, search=True)
    child.proc.wait(timeout=60)
    child.stop()
    assert child.plan is not None and child.plan[0] == pytest.approx(2.0) and list(child.plan[1]) == [2.0]
    assert child.best is None


def test_beside_a_screened_search_the_prover_starts_once_the_full_lp_is_solved(monkeypatch):
    """A shortlist the screened search takes (no second search to share the second core): the
    prover starts as soon as the full model's LP is solved, before the shortlist is rebuilt with
    the LP's pairs, so it gets that time too."""
    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    monkeypatch.setattr(screening, "MIN_COLUMNS", 0)
    monkeypatch.setattr(screening, "MIN_COLUMNS_PURCHASES", 0)
    monkeypatch.setattr(mipbound, "cores", lambda: 2)
    events = []
    real_build, real_start = planning.model.build, mipbound.start
    def build(*a, **k):
        events.append("full" if k.get("prune") is False else "widened" if "keep_pairs" in k else "shortlist")
        return real_build(*a, **k)

    monkeypatch.setattr(planning.model, "build", build)
    monkeypatch.setattr(mipbound, "start", lambda *a, **k: events.append("prover") or real_start(*a, **k))
    s = load_scenario(SCENARIOS / "choose-go.yaml")
    s = s.model_copy(update={"solver": s.solver.model_copy(update={"gap": 0.05})})  # (no proof needed here)
    with deadline.budget(10):
        plan = planning.make_plan(s, explain="none")
    assert plan["status"] in ("optimal", "feasible") and plan["solver"]["gap"] is not None
    assert events[:4] == ["shortlist", "full", "prover", "widened"]


def test_a_child_past_its_time_limit_is_ended_by_the_kernel_whatever_it_is_doing():
    """A child stuck where HiGHS checks no clock (here: asleep) still ends once its limit and
    OVERRUN_S have passed (SIGALRM), so a prover never outlives its time by minutes."""
    import signal
    import subprocess
    import sys
    import time

    started = time.monotonic()
    child = subprocess.run([sys.executable, "-c", "import time; from planner.milp.prover_child import _watchdog; "
                            "_watchdog(0.5); time.sleep(60)"], timeout=30)
    assert child.returncode == -signal.SIGALRM
    assert time.monotonic() - started < 0.5 + prover_child.OVERRUN_S + 5


def _three_jobs_lp():
    """Three N+1 serving jobs: (their enumerated optimum, model, LP relaxation, LP optimum, its
    relaxation.Optimum)."""
    s = scenario([serve("chat", 1500), serve("night", 300, hours=12, precision="bf16"),
                  serve("docs", 60, context=32768, precision="bf16")], N1)
    fm = _model(s)
    lp = relaxation(fm.prob)
    at_lp = lp.solve()
    return n_plus_1_brute_force(s), fm, lp, at_lp, lp.optimum(at_lp)


def test_reduced_cost_tightening_keeps_every_plan_below_the_cutoff():
    """relaxation.Optimum.within: the optimal plan (CBC's, proven) lies within the bounds tightened
    against a cutoff just above its cost; against a cutoff between the LP and the optimum some
    column is fixed or lowered, and the narrowed model (mipbound.narrowed) costs no less than the
    cutoff (it holds every plan below it, and there is none)."""
    import highspy
    import numpy as np

    from planner.milp.solve import solve

    expected, fm, lp, at_lp, optimum = _three_jobs_lp()
    res = solve(fm, gap=0.0)
    assert res.status == "optimal" and res.objective == pytest.approx(expected, rel=1e-6)
    x = [0.0] * len(lp.column)
    for v in fm.prob.variables():
        x[lp.column[v.name]] = res.values.get(v.name, 0.0)
    a = lp.arrays
    lower, upper = optimum.within(expected * (1 + 1e-6), a["lower"], a["upper"], lp.integer)
    assert all(lo - 1e-9 <= xj <= up + 1e-9 for xj, lo, up in zip(x, lower, upper, strict=True))
    cutoff = (at_lp + expected) / 2
    lower, upper = optimum.within(cutoff, a["lower"], a["upper"], lp.integer)
    assert (upper < a["upper"]).any()
    arrays, keep = mipbound.narrowed(a, lower, upper)
    assert len(keep) < len(a["cost"]) and len(arrays["cost"]) == len(keep)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    none = np.array([], dtype=np.int32)
    h.addCols(len(keep), arrays["cost"], arrays["lower"], arrays["upper"], 0, none, none, np.array([]))
    h.addRows(len(arrays["row_lower"]), arrays["row_lower"], arrays["row_upper"], len(arrays["index"]),
              arrays["starts"], arrays["index"], arrays["value"])
    ints = np.flatnonzero(np.array(lp.integer)[keep]).astype(np.int32)
    h.changeColsIntegrality(len(ints), ints, np.full(len(ints), highspy.HighsVarType.kInteger))
    h.run()
    assert h.getInfo().objective_function_value + lp.constant >= cutoff
    assert optimum.within(at_lp - 1.0, a["lower"], a["upper"], lp.integer)[1].tolist() == list(a["upper"])


@pytest.mark.parametrize("proving", [False, True])
def test_a_narrowed_prover_proves_a_cutoff_below_the_optimum_and_finds_the_optimum_below_one_above(proving):
    """Prover.narrow: restarted only where the narrowing leaves out NARROW_MIN_LEFT_OUT of the
    columns; below the optimum the bound reaches the cutoff and stops there (capped: it holds for
    every plan). A prover started narrowed above the optimum finds it, and its plan, read back onto
    every column of the full model, is a plan of it at that cost. A proving restart (HiGHS capped at
    the cutoff: a cheaper plan's target, narrowing.Narrower) proves the cutoff the same."""
    expected, fm, lp, at_lp, optimum = _three_jobs_lp()
    below = at_lp + 0.5 * (expected - at_lp)  # (2 of the 23 columns left out; 10% above the optimum, 1)
    prover = mipbound.start(lp, 60.0, 1.0)
    if prover is None:
        pytest.skip("one core: no prover")
    try:
        pid = prover.proc.pid
        assert prover.narrow(expected * 1.1, optimum, 60.0, 1.0) is False and prover.proc.pid == pid
        assert prover.narrow(below, optimum, 60.0, 1.0, proving=proving) is True and prover.cutoff == below
        prover.proc.wait(timeout=60)  # it stops once its bound is the cutoff
        assert prover.stop() == pytest.approx(below, rel=1e-9)
    finally:
        prover.stop()
    prover = mipbound.start(lp, 60.0, 1.0, cutoff=expected * 1.05, optimum=optimum)
    try:
        prover.proc.wait(timeout=60)
        assert prover.stop() == pytest.approx(expected, rel=1e-6)
    finally:
        prover.stop()
    bound = prune.FullBound(at_lp, {}, fm.pairs, fm, lp=lp)
    found = prune.prover_plan(bound, prover.plan)
    assert found is not None and found.objective == pytest.approx(expected, rel=1e-6)


class _Recorded:
    """A prover's stand-in for narrowing.Narrower: its bound and cap set by the test, its narrowings kept."""

    def __init__(self):
        self.best, self.cutoff, self.calls = None, None, []

    def read(self):
        return self.best

    def narrow(self, cutoff, optimum, seconds, lp_seconds, proving=False):
        self.calls.append((round(cutoff), proving))
        self.cutoff = cutoff
        return True


def test_a_cheaper_plan_restarts_the_prover_only_where_its_cap_is_above_it_and_its_bound_near():
    """narrowing.Narrower: the first plan narrows the prover at once (a bound-raising child); a
    cheaper plan CBC's log shows restarts it capped at its own target (a proof) only where the
    running child's cap is above that plan (so above the optimum: never reached) and its bound is
    within REACH_PER_S x the seconds left; enough() holds once the cheapest plan is proven within
    the gap, and CBC's search is then stopped (test_cbclog.py)."""
    bound = prune.FullBound(900.0, {}, 0, optimum=object(), lp_seconds=0.1)
    prover = _Recorded()
    narrower = narrowing.narrower(bound, prover, 0.01)
    target = narrower.target
    with deadline.budget(10.0):
        narrower(1100.0)  # the first plan
        assert prover.calls == [(round(target(1100.0)), False)]
        prover.best = 1000.0
        narrower(1100.0)  # the same plan again (the warm start in CBC's log): nothing
        narrower(1095.0)  # cheaper, but the cap (1,089) is below it: the running child can prove it
        assert len(prover.calls) == 1 and not narrower.enough()
        narrower(1050.0)  # the cap is above it, the bound 4% below its target: too far for 10 s
        assert len(prover.calls) == 1
        prover.best = target(1050.0) * (1 - 0.5 * narrowing.REACH_PER_S)  # near: a capped restart
        narrower(1050.0 - 1e-3)
        assert prover.calls[-1] == (round(target(1050.0 - 1e-3)), True) and not narrower.enough()
        prover.best = target(1050.0 - 1e-3)
        assert narrower.enough()


def test_highs_searching_from_a_dearer_plan_finds_the_cheaper_one_and_it_is_planned_as_its():
    """beside.polish: once the search has ended with time left and the gap not closed, HiGHS
    searches the model from the search's plan on the core the search has left; its cheaper plan is
    the plan (planning._cheaper), named as its, and a plan of the model. Here the search's plan of
    bank.yaml is made dearer by one system more than it needs."""
    import dataclasses

    s = load_scenario(SCENARIOS / "bank.yaml")
    fm = _model(s)
    with deadline.budget(120):
        best = screening.search(fm, time_limit_s=60)
    bought = next(v for store in (fm.p, fm.k) for v in store.values() if best.values.get(v.name, 0) >= 1)
    values = dict(best.values, **{bought.name: best.values[bought.name] + 1})
    dearer = dataclasses.replace(screening.start_plan(fm, values), status="feasible")
    assert dearer.objective > best.objective * 1.05
    child = beside.polish(fm, dearer, 30.0)
    if child is None:
        pytest.skip("one core: no search beside the prover")
    child.proc.wait(timeout=60)
    got = planning._cheaper(fm, dearer, child, prune.POLISH_NAME)
    assert child.proc is None and got.solver == prune.POLISH_NAME
    assert got.objective == pytest.approx(best.objective, rel=1e-6)
    assert screening.start_plan(fm, got.values).objective == pytest.approx(got.objective, rel=1e-9)
    assert beside.polish(fm, dearer, beside.POLISH_MIN_S / 2) is None  # no time for it


def test_a_cost_below_the_full_models_bound_read_from_cbcs_log_is_no_plan_and_stops_nothing():
    """A cost under a valid bound (a line of CBC's log read as a plan's, as a run once showed: 29 $/yr
    beside plans of 2.2 million) neither narrows the prover nor counts as the cheapest plan, which
    enough() would then call proven and CBC's search would be interrupted."""
    bound = prune.FullBound(900.0, {}, 0, optimum=object(), lp_seconds=0.1)
    prover = _Recorded()
    narrower = narrowing.narrower(bound, prover, 0.01)
    with deadline.budget(10.0):
        narrower(29.0)
        assert prover.calls == [] and narrower.cheapest == float("inf")
        prover.best = 899.0
        assert not narrower.enough()
        narrower(1000.0)
        assert len(prover.calls) == 1 and narrower.cheapest == 1000.0


def test_where_the_search_finds_no_plan_in_its_time_the_provers_plan_is_planned(monkeypatch):
    """choose-go.yaml shortlisted and screened: the search ends with no plan (as on a machine too
    slow for its share of the limit) while the prover beside it holds one of the full model; that
    plan is planned, named as the prover's, verified and measured (before: exit 4, no plan). The
    bound is computed with its cuts here (defer off): a prover that separates them branches on the
    LP (lpbranch.py), whose plans are rare."""
    import time

    real_bound = prune.full_model_bound
    monkeypatch.setattr(prune, "full_model_bound", lambda fm, seconds=None, defer=False: real_bound(fm, seconds))

    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    monkeypatch.setattr(screening, "MIN_COLUMNS", 0)
    monkeypatch.setattr(screening, "MIN_COLUMNS_PURCHASES", 0)
    monkeypatch.setattr(mipbound, "cores", lambda: 2)
    provers, real_start = [], mipbound.start

    def started(*a, **k):
        provers.append(real_start(*a, **k))
        return provers[-1]

    def nothing(fm, time_limit_s=None, **k):
        end = time.monotonic() + 30
        while provers and provers[-1] is not None and provers[-1].incumbent() is None and time.monotonic() < end:
            time.sleep(0.05)  # (CBC's time, spent: the prover's first plan is found meanwhile)
        return SolveResult("not-solved", 1.0, None, None, "cbc", cut_short=True)

    monkeypatch.setattr(mipbound, "start", started)
    monkeypatch.setattr(screening, "search", nothing)
    with deadline.budget(60):
        plan = planning.make_plan(load_scenario(SCENARIOS / "choose-go.yaml"), explain="none")
    if provers[0] is None:
        pytest.skip("one core: no prover")
    assert plan["solver"]["name"] in (prune.PROVER_NAME, prune.POLISH_NAME)  # (HiGHS searched on from it)
    assert plan["status"] in ("optimal", "feasible") and plan["demand_met"] and plan["solver"]["gap"] is not None


def test_the_first_shortlist_is_searched_while_the_full_bound_is_computed_and_its_plan_starts_cbcs(monkeypatch):
    """app/early.py: choose-go.yaml shortlisted, searched by CBC alone (screening.MAX_COLUMNS 0), two
    cores: HiGHS searches the first shortlist in a child while the full model's bound is computed;
    its plan, carried onto the widened shortlist, meets every row there and is CBC's start (warm),
    and the plan is no dearer."""
    import time

    monkeypatch.setattr(early, "floored", lambda fm, plan, bound: plan)  # (the first plan, or none, kept)
    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    monkeypatch.setattr(screening, "MAX_COLUMNS", 0)
    monkeypatch.setattr(mipbound, "cores", lambda: 2)
    children, seen = [], []
    real_start, real_bound, real_search = mipbound.start_search, prune.full_model_bound, screening.search

    def started(lp, seconds, plan=None):
        children.append(real_start(lp, seconds, plan))
        return children[-1]

    def bound_once_a_plan_is_found(fm, seconds=None, defer=False):
        end = time.monotonic() + 30
        while children and children[0].incumbent() is None and time.monotonic() < end:
            time.sleep(0.05)  # (a large fleet's bound takes seconds; this one's would end first)
        return real_bound(fm, seconds, defer)

    def search(fm, **kwargs):
        seen.append((kwargs.get("warm"), screening.start_plan(fm)))
        return real_search(fm, **kwargs)

    monkeypatch.setattr(mipbound, "start_search", started)
    monkeypatch.setattr(prune, "full_model_bound", bound_once_a_plan_is_found)
    monkeypatch.setattr(screening, "search", search)
    s = load_scenario(SCENARIOS / "choose-go.yaml")
    s = s.model_copy(update={"solver": s.solver.model_copy(update={"gap": 0.05})})  # (no proof needed here)
    with deadline.budget(60):
        plan = planning.make_plan(s, explain="none")
    if not children or children[0] is None:
        pytest.skip("no HiGHS child here")
    (warm, start), first = seen[0], children[0]
    assert first.proc is None and first.plan is not None  # stopped, its plan read
    assert warm is True and start is not None and start.objective == pytest.approx(first.plan[0], rel=1e-6)
    assert plan["total_cost_usd_per_year"] <= start.objective * (1 + 1e-6)


def test_a_poor_first_plan_gives_way_to_a_plan_of_the_lps_support(monkeypatch):
    """app/early.py's floored: choose-go.yaml shortlisted and searched by CBC alone, the first
    shortlist's plan 20 times the LP bound (as in one draw of 200 generated jobs, where CBC then
    found nothing cheaper): CBC starts instead from a plan of the widened shortlist over its LP's
    support, a plan of the model within a few percent of the one planned from a good start."""
    import dataclasses

    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    monkeypatch.setattr(screening, "MAX_COLUMNS", 0)
    starts, real_warmed, real_search = [], early.warmed, screening.search

    def poor(child, first, fm):
        found = real_warmed(child, first, fm)
        return None if found is None else dataclasses.replace(found, objective=found.objective * 20)

    def search(fm, **kwargs):
        starts.append((kwargs.get("warm"), screening.start_plan(fm)))
        return real_search(fm, **kwargs)

    monkeypatch.setattr(screening, "search", search)
    s = load_scenario(SCENARIOS / "choose-go.yaml")
    s = s.model_copy(update={"solver": s.solver.model_copy(update={"gap": 0.05})})
    with deadline.budget(60):
        good = planning.make_plan(s, explain="none")["total_cost_usd_per_year"]
    starts.clear()
    monkeypatch.setattr(early, "warmed", poor)
    with deadline.budget(60):
        plan = planning.make_plan(s, explain="none")
    (warm, start), = starts
    assert warm is True and start is not None  # (the support's plan: it meets every row of the model)
    assert start.objective <= good * 1.10 and plan["total_cost_usd_per_year"] <= good * 1.02
