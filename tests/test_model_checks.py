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
    res = plan_cli(path, "--format", "json", "--quiet")
    assert res.code == 0 and json.loads(res.out)["jobs"][0]["placements"]
    warning = [line for line in res.err.splitlines() if "params_b" in line]
    assert len(warning) == 1 and "7.00" in warning[0] and "14.77" in warning[0] and "-53%" in warning[0]
    assert "params_b" in plan_cli("validate", path).err
    assert "params_b" not in plan_cli(_with(tmp_path, model={"params_b": 15.5}), "--quiet").err  # within 10%


def test_context_above_the_models_maximum_warns_with_the_fix(plan_cli, tmp_path):
    path = _with(tmp_path, job={"context_tokens": 65536})  # Qwen2.5-14B: 32,768 positions
    res = plan_cli(path, "--quiet")
    assert res.code == 0
    warning = [line for line in res.err.splitlines() if "maximum context" in line]
    assert len(warning) == 1 and "65,536" in warning[0] and "32,768" in warning[0]
    assert "lower context_tokens to at most 32,768" in warning[0]
    assert "maximum context" not in plan_cli(SCENARIOS / "own-model.yaml", "--quiet").err
