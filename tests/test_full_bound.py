"""A shortlisted plan's full-model LP bound (milp/prune.py) within the command's time: solved by
HiGHS in process, stopped at its share of the time, and left out (said cut short) when it cannot
fit, so a large scenario still gets a plan within its limit."""

from __future__ import annotations

import pytest
from conftest import SCENARIOS

from planner.app import planning
from planner.data import consistency as checks
from planner.data import deadline
from planner.data.scenario import load_scenario
from planner.milp import fleet, prune
from planner.milp.relaxation import relaxation
from planner.milp.solve import solve
from planner.options import build as options
from planner.options import shortlist


@pytest.fixture
def shortlisted(monkeypatch):
    """choose-go.yaml with every scenario shortlisted (PRUNE_ABOVE 0): its model leaves pairs out."""
    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    s = load_scenario(SCENARIOS / "choose-go.yaml")
    cat = checks.resolve(s, ())
    opts = options.build(s, cat)
    short = fleet.build(s, cat, opts)
    assert short.pairs_pruned > 0
    return s, cat, opts, short


def test_the_full_bound_is_the_full_models_lp_optimum(shortlisted):
    """HiGHS's LP optimum of the full model is CBC's (both bound every plan the scenario allows),
    and the pairs it names widen the shortlist to a model whose optimum it does not exceed."""
    s, cat, opts, short = shortlisted
    bound = prune.full_model_bound(short)
    assert bound.by_highs and bound.model is not None and bound.pairs > 0
    by_cbc = solve(bound.model, gap=0.0, mip=False)
    assert by_cbc.ok
    assert bound.objective == pytest.approx(by_cbc.objective, rel=1e-6)
    widened = fleet.build(s, cat, opts, keep_pairs=bound.support)
    plan = solve(widened)
    assert plan.ok and bound.objective <= plan.objective * (1 + 1e-9)
    assert bound.cbc_lp_seconds == pytest.approx(bound.lp_seconds * prune.CBC_LP_OVER_HIGHS)


def test_a_full_bound_past_its_time_is_left_out_and_said_cut(shortlisted):
    """No time for the bound: no bound (objective None, no pairs), and the budget records the cut,
    whether the build or the LP ran out."""
    _, _, _, short = shortlisted
    with deadline.budget(600) as b:
        got = prune.full_model_bound(short, seconds=0.0)
        assert got.objective is None and got.support == {}
        assert b.cuts == ["bound"]


def test_an_lp_stopped_by_its_limit_is_not_solved_and_a_later_limit_is_its_own(shortlisted):
    """A solve its time limit stops is not solved (inf, never a partial objective taken for a bound);
    HiGHS counts a limit against the run time of every solve so far, so each limit is set past it."""
    _, _, _, short = shortlisted
    first = relaxation(short.prob).solve()
    lp = relaxation(short.prob)
    assert lp.solve(time_limit_s=0.0) == float("inf")
    assert lp.solve(time_limit_s=60.0) == pytest.approx(first, rel=1e-9)


def test_a_plan_whose_bound_cannot_fit_its_time_is_still_given_feasible_and_says_why(monkeypatch):
    """When the full model's build is expected to take longer than the bound's share of the time,
    the bound is not started: the plan comes from the shortlist, feasible with no gap claimed,
    and solver.cut_short names the bound (500 generated jobs, limit 60 s: exit 4 after 88 s before)."""
    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    monkeypatch.setattr(planning, "BOUND_STEP_SHARE", 1e-9)
    s = load_scenario(SCENARIOS / "choose-go.yaml")
    plan = planning.make_plan(s, explain="none")
    assert plan["status"] == "feasible" and plan["solver"]["gap"] is None
    assert planning.CUTS["bound"] in plan["solver"]["cut_short"]


