"""MIR cuts of the serving demand rows (milp/covers.py): each holds at every integer point of its
row (checked by enumeration), cuts off the LP relaxation's fractional replicas, and leaves the
plan's cost where enumeration puts it."""

from __future__ import annotations

import itertools
import math
import random

import pulp
import pytest
from test_bruteforce import brute_force, scenario, serve
from test_milp_core import N1, n_plus_1_brute_force

from planner.app import planning
from planner.app.planning import make_plan
from planner.data import deadline
from planner.milp import covers, fleet, pooling
from planner.milp.relaxation import relaxation
from planner.milp.solve import solve


def _row(coefs):
    prob = pulp.LpProblem("row", pulp.LpMinimize)
    xs = [prob.add_variable(f"x{j}", 0, cat="Integer") for j in range(len(coefs))]
    return xs, list(zip(coefs, xs))


@pytest.mark.parametrize("seed", range(12))
def test_every_cut_holds_at_every_integer_point_of_its_row(seed):
    rng = random.Random(seed)
    coefs = [rng.choice([7, 13, 21, 40, 64, 100, 184, 300]) for _ in range(rng.randint(1, 3))]
    b = rng.randint(50, 700)
    xs, terms = _row(coefs)
    cuts = covers.mir(terms, b)
    top = [math.ceil(b / a) + 1 for a in coefs]
    for point in itertools.product(*(range(t + 1) for t in top)):
        if sum(a * x for a, x in zip(coefs, point)) >= b:
            value = dict(zip(xs, point))
            for rhs, cut in cuts:
                assert sum(c * value[v] for c, v in cut) >= rhs - 1e-9, (coefs, b, point, cut, rhs)


@pytest.mark.parametrize("seed", range(12))
def test_the_vectorised_cuts_a_lazy_model_holds_are_the_cuts_it_writes(seed):
    """mir_matrix (numpy, the cuts a lazy model holds back) gives mir's cuts (the rows a model
    writes whole): the same right sides, the same coefficients, zeros where mir drops a term."""
    rng = random.Random(seed)
    coefs = [rng.choice([7, 13, 21, 40, 64, 100, 184, 300, 450.5]) for _ in range(rng.randint(1, 6))]
    b = rng.choice([rng.randint(50, 700), 333.3])
    _, terms = _row(coefs)
    rhs, matrix = covers.mir_matrix(coefs, b)
    cuts = covers.mir(terms, b)
    assert rhs == [r for r, _ in cuts]
    for row, (_, cut) in zip(matrix, cuts):
        got = {v.name: c for c, v in cut}
        assert [got.get(v.name, 0.0) for _, v in terms] == pytest.approx(list(row), abs=1e-9)


def test_one_option_rounds_up_to_whole_replicas():
    # 300 users on replicas of 64: the row alone lets the LP hold 4.69 replicas, the cut 5
    _, terms = _row([64])
    assert [(rhs, [(c, v.name) for c, v in cut]) for rhs, cut in covers.mir(terms, 300)] == [(5, [(1.0, "x0")])]
    # a demand that is a multiple of the replica, or smaller than one: nothing to add
    assert covers.mir(terms, 320) == [] and covers.mir(terms, 40) == []


def test_two_options_cut_off_the_fractional_mix():
    xs, terms = _row([64, 300])
    cuts = covers.mir(terms, 500)
    # the LP's cheapest point at 1 $/replica-user: 500/300 replicas of the large option
    lp_point = {xs[0]: 0.0, xs[1]: 500 / 300}
    assert any(sum(c * lp_point[v] for c, v in cut) < rhs - 1e-6 for rhs, cut in cuts)


def _lp_and_plan(s, with_cuts: bool, monkeypatch, plan: bool = True) -> tuple[float, float | None]:
    if not with_cuts:
        monkeypatch.setattr(covers, "mir", lambda terms, b: [])
    with deadline.budget(120):
        cat, opts = planning.prepare(s)
        fm = fleet.build(s, cat, opts)
        lp = solve(fm, time_limit_s=60, mip=False)
    return lp.objective, make_plan(s, explain=False)["total_cost_usd_per_year"] if plan else None


