"""Multi-year plans: yearly budgets hold, timing follows prices, max-coverage serves priority first."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from conftest import SCENARIOS, shipped_plan

TIMING = """
name: timing
horizon_years: 3
site: {ownership: on-prem}
policy: {acquisition: [buy, on-demand], providers: [thinkmate, hyperstack], accelerators: [h100-sxm]}
prices:
  - {offer: h100-sxm-x8-buy-thinkmate, purchase_usd: 300000, useful_life_years: 5}
  - {offer: h100-sxm-x8-on-demand-hyperstack, price_usd_per_hour: 20}
trends:
  - {accelerator: '*', price_decline_per_year: DECLINE}
jobs:
  - {name: assistant, stage: serve, model: llama-3.1-8b, concurrent_users: 100, min_tokens_per_s_per_user: 20}
"""

COVERAGE = """
name: coverage
horizon_years: 2
policy: {acquisition: [on-demand], accelerators: [h100-sxm, l40s]}
budget: {mode: max-coverage, usd_per_year: 100000}
jobs:
  - {name: vip, stage: serve, model: llama-3.1-8b, concurrent_users: 400, min_tokens_per_s_per_user: 20,
     priority: 5, growth_per_year: 0.5}
  - {name: bulk, stage: serve, model: llama-3.1-8b, concurrent_users: 400, min_tokens_per_s_per_user: 20,
     priority: 1, growth_per_year: 0.5}
