"""The held-share and held-use rows (planner/milp/openings.py) of the full model behind a shortlist:
written into that model as rows, its MILP optimum is still the enumerated one (they cut off no
cheapest plan), and its LP relaxation rises with them where a small job would hold a fraction of an
owned system."""

from __future__ import annotations

import math

import pytest
from test_bruteforce import A100, CASES, brute_force, milp_cost, scenario, serve

from planner.app import planning
from planner.data import deadline
from planner.milp import covers, fleet
from planner.milp.relaxation import relaxation
from planner.milp.solve import solve

FAMILIES = ("held-share", "held-use")
OWNED = {**A100, "acquisition": ["buy", "reserved-1y", "on-demand"],
         "providers": ["secondary-market", "hyperstack", "runpod-community"]}
"""a100-80gb 8-GPU boxes bought second-hand or reserved for a year, or single GPUs and boxes rented
by the hour"""
SMALL = [serve("chat", 60), serve("night", 40, hours=12), serve("docs", 12, context=32768, precision="bf16")]
"""two small chats and a long-prompt one: each in a pool of its own (precision, hours), so the
enumeration, which shares no replica between jobs, prices what the MILP may plan"""
OWNED_CASES = {
    "small-jobs": (SMALL, OWNED),
    "one-job-a-box": ([serve("chat", 600)], OWNED),
    "a-box-and-small-jobs": ([serve("chat", 900), serve("docs", 30, context=32768, precision="bf16")], OWNED),
    "buy-only": (SMALL[:2], {**OWNED, "acquisition": ["buy"]}),
}


def _full(s, rows: bool):
    """The lazy full model (prune off), with its held-share and held-use rows written in (rows) or
    dropped; its other held cuts stay held (valid, and not needed for the optimum)."""
    cat, opts = planning.prepare(s)
    fm = fleet.build(s, cat, opts, prune=False, lazy=True)
    mine = [h for h in fm.held_cuts if h.family in FAMILIES]
    fm.held_cuts = [h for h in fm.held_cuts if h.family not in FAMILIES]
    if rows:
        for h in mine:
            for k, rhs in enumerate(h.rhs):
                covers._row(fm, h.family, (*h.entity, k), rhs, h.coef[k], h.variables)
    return fm, mine


@pytest.mark.parametrize("case", sorted(OWNED_CASES))
def test_with_the_rows_written_in_the_optimum_is_the_enumerated_one(case):
    jobs, policy = OWNED_CASES[case]
    s = scenario(jobs, policy)
    expected = brute_force(s)
    with deadline.budget(120):
        fm, mine = _full(s, rows=True)
        res = solve(fm, time_limit_s=60, gap=0.0)
    assert math.isfinite(expected) and res.status == "optimal"
    assert mine and res.objective == pytest.approx(expected, rel=1e-6, abs=0.01)


@pytest.mark.parametrize("users", [(300, 40), (1500, 300)])
def test_a_pools_jobs_on_owned_boxes_plan_as_in_the_model_searched(users):
    """Two chats of one pool (one model, precision and hours: their replicas shared, which the
    enumeration does not price): with the rows written in, the full model's optimum is the plan's,
    from the model the planner searches (which has no such rows; the enumeration checks that model
    in tests/test_bruteforce.py)."""
    s = scenario([serve("chat", users[0]), serve("rag", users[1], context=16384)], OWNED)
    with deadline.budget(120):
        fm, mine = _full(s, rows=True)
        res = solve(fm, time_limit_s=60, gap=0.0)
        pooled = {d.pool for d in fm.options.demands.values()}
    assert len(pooled) == 1 and None not in pooled and any(h.family == "held-share" for h in mine)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(milp_cost(s), rel=1e-6, abs=0.01)


def test_rentals_alone_get_none():
    s = scenario(*CASES["rent-only-two-offers"])
    with deadline.budget(120):
        _, mine = _full(s, rows=False)
    assert not mine


def test_small_jobs_on_owned_boxes_lift_the_lp_and_keep_the_enumerated_optimum():
    """Two small chats and a long-prompt one, on 8-GPU boxes bought or reserved or on GPUs rented:
    the LP without the rows buys a fraction of a box for each; with them it holds the box at the
    share of each job it carries."""
    s = scenario(SMALL, OWNED)
    expected = brute_force(s)
    with deadline.budget(120):
        plain, mine = _full(s, rows=False)
        lifted, _ = _full(s, rows=True)
        lp_plain, lp_lifted = relaxation(plain.prob).solve(), relaxation(lifted.prob).solve()
        res = solve(lifted, time_limit_s=60, gap=0.0)
    assert mine and {h.family for h in mine} <= set(FAMILIES)
    assert res.status == "optimal" and res.objective == pytest.approx(expected, rel=1e-6, abs=0.01)
    # (here 29,915 -> 30,441 $/yr, the optimum itself: the rows close the LP's whole gap)
    assert lp_plain * 1.01 < lp_lifted <= expected * (1 + 1e-6), (lp_plain, lp_lifted, expected)
    assert expected - lp_lifted <= 0.1 * (expected - lp_plain)


def test_under_n_plus_1_the_spares_link_instead():
    s = scenario([serve("chat", 60)], {**A100, "redundancy": "n+1"})
    with deadline.budget(120):
        _, mine = _full(s, rows=False)
    assert not mine
