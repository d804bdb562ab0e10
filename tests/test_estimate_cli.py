"""Issue 3: `plan estimate`, the what-if calculator, and its JSON contract."""

from __future__ import annotations

import json

import pytest

SERVE_KEYS = {"fits", "reason", "memory_gb_per_accelerator", "memory_gb_capacity", "tensor_parallel",
              "pipeline_parallel", "replicas", "batch", "tpot_ms", "ttft_ms", "tokens_per_s_per_user",
              "tokens_per_s", "regime"}
TRAIN_KEYS = {"fits", "memory_gb_per_accelerator", "accelerators_min", "hours"}


def est(plan_cli, *args):
    r = plan_cli("estimate", *args, "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_single_stream_70b_fp8_on_h200(plan_cli):
    out = est(plan_cli, "--model", "llama-3.1-70b", "--accelerator", "h200-sxm", "--precision", "fp8")
    assert SERVE_KEYS <= set(out)
    assert out["fits"] and out["tensor_parallel"] == 1 and out["batch"] == 1
    # ~73 GB of fp8 weights read per token at ~3.8 TB/s effective: 20-30 ms per token
    assert 20 <= out["tpot_ms"] <= 32
    assert out["regime"] == "bandwidth"


def test_smallest_tp_that_fits_by_default(plan_cli):
    out = est(plan_cli, "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--count", "8")
    assert out["fits"] and out["tensor_parallel"] * out["pipeline_parallel"] == 2  # 141 GB of bf16 weights


def test_max_throughput_uses_all_accelerators(plan_cli):
    one = est(plan_cli, "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp8",
              "--max-throughput", "--count", "1")
    eight = est(plan_cli, "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp8",
                "--max-throughput", "--count", "8")
    assert eight["tokens_per_s"] >= 7 * one["tokens_per_s"]
    assert eight["replicas"] * eight["tensor_parallel"] * eight["pipeline_parallel"] <= 8


def test_per_user_target_caps_the_batch(plan_cli):
    free = est(plan_cli, "--model", "llama-3.1-70b", "--accelerator", "h200-sxm", "--precision", "fp8",
               "--count", "8", "--tp", "8", "--min-tokens-per-s-per-user", "1")
    fast = est(plan_cli, "--model", "llama-3.1-70b", "--accelerator", "h200-sxm", "--precision", "fp8",
               "--count", "8", "--tp", "8", "--min-tokens-per-s-per-user", "50")
    assert fast["batch"] < free["batch"]
    assert fast["tokens_per_s_per_user"] >= 50


def test_fixed_tp_and_batch(plan_cli):
    out = est(plan_cli, "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--count", "4", "--tp", "4",
              "--batch", "32", "--precision", "fp8")
    assert out["tensor_parallel"] == 4 and out["batch"] == 32


def test_not_fitting_is_a_normal_answer(plan_cli):
    out = est(plan_cli, "--model", "llama-3.1-405b", "--accelerator", "rtx-4090")
    assert out["fits"] is False and "GiB" in out["reason"]  # memory in the catalog label's unit


def test_finetune_contract_and_seed_fact(plan_cli):
    out = est(plan_cli, "--model", "llama-3.1-8b", "--accelerator", "rtx-4090", "--stage", "finetune",
              "--method", "qlora", "--tokens", "75e6")
    assert TRAIN_KEYS <= set(out)
    assert out["fits"] and out["accelerators_min"] == 1
    assert 10 <= out["memory_gb_per_accelerator"] <= 16  # seed 000: QLoRA on 8B needs about 10-16 GB
    assert 1 <= out["hours"] <= 48  # "does it in hours"


def test_full_finetune_70b_needs_a_node(plan_cli):
    out = est(plan_cli, "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--stage", "finetune",
              "--method", "full", "--count", "1")
    assert out["fits"] is False and out["accelerators_min"] >= 8


@pytest.mark.parametrize("args, fragment", [
    (("--model", "llama-3.1-8b", "--accelerator", "h100"), "h100-sxm"),
    (("--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp3"), "use one of"),
    (("--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--batch", "4", "--max-throughput"), "exclude"),
])
def test_bad_estimate_input_exit_2(plan_cli, args, fragment):
    r = plan_cli("estimate", *args)
    assert r.code == 2 and fragment in r.err


def test_a_training_estimate_computes_in_the_precision_asked(plan_cli):
    args = ("--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--count", "8", "--stage", "finetune",
            "--tokens", "1e9")
    bf16, fp8 = (est(plan_cli, *args, "--precision", p)["hours"] for p in ("bf16", "fp8"))
    assert 1.3 < bf16 / fp8 < 2.0  # H100's FP8 matmuls at twice the BF16 peak; memory-bound work does not halve
    r = plan_cli("estimate", *args, "--precision", "int4")
    assert r.code == 2 and "training computes in bf16 or fp8" in r.err and "Traceback" not in r.err


def test_a_speed_target_no_batch_meets_is_said_not_hidden(plan_cli):
    """70B FP8 on one H100 reaches about 32 tok/s per user alone: asked for 60 it says the target is
    missed and why; --max-throughput says no split reaches it (memory holds the model), not that
    the weights do not fit; a target it meets says so."""
    args = ("--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--precision", "fp8")
    slow = est(plan_cli, *args, "--min-tokens-per-s-per-user", "60")
    assert slow["fits"] and slow["meets_target"] is False and slow["tokens_per_s_per_user"] < 60
    assert "below the 60 asked" in slow["warning"]
    most = est(plan_cli, *args, "--min-tokens-per-s-per-user", "60", "--max-throughput")
    assert not most["fits"] and "reaches 60 tok/s per user" in most["reason"] and "memory holds it" in most["reason"]
    assert est(plan_cli, *args, "--min-tokens-per-s-per-user", "20")["meets_target"] is True


@pytest.mark.parametrize("flags, what", [
    (("--count", "100", "--pp", "100"), "100 pipeline stages for llama-3.1-8b's 32 layers"),
    (("--count", "8", "--tp", "3"), "TP3 does not split llama-3.1-8b's 32 attention heads and 8 KV heads evenly"),
])
def test_splits_no_engine_runs_are_refused(plan_cli, flags, what):
    r = plan_cli("estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", *flags)
    assert r.code == 2 and what in r.err and "To fix" in r.err


def test_a_pretraining_estimate_trains_on_the_sequence_a_plan_would(plan_cli, tmp_path):
    """estimate and plan agree on one run: both default a pretraining job to 8,192-token sequences
    (the estimate used 2,048 and said 946 h where the plan of the same job said 1,027 h); the length
    is an option, and the answer says which it used."""
    args = ("--model", "llama-3.1-8b", "--accelerator", "b200", "--count", "32", "--stage", "pretrain",
            "--tokens", "2e12")
    default, short = est(plan_cli, *args), est(plan_cli, *args, "--sequence-tokens", "2048")
    assert default["sequence_tokens"] == 8192 and short["sequence_tokens"] == 2048
    assert short["hours"] < default["hours"]
    from planner.data.scenario import load_scenario
    from planner.options import build
    path = tmp_path / "pre.yaml"
    path.write_text("name: pre\npolicy: {accelerators: [b200]}\njobs:\n  - {name: pt, stage: pretrain, "
                    "model: llama-3.1-8b, training_tokens: 2.0e12, max_days: 60}\n")
    s = load_scenario(path)
    from planner.data.consistency import resolve
    opts = build.build(s, resolve(s, ()))
    (at_32,) = {o.hours_per_run for o in opts.batch["pt"] if o.accelerator == "b200" and o.accelerators == 32}
    assert at_32 == pytest.approx(default["hours"], rel=1e-3)


@pytest.mark.parametrize("flags, what", [
    (("--count", "16", "--tp", "16"), "TP16 spans beyond h100-sxm's scale-up domain of 8"),
    (("--count", "8", "--disaggregated", "--max-throughput"), "--max-throughput searches the aggregated splits alone"),
])
def test_estimates_no_plan_would_make_are_refused(plan_cli, flags, what):
    # the serving review: TP16 was priced at NVLink speed (faster than TP8), and --max-throughput dropped the
    # disaggregated comparison without a word
    r = plan_cli("estimate", "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--precision", "fp8", *flags)
    assert r.code == 2 and what in r.err and "To fix" in r.err, r.err
