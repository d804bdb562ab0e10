"""Issue 14: disaggregated prefill/decode pools inside one scale-up domain (physics.disagg) and
`plan estimate --disaggregated`: when it wins and by how much.

Public anchors (reference/scaleout-moe.md §2.4-2.5): Dynamo reports +30% throughput per GPU for
disaggregated serving of a Llama-70B FP8 (R1-Distill) with vLLM on one 8x H100 node at 3K input /
150 output tokens (its per-user speed is not stated); DistServe, Splitwise and TensorRT-LLM report
gains at latency targets, not at unconstrained throughput. KV bytes per token from the same file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.data.catalog import _read_rows, _validate_rows
from planner.physics import arch, disagg, serving

CATALOG = Path(__file__).resolve().parent.parent / "catalog"
ACCS = _validate_rows("accelerators", _read_rows(CATALOG / "accelerators.csv"), CATALOG / "accelerators.csv")
MODELS = _validate_rows("models", _read_rows(CATALOG / "models.yaml"), CATALOG / "models.yaml")
L70, H100 = MODELS["llama-3.1-70b"], ACCS["h100-sxm"]
WL = serving.Workload("fp8", "fp8", 3000, 150)


def test_kv_bytes_per_token_match_the_reference():
    assert arch.kv_bytes_for_sequence(L70, "bf16", 1) == 327_680
    assert arch.kv_bytes_for_sequence(MODELS["deepseek-r1"], "bf16", 1) == pytest.approx(70_272, rel=0.01)


def test_disaggregation_wins_at_a_speed_target_and_loses_at_max_throughput():
    at20 = disagg.best(L70, H100, WL, 8, 20.0, engine="vllm")
    free = disagg.best(L70, H100, WL, 8, None, engine="vllm")
    assert 1.1 < at20.gain < 1.6  # Dynamo: +30% on one node
    assert free.gain < 1.0
    for d in (at20, free):  # both pools inside the 8-GPU NVLink domain, the KV over its link
        assert d.prefill_replicas * d.prefill_tp + d.decode_replicas * d.decode_tp <= 8
        assert d.kv_transfer_ms < 10 and d.tokens_per_s_per_user >= (20.0 if d is at20 else 0)


def test_the_gain_grows_with_the_per_user_target():
    gains = [disagg.best(L70, H100, WL, 8, t, engine="vllm").gain for t in (10.0, 20.0, 40.0)]
    assert gains == sorted(gains) and gains[-1] > 1.5


def test_estimate_says_when_disaggregation_wins(plan_cli):
    args = ("estimate", "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--count", "8", "--precision",
            "fp8", "--input-tokens", "3000", "--output-tokens", "150", "--engine", "vllm", "--disaggregated",
            "--format", "json")
    tight = json.loads(plan_cli(*args, "--min-tokens-per-s-per-user", "30").out)
    assert tight["disaggregated"].startswith("wins") and tight["disaggregated_gain"] > 1.3
    loose = json.loads(plan_cli(*args).out)
    assert loose["disaggregated"].startswith("loses") and loose["disaggregated_gain"] < 1.0


def test_a_disaggregated_replicas_memory_line_is_per_decode_accelerator(tmp_path, plan_cli):
    """The review's 70B on one H100 node split 4x TP1 prefill + 1x TP4 decode printed '135.4 GiB weights
    + 406.5 GiB KV = 570.5 of 640.0 GiB' (one accelerator's figures times eight): the line gives one
    decode accelerator's memory, and says the prefill instances hold copies of their own."""
    import json

    import yaml

    doc = {"name": "split", "site": {"ownership": "cloud"},
           "policy": {"acquisition": ["on-demand"], "accelerators": ["h100-sxm"], "providers": ["hyperstack"],
                      "redundancy": "none"},
           "jobs": [{"name": "qa", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8", "input_tokens": 1000,
                     "output_tokens": 1000, "context_tokens": 2000, "concurrent_users": 400,
                     "min_tokens_per_s_per_user": 20, "max_ttft_s": 0.6}]}
    path = tmp_path / "split.yaml"
    path.write_text(yaml.safe_dump(doc))
    plan = json.loads(plan_cli(path, "--format", "json", "--explain", "none").out)
    (p,) = plan["jobs"][0]["placements"]
    (why,) = plan["jobs"][0]["why"]
    assert "disaggregated" in why and p["accelerators_per_replica"] == 8
    assert (f"{p['weights_gb']:,.1f} GiB weights + {p['kv_gb']:,.1f} GiB KV = {p['memory_gb_per_accelerator']:,.1f} of "
            "80.0 GiB on each decode accelerator (every prefill instance holds a whole copy of the weights besides)") in why
