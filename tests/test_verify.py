"""The independent plan verifier: real plans pass; each kind of impossible plan is caught and named."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest
from conftest import ROOT, SCENARIOS, shipped_plan

from planner.data.consistency import resolve
from planner.data.errors import InfeasibleError
from planner.data.scenario import Budget, Site
from planner.verify.plan import verify


@pytest.fixture(scope="module")
def bank():
    s, plan = shipped_plan("bank.yaml")  # (planned once per run; the tests deep-copy it to forge)
    return s, resolve(s), plan


@pytest.fixture(scope="module")
def tune():
    s, plan = shipped_plan("support-finetune.yaml")
    return s, resolve(s), plan


def failures(plan, s, cat) -> list[str]:
    return verify(plan, s, cat).failures


def test_real_plans_verify(bank, tune):
    for s, cat, plan in (bank, tune):
        result = verify(plan, s, cat)
        assert result.ok, result.summary()
        assert result.passed >= 20
    assert "redundancy" in verify(bank[2], bank[0], bank[1]).families  # bank asks for N+1


def test_more_users_per_replica_than_memory_holds(bank):
    s, cat, plan = bank
    bad = copy.deepcopy(plan)
    bad["jobs"][0]["placements"][0]["users_per_replica"] *= 3
    found = failures(bad, s, cat)
    assert any(f.startswith("[memory]") and "users per replica, memory holds" in f for f in found), found
    assert any(f.startswith("[latency]") and "tok/s per user, target 20" in f for f in found), found


def test_too_few_systems_for_the_replicas(bank):
    s, cat, plan = bank
    s = s.model_copy(update={"policy": s.policy.model_copy(update={"redundancy": "none"})})
    bad = copy.deepcopy(plan)
    f = bad["fleet"][0]
    per = f["accelerators"] // f["systems"]
    f["systems"], f["accelerators"] = 1, per
    for p in bad["jobs"][0]["placements"]:
        p["replicas"] *= 2 * per // max(1, sum(q["replicas"] * q["accelerators_per_replica"]
                                              for q in bad["jobs"][0]["placements"]))
    found = failures(bad, s, cat)
    assert any(x.startswith("[capacity]") and "accelerators at once" in x for x in found), found
    assert any(x.startswith("[costs]") for x in found), found


def test_n_plus_one_needs_a_spare(bank):
    """Drop the idle spare system: every replica still has a place, but none is left for a failure."""
    s, cat, plan = bank
    bad = copy.deepcopy(plan)
    f = bad["fleet"][0]
    per = f["accelerators"] // f["systems"]
    used = sum(p["replicas"] * p["accelerators_per_replica"] for p in bad["jobs"][0]["placements"])
    assert used <= (f["systems"] - 1) * per  # the plan keeps one system free
    f["systems"] -= 1
    f["accelerators"] -= per
    no_spare = s.model_copy(update={"policy": s.policy.model_copy(update={"redundancy": "none"})})
    assert not any(x.startswith(("[capacity]", "[redundancy]")) for x in failures(bad, no_spare, cat))
    found = failures(bad, s, cat)
    assert any(x.startswith("[redundancy]") and "one spare system kept free (N+1)" in x for x in found), found


def test_under_reported_cost(bank):
    s, cat, plan = bank
    bad = copy.deepcopy(plan)
    bad["fleet"][0]["cost_usd_per_year"] *= 0.5
    found = failures(bad, s, cat)
    assert any("costs $" in x and "its systems and use cost" in x for x in found), found
    assert any("fleet costs add to" in x for x in found), found


def test_offer_the_policy_forbids(bank, tune):
    """bank.yaml allows buying only; a rental placement is refused by name."""
    s, cat, _ = bank
    _, _, plan = tune  # an on-demand rental plan
    found = failures(plan, s, cat)
    assert any("acquisition 'on-demand' is not in policy.acquisition" in x for x in found), found


def test_budget_and_power_caps(bank):
    s, cat, plan = bank
    total = plan["total_cost_usd_per_year"]
    tight = s.model_copy(update={"budget": Budget(usd_per_year=total * 0.9)})
    assert any(x.startswith("[budget]") and "exceeds budget.usd_per_year" in x for x in failures(plan, tight, cat))
    kw = sum(f["power_kw"] for f in plan["fleet"])
    small = s.model_copy(update={"site": s.site.model_copy(update={"power_cap_kw": kw / 2})})
    assert any(x.startswith("[power]") and "the site allows" in x for x in failures(plan, small, cat))
    assert isinstance(small.site, Site)


def test_missed_deadline(tune):
    s, cat, plan = tune
    hours = plan["jobs"][0]["placements"][0]["hours_per_run"]
    job = s.jobs[0].model_copy(update={"max_hours_per_run": hours / 2})
    rushed = s.model_copy(update={"jobs": [job]})
    found = failures(plan, rushed, cat)
    assert any(x.startswith("[deadline]") and f"deadline {hours / 2:g} h" in x for x in found), found


def test_tensor_parallel_beyond_the_scaleup_domain(bank):
    s, cat, plan = bank
    bad = copy.deepcopy(plan)
    p = bad["jobs"][0]["placements"][0]
    p["tensor_parallel"] = 64
    p["accelerators_per_replica"] = 64 * p["pipeline_parallel"]
    found = failures(bad, s, cat)
    assert any(x.startswith("[parallelism]") and "exceeds the scale-up domain" in x for x in found), found


def test_unserved_users_outside_max_coverage(bank):
    s, cat, plan = bank
    bad = copy.deepcopy(plan)
    bad["jobs"][0]["placements"] = []
    found = failures(bad, s, cat)
    assert any(x.startswith("[demand]") and "serves 0 users of 200" in x for x in found), found


def test_verifier_is_independent_of_the_optimizer():
    """verify.py imports neither the MILP, the options it was built from, nor the plan reader."""
    tree = ast.parse("\n".join(p.read_text() for p in (ROOT / "planner" / "verify").glob("*.py")))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    for forbidden in ("planner.milp.fleet", "planner.options.build", "planner.milp.readout", "planner.milp.solve", "pulp"):
        assert not any(n == forbidden or n.startswith(forbidden + ".") for n in names), (forbidden, names)


# --- plan verify (the command) ---------------------------------------------------------------------

def test_verify_command(bank, tmp_path, plan_cli):
    _, _, plan = bank
    good = tmp_path / "plan.json"
    good.write_text(json.dumps(plan))
    r = plan_cli("verify", SCENARIOS / "bank.yaml", good)
    assert r.code == 0, r.err
    assert r.out.startswith(f"{good}: verified: ") and "checks passed" in r.out

    bad_plan = copy.deepcopy(plan)
    bad_plan["jobs"][0]["placements"][0]["users_per_replica"] *= 3
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bad_plan))
    r = plan_cli("verify", SCENARIOS / "bank.yaml", bad)
    assert r.code == 5  # the plan file fails verification (1 stays "internal error")
    assert r.err.startswith("error: plan failed verification: ") and "[memory]" in r.err


@pytest.mark.parametrize("content, first", [
    ("name: t\n", "not JSON: Expecting value"),
    ('{"status": "infeasible", "diagnosis": "x"}', "not a plan (status infeasible)"),
    ("[1, 2]", "not a plan: it lacks 'fleet' and 'jobs'"),
])
def test_verify_command_rejects_non_plans(tmp_path, plan_cli, content, first):
    path = tmp_path / "p.json"
    path.write_text(content)
    r = plan_cli("verify", SCENARIOS / "bank.yaml", path)
    assert r.code == 2
    assert first in r.err.splitlines()[0]


def test_pipeline_refuses_to_print_an_unverified_plan(monkeypatch, plan_cli):
    """If the optimizer ever returned an impossible plan, the user gets exit 1 and a bug report,
    never the plan."""
    import planner.app.planning

    real = planner.app.planning.make_plan

    def broken(*args, **kwargs):
        plan = real(*args, **kwargs)
        plan["jobs"][0]["placements"][0]["users_per_replica"] *= 3
        return plan

    monkeypatch.setattr(planner.app.planning, "make_plan", broken)
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json")
    assert r.code == 1
    assert r.out == ""
    assert r.err.startswith("error: plan failed verification") and "This is a bug in the planner" in r.err


def test_every_bundled_scenario_verifies(plan_cli, tmp_path):
    """`plan verify` passes every shipped plan (planned once per session, written as --format json)."""
    for path in sorted(Path(SCENARIOS).glob("*.yaml")):
        try:
            plan = shipped_plan(path.name)[1]
        except InfeasibleError:
            continue
        out = tmp_path / f"{path.stem}.json"
        out.write_text(json.dumps(plan))
        r = plan_cli("verify", path, out)
        assert r.code == 0, (path, r.err)


SPLIT = """
name: split-70b
horizon_years: 3
site: {ownership: colo, cooling: air}
policy: {acquisition: [buy], accelerators: [h100-sxm, h200-sxm]}
jobs:
  - {name: svc, stage: serve, model: llama-3.1-70b, precision: fp8, context_tokens: 8192, concurrent_users: 240,
     min_tokens_per_s_per_user: 20, max_ttft_s: 2, hours_per_day: 12}
