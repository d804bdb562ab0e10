"""The plan contract (planner.data.plan): every shipped scenario's plan validates against Plan and
round-trips exactly; `plan schema --plan` prints its JSON Schema; a key or type off the contract
fails naming the field, and the pipeline turns that into a VerificationError (a planner bug)."""

from __future__ import annotations

import copy
import functools
import json

import pytest
from conftest import SCENARIOS, shipped_plan
from pydantic import ValidationError

from planner.data.errors import InfeasibleError, VerificationError
from planner.data.plan import Plan, SolverStatus, plan_json_schema, validate_plan

SHIPPED = sorted(p.name for p in SCENARIOS.glob("*.yaml"))
INFEASIBLE_BY_DESIGN = {"over-budget.yaml", "power-capped.yaml"}  # exit 3: a diagnosis, not a plan
EXPLANATION_KEYS = ("summary", "explanations", "alternatives", "next_best")


@functools.cache
def _planned(name: str) -> str:
    """The plan's JSON text ("" when infeasible), planned once per test session (conftest)."""
    try:
        return json.dumps(shipped_plan(name)[1], sort_keys=True)
    except InfeasibleError:
        return ""


def planned(name: str) -> dict | None:
    """A fresh copy of the scenario's plan as `--format json` writes it (None when infeasible)."""
    text = _planned(name)
    return json.loads(text) if text else None


def round_trip(d: dict) -> dict:
    return Plan.model_validate(d).model_dump(mode="json", exclude_unset=True)


def test_every_shipped_scenario_is_covered():
    assert len(SHIPPED) >= 10 and INFEASIBLE_BY_DESIGN <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_plan_validates_and_round_trips(name):
    d = planned(name)
    if name in INFEASIBLE_BY_DESIGN:
        assert d is None, f"{name} is infeasible by design but got a plan"
        return
    assert d is not None, f"{name} found no plan"
    plan = validate_plan(d)
    assert isinstance(plan.status, SolverStatus)
    assert json.dumps(round_trip(d), sort_keys=True) == json.dumps(d, sort_keys=True)
    no_timings = {**d, "solver": {k: v for k, v in d["solver"].items() if k != "seconds"}}
    assert json.dumps(round_trip(no_timings), sort_keys=True) == json.dumps(no_timings, sort_keys=True)


def test_an_unexplained_plan_validates():
    """What the sweep's unexplained plans look like: no why, checks or explanation keys."""
    d = planned("bank.yaml")
    for key in EXPLANATION_KEYS:
        d.pop(key, None)
    for job in d["jobs"]:
        job.pop("why"), job.pop("checks")
    assert round_trip(d) == d


def test_schema_cli_prints_the_plan_schema(plan_cli):
    r = plan_cli("schema", "--plan")
    assert r.code == 0, r.err
    schema = json.loads(r.out)
    assert schema == json.loads(json.dumps(plan_json_schema()))
    assert schema["anyOf"] == [{"$ref": "#/$defs/Plan"}, {"$ref": "#/$defs/Infeasible"}]
    plan = schema["$defs"]["Plan"]
    assert {"total_cost_usd_per_year", "fleet", "jobs", "solver"} <= set(plan["properties"])
    assert {"total_cost_usd_per_year", "fleet", "jobs", "solver"} <= set(plan["required"])
    assert schema["$defs"]["SolverStatus"]["enum"] == ["optimal", "feasible"]
    assert "USD per year" in plan["properties"]["total_cost_usd_per_year"]["description"]
    assert set(schema["$defs"]["Infeasible"]["required"]) == {"status", "scenario", "diagnosis", "relax"}
    scenario = plan_cli("schema")
    assert scenario.code == 0 and "jobs" in json.loads(scenario.out)["properties"]
    assert "total_cost_usd_per_year" not in json.loads(scenario.out)["properties"]


def _broken(where: str) -> dict:
    d = planned("bank.yaml")
    if where == "unknown-top":
        d["total_cost_eur"] = 1.0
    elif where == "unknown-placement":
        d["jobs"][0]["placements"][0]["gpus"] = 8
    elif where == "wrong-type":
        d["fleet"][0]["systems"] = "four"
    elif where == "missing":
        del d["solver"]["variables"]
    elif where == "status":
        d["status"] = "infeasible"
    return d


