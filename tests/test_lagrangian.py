"""The full model's Lagrangian bound (milp/lagrangian.py): the LP's duals priced into each demand's
own integer problem. Valid (never above the enumerated optimum), at least the LP's, above it where
whole replicas and rentals cost more than the LP's fractions, the LP's own when no block is solved,
and where no prover runs beside a large shortlist's search it runs there and the plan is measured
against it."""

from __future__ import annotations

import math

import pytest
from conftest import SCENARIOS
from test_milp_core import N1_CASES, n_plus_1_brute_force
from test_mipbound import _model

from planner.app import planning
from planner.data import deadline
from planner.data.scenario import load_scenario
from planner.milp import lagrangian, mipbound, prune, screening
from planner.milp.relaxation import relaxation
from planner.options import shortlist
from test_bruteforce import scenario


def _bounds(s, seconds=None):
    fm = _model(s)
    lp = relaxation(fm.prob)
    at_lp = lp.solve()
    return fm, at_lp, lagrangian.bound(fm, lp, lp.optimum(at_lp), seconds)


@pytest.mark.parametrize("case", sorted(N1_CASES))
def test_the_bound_lies_between_the_lp_and_the_enumerated_optimum(case):
    jobs, policy = N1_CASES[case]
    s = scenario(jobs, policy)
    expected = n_plus_1_brute_force(s)
    _, at_lp, got = _bounds(s)
    assert math.isfinite(expected) and got is not None
    assert at_lp * (1 - 1e-6) <= got <= expected * (1 + 1e-6) + 1.0  # (+ the objective's tie-break cents)


def test_whole_replicas_and_spares_lift_the_bound_from_the_lp_to_the_optimum():
    # three N+1 jobs: the LP buys fractions of replicas and of the rented spares; each job's own
    # integer problem at the LP's prices for the shared boxes prices them whole (each job renting its
    # own, pool_jobs false: rentals shared between jobs are no one job's block)
    jobs, policy = N1_CASES["three-jobs-mixed-hours"]
    s = scenario(jobs, {**policy, "pool_jobs": False})
    expected = n_plus_1_brute_force(s)
    fm, at_lp, got = _bounds(s)
    assert at_lp < 0.7 * expected
    assert got == pytest.approx(expected, rel=1e-6, abs=1.0)
    blocks = lagrangian.blocks(fm)
    assert {b for b in blocks.values()} == {("demand", d) for d in fm.options.demands}
    assert all(blocks.get(v.name) is None for v in list(fm.p.values()) + list(fm.k.values()))  # shared: no block's


def test_with_no_time_for_a_block_the_bound_is_the_lps():
    jobs, policy = N1_CASES["three-jobs-mixed-hours"]
    _, at_lp, got = _bounds(scenario(jobs, policy), seconds=0.0)
    assert got == pytest.approx(at_lp, rel=1e-6) and got <= at_lp


def test_shipped_scenarios_bound_below_their_proven_optimum():
    """long-prompts.yaml: the LP 3,202,367 $/yr, the bound 3,474,567, the optimum 3,474,567;
    rent-vs-buy.yaml: 172,763 -> 211,758 of 214,196."""
    for name, low, high in (("long-prompts.yaml", 3_474_000, 3_474_567), ("rent-vs-buy.yaml", 211_000, 214_196)):
        s = load_scenario(SCENARIOS / name)
        _, at_lp, got = _bounds(s)
        assert at_lp < low <= got <= high * (1 + 1e-6), name


def test_beside_a_large_shortlists_search_it_runs_and_the_plan_is_measured_against_it(monkeypatch):
    """choose-go.yaml shortlisted and too large for the screened search, on two cores (the second
    search holds the prover's core): the bound runs in a thread beside the search, is read when the
    plan is measured (its gap is against it: prune.raised) and is stopped with the plan."""
    monkeypatch.setattr(shortlist, "PRUNE_ABOVE", 0)
    monkeypatch.setattr(screening, "MAX_COLUMNS", 0)
    monkeypatch.setattr(mipbound, "cores", lambda: 2)
    started, raised = [], []
    real, real_raised = lagrangian.Beside, prune.raised

    def beside(*a):
        started.append(real(*a))
        return started[-1]

    def seen(bound, value):
        raised.append(value)
        return real_raised(bound, value)

    monkeypatch.setattr(lagrangian, "Beside", beside)
    monkeypatch.setattr(prune, "raised", seen)
    s = load_scenario(SCENARIOS / "choose-go.yaml")
    with deadline.budget(60):  # (at gap 1%: the same steps, in 2.7-3.4 s where 0.1% took 6.3 s)
        plan = planning.make_plan(s.model_copy(update={"solver": s.solver.model_copy(update={"gap": 0.01})}),
                                  explain="none")
    assert len(started) == 1 and not started[0]._thread.is_alive()
    value = started[0].result().value
    assert value is not None and value in raised
    cost, gap = plan["total_cost_usd_per_year"], plan["solver"]["gap"]
    assert gap is not None and cost * (1 - gap) >= value * (1 - 1e-6)


def test_the_provers_first_child_starts_from_the_cuts_and_hands_them_to_its_restarts():
    """mipbound: the child on the full model adds the Lagrangian cuts before branch and cut (its
    bound is then at least L at once) and saves them; the planner adds them to the LP's arrays once
    (Prover._read_cuts), so a narrowed restart starts with them; the bound stays valid."""
    jobs, policy = N1_CASES["three-jobs-mixed-hours"]
    s = scenario(jobs, {**policy, "pool_jobs": False})  # (each job's rentals its own: the cuts reach the optimum)
    expected = n_plus_1_brute_force(s)
    fm = _model(s)
    lp = relaxation(fm.prob)
    optimum = lp.optimum(lp.solve())
    rows = len(lp.arrays["row_lower"])
    prover = mipbound.start(lp, 60.0, lp_seconds=1.0, lagrange=(lagrangian.labels(fm, lp), optimum))
    if prover is None:
        pytest.skip("one core: no prover")
    prover.proc.wait(timeout=60)
    got = prover.stop()
    assert prover.cuts_read and len(lp.arrays["row_lower"]) > rows
    assert got == pytest.approx(expected, rel=1e-6)
    assert lp.solve() == pytest.approx(expected, rel=1e-6, abs=1.0)  # the LP with the cuts: L, here the optimum