def test_the_lp_bound_rises_and_the_plan_stays_at_the_enumerated_optimum(monkeypatch):
    s = scenario([serve("chat", 1500), serve("night", 300, hours=12, precision="bf16"),
                  serve("docs", 60, context=32768, precision="bf16")], N1)
    expected = n_plus_1_brute_force(s)
    lp_cut, plan_cut = _lp_and_plan(s, True, monkeypatch)
    lp_row, _ = _lp_and_plan(s, False, monkeypatch, plan=False)  # (planned without the cuts, CBC took 10 s to the same)
    assert plan_cut == pytest.approx(expected, rel=1e-6)
    assert lp_row < lp_cut <= expected * (1 + 1e-9)


RENT_A100 = {"accelerators": ["a100-80gb"], "acquisition": ["on-demand"], "providers": ["hyperstack", "runpod-community"]}


def _built(s):
    with deadline.budget(120):
        cat, opts = planning.prepare(s)
        return fleet.build(s, cat, opts)


def test_every_rental_cut_holds_at_every_integer_point_of_the_model():
    # replicas on a 1-GPU and an 8-GPU rental: each integer point meeting the demand row, with the
    # fewest rented systems its replicas need, meets every rental-mir row
    s = scenario([serve("chat", 300)], RENT_A100)
    fm = _built(s)
    cuts = [row for (family, _), row in fm.rows.items() if family == "rental-mir"]
    assert cuts, "a demand that rents gets its rental cover"
    demand = fm.rows[("demand", ("chat", 1))]
    ys = sorted(((i, oid), v) for (dk, i, oid, t), v in fm.y.items())
    for point in itertools.product(*(range(min(int(v.upBound), 6) + 1) for _, v in ys)):
        value = {v.name: x for (_, v), x in zip(ys, point)}
        if sum(a * value.get(v.name, 0) for v, a in demand.expr.items()) < -demand.constant:
            continue
        for (dk, oid, t), r in fm.r.items():
            used = sum(fm.options.serve[dk][i].accelerator_slots * value[v.name] for (i, o), v in ys if o == oid)
            value[r.name] = math.ceil(used / fm.system_of(oid).accelerators - 1e-9)
        for row in cuts:
            assert sum(a * value.get(v.name, 0) for v, a in row.expr.items()) + row.constant <= 1e-6, (point, row)


@pytest.mark.parametrize("users, providers", [(300, ["hyperstack"]), (300, ["hyperstack", "runpod-community"]),
                                              (120, ["hyperstack", "runpod-community"])])
def test_rented_systems_round_up_in_the_lp_to_the_enumerated_optimum(users, providers, monkeypatch):
    # two demands renting a100s by the hour, each its own (pool_jobs false: the cover is a demand's):
    # without the rental cover the LP rents fractions of an 8-GPU system (35-86% of the optimum); with
    # it the LP bound is the optimum itself
    s = scenario([serve("chat", users), serve("docs", 40, context=32768, precision="bf16")],
                 {**RENT_A100, "providers": providers, "pool_jobs": False})
    expected = brute_force(s)
    lp_cut, plan_cut = _lp_and_plan(s, True, monkeypatch)
    monkeypatch.setattr(covers, "_rental_cover", lambda *a: None)
    with deadline.budget(120):
        lp_row = solve(_built(s), time_limit_s=60, mip=False).objective
    assert plan_cut == pytest.approx(expected, rel=1e-6)
    assert lp_row < 0.9 * expected and lp_cut == pytest.approx(expected, rel=1e-6)


POOLED_H100 = {"accelerators": ["h100-sxm"], "acquisition": ["on-demand"], "providers": ["hyperstack", "runpod-community"]}


def _pooled():
    """three chats of one model in one pool, at three prompt lengths: a replica serves each a different
    number of users"""
    return scenario([serve("short", 500), serve("mid", 120, context=8192), serve("long", 40, context=32768)],
                    POOLED_H100)


def test_every_weighted_pool_cover_is_implied_by_the_demand_and_load_rows(monkeypatch):
    # each weighted cover a Y >= b sums the members' demand rows and the pool's load rows, so even
    # the LP without it (replicas fractional) cannot go below b; the cover of a configuration that
    # could serve every member alone is met with equality there (the bound is as tight as can be)
    fm = _built(_pooled())
    held = [h for h in fm.held_cuts if isinstance(h, covers.Covers)]
    assert held and held[0].a.shape[0] > 1, "a pool of unequal members gets a weighted cover per configuration"
    monkeypatch.setattr(covers, "_weighted_covers", lambda *a: None)
    plain = _built(_pooled())
    replicas = {v.name: plain.yp[key] for key, v in fm.yp.items()}
    least = []
    for h in held:
        for a, b in zip(h.a, h.b):
            plain.prob.setObjective(pulp.lpSum(float(c) * replicas[v.name] for c, v in zip(a, h.variables)))
            least.append((relaxation(plain.prob).solve(), float(b)))
    assert all(low >= b * (1 - 1e-7) for low, b in least), least
    assert any(low == pytest.approx(b, rel=1e-7) for low, b in least)