"""


def _plan_json(plan_cli, path, explain: str = "none"):
    res = plan_cli(path, "--format", "json", "--explain", explain)  # (explanations only where a test reads them)
    assert res.code == 0, res.err
    return json.loads(res.out)


@pytest.fixture(scope="module")
def annual():
    return shipped_plan("annual-budget.yaml")[1]  # (planned once per run, shared by the workers)


def test_annual_budget_plans_each_year_within_its_budget(annual):
    s = yaml.safe_load((SCENARIOS / "annual-budget.yaml").read_text())
    cap = s["budget"]["usd_per_year"]
    assert annual["status"] == "optimal"
    assert [y["year"] for y in annual["years"]] == [1, 2, 3]
    for y in annual["years"]:
        assert y["budget_usd"] == cap
        assert y["cost_usd"] == pytest.approx(y["capex_usd"] + y["opex_usd"], abs=0.02)
        assert y["cost_usd"] <= cap + 0.01, y
        assert y["fleet"], f"year {y['year']} has no fleet"
        assert y["unserved"] == {}
    # demand grows 50% a year: 200, 300, 450 users
    assert [y["demand"]["assistant"] for y in annual["years"]] == [200, 300, 450]
    assert annual["cash_total_usd"] == pytest.approx(sum(y["cost_usd"] for y in annual["years"]), abs=0.05)
    assert annual["npv_usd"] < annual["cash_total_usd"]  # discounted, resale credited
    # bought systems persist: a system bought in year 1 is still held in year 3
    bought = {p["offer"] for p in annual["years"][0]["purchases"] if p["acquisition"] == "buy"}
    held_3 = {f["offer"] for f in annual["years"][2]["fleet"]}
    assert bought <= held_3


def test_yearly_budget_row_measures_the_peak_years_cash(annual, tmp_path, plan_cli):
    """A multi-year budget caps each year's cash: its row reads the year nearest its cap against
    that year's cap, and where it binds, the price is the saving per dollar the cheapest fleet
    without it spends above the cap (not a figure divided by a near-zero difference); a year with a
    cap of its own (budget.years) is read against that one."""
    near = min(annual["years"], key=lambda y: y["budget_usd"] - y["cost_usd"])
    row = next(r for r in annual["explanations"] if r["constraint"] == "budget.usd_per_year")
    assert not row["binding"]
    assert (f"uses ${near['cost_usd']:,.0f} in year {near['year']}, the year nearest its cap, of "
            f"${near['budget_usd']:,.0f} (${near['budget_usd'] - near['cost_usd']:,.0f} headroom)") in row["message"]
    s = yaml.safe_load((SCENARIOS / "annual-budget.yaml").read_text())
    s["budget"]["usd_per_year"] = 150000
    path = tmp_path / "tight.yaml"
    path.write_text(yaml.safe_dump(s))
    res = plan_cli(path, "--format", "json")
    assert res.code == 0, res.err
    plan = json.loads(res.out)
    row = next(r for r in plan["explanations"] if r["constraint"] == "budget.usd_per_year")
    assert row["binding"], row
    m = re.search(r"spends \$([\d,]+) in year (\d), and costs (?:at least )?\$([\d,]+)/yr less", row["message"])
    assert m, row["message"]
    spend, saving = (float(m.group(k).replace(",", "")) for k in (1, 3))
    assert spend > 150000
    assert row["shadow_price"] == pytest.approx(-saving / (spend - 150000), rel=1e-3)
    assert -10 < row["shadow_price"] < 0
    s["budget"]["usd_per_year"] = 170000  # year 2 capped at $62,000, $400 above its cash
    s["budget"]["years"] = [{"year": 2, "usd": 62000}]
    path.write_text(yaml.safe_dump(s))
    res = plan_cli(path, "--format", "json", "--explain", "full")
    assert res.code == 0, res.err
    plan = json.loads(res.out)
    year2 = plan["years"][1]
    row = next(r for r in plan["explanations"] if r["constraint"] == "budget.usd_per_year")
    assert year2["budget_usd"] == 62000 and not row["binding"]
    assert f"uses ${year2['cost_usd']:,.0f} in year 2, the year nearest its cap, of $62,000" in row["message"], row


def test_annual_budget_text_shows_the_year_table(plan_cli):
    res = plan_cli(SCENARIOS / "annual-budget.yaml")
    assert res.code == 0, res.err
    assert "Year by year (cash view" in res.out and "Purchases and reservations" in res.out
    assert "NPV $" in res.out


def test_steep_price_decline_buys_later(tmp_path, plan_cli):
    """One 8-GPU system serves the job: buy it for $300k (5-year life) or rent it for $20/h.
    With flat prices buying in year 1 wins; when prices fall 60% a year, renting first wins."""
    plans = {}
    for decline in (0.0, 0.6):
        path = tmp_path / f"timing-{decline}.yaml"
        path.write_text(TIMING.replace("DECLINE", str(decline)))
        plans[decline] = _plan_json(plan_cli, path)

    def first_purchase_year(plan):
        years = [y["year"] for y in plan["years"] for p in y["purchases"] if p["acquisition"] == "buy"]
        return min(years) if years else plan["horizon_years"] + 1

    flat, steep = plans[0.0], plans[0.6]
    assert flat["years"][0]["capex_usd"] == pytest.approx(300000)
    assert steep["years"][0]["capex_usd"] == 0
    assert first_purchase_year(steep) > first_purchase_year(flat) == 1
    assert steep["years"][0]["fleet"][0]["acquisition"] == "on-demand"
    # by hand: rent 8760 h x $20, then x 0.4 and x 0.16, discounted at 8% a year
    rent = 8760 * 20 * (1 + 0.4 / 1.08 + 0.16 / 1.08 ** 2)
    assert steep["npv_usd"] == pytest.approx(rent, rel=1e-6)
    # flat: $300k now, running costs each year, the market's residual back after 3 of 5 years (what
    # a one-year plan of 3 years credits: 0.61 realised x 0.72^3 kept, economics.md s3)
    opex = flat["years"][0]["opex_usd"]
    npv = 300000 + opex * (1 + 1 / 1.08 + 1 / 1.08 ** 2) - 0.61 * 0.72 ** 3 * 300000 / 1.08 ** 3
    assert flat["npv_usd"] == pytest.approx(npv, rel=1e-6)


def test_max_coverage_serves_the_higher_priority_job_first(tmp_path, plan_cli):
    path = tmp_path / "coverage.yaml"
    path.write_text(COVERAGE)
    plan = _plan_json(plan_cli, path)
    assert plan["mode"] == "max-coverage"
    for y in plan["years"]:
        assert y["cost_usd"] <= 100000 + 0.01
        assert "vip" not in y["unserved"], y["unserved"]
        bulk = y["unserved"]["bulk"]
        need = y["demand"]["bulk"]
        assert 0 < bulk["users"] <= need
        assert bulk["share"] == pytest.approx(bulk["users"] / need, abs=1e-3)
        assert bulk["tokens_per_s"] == pytest.approx(bulk["users"] * 20, rel=1e-6)
    # demand grows 50% in year 2 on the same budget: more is left unserved
    assert plan["years"][1]["unserved"]["bulk"]["users"] > plan["years"][0]["unserved"]["bulk"]["users"]
    jobs = {j["name"]: j for j in plan["jobs"]}
    assert jobs["vip"]["unserved"] == {} and jobs["bulk"]["unserved"]["bulk"]["users"] > 0
    res = plan_cli(path)
    assert "bulk:" in res.out and "users (" in res.out


def test_min_cost_below_need_is_infeasible_with_the_year_to_relax(tmp_path, plan_cli):
    path = tmp_path / "short.yaml"
    path.write_text(COVERAGE.replace("mode: max-coverage, ", ""))
    res = plan_cli(path)
    assert res.code == 3
    # one cap for both years: the smallest raise of it that fits the tightest year (year 2, demand +50%),
    # not a shortfall per year whose sum a user would add up (the finance review: 127,869 asked where
    # 119,611 did)
    assert "budget short by $" in res.err and "in year 2, its tightest" in res.err and "budget.usd_per_year" in res.err
    suggested = float(res.err.split(" to $")[1].split(" ")[0].rstrip(",").replace(",", ""))  # "$177,566,"
    path.write_text(COVERAGE.replace("mode: max-coverage, ", "").replace("usd_per_year: 100000", f"usd_per_year: {suggested:.0f}"))
    assert plan_cli(path, "--explain", "none").code == 0


def test_per_year_settings_are_checked_against_the_horizon(tmp_path, plan_cli):
    text = COVERAGE.replace("growth_per_year: 0.5}", "demand_multipliers: [1.0]}", 1)
    text = text.replace("usd_per_year: 100000}", "usd_per_year: 100000, years: [{year: 4, usd: 5}]}")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    res = plan_cli(path)
    assert res.code == 2
    assert "jobs.0.demand_multipliers" in res.err and "1 value(s) for 2 years" in res.err
    assert "budget.years.0.year" in res.err and "beyond horizon_years" in res.err


def test_a_year_budget_entry_overrides_the_yearly_cap(tmp_path, plan_cli):
    text = COVERAGE.replace("usd_per_year: 100000}", "usd_per_year: 100000, years: [{year: 2, usd: 150000}]}")
    path = tmp_path / "raise.yaml"
    path.write_text(text)
    plan = _plan_json(plan_cli, path)
    assert [y["budget_usd"] for y in plan["years"]] == [100000, 150000]
    assert plan["years"][1]["cost_usd"] > 100000  # the raised cap is used
    assert plan["years"][1]["cost_usd"] <= 150000 + 0.01


def test_multi_year_placements_say_why_and_what_to_run(annual):
    """Every final-year placement names its binding resource with numbers, and each job carries
    the seeds' three checks, as single-period plans do."""
    for job in annual["jobs"]:
        assert len(job["why"]) == len(job["placements"]) > 0
        for p, why in zip(job["placements"], job["why"]):
            assert p["binding"] in why and p["accelerator"] in why
        assert {"regime", "run_it", "unit_cost"} <= set(job["checks"])
    assert annual["summary"].startswith("Buy ")


