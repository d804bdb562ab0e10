"""Step 3 of the screened search (planner/milp/support.py): the plan with the pools fixed, found by
HiGHS in the relaxation's own object, over the LP's support first. It must be a plan of the model
(every row met), as cheap as CBC's proven optimum with the same pools fixed, and leave the LP the
later steps solve as it was."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from test_screening import _model

from planner.data import deadline
from planner.milp import screening, support
from planner.milp.relaxation import relaxation
from planner.milp.solve import solve


@pytest.fixture(scope="module")
def pattern():
    """(model, LP, pools, the pattern steps 1-2 leave) on the 7-job N+1 fleet of test_screening."""
    fm = _model()
    lp = relaxation(fm.prob)
    opens = screening.pools(fm)
    keys = sorted(opens, key=repr)
    assert np.isfinite(lp.solve())
    budget = screening._Work(screening._lp_budget(fm), float("inf"))
    found = screening._improve(lp, opens, keys, screening._dive(lp, opens, keys, budget), budget)
    return fm, lp, opens, found


def test_the_mip_leaves_the_lp_as_it_was(pattern):
    fm, lp, _, _ = pattern
    before, bounds = lp.solve(), lp.bounds()
    lower, upper = bounds
    found = lp.mip(lower, upper, 60, 1e-4)
    assert found.point is not None and found.proven and not found.timed_out
    after = lp.bounds()
    assert lp.solve() == pytest.approx(before, rel=1e-9)  # continuous again: the LP's optimum, not the MIP's
    assert np.array_equal(after[0], lower) and np.array_equal(after[1], upper)
    mip_cost = float(np.dot(lp.arrays["cost"], found.point)) + lp.constant
    assert mip_cost > before * 1.001  # (the MIP was a MIP: whole systems cost more than the LP's fractions)


def test_the_plan_with_the_pools_fixed_is_cbcs_proven_optimum_and_meets_every_row(pattern):
    fm, lp, opens, fixed = pattern
    with deadline.budget(300):
        found = support.first_plan(fm, lp, screening._lp_fixed(lp, opens, fixed), 60, 1e-4)
        with screening._pools_fixed(opens, fixed):
            cbc = solve(fm, time_limit_s=120, gap=1e-4)
    assert cbc.status == "optimal" and found is not None and found.status == "feasible"
    assert found.objective == pytest.approx(cbc.objective, rel=2e-4)
    assert screening.start_plan(fm, found.values).objective == pytest.approx(found.objective, rel=1e-9)
    opened = {k for k, v in fixed.items() if v}
    assert {k for k, var in opens.items() if found.values[var.name] > 0.5} == opened  # (the pools as fixed)


def test_with_no_time_for_the_whole_model_the_supports_plan_stands(pattern, monkeypatch):
    """The second MIP (every column) given no time, as on a loaded machine: the support's plan is
    the step's plan, every column the LP left at 0 still 0, and it is dear by a few percent at most
    (the cheapest rounding of the LP's replicas and systems)."""
    fm, lp, opens, fixed = pattern
    real, calls = type(lp).mip, []

    def first_only(self, lower, upper, seconds, gap, start=None, max_nodes=None):
        calls.append(start)
        return real(self, lower, upper, seconds if len(calls) == 1 else 0.0, gap, start, max_nodes)

    monkeypatch.setattr(type(lp), "mip", first_only)
    with screening._lp_fixed(lp, opens, fixed):
        lp.solve()
        used = {name for name, j in lp.column.items() if abs(lp.point()[j]) > support.ZERO}
    with deadline.budget(300):
        found = support.first_plan(fm, lp, screening._lp_fixed(lp, opens, fixed), 60, 1e-4)
        with screening._pools_fixed(opens, fixed):
            cbc = solve(fm, time_limit_s=120, gap=1e-4)
    assert len(calls) == 2 and calls[0] is None and calls[1] is not None  # (the second from the first's plan)
    integer = {v.name for v in fm.prob.variables() if v.cat != "Continuous"}
    assert all(found.values[n] == 0 for n in integer - used)
    assert cbc.objective * (1 - 1e-6) <= found.objective <= cbc.objective * 1.05


def test_two_threads_search_their_own_models_at_once():
    """The explanations re-plan variants in threads, each with its own relaxation: two MIPs at once
    both end with their plan (highspy's own threaded solve shares its locks between objects: the
    second failed with "Solver is already running")."""
    import threading

    fm = _model()
    lps = [relaxation(fm.prob) for _ in range(2)]
    found, failed = [None, None], []

    def run(k: int) -> None:
        try:
            lower, upper = lps[k].bounds()
            for _ in range(3):  # (several each: the two overlap)
                found[k] = lps[k].mip(lower, upper, 60, 1e-4)
        except Exception as e:  # (reported below)
            failed.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed and all(f is not None and f.point is not None and f.proven for f in found)
    costs = [float(np.dot(lp.arrays["cost"], f.point)) for lp, f in zip(lps, found)]
    assert costs[0] == pytest.approx(costs[1], rel=1e-4)


def test_a_plan_a_few_ulps_outside_its_bounds_starts_cbc_at_the_bounds(pattern):
    """A HiGHS point can hold -6e-14 in a column bounded at 0 (or 2.9999999 in an integer one): the
    plan made of it carries values fitted to the bounds, which PuLP takes as CBC's start (its
    setInitialValue refuses a value below a lower bound: choose-go.yaml shortlisted at gap 1% ended
    in a traceback)."""
    from planner.milp.plans import start_plan

    fm, lp, _, _ = pattern
    found = support.first_plan(fm, lp, contextlib.nullcontext(), 30, 1e-4)
    assert found is not None
    noisy = {name: (x - 6e-14 if x == 0 else x + 1e-9) for name, x in found.values.items()}
    plan = start_plan(fm, noisy)
    assert plan is not None and plan.objective == pytest.approx(found.objective, rel=1e-9)
    for v in fm.prob.variables():
        x = plan.values[v.name]
        assert v.lowBound is None or x >= v.lowBound
        assert v.upBound is None or x <= v.upBound
        assert v.cat == "Continuous" or x == round(x)
        v.setInitialValue(x)  # (raised ValueError before)
