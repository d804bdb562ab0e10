"""plan sweep and plan compare: variants solved one by one equal each variant solved alone."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from conftest import SCENARIOS

FINETUNE = SCENARIOS / "support-finetune.yaml"


def test_sweep_equals_each_variant_solved_alone(tmp_path, plan_cli):
    from planner.app.planning import make_plan
    from planner.data.scenario import load_scenario

    runs, hours = [6, 12, 24], [24, 96]
    res = plan_cli("sweep", FINETUNE, "--set", "jobs.0.runs_per_year=" + ",".join(map(str, runs)),
                   "--set", "jobs.0.max_hours_per_run=" + ",".join(map(str, hours)), "--format", "json")
    assert res.code == 0, res.err
    entries = json.loads(res.out)
    assert len(entries) == 6
    assert "Swept 6 variants in" in res.err
    base = yaml.safe_load(FINETUNE.read_text())
    for entry, (r, h) in zip(entries, [(r, h) for r in runs for h in hours]):
        assert entry["settings"] == {"jobs.0.runs_per_year": r, "jobs.0.max_hours_per_run": h}
        alone = dict(base, jobs=[dict(base["jobs"][0], runs_per_year=r, max_hours_per_run=h)])
        path = tmp_path / f"v{entry['variant']}.yaml"
        path.write_text(yaml.safe_dump(alone))
        plan = make_plan(load_scenario(path), explain=False)
        assert entry["summary"]["status"] == plan["status"]
        assert entry["summary"]["total_cost_usd_per_year"] == pytest.approx(plan["total_cost_usd_per_year"], rel=1e-6)
        assert [f["offer"] for f in entry["summary"]["fleet"]] == [f["offer"] for f in plan["fleet"]]
    costs = {e["settings"]["jobs.0.runs_per_year"]: e["summary"]["total_cost_usd_per_year"] for e in entries
             if e["settings"]["jobs.0.max_hours_per_run"] == 24}
    assert costs[6] < costs[12] < costs[24]


def test_sweep_table_has_the_comparison_and_a_closing_note(plan_cli):
    res = plan_cli("sweep", FINETUNE, "--set", "jobs.0.runs_per_year=6,12")
    assert res.code == 0, res.err
    assert "jobs.0.runs_per_year" in res.out and "$/year" in res.out and "fleet" in res.out
    assert "Swept 2 variants in" in res.out


def test_sweep_over_a_multi_year_setting_reports_npv(tmp_path, plan_cli):
    text = FINETUNE.read_text().replace("horizon_years: 1", "horizon_years: 2")
    path = tmp_path / "two-years.yaml"
    path.write_text(text)
    res = plan_cli("sweep", path, "--set", "jobs.0.growth_per_year=0,1", "--format", "json")
    assert res.code == 0, res.err
    flat, growing = json.loads(res.out)
    assert flat["summary"]["npv_usd"] is None  # no per-year setting: a single-period plan
    assert growing["summary"]["npv_usd"] > 0 and growing["summary"]["cash_total_usd"] > 0


@pytest.mark.parametrize("setting, words", [
    ("jobs.0.runs_per_yeer=1,2", ["jobs.0.runs_per_yeer", "did you mean 'runs_per_year'"]),
    ("budgte.usd_per_year=1", ["budgte", "did you mean 'budget'"]),
    ("jobs.4.runs_per_year=1", ["jobs.4.runs_per_year", "use an index from 0 to 0"]),
    ("jobs.0.runs_per_year=lots", ["runs_per_year=lots", "jobs.0.runs_per_year"]),
    ("jobs.0.runs_per_year", ["is not PATH=VALUE"]),
])
def test_bad_set_is_exit_2_naming_the_path(plan_cli, setting, words):
    res = plan_cli("sweep", FINETUNE, "--set", setting)
    assert res.code == 2
    assert "Traceback" not in res.err
    for w in words:
        assert w in res.err, res.err


def test_sweep_where_no_variant_has_a_plan_is_exit_3(tmp_path, plan_cli):
    res = plan_cli("sweep", FINETUNE, "--set", "budget.usd_per_year=1,2")
    assert res.code == 3
    assert res.out.count("infeasible") == 2


def test_compare_puts_two_plans_side_by_side(tmp_path, plan_cli):
    other = tmp_path / "more-runs.yaml"
    other.write_text(FINETUNE.read_text().replace("runs_per_year: 12", "runs_per_year: 24"))
    saved = tmp_path / "a.json"
    assert plan_cli(FINETUNE, "--format", "json", "--output", saved).code == 0
    res = plan_cli("compare", saved, other, "--format", "json")
    assert res.code == 0, res.err
    result = json.loads(res.out)
    a, b = result["a"]["summary"], result["b"]["summary"]
    assert result["difference"]["total_cost_usd_per_year"] == pytest.approx(
        b["total_cost_usd_per_year"] - a["total_cost_usd_per_year"], abs=1e-3)
    assert b["total_cost_usd_per_year"] > a["total_cost_usd_per_year"]
    table = plan_cli("compare", FINETUNE, other)
    assert table.code == 0
    assert "A: support-finetune.yaml" in table.out and "B: more-runs.yaml" in table.out
    assert plan_cli("compare", FINETUNE, tmp_path / "missing.yaml").code == 2


def test_compare_warns_when_the_plans_cover_different_horizons(tmp_path, plan_cli):
    """A one-year plan beside a three-year one: their totals over the horizon add up different numbers
    of years (the review's compare of a 1-year and a 3-year commitment read the 1-year plan as cheaper
    over its horizon): the table shows both horizons and stderr says to compare $/year."""
    longer = tmp_path / "three-years.yaml"
    longer.write_text(FINETUNE.read_text().replace("horizon_years: 1", "horizon_years: 3"))
    res = plan_cli("compare", FINETUNE, longer)
    assert res.code == 0 and re.search(r"horizon \(years\)\s+1\s+3\s+2", res.out)
    assert "warning: the plans cover 1 and 3 years: compare their $/year" in res.err
    assert "warning" not in plan_cli("compare", FINETUNE, FINETUNE).err


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_a_sweep_and_a_compare_of_a_plan_on_a_hosted_api_print(plan_cli, tmp_path, fmt):
    """A fleet row of a hosted API names its provider (sweep summaries dropped it: exit 1 on
    internal-tool.yaml in every format but JSON, and in compare)."""
    out = tmp_path / f"sweep.{fmt}"
    res = plan_cli("sweep", SCENARIOS / "internal-tool.yaml", "--set", "jobs.0.active_fraction=0.1,0.5",
                   "--format", fmt, "-o", out)
    assert res.code == 0, res.err
    assert "API for llama-3.3-70b" in out.read_text()
    res = plan_cli("compare", SCENARIOS / "internal-tool.yaml", SCENARIOS / "bank.yaml")
    assert res.code == 0 and "API for llama-3.3-70b" in res.out, res.err


def test_compare_totals_a_one_year_and_a_multi_year_plan_of_the_same_fleet_alike(tmp_path, plan_cli):
    """The same fleet planned one-year and multi-year (a trend makes it so): the horizon's total is
    the annuitised view's in both (a multi-year plan's total_cost_usd_over_horizon is its cash,
    which leaves out the resale: a finance review saw +$45,631 for the same fleet)."""
    single = tmp_path / "single.yaml"
    single.write_text(FINETUNE.read_text().replace("horizon_years: 1", "horizon_years: 2"))
    years = tmp_path / "years.yaml"
    years.write_text(single.read_text() + "trends: [{accelerator: '*', price_decline_per_year: 0.0}]\n")
    res = plan_cli("compare", single, years, "--format", "json")
    assert res.code == 0, res.err
    result = json.loads(res.out)
    a, b = result["a"]["summary"], result["b"]["summary"]
    assert a["npv_usd"] is None and b["npv_usd"] is not None  # one of each kind
    assert a["annuitised_total_usd"] == pytest.approx(b["annuitised_total_usd"], rel=1e-6, abs=0.02)  # (cents)
    assert "$ over horizon (annuitised)" in plan_cli("compare", single, years).out


def test_the_sweep_fleet_names_the_provider_where_a_system_repeats():
    """'2x b200-x1 on-demand, 1x b200-x1 on-demand' read as a fault of the plan (the new-user review):
    two rows of one system and acquisition name their providers."""
    from planner.app.sweep import fleet_text

    fleet = [{"systems": 2, "system": "b200-x1", "acquisition": "on-demand", "provider": "runpod"},
             {"systems": 1, "system": "b200-x1", "acquisition": "on-demand", "provider": "akash"},
             {"systems": 1, "system": "gh200-x1", "acquisition": "on-demand", "provider": "lambda"}]
    assert fleet_text(fleet) == ("2x b200-x1 (on-demand, runpod), 1x b200-x1 (on-demand, akash), "
                                 "1x gh200-x1 on-demand")