def test_a_search_that_finds_no_plan_in_its_share_gets_the_time_left(monkeypatch):
    """The shortlisted search has a share of the time (the rest for the full model's root node);
    when it ends that share with no plan there is no plan for the root node to start from either, so
    it searches again with the whole time left, rather than ending in exit 4 with time to spare."""
    from planner.milp import screening
    from planner.milp.solve import SolveResult

    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    real, limits = screening.search, []

    def first_finds_nothing(fm, time_limit_s=None, **kw):
        limits.append(time_limit_s)
        if len(limits) == 1:
            return SolveResult("not-solved", time_limit_s or 0.0, None, None, "cbc")
        return real(fm, time_limit_s=time_limit_s, **kw)

    monkeypatch.setattr(planning.screening, "search", first_finds_nothing)
    s = load_scenario(SCENARIOS / "choose-go.yaml")  # (at gap 1%: the same steps, sooner)
    plan = planning.make_plan(s.model_copy(update={"solver": s.solver.model_copy(update={"gap": 0.01})}), explain="none")
    assert plan["status"] in ("optimal", "feasible") and plan["fleet"]
    assert len(limits) == 2 and limits[0] is not None and limits[1] > 1.5 * limits[0]  # (the readout's time kept)


def test_a_pairs_rise_bounds_the_lp_when_the_pair_is_forced_in_and_the_nearest_rise_least(shortlisted):
    """The shortlist keeps each demand's NEAREST pairs by the full LP's reduced costs (prune.rises):
    forcing a pair's openers to 1 raises the LP by at least its rise, and the pairs kept rise no
    more than any pair of their demand left out."""
    _, _, _, short = shortlisted
    bound = prune.full_model_bound(short)
    lp, full = bound.lp, bound.model
    at = lp.solve()
    rises = prune.rises(full, lp)
    opening = prune.openers(full)
    risen = sorted((r, key) for key, r in rises.items() if r > 1.0)
    assert len(risen) >= 10
    for r, key in risen[:: max(1, len(risen) // 12)]:
        held = [v for k, vs in opening.items() if k[:3] == key for v in vs]
        for v in held:
            lp.fix(v, 1, v.upBound)
        forced = lp.solve()
        for v in held:
            lp.free(v)
        assert forced >= at + r - 1e-6 * abs(at), key
    assert lp.solve() == pytest.approx(at, rel=1e-9)
    rises = prune.rises(full, lp)  # (a degenerate LP: its duals move with the basis)
    widened = bound.widened(nearest=True)
    assert bound.widened(nearest=False) is bound.support
    for dk, kept in prune._nearest(full, lp, prune.NEAREST).items():
        mine = {(i, oid): r for (d, i, oid), r in rises.items() if d == dk}
        assert len(kept) == min(prune.NEAREST, len(mine)) and kept <= widened[dk]
        left = [r for pair, r in mine.items() if pair not in kept]
        assert not left or max(mine[p] for p in kept) <= min(left)


def test_the_lazy_full_models_separated_lp_is_the_lp_with_every_cut(shortlisted, monkeypatch):
    """The full model behind the bound holds its MIR cuts back and adds those its LP violates, round
    after round (prune.separated): the same LP optimum as the model with every cut, on fewer rows,
    no held cut violated at the end, and the LP handed to the prover is the model's own rows. (The
    held-share rows, which only the lazy model has, are left out here: tests/test_openings.py.)"""
    monkeypatch.setattr(fleet, "FAMILIES", tuple(f for f in fleet.FAMILIES if f.__name__ != "define_held_shares"))
    s, cat, opts, short = shortlisted
    bound = prune.full_model_bound(short)
    full = bound.model
    assert full.lazy and full.held_cuts
    every = fleet.build(s, cat, opts, prune=False)
    eager = relaxation(every.prob)
    assert bound.objective == pytest.approx(eager.solve(), rel=1e-7)
    held = sum(len(h.rhs) for h in full.held_cuts)
    added = sum(int((~h.left).sum()) for h in full.held_cuts)
    assert held == sum(1 for key in every.cuts if key[0] in ("cover-mir", "rental-mir"))
    assert 0 < added < held and len(full.prob.constraints()) == len(every.prob.constraints()) - (held - added)
    assert prune.covers.separate(full, bound.lp.point(), bound.lp.column) == []
    fresh = relaxation(full.prob).arrays
    assert all((fresh[k] == bound.lp.arrays[k]).all() for k in fresh)


def test_cuts_left_to_the_provers_child_give_it_the_lp_with_every_cut(shortlisted):
    """prune.full_model_bound's `defer`: the LP is solved once, without the held cuts, and the
    prover's child separates them in a process of its own (prover_child._separated): its first bound
    is the LP with every cut (the bound the planner separates in process), and the planner reads
    back the rows it added and that LP's optimum (Prover.separating). The child then raises its bound
    by branch and bound on the LP (lpbranch.py), above the LP with every cut, and is never narrowed
    (a restart would lose its tree)."""
    import time

    from planner.milp import mipbound

    if mipbound.cores() < mipbound.MIN_CORES:
        pytest.skip("one core: no prover")
    s, cat, opts, short = shortlisted
    separated = prune.full_model_bound(short)
    deferred = prune.full_model_bound(short, defer=True)
    assert deferred.held and deferred.objective < separated.objective * (1 - 1e-4)
    rows = len(deferred.lp.arrays["row_lower"])
    prover = mipbound.Prover(deferred.lp, 30.0, presolve=False, held=deferred.held)
    try:
        assert prover.branching and prover.narrow(separated.objective * 1.001, deferred.optimum, 30.0, 0.1) is False
        end = time.monotonic() + 20
        while prover.separating and time.monotonic() < end:
            time.sleep(0.05)
            prover._read_cuts()
        assert not prover.separating and prover.cutoff is None
        assert prover.optimum.objective == pytest.approx(separated.objective, rel=1e-6)
        assert len(deferred.lp.arrays["row_lower"]) > rows  # (the child's rows, read back)
        while prover.read() < separated.objective * (1 + 1e-4) and time.monotonic() < end:
            time.sleep(0.05)
        assert prover.read() >= separated.objective * (1 + 1e-4)  # (branched above the LP with every cut)
    finally:
        prover.stop()


def test_a_separation_round_is_limited_by_its_own_time_not_by_highs_clock_over_every_run(shortlisted):
    """HiGHS reads time_limit against its clock summed over every run of one object: a child's LP
    re-solved after 1 s of earlier rounds, given 1.2 s more, stopped at once with no iteration (the
    bound it was to report lost). cutpool.run_limited gives each run its own time."""
    import highspy
    import numpy as np

    from planner.milp import cutpool

    _, _, _, short = shortlisted
    a = prune.full_model_bound(short, defer=True).lp.arrays
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.addCols(len(a["cost"]), a["cost"], a["lower"], a["upper"], 0, np.array([], dtype=np.int32),
              np.array([], dtype=np.int32), np.array([], dtype=float))
    h.addRows(len(a["row_lower"]), a["row_lower"], a["row_upper"], len(a["index"]), a["starts"], a["index"], a["value"])
    while h.getRunTime() < 0.3:  # (earlier rounds: the clock runs on)
        h.clearSolver()
        h.run()
    optimum = h.getInfo().objective_function_value
    cost = np.flatnonzero(a["cost"]).astype(np.int32)

    def cut_and_run(run) -> object:
        nonlocal optimum
        optimum *= 1.001  # (a row the last optimum breaks: the LP must iterate)
        h.addRow(optimum, highspy.kHighsInf, len(cost), cost, a["cost"][cost])
        run()
        return h.getModelStatus()

    def plain():
        h.setOptionValue("time_limit", 0.25)
        h.run()

    assert cut_and_run(plain) == highspy.HighsModelStatus.kTimeLimit  # (HiGHS as it is)
    assert cut_and_run(lambda: cutpool.run_limited(h, 5.0)) == highspy.HighsModelStatus.kOptimal
