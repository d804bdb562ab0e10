"""Warnings on stderr for a scenario that plans but may not mean what it says: an inline model whose
params_b disagrees with its architecture, a context above the model's maximum (issue 16)."""

from __future__ import annotations

import json

import yaml
from conftest import SCENARIOS


def _with(tmp_path, **changes):
    data = yaml.safe_load((SCENARIOS / "own-model.yaml").read_text())
    data["models"][0].update(changes.pop("model", {}))
    data["jobs"][0].update(changes.pop("job", {}))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_inline_params_b_far_from_the_architecture_warns_with_both_numbers(plan_cli, tmp_path):
    path = _with(tmp_path, model={"params_b": 7.0})  # the config is a 14.77B model
    res = plan_cli(path, "--format", "json", "--quiet", "--explain", "none")  # (the warning comes before any solve)
    assert res.code == 0 and json.loads(res.out)["jobs"][0]["placements"]
    warning = [line for line in res.err.splitlines() if "params_b" in line]
    assert len(warning) == 1 and "7.00" in warning[0] and "14.77" in warning[0] and "-53%" in warning[0]
    assert "params_b" in plan_cli("validate", path).err
    assert "params_b" not in plan_cli(_with(tmp_path, model={"params_b": 15.5}), "--quiet", "--explain", "none").err


def test_a_served_context_above_the_models_maximum_is_bad_input_with_the_fix(plan_cli, tmp_path):
    path = _with(tmp_path, job={"context_tokens": 65536})  # Qwen2.5-14B: 32,768 positions
    res = plan_cli(path, "--quiet")  # (the serving review: planned with exit 0 and a warning)
    assert res.code == 2, res.err
    assert "65,536 tokens, above qwen2.5-14b-instruct's maximum context of 32,768" in res.err
    assert "lower it to at most 32,768" in res.err and ":" in res.err.split("jobs.0.context_tokens")[0]
    assert plan_cli("validate", path).code == 2
    assert "maximum context" not in plan_cli(SCENARIOS / "own-model.yaml", "--quiet").err


def test_a_training_sequence_above_the_models_maximum_warns_with_the_fix(plan_cli, tmp_path):
    # training past the model's positions is how a context is extended: a warning, not an error
    data = yaml.safe_load((SCENARIOS / "own-model.yaml").read_text())
    data["jobs"] = [{"name": "ext", "stage": "finetune", "model": "qwen2.5-14b-instruct", "method": "lora",
                     "dataset_tokens": 1e7, "sequence_tokens": 65536}]
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    res = plan_cli(path, "--quiet", "--explain", "none")
    assert res.code == 0, res.err
    warning = [line for line in res.err.splitlines() if "maximum context" in line]
    assert len(warning) == 1 and "65,536" in warning[0] and "lower sequence_tokens to at most 32,768" in warning[0]


def test_a_context_shorter_than_one_request_sizes_the_cache_for_the_request_and_warns(plan_cli, tmp_path):
    """A job asking 6,000 prompt + 1,000 output tokens at context_tokens 4,096 had its KV cache sized
    for 4,096 tokens: the users a replica holds were overstated by the ratio (expert review)."""
    short = _with(tmp_path, job={"input_tokens": 6000, "output_tokens": 1000, "context_tokens": 4096})
    res = plan_cli(short, "--format", "json", "--quiet", "--explain", "none")  # (the plan, not its explanations)
    assert res.code == 0
    warning = [line for line in res.err.splitlines() if "below one request's" in line]
    assert len(warning) == 1 and "4,096" in warning[0] and "raise context_tokens to at least 7,000" in warning[0]
    stated = tmp_path / "stated"
    stated.mkdir()
    same = _with(stated, job={"input_tokens": 6000, "output_tokens": 1000, "context_tokens": 7000})
    planned, expected = json.loads(res.out), json.loads(plan_cli(same, "--format", "json", "--quiet", "--explain", "none").out)
    users = lambda plan: [(p["accelerator"], p["users_per_replica"]) for j in plan["jobs"] for p in j["placements"]]  # noqa: E731
    assert users(planned) == users(expected) and planned["total_cost_usd_per_year"] == expected["total_cost_usd_per_year"]