WIDE_COVERAGE = """
name: coverage-wide
horizon_years: 2
policy: {acquisition: [on-demand], stacks: [cuda]}
budget: {mode: max-coverage, usd_per_year: 60000}
jobs:
  - {name: vip, stage: serve, model: llama-3.1-8b, concurrent_users: 400, min_tokens_per_s_per_user: 20, priority: 5GROWTH}
  - {name: bulk, stage: serve, model: llama-3.1-70b, precision: fp8, concurrent_users: 400,
     min_tokens_per_s_per_user: 20, priority: 1}
"""


@pytest.mark.parametrize("growth", ["", ", growth_per_year: 0.5"], ids=["one-year", "years"])
def test_max_coverage_why_not_never_prices_the_coverage_weight(tmp_path, plan_cli, growth):
    """In max-coverage the objective prices unserved demand far above any cost: an LP bound on it
    is no bound on a plan's cost. The why-not rows it answers say whether every plan on the
    accelerator is worse, with no dollar figure; the re-planned ones carry their plan's real cost."""
    path = tmp_path / "coverage.yaml"
    path.write_text(WIDE_COVERAGE.replace("GROWTH", growth))
    plan = _plan_json(plan_cli, path, "full")
    assert bool(plan.get("years")) == bool(growth)
    assert any(j["unserved"] for j in plan["jobs"])  # the budget leaves some demand unserved
    by_basis = {}
    for a in plan["alternatives"]:
        by_basis.setdefault(a["basis"], []).append(a)
    assert by_basis.get("lp-bound") and by_basis.get("milp")
    for a in by_basis["lp-bound"]:
        assert a["cost_delta_usd_per_year"] is None and "$" not in a["reason"], a
        assert "coverage-first objective" in a["reason"] or "does not rule out" in a["reason"], a
    for a in by_basis["milp"]:
        assert abs(a["cost_delta_usd_per_year"]) < 60000, a


def test_one_fleet_costs_the_same_a_year_planned_for_one_year_or_by_year():
    """bank.yaml planned as one year, and by year (a growth of 0.01% a year makes it a multi-year
    plan with the same fleet): the same systems cost the same a year in both, resale at the horizon
    read from the same market curve (the accounting view: the purchase less its discounted resale,
    annuitised over the years held)."""
    from planner.app.planning import make_plan
    from planner.data.scenario import load_scenario

    one = make_plan(load_scenario(SCENARIOS / "bank.yaml"), explain=False)
    s = load_scenario(SCENARIOS / "bank.yaml")
    s = s.model_copy(update={"jobs": [j.model_copy(update={"growth_per_year": 0.0001}) for j in s.jobs]})
    years = make_plan(s, explain=False)
    assert years.get("years") and not one.get("years")
    fleet = lambda p: sorted((f["offer"], f["systems"]) for f in p["fleet"])  # noqa: E731
    assert fleet(one) == fleet(years)
    assert years["total_cost_usd_per_year"] == pytest.approx(one["total_cost_usd_per_year"], rel=1e-4)


