"""Tiny instances solved by enumeration agree with the MILP's cost.

The enumeration takes the configurations (options.build: how one replica or run performs) and the
price rows as given, and searches every integer replica count on every (configuration, offer)
pair, the systems each offer then needs, and where each fine-tune run goes; it shares no code with
model.py. Costs per year:
  owned offer   systems x fixed (costs.owned_fixed_usd_per_year) + busy power for the hours used
  rented offer  systems x price x hours used (shared by the jobs that run the same hours a day)
"""

from __future__ import annotations

import math

import pytest

from planner.app.planning import make_plan
from planner.data import consistency as checks
from planner.data.scenario import Scenario
from planner.options import build as options
from planner.physics import costs

A100 = {"accelerators": ["a100-80gb"], "acquisition": ["buy", "on-demand"],
        "providers": ["oem", "runpod-community", "hyperstack"]}


def scenario(jobs, policy=A100) -> Scenario:
    return Scenario.model_validate({"name": "tiny", "policy": policy, "jobs": jobs})


def serve(name, users, hours=24.0, context=4096, precision="fp8"):
    return {"name": name, "stage": "serve", "model": "llama-3.1-8b", "precision": precision,
            "context_tokens": context, "concurrent_users": users, "min_tokens_per_s_per_user": 20,
            "hours_per_day": hours}


def finetune(tokens=5e7, runs=12):
    return {"name": "tune", "stage": "finetune", "model": "llama-3.1-8b", "method": "lora",
            "dataset_tokens": tokens, "runs_per_year": runs, "max_hours_per_run": 72}


class World:
    def __init__(self, s: Scenario):
        self.s = s
        self.cat = checks.resolve(s)
        self.opts = options.build(s, self.cat)
        self.site, self.rate = s.site, s.policy.discount_rate

    def system(self, oid):
        return self.cat.systems[self.opts.offers[oid].system]

    def owned(self, oid):
        return self.opts.offers[oid].acquisition in ("buy", "reserved-1y", "reserved-3y")

    def fixed(self, oid):
        return sum(costs.owned_fixed_usd_per_year(self.opts.offers[oid], self.system(oid), self.site,
                                                  self.rate, self.s.horizon_years).values())

    def busy_per_acc_hour(self, oid):
        o = self.opts.offers[oid]
        return costs.energy_usd_per_hour(self.system(oid), self.site) * (1 - costs.IDLE_POWER_FRACTION) \
            / self.system(oid).accelerators if o.acquisition == "buy" else 0.0

    def serve_pairs(self, dk):
        return [(opt, oid) for opt in self.opts.serve[dk] for oid in sorted(self.opts.offers)
                if self.opts.offers[oid].system == opt.system]


