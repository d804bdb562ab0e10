"""The new-user review's findings (a mid-size company's fleet, its finance partner beside it): the
explanations price alternatives as the plan is chosen and say how exact they are, LPs are solved by
an engine whose duals hold, validate and run agree, --vary's '*' skips the items a setting does not
apply to, an --output file's extension picks its format, and a multi-year CSV names its year."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import shipped_plan
from planner.app import montecarlo
from planner.explain.replan import proven_within

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


def test_a_multi_year_plans_next_best_fleet_is_priced_by_npv_and_is_never_cheaper():
    """annual-budget.yaml is chosen by NPV; its next-best fleet was priced by its own accounting
    average, which could call a fleet of higher NPV cheaper ('not the cheapest its model holds')."""
    _, plan = shipped_plan("annual-budget.yaml")
    nb = plan["next_best"]
    assert nb["cost_delta_usd_per_year"] is not None
    assert nb["cost_delta_usd_per_year"] >= -max(1.0, plan["solver"]["gap"] * plan["total_cost_usd_per_year"])
    assert "not the cheapest its model holds" not in plan["summary"]


def test_a_re_plan_stopped_within_its_gap_says_how_low_the_difference_may_go():
    got = {"status": "optimal", "cost": 255_596.0, "bound": 254_065.0}
    words, keys = proven_within(got, 244_995.0)
    assert words == "; within 0.6% of its cheapest, at least +$9,070"
    assert keys == {"cost_delta_at_least_usd_per_year": 9070.0}
    assert proven_within({**got, "bound": 255_595.5}, 244_995.0) == ("", {})  # proven to a dollar: exact
    assert proven_within({"status": "optimal", "cost": 1.0}, 0.0) == ("", {})  # no bound (multi-year)


def test_every_lp_is_solved_by_highs_whose_duals_price_demand_at_or_above_zero():
    """cbcbox's LP of a budget-capped on-prem plan ended 'optimal' 1.5% high with duals of the wrong
    sign (one more user at -$1,441 a year); every LP is HiGHS's now, and no long-run price of a
    shipped plan is negative."""
    from planner.app.planning import prepare
    from planner.explain import prices
    from planner.milp import fleet
    from planner.milp.solve import solve

    s, _ = shipped_plan("bank.yaml")
    cat, opts = prepare(s)
    fm = fleet.build(s, cat, opts, tight=False)
    res = solve(fm, gap=0.0, mip=False)
    assert res.ok and res.solver == "highs"
    assert all(p >= -1e-6 for p in prices.long_run(fm).demand.values())


@pytest.mark.parametrize("budget", ["{years: [{year: 2, usd: 1000}]}",
                                    "{years: [{year: 1, usd: 1000}, {year: 1, usd: 900000}]}"])
def test_validate_and_run_both_refuse_a_budget_year_the_horizon_does_not_hold(plan_cli, tmp_path, budget):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nhorizon_years: 1\nbudget: {budget}\njobs:\n"
                    "- {name: a, stage: serve, model: llama-3.1-8b, concurrent_users: 10}\n")
    for args in (("validate", path), (path, "--quiet")):
        res = plan_cli(*args)
        assert res.code == 2, (args, res.out, res.err)
        assert "budget.years." in res.err and ("beyond horizon_years" in res.err or "two budget entries" in res.err)


def test_a_wildcard_vary_skips_the_jobs_it_does_not_apply_to_and_draws_rates_as_rates(tmp_path):
    """A chat job, a RAG job sized by requests per second and a weekly fine-tune: 'jobs.*.concurrent_users'
    failed on the fine-tune ('unknown setting', and named --set); a rate drawn from normal(0.5, 3) came
    out 0, 2 or 3 (rounded to the file's whole number) and 0 is bad input."""
    path = tmp_path / "s.yaml"
    path.write_text("name: t\njobs:\n"
                    "- {name: chat, stage: serve, model: llama-3.1-8b, concurrent_users: 100}\n"
                    "- {name: rag, stage: serve, model: llama-3.1-8b, requests_per_s: 2}\n"
                    "- {name: tune, stage: finetune, model: llama-3.1-8b, method: lora, dataset_tokens: 1.0e7}\n")
    varied = montecarlo.samples(path, ["jobs.*.concurrent_users=uniform(-30%,+30%)",
                                       "jobs.1.requests_per_s=normal(0.5,3)"], 20)
    assert all(not hasattr(s, "problems") for _, s in varied)  # (a BadVariant carries its problems)
    assert {k for settings, _ in varied for k in settings} == {"sample", "jobs.0.concurrent_users", "jobs.1.requests_per_s"}
    rates = [settings["jobs.1.requests_per_s"] for settings, _ in varied]
    assert all(r > 0 for r in rates) and any(r != round(r) for r in rates)
    assert all(isinstance(settings["jobs.0.concurrent_users"], int) for settings, _ in varied)


def test_an_output_files_extension_picks_its_format(plan_cli, tmp_path):
    out = tmp_path / "plan.json"
    res = plan_cli(SCENARIOS / "bank.yaml", "-o", str(out), "--quiet", "--explain", "none")
    assert res.code == 0, res.err
    plan = json.loads(out.read_text())  # JSON, not the text table
    assert plan["status"] == "optimal"
    md = tmp_path / "plan.md"
    assert plan_cli(SCENARIOS / "bank.yaml", "-o", str(md), "--quiet", "--explain", "none").code == 0
    assert md.read_text().startswith("# Hardware plan")
    txt = tmp_path / "plan.json.txt"
    assert plan_cli(SCENARIOS / "bank.yaml", "-o", str(txt), "-f", "table", "--quiet", "--explain", "none").code == 0
    assert txt.read_text().startswith("Plan for")


def test_a_multi_year_csv_holds_every_years_fleet_and_adds_up_to_the_annuitised_total(plan_cli):
    res = plan_cli(SCENARIOS / "annual-budget.yaml", "-f", "csv", "--quiet", "--explain", "none")
    assert res.code == 0, res.err
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(res.out)))
    assert {r["year"] for r in rows} == {"1", "2", "3"}
    _, plan = shipped_plan("annual-budget.yaml")
    assert sum(float(r["cost_usd_per_year"]) for r in rows) == pytest.approx(plan["annuitised_total_usd"], abs=5)


