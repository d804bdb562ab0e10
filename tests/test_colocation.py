"""An RL job's trainer and rollouts at one site on one software stack (colocate, default true): the
plan keeps them together, says where, the verifier checks it, and a policy that leaves no shared
site is diagnosed with the fix."""

from __future__ import annotations

import json

from planner.data.catalog import load_catalog
from planner.data.colocation import place_of

RL = """name: rl
site: {{kind: datacenter}}
policy: {{acquisition: [on-demand]{policy}}}
jobs:
  - name: grpo
    stage: rl
    model: qwen3-8b
    method: full
    rollout_tokens_per_s: 20000
    rollout_context_tokens: 8192
    train_tokens_per_day: 2.0e+9
{extra}"""


def _write(tmp_path, name: str, policy: str = "", extra: str = ""):
    path = tmp_path / name
    path.write_text(RL.format(policy=policy, extra=extra))
    return path


def _places(plan: dict) -> set:
    cat = load_catalog()
    out = set()
    for p in plan["jobs"][0]["placements"]:
        o = cat.offers[p["offer"]]
        out.add(place_of(o, cat.accelerators[cat.systems[o.system].accelerator].stack))
    return out


def test_trainer_and_rollouts_run_at_one_site_on_one_stack_unless_told_otherwise(plan_cli, tmp_path):
    together = plan_cli(_write(tmp_path, "co.yaml"), "--format", "json", "--explain", "none", "--quiet")
    apart = plan_cli(_write(tmp_path, "apart.yaml", extra="    colocate: false\n"), "--format", "json",
                     "--explain", "none", "--quiet")
    assert together.code == 0 and apart.code == 0, together.err + apart.err
    t, a = json.loads(together.out), json.loads(apart.out)
    assert {p["part"] for p in t["jobs"][0]["placements"]} == {"grpo/rollout", "grpo/trainer"}
    assert len(_places(t)) == 1
    assert "trainer and rollouts together at" in t["jobs"][0]["colocation"]
    # apart, the cheapest rollouts and the cheapest trainer sit at different providers and stacks: cheaper,
    # and not the system that was asked for
    assert len(_places(a)) >= 2 and "colocation" not in a["jobs"][0]
    assert a["total_cost_usd_per_year"] < t["total_cost_usd_per_year"]


def test_the_verifier_refuses_trainer_and_rollouts_apart(plan_cli, tmp_path):
    apart = _write(tmp_path, "apart.yaml", extra="    colocate: false\n")
    out = tmp_path / "apart.json"
    assert plan_cli(apart, "--format", "json", "--explain", "none", "--quiet", "-o", out).code == 0
    res = plan_cli("verify", _write(tmp_path, "co.yaml"), out)
    assert res.code == 5, res.err
    assert "[colocation] RL job 'grpo' has its trainer and rollouts at" in res.err


def test_a_policy_with_no_shared_site_is_diagnosed_with_the_fix(plan_cli, tmp_path):
    # marketplace hosts are rented one by one: no one site for the weights to stay on
    res = plan_cli(_write(tmp_path, "mkt.yaml", policy=", provider_tiers: [marketplace]"), "--quiet")
    assert res.code == 3, res.err
    assert "no site serves both the trainer and the rollouts" in res.err
    assert "set colocate: false" in res.err
    assert plan_cli(_write(tmp_path, "mkt2.yaml", policy=", provider_tiers: [marketplace]",
                           extra="    colocate: false\n"), "--quiet").code == 0
