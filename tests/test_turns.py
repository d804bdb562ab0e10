"""Runs with deadlines on owned systems shared with other jobs (data/sharing.py, milp/turns.py,
verify/fleet.py): the training review's finding that a 35-hour fine-tune on GPUs that serving holds
12 hours a day was shown as meeting a 48-hour deadline, and a 58-day pretraining run sharing every
GPU with a daily RL trainer."""

from __future__ import annotations

import copy
import json
import math

import pytest
from conftest import planned_json

from planner.data import sharing


def test_a_run_that_pauses_for_a_part_day_job_takes_its_nights():
    # 35 h in 12-hour nights: 12 + (12) + 12 + (12) + 11 = 59 h
    assert sharing.given_way_hours(35, 730, 12, 24) == pytest.approx(59)
    assert sharing.given_way_hours(4.6, 168, 12, 24) == pytest.approx(4.6)  # one night
    assert sharing.given_way_hours(12, 168, 12, 24) == pytest.approx(12)  # exactly one night
    assert math.isinf(sharing.given_way_hours(1, 168, 24, 24))  # serving that never pauses
    assert sharing.beside_serving(35, 48, 12, 12) and not sharing.beside_serving(35, 72, 12, 12)
    assert not sharing.beside_serving(35, 0, 12, 12)  # no deadline: it may always wait...
    assert sharing.beside_serving(35, 0, 12, 24)  # ...but not for serving that never pauses


def test_a_daily_run_cannot_wait_out_a_two_month_run_nor_it_for_the_daily_one():
    pretrain, trainer = (1389, 1440, 4), (14.5, 16, 365)
    assert sharing.side_by_side(pretrain, trainer)
    monthly, weekly = (35, 48, 12), (4.6, 12, 52)  # the monthly run starts between weekly ones
    assert not sharing.side_by_side(monthly, weekly)


SCENARIO = """name: mixed
horizon_years: 3
site: {ownership: on-prem, power_usd_per_kwh: 0.12, pue: 1.3, cooling: air}
policy: {acquisition: [buy], stacks: [cuda], redundancy: none}
jobs:
  - {name: assistant, stage: serve, model: llama-3.1-70b, precision: fp8, context_tokens: 8192,
     concurrent_users: 300, min_tokens_per_s_per_user: 20, max_ttft_s: 2, hours_per_day: 12}
  - {name: monthly-70b-lora, stage: finetune, model: llama-3.1-70b, method: lora,
     dataset_tokens: 800000000, epochs: 2, runs_per_year: 12, max_hours_per_run: DEADLINE}
"""


def _on_offer(plan: dict, job: str) -> dict:
    return {p["offer"]: p for p in next(j for j in plan["jobs"] if j["name"] == job)["placements"]}


@pytest.mark.parametrize("deadline", [48, 200])
def test_a_run_that_cannot_pause_for_serving_runs_beside_it(plan_cli, tmp_path, deadline):
    """A run that paused every day for the serving would miss its deadline gets accelerators beside
    the serving replicas on the same systems (a second box); with a deadline it meets by pausing,
    it takes the serving's nights (one box)."""
    plan = planned_json(plan_cli, tmp_path / "s.yaml", SCENARIO.replace("DEADLINE", str(deadline)))
    serve, tune = _on_offer(plan, "assistant"), _on_offer(plan, "monthly-70b-lora")
    for oid, run in tune.items():
        held = next(f["accelerators"] for f in plan["fleet"] if f["offer"] == oid)
        serving = sum(p["replicas"] * p["accelerators_per_replica"] for o, p in serve.items() if o == oid)
        paused = sharing.given_way_hours(run["hours_per_run"], 8760 / 12, 12, 24)
        if paused > deadline:
            assert run["accelerators_per_replica"] + serving <= held
        else:
            assert deadline == 200
    if deadline == 48:
        assert any(sharing.given_way_hours(r["hours_per_run"], 730, 12, 24) > 48 for r in tune.values())


def test_the_verifier_refuses_a_run_that_cannot_pause_and_has_no_room(plan_cli, tmp_path):
    """The plan that the training review saw pass `plan verify` (one box for serving by day and the
    35-hour run) fails it, naming the run and its deadline; exit 5."""
    path = tmp_path / "s.yaml"
    plan = planned_json(plan_cli, path, SCENARIO.replace("DEADLINE", "48"))
    serve, tune = _on_offer(plan, "assistant"), _on_offer(plan, "monthly-70b-lora")
    shared = [oid for oid in tune if oid in serve]
    assert shared, "the plan runs the fine-tune on the serving's systems (beside it, on a second box)"
    bad = copy.deepcopy(plan)
    for f in bad["fleet"]:
        if f["offer"] == shared[0]:
            serving = sum(p["replicas"] * p["accelerators_per_replica"] for o, p in serve.items() if o == shared[0])
            per = f["accelerators"] // f["systems"]
            f["systems"] = max(1, math.ceil(max(serving, tune[shared[0]]["accelerators_per_replica"]) / per))
            f["accelerators"] = f["systems"] * per
    out = tmp_path / "bad.json"
    out.write_text(json.dumps(bad))
    r = plan_cli("verify", path, out)
    assert r.code == 5 and "cannot pause for the serving beside it and meet its 48-hour deadline" in r.err
