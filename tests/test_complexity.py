"""Fleet complexity (issue 13): policy.cost_per_system_type_usd_year prices every distinct system
type a plan uses (a year), so a plan may run a small job on a bigger system it already has rather than
add a second type; the cost is spread over each type's fleet rows, so the rows and the jobs still add up
to the total, and the verifier re-derives it (types x rate), for one year and per year."""

from __future__ import annotations

import copy

import pytest
import yaml

from planner.app.pipeline import plan_scenario
from planner.data.consistency import resolve
from planner.data.notes import listening
from planner.data.scenario import load_scenario
from planner.verify.plan import verify

RATE = 20_000.0


def _doc(rate: float, years: bool = False) -> dict:
    """An 8B chat for 4 users (cheapest alone on one L4) beside a 70B assistant for 32 users (on
    H100s), rented on demand."""
    assistant = {"name": "assistant", "stage": "serve", "model": "llama-3.1-70b", "precision": "fp8",
                 "context_tokens": 8192, "concurrent_users": 32, "min_tokens_per_s_per_user": 20}
    if years:
        assistant["growth_per_year"] = 0.5
    return {"name": "two-types", **({"horizon_years": 2} if years else {}), "site": {"region": "us"},
            "policy": {"acquisition": ["on-demand"], "accelerators": ["l4", "h100-sxm"],
                       "cost_per_system_type_usd_year": rate},
            "jobs": [{"name": "chat", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8",
                      "context_tokens": 4096, "concurrent_users": 4, "min_tokens_per_s_per_user": 20},
                     assistant]}


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    out = {}
    for key, rate, years in (("free", 0.0, False), ("priced", RATE, False), ("years", RATE, True)):
        path = tmp_path_factory.mktemp(key) / "two-types.yaml"
        path.write_text(yaml.safe_dump(_doc(rate, years), sort_keys=False))
        s = load_scenario(path)
        out[key] = (s, plan_scenario(s, explain="none"))
    return out


def _types(fleet) -> set[str]:
    return {f["system"] for f in fleet if f["acquisition"] != "api"}


def test_a_priced_system_type_makes_the_planner_run_both_jobs_on_one_type(plans):
    _, free = plans["free"]
    _, priced = plans["priced"]
    assert _types(free["fleet"]) == {"l4-x1", "h100-sxm-x1"}
    assert "complexity" not in free["cost_breakdown_usd_per_year"]
    assert _types(priced["fleet"]) == {"h100-sxm-x1"}
    chat = next(j for j in priced["jobs"] if j["name"] == "chat")
    assert {p["system"] for p in chat["placements"]} == {"h100-sxm-x1"}
    parts = priced["cost_breakdown_usd_per_year"]
    assert parts["complexity"] == pytest.approx(RATE)
    assert priced["total_cost_usd_per_year"] == pytest.approx(parts["rental"] + RATE, abs=0.02)
    # one type costs more rent than two, less than two types' complexity on top of the cheaper fleet
    assert free["total_cost_usd_per_year"] < priced["total_cost_usd_per_year"]
    assert priced["total_cost_usd_per_year"] < free["total_cost_usd_per_year"] + 2 * RATE
    assert "Fleet complexity: 1 system type (h100-sxm-x1) at $20,000 per type per year" in priced["summary"]


def test_the_complexity_cost_is_spread_so_fleet_rows_and_jobs_add_up(plans):
    _, priced = plans["priced"]
    total = priced["total_cost_usd_per_year"]
    assert sum(f["cost_usd_per_year"] for f in priced["fleet"]) == pytest.approx(total, abs=0.05)
    assert sum(j["cost_usd_per_year"] for j in priced["jobs"]) == pytest.approx(total, abs=0.05)
    _, free = plans["free"]
    assert "Fleet complexity" not in free["summary"]


def _forge_breakdown(plan):
    parts = plan["cost_breakdown_usd_per_year"]
    parts["rental"] += parts.pop("complexity")  # the total still adds up


def _forge_rows(plan):
    """Complexity kept in the breakdown, but taken out of one row and put on another."""
    a, b = plan["fleet"][0], plan["fleet"][-1]
    a["cost_usd_per_year"] -= RATE / 2
    b["cost_usd_per_year"] += RATE / 2


@pytest.mark.parametrize("label,mutate,needle", [
    ("complexity moved into rental", _forge_breakdown, "cost breakdown complexity $0.00; 1 system types"),
    ("complexity halved", lambda p: p["cost_breakdown_usd_per_year"].update(complexity=RATE / 2), "complexity"),
    ("a row's share moved to another row", _forge_rows, "costs $"),
])
def test_a_forged_complexity_cost_is_caught(plans, label, mutate, needle):
    s, priced = plans["priced"]
    assert verify(priced, s, resolve(s)).ok
    forged = copy.deepcopy(priced)
    if label == "a row's share moved to another row" and len(forged["fleet"]) < 2:
        pytest.skip("one fleet row")
    mutate(forged)
    result = verify(forged, s, resolve(s))
    assert not result.ok and any(needle in f for f in result.failures), f"{label}: {result.summary()}"


def test_a_multi_year_plan_prices_each_years_system_types_and_the_verifier_rederives_them(plans):
    s, plan = plans["years"]
    assert [y["complexity_usd"] for y in plan["years"]] == [RATE, RATE]
    for y in plan["years"]:
        assert _types(y["fleet"]) == {"h100-sxm-x1"}
        assert sum(f["cost_usd_per_year"] for f in y["fleet"]) == pytest.approx(y["annuitised_cost_usd"], abs=0.05)
        assert y["opex_usd"] >= RATE
    forged = copy.deepcopy(plan)
    forged["years"][1]["complexity_usd"] = 2 * RATE
    result = verify(forged, s, resolve(s))
    assert any("year 2: complexity $40,000.00; 1 system types" in f for f in result.failures), result.summary()
    from planner.cli.render_years import years_text

    header = next(line for line in years_text(plan).splitlines() if line.lstrip().startswith("year"))
    assert "of which complexity $" in header and "20,000" in years_text(plan)
    assert "complexity" not in years_text(plans_free_years(s, plan))


def plans_free_years(s, plan: dict) -> dict:
    """The same multi-year plan as if the rate were 0 (no complexity_usd in any year)."""
    return {**plan, "years": [{k: v for k, v in y.items() if k != "complexity_usd"} for y in plan["years"]]}


def test_a_priced_rate_raises_no_note_that_it_is_not_priced(plans):
    s, _ = plans["priced"]
    said: list[str] = []
    with listening(said.append):
        resolve(s)
    assert not any("cost_per_system_type_usd_year" in n for n in said), said