"""


def test_users_served_and_unit_costs_count_the_demand_not_the_replicas(tmp_path):
    """Whole replicas hold more users than a job has (here 293 held for 240): the
    placements report the 240 shared out, the unit costs are on those 240; a plan that reports the
    capacity as served fails verification."""
    from planner.app.planning import make_plan
    from planner.data.scenario import load_scenario

    path = tmp_path / "split.yaml"
    path.write_text(SPLIT)
    s = load_scenario(path)
    plan = make_plan(s, explain=False)
    job = plan["jobs"][0]
    placed = job["placements"]
    held = sum(p["replicas"] * p["users_per_replica"] for p in placed)
    assert held > 240
    assert sum(p["users_served"] for p in placed) == 240
    for p in placed:
        assert 0 < p["users_served"] <= p["replicas"] * p["users_per_replica"]
    assert job["unit_cost"]["usd_per_user_per_year"] == pytest.approx(job["cost_usd_per_year"] / 240, abs=0.01)
    cat = resolve(s)
    assert verify(plan, s, cat).ok
    bad = copy.deepcopy(plan)
    for p in bad["jobs"][0]["placements"]:
        p["users_served"] = min(p["replicas"] * p["users_per_replica"], 240)
    assert any(f.startswith("[demand]") and "its own replicas report" in f for f in failures(bad, s, cat))
