"""Scenarios benchmarks/fuzz.py found that the planner got wrong once, kept as tests."""

from __future__ import annotations

import json


def test_rented_trainer_runs_are_verified_at_the_precision_the_plan_states(plan_cli, tmp_path):
    """fuzz seed 1 case 528: an RL trainer rented for 0.41% of its 365 daily runs. The plan states
    the share to 4 places (0.0041) and the runs to 3 (1.481); the verifier re-derived runs and rent
    from the rounded share (1.497, +1%) and rejected a correct plan (exit 1)."""
    path = tmp_path / "s.yaml"
    path.write_text("""name: fuzz-706332
jobs:
- {name: rl-0, stage: rl, model: mistral-small-24b, method: full, rollout_tokens_per_s: 510.0,
   rollout_context_tokens: 2396, min_tokens_per_s_per_rollout: 20, train_tokens_per_day: 3610000000.0,
   hours_per_day: 12}
- {name: serve-1, stage: serve, model: llama-3.1-70b, precision: int8, context_tokens: 320153,
   output_tokens: 485, input_tokens: 78978, concurrent_users: 7, min_tokens_per_s_per_user: 1.058,
   latency_critical: true}
solver: {time_limit_s: 5}
site: {kind: office, power_usd_per_kwh: 0.189}
policy: {acquisition: [buy, on-demand, reserved-1y, reserved-3y, spot]}
budget: {opex_usd_per_year: 18500.0, mode: max-coverage}
""")
    res = plan_cli(path, "--format", "json", "--quiet", "--explain", "none")
    assert res.code == 0, res.err
    trainer = [p for j in json.loads(res.out)["jobs"] for p in j["placements"] if p.get("share_of_runs")]
    assert trainer and all(abs(p["runs_per_year"] - p["share_of_runs"] * 365) <= 0.02 for p in trainer)
