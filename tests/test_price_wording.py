"""The price rows' wording (explain/narrative.py): a job whose systems are all rented by the hour is
priced as renting, whatever the fleet owns; an RL job's trainer price names the key that sizes it
(train_tokens_per_day: RL jobs have no runs_per_year)."""

from __future__ import annotations

import json

SCENARIO = """\
name: wording
site: {ownership: colo, region: us}
policy: {acquisition: [buy, on-demand], stacks: [cuda]}
jobs:
  - {name: chat, stage: serve, model: llama-3.1-8b, concurrent_users: 400}
  - {name: tune, stage: finetune, model: llama-3.1-8b, method: lora, dataset_tokens: 20000000, runs_per_year: 4,
     max_hours_per_run: 24}
  - {name: grpo, stage: rl, model: llama-3.1-8b, method: lora, rollout_tokens_per_s: 2000, rollout_context_tokens: 4096,
     min_tokens_per_s_per_rollout: 20, train_tokens_per_day: 100000000}
"""


def test_rented_jobs_and_rl_trainers_are_priced_in_their_own_words(plan_cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    res = plan_cli(path, "--format", "json", "--no-timings", "--quiet")
    assert res.code == 0, res.err
    rows = {e["constraint"]: e["message"] for e in json.loads(res.out)["explanations"]}
    assert "jobs.grpo.runs_per_year" not in rows, rows.keys()
    assert "one more training day of 'grpo/trainer' costs $" in rows["jobs.grpo.train_tokens_per_day"]
    assert "renting by the hour, as the plan does for it" in rows["jobs.tune.runs_per_year"]
    assert not any("with the fleet you own" in m for m in rows.values())