def test_weighted_pool_covers_lift_the_lp_to_near_the_plan_and_leave_the_plan(monkeypatch):
    # the pool's summed cover counts each configuration at the most users it serves of any member
    # (the short chat's): the LP held fractions of replicas, 87% of the plan; weighted per member it
    # is within 2% of it, and the plan is the same with the cuts and without
    s = _pooled()
    lp_cut, plan_cut = _lp_and_plan(s, True, monkeypatch)
    monkeypatch.setattr(covers, "_weighted_covers", lambda *a: None)
    lp_row, plan_row = _lp_and_plan(s, True, monkeypatch)
    assert plan_cut == pytest.approx(plan_row, rel=1e-6)
    assert lp_row < 0.9 * plan_cut and 0.98 * plan_cut <= lp_cut <= plan_cut * (1 + 1e-9)


def test_a_pools_cover_counts_a_replica_that_serves_it_whole_at_its_need():
    # a pool of one 600-user chat on mi300x rentals: a TP4 replica serves 1,024 users, a TP2 one 425; in
    # the pool's cover a replica that serves the whole pool counts as the pool's need, no more (any
    # one of them meets the cover), so each MIR row is met exactly by one such replica: a plan's LP
    # can no longer hold most of a TP2 replica and a sliver of a TP4 one (60 generated jobs, seed 7:
    # the LP bound rose 1.4%)
    job = {"name": "chat", "stage": "serve", "model": "gpt-oss-120b", "precision": "bf16", "context_tokens": 8192,
           "concurrent_users": 600, "min_tokens_per_s_per_user": 20}
    side = {**job, "name": "side", "model": "llama-3.1-8b", "concurrent_users": 50}
    fm = _built(scenario([job, side], {"accelerators": ["mi300x"], "acquisition": ["on-demand"],
                                       "providers": ["digitalocean", "runpod"]}))
    pool = fm.options.demands["chat"].pool
    whole = [fm.yp[key] for key, ms in pooling.members(fm).items()
             if key[0] == pool and any(fm.options.serve[dk][i].users_per_replica >= 600 for dk, i, _ in ms)]
    rows = [row for (family, entity), row in fm.rows.items() if family == "cover-mir" and entity[0] == pool]
    assert whole and rows
    for row in rows:
        for v in whole:
            assert -row.expr[v] == pytest.approx(row.constant, rel=1e-9)


def test_a_separation_round_is_not_started_without_time_for_its_lp(monkeypatch):
    # each LP takes 0.2 s here (a slow machine) and one given less comes back unsolved (inf), as
    # HiGHS's does at its time limit. Unhurried, the rounds lift the LP; given 0.5 s, a round would
    # not fit after the first LP (0.3 s left, under twice its time), so the first LP's optimum stands:
    # before, the rounds ran on until an LP was cut and the full model's bound was lost
    import time

    from planner.milp.relaxation import Relaxation

    s = _pooled()
    with deadline.budget(120):
        cat, opts = planning.prepare(s)
        fm = fleet.build(s, cat, opts, lazy=True)
        lifted = covers.separated(fm, relaxation(fm.prob))
        plain = relaxation(fleet.build(s, cat, opts, lazy=True).prob).solve()
    assert fm.held_cuts and lifted > plain * 1.01  # (the rounds matter here)
    real = Relaxation.solve

    def slow(self, time_limit_s=None):
        time.sleep(0.2)
        return math.inf if time_limit_s is not None and time_limit_s < 0.2 else real(self, time_limit_s)

    monkeypatch.setattr(Relaxation, "solve", slow)
    with deadline.budget(120):
        fm = fleet.build(s, cat, opts, lazy=True)
        got = covers.separated(fm, relaxation(fm.prob), time.monotonic() + 0.5)
    assert got == pytest.approx(plain, rel=1e-9)
