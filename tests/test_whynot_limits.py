"""Why not an accelerator whose forced plan does not exist: the limit it breaks, by how much
(planner/explain/whynot_limits.py), checked against re-solved models."""

from __future__ import annotations

import re
from functools import cache

import pytest
import yaml
from conftest import SCENARIOS, shipped_plan


@cache
def _capped_bank():
    """bank.yaml on a site of 8 kW: the plan's 2x h200-nvl-x4 draw 7.2 kW; most others cannot fit."""
    from planner.app.pipeline import plan_scenario
    from planner.data.scenario import Scenario

    body = yaml.safe_load((SCENARIOS / "bank.yaml").read_text())
    body["site"]["power_cap_kw"] = 8
    s = Scenario.model_validate(body)
    return s, plan_scenario(s, explain="full")


def _row(plan: dict, acc: str) -> dict:
    return next(a for a in plan["alternatives"] if a["accelerator"] == acc)


def _forced_status(s, acc: str, cap_kw: float) -> str:
    """The MILP status of s forced onto acc (every job that can run on it runs only there) with the
    site's power cap set to cap_kw."""
    from planner.app import planning
    from planner.data import deadline
    from planner.explain import restricted, whynot
    from planner.milp import fleet
    from planner.milp.solve import solve

    capped = s.model_copy(update={"site": s.site.model_copy(update={"power_cap_kw": cap_kw})})
    with deadline.budget(120):
        cat, opts = planning.prepare(capped)
        fm = fleet.build(capped, cat, restricted.only_on(opts, acc))
        for i, row in enumerate(whynot.force_rows(acc)(fm)):
            fm.prob.addConstraint(row, f"forced{i}")
        return solve(fm, time_limit_s=60).status


def test_power_cap_reason_names_the_cap_and_the_least_power_needed():
    s, plan = _capped_bank()
    assert [f["system"] for f in plan["fleet"]] == ["h200-nvl-x4"]
    row = _row(plan, "b200")
    assert row["status"] == "infeasible"
    m = re.search(r"it needs ([0-9.,]+) kW of site power, above site.power_cap_kw \(8.0 kW\) "
                  r"\(the plan of whole systems that overruns the least\)", row["reason"])
    assert m, row["reason"]
    need = float(m.group(1).replace(",", ""))
    assert need == pytest.approx(28.6, abs=0.05)  # an N+1 pool of b200-x8: two systems of 14.3 kW
    assert _forced_status(s, "b200", need + 0.05) == "optimal"  # that much power is enough ...
    assert _forced_status(s, "b200", need - 0.5) == "infeasible"  # ... and less is not


def test_every_power_ruled_accelerator_says_so_not_a_policy_reason():
    """Before, a forced LP that CBC's bound tightening proved infeasible came back 'not solved' and
    read as "no offer the policy allows can host its configurations here" (a100-80gb here)."""
    s, plan = _capped_bank()
    for acc in ("a100-80gb", "h100-sxm", "h100-nvl", "rtx-pro-6000"):
        reason = _row(plan, acc)["reason"]
        assert "above site.power_cap_kw (8.0 kW)" in reason, (acc, reason)
    # beyond the EXACT near misses, the LP's figure: a lower bound, so no plan fits below it
    m = re.search(r"it needs at least ([0-9.,]+) kW of site power, above site.power_cap_kw \(8.0 kW\) "
                  r"\(the LP relaxation's least shortfall", _row(plan, "a100-80gb")["reason"])
    assert m, _row(plan, "a100-80gb")["reason"]
    assert _forced_status(s, "a100-80gb", float(m.group(1).replace(",", "")) - 0.1) == "infeasible"


def test_multiyear_budget_reason_names_the_years_and_the_budget():
    _, plan = shipped_plan("annual-budget.yaml")
    row = _row(plan, "h100-sxm")
    assert row["status"] == "infeasible"
    m = re.search(r"it spends \$([0-9,]+) in year 1 and \$([0-9,]+) in year 2, above "
                  r"budget.usd_per_year \(\$170,000\)", row["reason"])
    assert m, row["reason"]
    assert all(int(x.replace(",", "")) > 170_000 for x in m.groups())
    assert not any("no offer the policy allows" in a["reason"] for a in plan["alternatives"]
                   if a["accelerator"] in ("a10g", "l40s", "gh200"))


def test_edge_units_on_robots_do_not_count_against_the_sites_power():
    """500 robots each carrying an accelerator, and one serving box in a 10 kW office: the site
    draws the box's 0.65 kW (the model's power row leaves edge units out); the explanation said
    400.6 of 10.0 kW. Every accelerator the cap rules out is named with the kW it would need."""
    from planner.app.pipeline import plan_scenario
    from planner.data.scenario import Scenario

    s = Scenario.model_validate({
        "name": "robots", "site": {"kind": "office", "ownership": "on-prem", "power_cap_kw": 10},
        "policy": {"acquisition": ["buy"]},
        "jobs": [{"name": "onboard", "stage": "edge", "model": "llama-3.2-3b", "precision": "int4",
                  "devices": 500, "min_tokens_per_s": 20},
                 {"name": "coordinator", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8",
                  "context_tokens": 16384, "concurrent_users": 30, "min_tokens_per_s_per_user": 25}]})
    plan = plan_scenario(s, explain="full")
    power = next(e for e in plan["explanations"] if e["constraint"] == "site.power_cap_kw")
    m = re.search(r"the plan draws ([0-9.,]+) of 10.0 kW", power["message"])
    assert m and float(m.group(1)) < 10.0, power["message"]
    ruled = [a for a in plan["alternatives"] if "scenario's limits" in a["reason"]]
    assert ruled and all("above site.power_cap_kw (10.0 kW)" in a["reason"] for a in ruled), ruled