def slots(opt, per):
    a = opt.accelerators_per_replica
    return per / (per // a) if a <= per else float(a)


def replica_vectors(pairs, users):
    """Every vector of replica counts in which no pair holds more replicas than the users still
    unserved before it need (a larger count only adds cost), and that serves everyone."""
    def rec(k, left):
        if left <= 0:
            yield (0,) * (len(pairs) - k)
            return
        if k == len(pairs):
            return
        upr = pairs[k][0].users_per_replica
        for y in range(math.ceil(left / upr) + 1):
            for rest in rec(k + 1, left - y * upr):
                yield (y,) + rest
    yield from rec(0, users)


def serving_cost(w: World, chosen: dict[str, list]) -> tuple[float, dict[str, float], dict[str, float]]:
    """Yearly cost of a serving assignment {demand: [(opt, oid, replicas)]}; also the owned
    accelerators held at peak and the accelerator-hours serving uses, per owned offer."""
    total, peak, hours_used, held = 0.0, {}, {}, {}
    rented = {}  # (offer, hours a day) -> accelerators: the jobs running the same hours share rented systems
    for dk, rows in chosen.items():
        h = w.opts.demands[dk].hours_per_day * 365
        for opt, oid, y in rows:
            per = w.system(oid).accelerators
            s = slots(opt, per) * y
            if w.owned(oid):
                peak[oid] = peak.get(oid, 0) + s
                hours_used[oid] = hours_used.get(oid, 0) + s * h
                total += w.busy_per_acc_hour(oid) * s * h
            else:
                key = (oid, h, None if w.s.policy.pool_jobs else dk)  # (pool_jobs false: each job's own)
                rented[key] = rented.get(key, 0) + s
    for (oid, h, _), s in rented.items():
        systems = math.ceil(s / w.system(oid).accelerators - 1e-9)
        held[oid] = held.get(oid, 0) + systems
        cap = w.opts.offers[oid].max_systems
        if cap is not None and held[oid] > cap:  # the offer's availability cap, across demands
            return math.inf, peak, hours_used
        total += systems * w.opts.offers[oid].price_usd_per_hour * h
    return total, peak, hours_used


def best_batch(w: World, dk: str, boxes: dict[str, int], hours_used: dict[str, float]) -> float | None:
    """Cheapest way to place the runs given the owned boxes: at most two places carry runs at a
    vertex of this tiny LP (shares sum to 1, one hours row per owned offer), so try every single
    place and every pair with the best split."""
    d = w.opts.demands[dk]
    places = []  # (cost per share, owned offer or None, accelerator-hours per share)
    for opt in w.opts.batch[dk]:
        for oid in sorted(w.opts.offers):
            if w.opts.offers[oid].system != opt.system:
                continue
            per = w.system(oid).accelerators
            acc_h = opt.accelerators * opt.hours_per_run * d.runs_per_year
            if w.owned(oid):
                if opt.accelerators <= per * boxes.get(oid, 0):
                    places.append((w.busy_per_acc_hour(oid) * acc_h, oid, acc_h))
            else:
                systems = max(1, math.ceil(opt.accelerators / per))
                places.append((systems * opt.hours_per_run * w.opts.offers[oid].price_usd_per_hour
                               * d.runs_per_year, None, 0.0))
    room = {oid: 8760 * w.system(oid).accelerators * n - hours_used.get(oid, 0) for oid, n in boxes.items()}
    best = None
    for i, (ci, oi, hi) in enumerate(places):
        for cj, oj, hj in places[i:]:
            # x on place i, 1 - x on place j; feasible x forms an interval, cost is linear in x
            lo, hi_x = 0.0, 1.0
            if oi is not None and oi == oj:
                if hi != hj:
                    bound = (room[oi] - hj) / (hi - hj)
                    lo, hi_x = (lo, min(hi_x, bound)) if hi > hj else (max(lo, bound), hi_x)
                elif hi > room[oi] + 1e-9:
                    continue
            else:
                if oi is not None:
                    hi_x = min(hi_x, room[oi] / hi if hi > 0 else 1.0)
                if oj is not None:
                    lo = max(lo, 1 - (room[oj] / hj if hj > 0 else 1.0))
            if lo > hi_x + 1e-12:
                continue
            for x in (lo, hi_x):
                c = ci * x + cj * (1 - x)
                best = c if best is None else min(best, c)
    return best


def brute_force(s: Scenario, extra_boxes: int = 1) -> float:
    w = World(s)
    serve_demands = sorted(w.opts.serve)
    batch_demands = sorted(w.opts.batch)
    owned_offers = sorted(oid for oid in w.opts.offers if w.owned(oid))
    best = math.inf

    def assignments(k):
        if k == len(serve_demands):
            yield {}
            return
        dk = serve_demands[k]
        pairs = w.serve_pairs(dk)
        for vec in replica_vectors(pairs, w.opts.demands[dk].users):
            rows = [(opt, oid, y) for (opt, oid), y in zip(pairs, vec) if y]
            for rest in assignments(k + 1):
                yield {dk: rows, **rest}

    for chosen in assignments(0):
        serve_cost, peak, hours_used = serving_cost(w, chosen)
        base = {oid: math.ceil(peak.get(oid, 0) / w.system(oid).accelerators - 1e-9) for oid in owned_offers}
        # owned boxes: what serving needs at peak, plus up to extra_boxes more for the fine-tunes
        ranges = [range(base[oid], base[oid] + (extra_boxes if batch_demands else 0) + 1) for oid in owned_offers]
        for counts in _product(ranges):
            boxes = dict(zip(owned_offers, counts))
            if any(hours_used.get(oid, 0) > 8760 * w.system(oid).accelerators * n + 1e-6 for oid, n in boxes.items()):
                continue
            cost = serve_cost + sum(w.fixed(oid) * n for oid, n in boxes.items())
            feasible = True
            for dk in batch_demands:
                b = best_batch(w, dk, boxes, hours_used)
                if b is None:
                    feasible = False
                    break
                cost += b
            if feasible:
                best = min(best, cost)
    return best


def _product(ranges):
    if not ranges:
        yield ()
        return
    for first in ranges[0]:
        for rest in _product(ranges[1:]):
            yield (first,) + rest


def milp_cost(s: Scenario) -> float:
    return make_plan(s, explain=False)["total_cost_usd_per_year"]


NO_RUNPOD = {**A100, "providers": ["oem", "hyperstack"]}
CASES = {
    "rent-a-few-gpus": ([serve("chat", 300)], A100),
    "buy-a-box-around-the-clock": ([serve("chat", 1500)], A100),
    "a-box-plus-a-rented-gpu": ([serve("chat", 2100)], A100),
    "two-jobs-share-owned-boxes": ([serve("chat", 1200), serve("docs", 40, context=32768, precision="bf16")], A100),
    "finetune-in-idle-hours": ([serve("chat", 1500, hours=18), finetune()], NO_RUNPOD),
    "rent-only-two-offers": ([serve("chat", 120)], {**A100, "acquisition": ["on-demand"]}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_milp_matches_enumeration(case):
    jobs, policy = CASES[case]
    s = scenario(jobs, policy)
    expected = brute_force(s)
    assert math.isfinite(expected)
    assert milp_cost(s) == pytest.approx(expected, rel=1e-6, abs=0.01)


def test_a_run_over_several_owned_boxes_lifts_the_lp_to_the_enumerated_optimum():
    """A pretraining run on 24 or 32 A100s (3 or 4 boxes of 8) beside a part-day chat, the boxes
    bought or rented: the LP relaxation once held shares of both run sizes on a share of the boxes
    (b = x in every batch-fit row); the batch-share row (rows.define_batch_shares) counts the
    run's shares at their whole boxes, which lifts the LP to the enumerated optimum, and the
    MILP's optimum stays the enumerated one."""
    from planner.milp import fleet
    from planner.milp.relaxation import relaxation

    run = {"name": "pre", "stage": "pretrain", "model": "llama-3.2-3b", "training_tokens": 3e10, "max_days": 3}
    s = scenario([run, serve("chat", 300, hours=12)], {"accelerators": ["a100-80gb"], "acquisition": ["buy", "on-demand"]})
    expected = brute_force(s, extra_boxes=4)
    w = World(s)
    assert sorted(o.accelerators for o in w.opts.batch["pre"]) == [24, 32]
    fm = fleet.build(s, w.cat, w.opts)
    assert [k for k in fm.rows if k[0] == "batch-share"]
    with fm.cuts_relaxed():
        without = relaxation(fm.prob).solve()
    assert without < 0.8 * expected  # (9,570 against 14,292 $/yr)
    assert expected * 0.999 <= relaxation(fm.prob).solve() <= expected + 0.1  # (+ the tie-break cents)
    assert milp_cost(s) == pytest.approx(expected, rel=1e-6, abs=0.01)