def test_summary_says_when_purchases_are_paid(annual):
    """A multi-year plan's summary gives the yearly average and each year's purchases, not one
    'up front' figure summing purchases made years apart."""
    paid = [y for y in annual["years"] if y["capex_usd"] > 0]
    assert len(paid) >= 2  # (annual-budget buys in two years)
    assert "up front" not in annual["summary"]
    assert "on average over 3 years (the fleet named is year 3's; purchases paid " in annual["summary"]
    for y in paid:
        assert f"${y['capex_usd']:,.0f} in year {y['year']}" in annual["summary"]


def test_a_diagnosis_the_time_limit_cut_says_its_amounts_are_not_the_least(tmp_path, plan_cli):
    """annual-budget.yaml over 7 years cannot be met; its diagnosis (an elastic MILP) needs far more
    than 3 s. Cut by --time-limit 3, it still says what relaxing admits a plan, and that smaller
    amounts may too (text and JSON), not as if they were the least."""
    s = yaml.safe_load((SCENARIOS / "annual-budget.yaml").read_text())
    s["horizon_years"] = 7
    path = tmp_path / "seven.yaml"
    path.write_text(yaml.safe_dump(s))
    res = plan_cli(path, "--format", "json", "--time-limit", "3")
    assert res.code == 3, res.err
    out = json.loads(res.out)
    assert out["cut_short"] and "proved its amounts the least" in out["cut_short"][0]
    assert "the time limit stopped the diagnosis before it proved these amounts the least" in out["diagnosis"]
    assert out["relax"] and all(r["family"] == "budget" for r in out["relax"])


def test_the_headline_names_contracts_that_end_before_the_final_year(plan_cli, tmp_path):
    """The finance review: years 1-3 on a 3-year AWS reservation and year 4 on demand at Lambda; the
    headline, built from the final year's fleet, named the Lambda rental alone."""
    path = tmp_path / "s.yaml"
    path.write_text("name: r\nhorizon_years: 4\nsite: {ownership: cloud}\n"
                    "policy: {acquisition: [on-demand, reserved-1y, reserved-3y], accelerators: [h100-sxm], "
                    "providers: [aws, lambda]}\n"
                    "trends: [{accelerator: '*', price_decline_per_year: 0.15}]\n"
                    "jobs: [{name: chat, stage: serve, model: llama-3.1-70b, precision: fp8, context_tokens: 8192,\n"
                    "        concurrent_users: 480, min_tokens_per_s_per_user: 20, max_ttft_s: 2}]\n")
    res = plan_cli(path, "--format", "json", "--explain", "none", "--quiet")
    assert res.code == 0, res.err
    plan = json.loads(res.out)
    signed = [(y["year"], p["acquisition"]) for y in plan["years"] for p in y["purchases"]]
    final = {f["offer"] for f in plan["fleet"]}
    gone = [p for y in plan["years"] for p in y["purchases"] if p["offer"] not in final]
    assert gone, signed  # (the scenario's point: a contract that ends before the last year)
    assert "Signed before the final year and ended by it: year 1: reserve for 3 years" in plan["summary"]


def test_systems_already_owned_are_not_listed_as_purchases(plan_cli, tmp_path):
    # the finance review: owned systems read as year-1 purchases at $0 ('buy (+2)') in the year table
    path = tmp_path / "o.yaml"
    path.write_text("name: o\nhorizon_years: 2\nsite: {ownership: on-prem, cooling: air}\n"
                    "policy: {acquisition: [buy, on-demand], stacks: [cuda]}\n"
                    "owned: [{system: h100-sxm-x8, count: 2}]\n"
                    "jobs: [{name: a, stage: serve, model: llama-3.1-70b, precision: fp8, context_tokens: 8192,\n"
                    "        concurrent_users: 400, growth_per_year: 0.4, min_tokens_per_s_per_user: 20}]\n")
    res = plan_cli(path, "--explain", "none", "--quiet")
    assert res.code == 0, res.err
    assert "2x h100-sxm-x8 owned" in res.out and "h100-sxm-x8 buy (+2)" not in res.out
    assert not any(line.split()[1:3] == ["h100-sxm", "buy"] for line in res.out.splitlines() if len(line.split()) > 3)
    buys = res.out.split("Purchases and reservations", 1)[1].split("\n\n", 1)[0]
    assert "h100-sxm-x8  " not in buys and "owned" not in buys
