"""Issue 14: MoE serving with expert parallelism and data-parallel attention (physics.moe).

Public figures (reference/scaleout-moe.md §2.1, TensorRT-LLM tech blog 03, 2025-05-30): DeepSeek-R1
FP4 on 8x B200 at ISL/OSL 1K/2K holds ~200 MB of KV per request and ~100 GB of KV per GPU, so
~4,000 concurrent requests per node with attention DP against ~500 with TP8 (the MLA latent is
copied on every tensor-parallel rank).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.data.catalog import _read_rows, _validate_rows, load_catalog
from planner.options import build
from planner.physics import arch, serving

CATALOG = Path(__file__).resolve().parent.parent / "catalog"
ACCS = _validate_rows("accelerators", _read_rows(CATALOG / "accelerators.csv"), CATALOG / "accelerators.csv")
MODELS = _validate_rows("models", _read_rows(CATALOG / "models.yaml"), CATALOG / "models.yaml")
R1, B200 = MODELS["deepseek-r1"], ACCS["b200"]


def wl(dp: bool) -> serving.Workload:
    return serving.Workload("fp4", "bf16", 1024, 2048, attention_dp=dp)


def test_deepseek_r1_kv_per_1k_2k_request_is_about_200_mb():
    kv = arch.kv_bytes_for_sequence(R1, "bf16", 1024 + 2048)
    assert kv / 1e6 == pytest.approx(200, rel=0.10)


def test_attention_dp_holds_eight_times_the_requests_of_tp8_on_8x_b200():
    tp8 = serving.max_batch_by_memory(R1, B200, wl(False), 8, 1)
    adp = serving.max_batch_by_memory(R1, B200, wl(True), 8, 1)
    assert tp8 == pytest.approx(500, rel=0.20)
    assert adp == pytest.approx(4000, rel=0.15)
    # the KV the engine gives each GPU: ~100 GB beside the weights
    room = serving.kv_per_seq_per_acc(R1, wl(True), 8, 1) * adp
    assert room / 1e9 == pytest.approx(100, rel=0.25)


def test_attention_dp_replicates_all_but_the_routed_experts():
    tp8 = serving.weights_per_acc(R1, "fp4", 8, 1)
    adp = serving.weights_per_acc(R1, "fp4", 8, 1, attention_dp=True)
    # DeepSeek-R1's ~17B non-routed parameters sit whole on every rank: ~8 GB more per GPU at FP4-ish bytes
    assert 5e9 < adp - tp8 < 15e9


def test_attention_dp_serves_more_tokens_per_gpu_at_the_memory_cap():
    """TRT-LLM's max-throughput DeepSeek-R1 recipe is attention DP + EP8 ("400% speedup" from ADP)."""
    out = {}
    for dp in (False, True):
        w = wl(dp)
        batch, _ = serving.largest_batch(R1, B200, w, 8, 1, engine="trtllm")
        out[dp] = serving.estimate(R1, B200, w, 8, 1, batch, engine="trtllm").tokens_per_s
    assert out[True] > 1.5 * out[False]


def test_dense_models_and_one_rank_keep_tensor_parallel_figures():
    m = MODELS["llama-3.1-70b"]
    a, b = (serving.Workload("fp8", "fp8", 1000, 1000, attention_dp=dp) for dp in (False, True))
    assert serving.estimate(m, ACCS["h100-sxm"], a, 2, 1, 64).tpot_ms == serving.estimate(m, ACCS["h100-sxm"], b, 2, 1, 64).tpot_ms
    assert serving.estimate(R1, B200, wl(False), 1, 1, 1).reason == serving.estimate(R1, B200, wl(True), 1, 1, 1).reason


def test_options_pick_ep_with_attention_dp_for_deepseek_and_say_so():
    """At a throughput-minded 10 tok/s per user the expert-parallel layout serves the most users on
    8 B200 (TensorRT-LLM's DeepSeek-R1 max-throughput recipe is TP8 EP8 with attention DP); at 20
    tok/s it is tensor parallelism (its min-latency recipe), since an EP step reaches only
    ep_efficiency of its roofline (calibration.json, fitted on those max-throughput runs)."""
    cat = load_catalog()
    system = next(s for s in cat.systems.values() if s.accelerator == "b200" and s.accelerators == 8)
    w = serving.Workload("fp4", "fp8", 2000, 1000)
    fast, _ = build.serve_configs(R1, B200, system, w, 20.0, None, "d")
    assert fast and not any(o.basis_note.startswith(build.LAYOUT_NOTE) for o in fast)
    opts, _ = build.serve_configs(R1, B200, system, w, 10.0, None, "d")
    eight = [o for o in opts if o.tp == 8]
    assert eight and all(o.basis_note.startswith(build.LAYOUT_NOTE) for o in eight)
    dense, _ = build.serve_configs(MODELS["llama-3.1-70b"], B200, system, w, 20.0, None, "d")
    assert dense and not any(o.basis_note for o in dense)


def test_estimate_shows_the_layout_and_refuses_ep_for_a_dense_model(plan_cli):
    args = ("estimate", "--model", "deepseek-r1", "--accelerator", "b200", "--count", "8", "--tp", "8",
            "--precision", "fp4", "--kv-precision", "bf16", "--input-tokens", "1024", "--output-tokens", "2048",
            "--format", "json")
    tp = json.loads(plan_cli(*args).out)
    ep = json.loads(plan_cli(*args, "--layout", "ep-dp").out)
    assert tp["layout"].startswith("tp") and ep["layout"].startswith("ep-dp")
    assert ep["max_batch_memory"] > 6 * tp["max_batch_memory"]
    r = plan_cli("estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--layout", "ep-dp")
    assert r.code == 2 and "--layout" in r.err and "dense" in r.err
