"""Hardware a company already holds (the scenario's `owned`): the new-user review found no way to say
so (a $0 purchase price was refused; $1 made the plan say 'Buy ... ($1 up front)')."""

from __future__ import annotations

import json

from conftest import planned_json

SCENARIO = """name: existing-fleet
site: {ownership: on-prem, cooling: air}
policy: {acquisition: [on-demand], stacks: [cuda]}
owned:
  - {system: H100-SXM-x8, count: 2}
jobs:
  - {name: chat, stage: serve, model: llama-3.1-70b, precision: fp8, concurrent_users: 200,
     min_tokens_per_s_per_user: 20}
  - {name: tune, stage: finetune, model: llama-3.1-8b, method: lora, dataset_tokens: 2e8, runs_per_year: 12}
"""


def test_owned_systems_are_used_at_no_capital_and_said_so(plan_cli, tmp_path):
    """Two owned 8x H100 servers under an on-demand-only policy: the plan keeps what it needs at no
    capital (power, hosting and operations paid), says so in words, names the one it leaves idle,
    and the verifier passes it."""
    path = tmp_path / "own.yaml"
    plan = planned_json(plan_cli, path, SCENARIO)
    held = [f for f in plan["fleet"] if f["provider"] == "owned"]
    assert held and held[0]["system"] == "h100-sxm-x8" and 1 <= held[0]["systems"] <= 2
    assert plan["cost_breakdown_usd_per_year"].get("capital", 0.0) == 0.0
    assert held[0]["purchase_usd"] in (0, 0.0, None)
    r = plan_cli(path, "--explain", "brief")
    assert r.code == 0 and "Keep " in r.out and "you own" in r.out and "Buy " not in r.out
    full = plan_cli(path, "--explain", "none").out
    assert any(line.split()[3:5] == ["owned", "owned"] for line in full.splitlines() if "h100-sxm-x8" in line)
    if held[0]["systems"] < 2:
        assert "Of the systems you own, 1x h100-sxm-x8 is not needed" in " ".join(r.out.split())
    out = tmp_path / "plan.json"
    out.write_text(json.dumps(plan))
    assert plan_cli("verify", path, out).code == 0


def test_owned_systems_are_never_more_than_held(plan_cli, tmp_path):
    """A job larger than the owned servers rents or buys the rest: the owned offer never holds more
    systems than the scenario lists."""
    text = SCENARIO.replace("concurrent_users: 200", "concurrent_users: 2000")
    plan = planned_json(plan_cli, tmp_path / "big.yaml", text)
    held = sum(f["systems"] for f in plan["fleet"] if f["provider"] == "owned")
    assert held <= 2 and len(plan["fleet"]) > 1


def test_an_unknown_owned_system_is_exit_2_with_a_suggestion(plan_cli, tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text(SCENARIO.replace("H100-SXM-x8", "h100-sxm-x9"))
    r = plan_cli("validate", p)
    assert r.code == 2 and "owned.0.system" in r.err and "h100-sxm-x8" in r.err


def test_owned_systems_are_there_from_year_one_whatever_the_trends(plan_cli, tmp_path):
    """A trend that makes every accelerator available from year 2 does not hold back the systems you
    already own: they serve from year 1, and none more of them appear later."""
    text = ("name: owned-trend\nhorizon_years: 3\nsite: {ownership: on-prem, cooling: air}\n"
            "policy: {acquisition: [buy, on-demand], stacks: [cuda]}\nowned:\n  - {system: h100-sxm-x8, count: 1}\n"
            "trends: [{accelerator: '*', price_decline_per_year: 0.2, available_from_year: 2}]\n"
            "jobs:\n  - {name: chat, stage: serve, model: llama-3.1-70b, precision: fp8, concurrent_users: 100,"
            " min_tokens_per_s_per_user: 20}\n")
    plan = planned_json(plan_cli, tmp_path / "t.yaml", text)
    first = plan["years"][0]
    assert any(p["offer"] == "h100-sxm-x8-owned" for p in first["purchases"])
    assert not any(p["offer"] == "h100-sxm-x8-owned" for y in plan["years"][1:] for p in y["purchases"])


NPLUS1 = """name: hospital
site: {ownership: on-prem, cooling: air}
owned:
  - {system: h100-sxm-x8, count: 1}
policy: {acquisition: [buy], providers: [secondary-market], stacks: [cuda], redundancy: n+1}
jobs:
  - {name: notes, stage: serve, model: llama-3.1-70b, precision: fp8, context_tokens: 8192, input_tokens: 3000,
     output_tokens: 400, concurrent_users: 350, min_tokens_per_s_per_user: 20}
"""


def test_owned_beside_bought_reads_as_owned_in_every_view(plan_cli, tmp_path):
    """The N+1 review: validate's summary left the owned server out; its JSON row looked like a purchase
    sold after the horizon; its price row said its 'upper bound' allows no more; 'Buy' stood
    capitalised after a semicolon."""
    path = tmp_path / "h.yaml"
    path.write_text(NPLUS1)
    v = plan_cli("validate", path)
    assert v.code == 0 and "systems you own there: 1x h100-sxm-x8" in v.out
    plan = planned_json(plan_cli, path, NPLUS1)
    owned = [f for f in plan["fleet"] if f.get("owned")]
    assert [f["offer"] for f in owned] == ["h100-sxm-x8-owned"] and "sold_after_years" not in owned[0]
    assert all(not f.get("owned") for f in plan["fleet"] if f["provider"] != "owned")
    out = " ".join(plan_cli(path, "--explain", "full").out.split())
    decision = out.split("Plan for", 1)[1].split(" per year all-in", 1)[0]
    assert "you own 1 (the scenario's owned)" in out and ("; buy " in decision or "; keep " in decision)
    assert "; Buy" not in decision and "; Keep" not in decision


def test_an_owned_server_left_idle_under_n_plus_1_says_why(plan_cli, tmp_path):
    """The N+1 review's clinic: one owned 8x H100 node, rent only, N+1. 'Not needed' read as if the node
    could not do the work; it cannot serve alone because its pool's spare would be a second node."""
    text = NPLUS1.replace("acquisition: [buy], providers: [secondary-market]", "acquisition: [on-demand]").replace(
        "concurrent_users: 350", "concurrent_users: 150")
    path = tmp_path / "clinic.yaml"
    path.write_text(text)
    r = plan_cli(path, "--explain", "none")
    assert r.code == 0, r.err
    out = " ".join(r.out.split())
    assert "1x h100-sxm-x8 is not needed" in out
    assert "under N+1 a system serves only beside an idle one of its type at your site, and the policy buys none" in out


def test_a_cloud_shape_listed_as_owned_is_exit_2(plan_cli, tmp_path):
    """The N+1 review owned 4x h100-sxm-x1 (one GPU of a cloud's 8-GPU host) without a word."""
    p = tmp_path / "cloud.yaml"
    p.write_text(SCENARIO.replace("H100-SXM-x8", "h100-sxm-x1"))
    r = plan_cli("validate", p)
    assert r.code == 2 and "owned.0.system" in r.err and "a cloud-instance" in r.err and "reserved-1y" in r.err


def test_the_brief_says_you_own_it(plan_cli, tmp_path):
    """The final review: --brief listed an owned server as 'buy from owned'."""
    path = tmp_path / "h.yaml"
    path.write_text(NPLUS1)
    r = plan_cli(path, "--brief")
    assert r.code == 0 and "1x h100-sxm-x8 (8 x h100-sxm), you own:" in r.out and "buy from owned" not in r.out