@pytest.mark.parametrize("where,field", [("unknown-top", "total_cost_eur"), ("unknown-placement", "gpus"),
                                         ("wrong-type", "systems"), ("missing", "variables"),
                                         ("status", "status")])
def test_a_plan_off_the_contract_fails_naming_the_field(where, field):
    with pytest.raises(ValidationError) as exc:
        validate_plan(_broken(where))
    assert field in str(exc.value)


def test_the_pipeline_reports_a_broken_contract_as_a_bug(monkeypatch):
    from planner.app import pipeline
    from planner.data.scenario import load_scenario

    class Passed:
        ok = True

    monkeypatch.setattr(pipeline, "verify", lambda *a, **k: Passed())
    monkeypatch.setattr(pipeline, "resolve", lambda *a, **k: None)
    s = load_scenario(SCENARIOS / "bank.yaml")
    good = planned("bank.yaml")
    assert pipeline.checked(copy.deepcopy(good), s) == good  # the same dict back
    with pytest.raises(VerificationError) as exc:
        pipeline.checked(_broken("unknown-placement"), s)
    text = str(exc.value)
    assert "gpus" in text and "This is a bug in the planner" in text and "\n" in text
    assert len(text.splitlines()) == 2


def test_the_infeasible_json_is_in_the_published_schema(plan_cli):
    """Exit 3's JSON (status infeasible, the diagnosis and what to relax) is one of the two shapes
    `plan schema --plan` publishes (the new-user review: a CI job validating the output failed on
    exactly the infeasible case), and no plan: it has no fleet."""
    from pydantic import TypeAdapter

    from planner.data.plan import Infeasible, validate_infeasible

    r = plan_cli(SCENARIOS / "over-budget.yaml", "--format", "json")
    assert r.code == 3
    d = json.loads(r.out)
    got = validate_infeasible(d)
    assert got.status == "infeasible" and got.relax[0].constraint == "budget.usd_per_year"
    assert isinstance(TypeAdapter(Plan | Infeasible).validate_python(d), Infeasible)
    assert isinstance(TypeAdapter(Plan | Infeasible).validate_python(planned("bank.yaml")), Plan)


@pytest.mark.parametrize("fmt,mark", [("markdown", "| budget.usd_per_year | 60,000 | 135,671 |"),
                                      ("html", "<td>budget.usd_per_year</td>"), ("table", "raise budget.usd_per_year")])
def test_an_infeasible_scenario_writes_its_diagnosis_in_every_format(plan_cli, tmp_path, fmt, mark):
    """-o with Markdown or HTML on a scenario with no plan wrote nothing and said nothing (the new-user
    review); it writes the diagnosis, what to relax and by how much, as JSON always did. Exit 3."""
    out = tmp_path / f"report.{fmt}"
    r = plan_cli(SCENARIOS / "over-budget.yaml", "--format", fmt, "-o", out)
    assert r.code == 3 and "infeasible" in r.err
    text = out.read_text()
    assert "No plan for over-budget.yaml: infeasible" in text and mark in text


def test_a_plan_records_what_it_was_made_from(plan_cli, tmp_path):
    """The plan JSON had no planner version and no catalog or scenario digest for an audit trail (the
    scripting review): provenance holds them, the same for the same input, and a scenario changed in
    substance (not in its comments) changes its digest."""
    from planner import __version__

    def made(text: str) -> dict:
        p = tmp_path / "s.yaml"
        p.write_text(text)
        r = plan_cli(p, "--format", "json", "--explain", "none", "--no-timings")
        assert r.code == 0, r.err
        return json.loads(r.out)["provenance"]

    text = (SCENARIOS / "bank.yaml").read_text()
    a, b = made(text), made("# a comment\n" + text)
    assert a == b and a["planner_version"] == __version__ and len(a["catalog_sha256"]) == 64
    assert "calibration_data.csv" in a["calibration"]
    c = made(text.replace("concurrent_users: 200", "concurrent_users: 210"))
    assert c["scenario_sha256"] != a["scenario_sha256"] and c["catalog_sha256"] == a["catalog_sha256"]