@pytest.mark.parametrize("value, words", [("context_tokens: 32K", "write 32000 (or 32768, 32 x 1,024)"),
                                          ("concurrent_users: 100k", "write 100000: a plain number")])
def test_a_number_written_with_a_k_gets_the_number_to_write(plan_cli, tmp_path, value, words):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\njobs:\n- {{name: a, stage: serve, model: llama-3.1-8b, concurrent_users: 10, {value}}}\n"
                    .replace("concurrent_users: 10, concurrent_users", "concurrent_users"))
    res = plan_cli("validate", path)
    assert res.code == 2 and words in res.err, res.err


def test_a_scenario_without_jobs_says_how_to_add_one(plan_cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: t\njobs: []\n")
    res = plan_cli("validate", path)
    assert res.code == 2 and "jobs: no jobs" in res.err and "add at least one job" in res.err, res.err


def test_a_multi_year_html_report_says_what_its_money_views_mean_and_which_years_fleet_it_lists():
    """The report review: the HTML showed the final year's fleet without saying so, and never said
    what the NPV is; tables scroll inside their own box on a phone, and the why-not table's dollars
    are whole, as the text's."""
    from planner.cli.html import plan_html

    _, plan = shipped_plan("annual-budget.yaml")
    page = plan_html(plan)
    assert "Fleet and jobs below are the final year&#x27;s." in page and "the cash discounted at" in page
    assert "What to buy or rent (year 3&#x27;s fleet; the year table shows each year&#x27;s)" in page
    assert '<div class="scroll"><table>' in page and ".scroll{overflow-x:auto" in page
    _, bank = shipped_plan("bank.yaml")
    cells = [a["cost_delta_usd_per_year"] for a in bank["alternatives"] if a["cost_delta_usd_per_year"] is not None]
    assert cells and all(f">{round(c):,}<" in plan_html(bank) or f">{int(c):,}<" in plan_html(bank) for c in cells)


def test_compare_writes_its_caveat_into_the_report_it_saves(plan_cli, tmp_path):
    out = tmp_path / "cmp.md"
    res = plan_cli("compare", SCENARIOS / "bank.yaml", SCENARIOS / "mixed.yaml", "-o", str(out), "--time-limit", "30")
    assert res.code == 0, res.err
    text = out.read_text()
    assert text.startswith("|") and "Note: the plans cover 3 and 1 years" in text


def test_an_infeasible_edge_job_is_written_in_every_format_asked(plan_cli, tmp_path):
    """The second review: no device under a robot's 100 W limit; text and JSON said so (exit 3), while
    markdown, CSV and HTML ended in an internal error (a diagnosis row without a unit)."""
    path = tmp_path / "robots.yaml"
    path.write_text("name: robots\nsite: {kind: office, ownership: on-prem}\npolicy: {acquisition: [buy]}\njobs:\n"
                    "- {name: r, stage: edge, model: llama-3.2-3b, precision: int4, devices: 10, device: robot,"
                    " min_tokens_per_s: 20, max_power_w: 100}\n")
    for fmt in ("markdown", "csv", "html"):
        out = tmp_path / f"r.{fmt}"
        res = plan_cli(path, "-f", fmt, "-o", str(out), "--quiet")
        assert res.code == 3, (fmt, res.err)
        assert "100 W" in out.read_text() or fmt == "csv", fmt


def test_the_why_not_chart_keeps_near_alternatives_visible_and_marks_bounds():
    """The report review: on a linear scale one alternative at +$12.7M shrank the seven nearest
    (+$36k to +$115k) to slivers, and LP bounds looked like re-planned figures."""
    from planner.cli import svg

    items = [("a", 36_000.0), ("b", 40_000.0), ("c", 115_000.0), ("far", 12_700_000.0)]
    chart = svg.hbar(items, "t", faint={"a", "far"}, clip=2 * 115_000.0, fmt=lambda v: "+" + svg.money(v))
    widths = [float(w) for w in __import__("re").findall(r'<rect class="bar" x="[\d.]+" y="[\d.]+" width="([\d.]+)"', chart)]
    assert widths[2] > 0.45 * widths[3] and widths[0] > 0.1 * widths[3]  # the near ones are not slivers
    assert chart.count('fill-opacity="0.4"') == 2 and "&gt;= +$12.7M" in chart and 'stroke="#fff"' in chart


def test_a_sweeps_chart_names_no_fleet_for_variants_without_a_plan(plan_cli, tmp_path):
    """The report review: the legend showed 'no plan' with a swatch but no marker, and the count of
    distinct fleets included it."""
    out = tmp_path / "sweep.html"
    res = plan_cli("sweep", SCENARIOS / "over-budget.yaml", "--set", "budget.usd_per_year=60000,200000",
                   "-o", str(out), "--quiet")
    assert res.code == 0, res.err
    page = out.read_text()
    assert "1 distinct fleet(s); 1 without a plan" in page
    legend = page.split("Fleets (marker colour)", 1)[1].split("</ul>", 1)[0]
    assert "no plan" not in legend and "h200-nvl-x4" in legend


def test_a_unit_cost_of_owned_and_bought_systems_names_each_cost_once():
    from planner.explain.three_checks import _included

    job = {"placements": [{"acquisition": "buy", "provider": "owned"}, {"acquisition": "buy", "provider": "oem"},
                          {"acquisition": "on-demand", "provider": "lambda"}]}
    said = _included(job)
    assert said == (" at the planned batch, power and hosting (capital for the systems bought) and the "
                    "rental prices included")
    assert "hosting and power and hosting" not in said


def test_inferentia_is_never_offered_for_training(plan_cli, tmp_path):
    """The second review: a 70B fine-tune's why-not listed '8x inferentia2-x12' at +$3,822; AWS Neuron
    trains on Trainium, Inferentia2 serves."""
    path = tmp_path / "ft.yaml"
    path.write_text("name: t\nsite: {ownership: cloud}\npolicy: {acquisition: [on-demand]}\njobs:\n"
                    "- {name: ft, stage: finetune, model: llama-3.1-8b, method: lora, dataset_tokens: 1.0e8,"
                    " max_hours_per_run: 48}\n")
    res = plan_cli(path, "--format", "json", "--quiet", "--explain", "brief")
    assert res.code == 0, res.err
    (row,) = [a for a in json.loads(res.out)["alternatives"] if a["accelerator"] == "inferentia2"]
    assert row["status"] == "infeasible" and "Inferentia runs inference" in row["reason"]


def test_the_decision_names_each_acquisition_mode_once():
    """The report review: "Rent on demand 1x h200-sxm-x1 (...); Rent on demand 1x b200-x8 (...)"."""
    from planner.data.fleet_words import fleet_clauses

    row = {"accelerators": 8, "accelerator": "b200", "system": "b200-x8", "systems": 1}
    fleet = [{**row, "acquisition": "buy", "provider": "oem"}, {**row, "acquisition": "on-demand", "provider": "a"},
             {**row, "acquisition": "on-demand", "provider": "b", "systems": 2, "accelerators": 16}]
    assert fleet_clauses(fleet) == ["Buy 1x b200-x8 (8 b200, oem)",
                                    "Rent on demand 1x b200-x8 (8 b200, a) and 2x b200-x8 (16 b200, b)"]
