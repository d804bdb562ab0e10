"""A multi-year plan reads out its final year (readout_years.py): each job's unit cost is that year's
cost over that year's devices and runs, not year 1's (an expert review found $5,251 per device-year
printed for $1,313: the final year's cost over year 1's 300 robots of 1,200)."""

from __future__ import annotations

import json

import pytest

SCENARIO = """\
name: years-units
horizon_years: 2
site: {ownership: colo, region: us}
policy: {acquisition: [buy, on-demand], stacks: [cuda]}
jobs:
  - name: robots
    stage: edge
    model: llama-3.2-3b
    device: robot
    devices: 10
    demand_multipliers: [1, 3]
    precision: int4
    context_tokens: 4096
    min_tokens_per_s: 20
    max_power_w: 130
  - name: tune
    stage: finetune
    model: llama-3.1-8b
    method: lora
    dataset_tokens: 20000000
    runs_per_year: 4
    demand_multipliers: [1, 2]
    max_hours_per_run: 24
"""


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    from planner.app.planning import make_plan
    from planner.data.consistency import resolve
    from planner.data.scenario import load_scenario

    path = tmp_path_factory.mktemp("years") / "s.yaml"
    path.write_text(SCENARIO)
    s = load_scenario(path)
    return make_plan(s, explain=False), s, resolve(s)


def test_unit_costs_are_the_final_years_cost_over_its_devices_and_runs(planned):
    jobs = {j["name"]: j for j in planned[0]["jobs"]}
    robots, tune = jobs["robots"], jobs["tune"]
    assert robots["cost_usd_per_year"] > 0 and tune["cost_usd_per_year"] > 0
    assert robots["unit_cost"]["usd_per_device_per_year"] == pytest.approx(robots["cost_usd_per_year"] / 30, abs=0.01)
    assert tune["unit_cost"]["usd_per_run"] == pytest.approx(tune["cost_usd_per_year"] / 8, abs=0.01)


@pytest.mark.parametrize("job, key, year_one", [("robots", "usd_per_device_per_year", 10), ("tune", "usd_per_run", 4)])
def test_the_verifier_rejects_year_ones_count(planned, job, key, year_one):
    from planner.verify.plan import verify

    plan, s, cat = planned
    assert verify(plan, s, cat).ok
    bad = json.loads(json.dumps(plan))
    row = next(j for j in bad["jobs"] if j["name"] == job)
    row["unit_cost"][key] = round(row["cost_usd_per_year"] / year_one, 2)
    failures = verify(bad, s, cat).failures
    assert any(key in f for f in failures), failures


def test_an_edge_fleet_is_not_held_to_the_data_centre_default_cap(tmp_path):
    """policy.max_systems_per_offer's default (512) caps data-centre offers; 1,200 robots buy 1,200
    devices unless the scenario sets a cap itself (then it holds, and the plan says what it cost)."""
    from planner.app.planning import make_plan
    from planner.data.errors import InfeasibleError
    from planner.data.scenario import load_scenario

    body = ("name: robots\nsite: {ownership: colo, region: us}\npolicy: {acquisition: [buy]%s}\n"
            "jobs: [{name: robots, stage: edge, model: llama-3.2-3b, device: robot, devices: 1200, precision: int4,"
            " context_tokens: 4096, min_tokens_per_s: 20, max_power_w: 130}]\n")
    path = tmp_path / "s.yaml"
    path.write_text(body % "")
    plan = make_plan(load_scenario(path), explain=False)
    assert plan["status"] == "optimal" and sum(f["systems"] for f in plan["fleet"]) == 1200
    path.write_text(body % ", max_systems_per_offer: 1000")
    with pytest.raises(InfeasibleError):
        make_plan(load_scenario(path), explain=False)


RESERVED_3Y = """\
name: r3
horizon_years: 2
site: {ownership: colo, cooling: air}
policy: {acquisition: [reserved-3y], accelerators: [h100-sxm], providers: [quoteco], discount_rate: 0.08}
offers:
  - {id: q-r3, system: h100-sxm-x8, acquisition: reserved-3y, provider: quoteco, price_usd_per_hour: 14,
     source: test quote, as_of: 2026-12-01}
jobs: [{name: chat, stage: serve, model: llama-3.1-70b, precision: fp8, concurrent_users: 240}]
"""


def test_a_reservation_past_the_horizon_costs_the_same_per_year_in_both_kinds_of_plan(tmp_path):
    """A 3-year reservation in a 2-year plan commits to 3 years of fees: a one-year plan spreads them
    over the 2 years (costs.commitment_factor); a multi-year plan (a trend makes it one) counted only
    the 2 paid within the horizon in its annuitised view, $122,640 a year against $177,234 (a finance
    review's plan compare showed buying dearer per year while its NPV was lower)."""
    from planner.app.planning import make_plan
    from planner.data.consistency import resolve
    from planner.data.scenario import load_scenario
    from planner.verify.plan import verify

    costs = {}
    for kind, extra in (("single", ""), ("years", "trends: [{accelerator: '*', price_decline_per_year: 0.0}]\n")):
        path = tmp_path / f"{kind}.yaml"
        path.write_text(RESERVED_3Y + extra)
        s = load_scenario(path)
        plan = make_plan(s, explain=False)
        assert ("years" in plan) == (kind == "years") and verify(plan, s, resolve(s)).ok
        costs[kind] = plan["total_cost_usd_per_year"]
    fee = 14 * 8760
    assert costs["single"] == pytest.approx(fee * 1.4452, rel=1e-3)
    assert costs["years"] == pytest.approx(costs["single"], rel=1e-6)
