"""Issue 14, training: step time by term (matmuls, memory-bound kernels, tensor-parallel traffic),
the precision MLPerf submitters trained in, and the fidelity of the speed ratios across accelerators."""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
from pathlib import Path

import pytest

from planner.data.catalog import _read_rows, _validate_rows
from planner.physics import train_step, training
from planner.physics.calibration import Calibration

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "catalog"
ACCS = _validate_rows("accelerators", _read_rows(CATALOG / "accelerators.csv"), CATALOG / "accelerators.csv")
MODELS = _validate_rows("models", _read_rows(CATALOG / "models.yaml"), CATALOG / "models.yaml")
CAL = Calibration.load()


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tok_per_s(model: str, acc: str, method: str, n: int, precision: str, seq: int = 8192) -> float:
    est = training.estimate(MODELS[model], ACCS[acc], method, 1e9, n, seq=seq, precision=precision)
    return 1e9 / (est.hours * 3600)


@pytest.mark.parametrize("acc,tp", [("h100-sxm", 4), ("h200-sxm", 2), ("b200", 1), ("mi300x", 1),
                                    ("rtx-6000-ada", 1)])
def test_llama2_70b_lora_tensor_parallel_degree_is_what_the_nemo_recipes_use(acc, tp):
    # MLPerf Training v4.0 NVIDIA configs: DGXH100 ...tp4, DGXH200 ...tp2; v5.x B200/MI300X: TP1.
    # A PCIe card has no fabric for tensor parallelism.
    assert train_step.tensor_parallel(MODELS["llama-2-70b"], ACCS[acc], "lora", 8192, CAL) == tp


def test_moe_routed_experts_are_not_tensor_parallel():
    # DeepSeek-V3 on GB200: its 671B would need TP8 if dense; expert parallelism holds the experts
    assert train_step.tensor_parallel(MODELS["deepseek-v3"], ACCS["gb200"], "pretrain", 4096, CAL) <= 2
    assert train_step.tensor_parallel(MODELS["llama-3.1-405b"], ACCS["gb200"], "pretrain", 8192, CAL) >= 4


def test_h200_trains_70b_lora_faster_than_h100_with_the_same_flops():
    # same dense peak and matmul efficiency; the H200's 141 GB halve the tensor-parallel traffic and
    # its 4.8 TB/s speed the memory-bound kernels: MLPerf measured 1.15x (v4.0) and 1.19x (v4.1)
    assert ACCS["h200-sxm"].fp8_tflops == ACCS["h100-sxm"].fp8_tflops
    ratio = tok_per_s("llama-2-70b", "h200-sxm", "lora", 8, "fp8") / tok_per_s("llama-2-70b", "h100-sxm", "lora", 8, "fp8")
    assert 1.08 < ratio < 1.25


def test_fp4_speeds_up_less_than_its_peak():
    # NVFP4 doubles the matmul peak but not attention (FP8) nor the memory-bound kernels: the MLPerf
    # v5.1 B200 LoRA step took 1.11 s in NVFP4 against 1.51 s in FP8 in v5.0 (1.36x)
    gain = tok_per_s("llama-3.1-8b", "b200", "pretrain", 8, "fp4") / tok_per_s("llama-3.1-8b", "b200", "pretrain", 8, "fp8")
    assert 1.1 < gain < 1.7


def test_step_terms_are_all_positive_and_sum_to_the_total():
    t = train_step.seconds_per_token(MODELS["llama-2-70b"], ACCS["h100-sxm"], "lora", 8192, "fp8", CAL, 8)
    assert t.matmul_s > 0 and t.memory_s > 0 and t.tp_comm_s > 0 and t.tp == 4
    assert t.total_s == pytest.approx(t.matmul_s + t.memory_s + t.tp_comm_s)
    one = train_step.seconds_per_token(MODELS["llama-3.1-8b"], ACCS["h100-sxm"], "pretrain", 8192, "fp8", CAL, 8)
    assert one.tp == 1 and one.tp_comm_s == 0


def test_training_speed_ratios_across_accelerators_meet_the_issue_target():
    tr = _bench("training_ratios")
    rows = tr.ratio_errors(ACCS, MODELS, CAL)
    errs = [r[4] for r in rows]
    assert len(errs) == 20
    assert statistics.median(abs(e) for e in errs) <= 10  # issue 14 target
    assert abs(statistics.median(errs)) <= 5              # and no bias (it was -10%)
    # every accelerator family but Gaudi2 (Intel's recipe: DeepSpeed ZeRO-3 and full activation
    # checkpointing, an extra forward pass the planner's layout does not assume) within 20%
    assert all(abs(e) <= 20 for (row, _, _, _, e) in rows if row[2] != "gaudi2")


def test_absolute_training_rate_is_anchored_and_checks_hold():
    tr = _bench("training_ratios")
    rates = tr.absolute_rates(ACCS, MODELS, CAL)
    assert abs(rates[0][5]) <= 2  # the anchor: Llama3-8B, 8x H100, FP8, 14,451 tok/s/GPU
    # the other 8B and 70B rows of the Megatron-Bridge summary, not fitted: within 20%
    assert all(abs(r[5]) <= 20 for r in rates if r[0] != "llama-3.1-405b")


def test_pcie_cards_scale_from_a_server_of_eight_as_mlperf_l40s_measured():
    # 64 L40S (PCIe, nodes of 4) trained Llama 2 70B LoRA 1.27x as fast as 8 H100 SXM (MLPerf v4.0):
    # compounding 0.78 per doubling from one card said 0.61x
    tr = _bench("training_ratios")
    (aid, n, measured, planner, e), _ = tr.pcie_speedups(ACCS, MODELS, CAL)
    assert (aid, n) == ("l40s", 64) and measured == pytest.approx(1.266, abs=0.01)
    assert abs(e) < 15, (measured, planner)
    assert training.scaleout_efficiency(ACCS["l40s"], 8) == 1.0 > training.scaleout_efficiency(ACCS["l40s"], 16)


def test_training_calibration_is_the_fit_of_its_data():
    # refitting from the stored factors stays where it is: calibration.json is the fit of these rows
    cal = _bench("calibrate")
    refit = cal.fit_training(CAL, ACCS, MODELS, log=lambda *_: None)
    for name in ("train_act_bytes", "train_tp_exposed", "train_fp4_efficiency", "train_mfu"):
        assert getattr(refit, name) == pytest.approx(getattr(CAL, name), rel=0.03), name


def test_the_estimate_says_which_tensor_parallel_layout_it_priced():
    est = training.estimate(MODELS["llama-2-70b"], ACCS["h100-sxm"], "lora", 1e9, 8, seq=8192, precision="fp8")
    assert est.parallelism.startswith("tensor parallel 4 x FSDP/ZeRO-3 data parallel 2 on 8")
    small = training.estimate(MODELS["llama-3.1-8b"], ACCS["h100-sxm"], "pretrain", 1e9, 8, seq=8192)
    assert small.parallelism.startswith("FSDP/ZeRO-3 data parallel on 8")


def test_fp4_on_an_accelerator_without_fp4_is_fp8_speed_and_tp_is_a_power_of_two():
    assert ACCS["h100-sxm"].fp4_tflops is None
    assert tok_per_s("llama-3.1-8b", "h100-sxm", "pretrain", 8, "fp4") == pytest.approx(
        tok_per_s("llama-3.1-8b", "h100-sxm", "pretrain", 8, "fp8"))
    assert train_step.tensor_parallel(MODELS["llama-2-70b"], ACCS["h100-sxm"], "lora", 8192, CAL, count=6) == 4


def test_moe_pretraining_prices_the_expert_all_to_all():
    """DeepSeek-V3's own report: 2.664M H800 GPU-hours for 14.8T tokens of pretraining on 2,048
    H800s (scaleout-moe.md s1.5; not a row the exposure factor was fitted on). On 2,048 H100s (the
    same FP8 compute; H800's slower NVLink stays inside the node, where its EP traffic is the smaller
    share) the planner is within 25%; without the all-to-all it was 1.8M. Inside an NVL72 rack the
    experts' traffic stays on NVLink: per GPU, GB300 racks train it faster than B300 nodes of eight
    (Megatron-Bridge measured 1.79x; scaleout-moe.md s1.6), where a dense 8B model gains nothing."""
    m, h100 = MODELS["deepseek-v3"], ACCS["h100-sxm"]
    est = training.estimate(m, h100, "pretrain", 14.8e12, 2048, precision="fp8", scaleout_gbps=50.0)
    gpu_hours = est.hours * 2048
    assert 0.75 * 2.664e6 <= gpu_hours <= 1.25 * 2.664e6, gpu_hours
    step = train_step.seconds_per_token(m, h100, "pretrain", 2048, "fp8", CAL, 2048, 50.0)
    assert step.ep_comm_s > 0 and step.moe_s > 0 and step.total_s == pytest.approx(
        step.matmul_s + step.memory_s + step.tp_comm_s + step.ep_comm_s + step.moe_s)
    rack, node = (training.estimate(m, ACCS[a], "pretrain", 1e9, 256, seq=8192, precision="fp8",
                                    scaleout_gbps=100.0).hours for a in ("gb300", "b300"))
    assert node / rack > 1.4
    dense = [training.estimate(MODELS["llama-3.1-8b"], ACCS[a], "pretrain", 1e9, 256, seq=8192, precision="fp8",
                               scaleout_gbps=100.0).hours for a in ("gb300", "b300")]
    assert dense[1] / dense[0] < 1.25
    assert train_step.seconds_per_token(m, h100, "lora", 2048, "bf16", CAL, 64, 50.0).ep_comm_s == 0


def test_a_finetune_may_train_in_fp8_and_plans_it_faster(plan_cli, tmp_path):
    """Every fine-tune was planned in bf16 (FinetuneJob had no precision), though NVIDIA's MLPerf
    Llama 2 70B LoRA runs, which the training factors are fitted on, are FP8 (the training review):
    precision: fp8 plans the same run faster on FP8 hardware and says so in its run-it check;
    qlora with fp8 is refused (it computes in bf16 over its NF4 base)."""
    def hours(precision: str) -> tuple[float, str]:
        text = ("name: t\nsite: {kind: datacenter}\npolicy: {acquisition: [on-demand], stacks: [cuda]}\njobs:\n"
                "  - {name: lora, stage: finetune, model: llama-2-70b, method: lora, dataset_tokens: 25.5e6,"
                f" sequence_tokens: 8192, precision: {precision}, max_hours_per_run: 2}}\n")
        r = plan_cli(*_write(tmp_path / f"{precision}.yaml", text), "--format", "json", "--explain", "brief")
        assert r.code == 0, r.err
        (p,) = json.loads(r.out)["jobs"][0]["placements"]
        return p["hours_per_run"] * p["accelerators_per_replica"], json.loads(r.out)["jobs"][0]["checks"]["run_it"]

    (bf16, _), (fp8, words) = hours("bf16"), hours("fp8")
    assert fp8 < 0.8 * bf16 and " in fp8 with " in words
    bad = tmp_path / "q.yaml"
    bad.write_text("name: t\njobs:\n  - {name: q, stage: finetune, model: llama-3.1-8b, method: qlora, "
                   "dataset_tokens: 1e6, precision: fp8}\n")
    r = plan_cli("validate", bad)
    assert r.code == 2 and "qlora computes in bf16" in r.err


def _write(path, text):
    path.write_text(text)
    return (path,)


def test_an_impossible_deadline_names_the_fastest_run_the_offers_allow_and_the_fix(plan_cli, tmp_path):
    """15T tokens of a 70B in one day, on demand: the diagnosis said 'no accelerator in the catalog and
    policy can run it' (the fastest it found, 131,072 accelerators, is more than any offer rents) and
    gave no fix (the training review). It names the fastest run within the offers' caps and the
    max_days that run needs, on a To fix line; exit 3."""
    import re

    p = tmp_path / "e2.yaml"
    p.write_text("name: impossible\nsite: {ownership: cloud}\npolicy: {acquisition: [on-demand]}\njobs:\n"
                 "  - {name: fast, stage: pretrain, model: llama-3.1-70b, training_tokens: 15000000000000, max_days: 1}\n")
    r = plan_cli(p)
    assert r.code == 3
    head = r.err.splitlines()[0]
    got = re.search(r"the fastest is ([\d,]+)x \S+ \((\S+)\) at ([\d,.]+) h per run", head)
    assert got, head
    n, hours = int(got.group(1).replace(",", "")), float(got.group(3).replace(",", ""))
    assert n <= 512 * 72 and hours > 24
    assert f"To fix: raise jobs.fast.max_days to at least {math.ceil(hours / 24 * 10) / 10:g}" in r.err


def test_long_context_training_splits_a_sequence_over_its_group():
    """405B at a 131k-token sequence 'did not fit on any number' of H100 (every accelerator held one
    sequence's whole activations and fp32 logits: the training review), though Llama 3.1 trained so
    on 16,384 H100 as TP8 x CP16: activations are split over sequence_shards(n)."""
    from planner.physics import training

    m, h100 = MODELS["llama-3.1-405b"], ACCS["h100-sxm"]
    est = training.estimate(m, h100, "pretrain", 8e11, 16384, seq=131072)
    assert est.fits and est.accelerators_min <= 1024
    assert not training.estimate(MODELS["llama-3.1-8b"], h100, "pretrain", 1e9, 1, seq=131072).fits
    assert training.estimate(MODELS["llama-3.1-8b"], h100, "pretrain", 1e9, 16, seq=131072).fits
    assert training.sequence_shards(16384, 8) == 128 and training.sequence_shards(4, 8) == 4


def test_an_rl_trainer_trains_whole_rollouts_and_a_mismatched_one_is_warned(plan_cli, tmp_path):
    """The trainer's sequence defaulted to 8,192 tokens while rollouts held 16,384 (the training
    review): unset, it is the rollout's context. A trainer consuming 580x what the rollouts make
    got no warning; it gets one on stderr (the plan is made as asked)."""
    from planner.data.scenario import RLJob

    job = RLJob(name="r", stage="rl", model="llama-3.1-8b", rollout_tokens_per_s=1000, train_tokens_per_day=5e7,
                rollout_context_tokens=16384)
    assert job.trainer_sequence_tokens == 16384 and "trainer_sequence_tokens" not in job.model_fields_set
    p = tmp_path / "rl.yaml"
    p.write_text("name: rl\nsite: {ownership: cloud}\npolicy: {acquisition: [on-demand]}\njobs:\n"
                 "  - {name: grpo, stage: rl, model: llama-3.1-8b, method: lora, rollout_tokens_per_s: 1000,"
                 " rollout_context_tokens: 4096, train_tokens_per_day: 5e10}\n")
    r = plan_cli(p, "--explain", "none")
    assert "the trainer consumes 50,000,000,000 tokens a day, 5.8e+02x the 86,400,000 its rollouts generate" in r.err


def test_a_large_run_loses_time_to_interruptions():
    """Plans left no margin for failures on long runs at scale (the training review): Llama 3's 405B
    run lost about a tenth of 54 days on 16,384 H100 to 419 interruptions, and goodput(n) charges
    that, growing with the accelerators (under 1% at 1,024)."""
    from planner.physics import training

    assert training.goodput(16384) == pytest.approx(0.904, abs=0.01)
    assert training.goodput(1024) > 0.99 and training.goodput(8) > 0.9999
    m, h100 = MODELS["llama-3.1-70b"], ACCS["h100-sxm"]
    per_gpu_hour = lambda n: training.estimate(m, h100, "pretrain", 1e12, n, seq=8192).hours * n  # noqa: E731
    assert per_gpu_hour(16384) > per_gpu_hour(1024) * 1.05


def test_qlora_runs_only_where_bitsandbytes_does():
    """QLoRA was placed on TPU v7 'with MaxText' (the training review), a recipe that does not exist:
    its NF4 base is bitsandbytes', CUDA and ROCm only."""
    from planner.data.catalog import load_catalog
    from planner.options.batch import batch_configs

    cat = load_catalog()
    m = cat.models["llama-3.1-8b"]
    tpu = next(s for s in cat.systems.values() if cat.accelerators[s.accelerator].stack == "xla")
    h100 = cat.systems["h100-sxm-x8"]
    none, why = batch_configs(m, cat.accelerators[tpu.accelerator], tpu, "qlora", 1e8, 2048, 16, "bf16", 72, "d")
    assert not none and "bitsandbytes" in why and "method: lora" in why
    assert batch_configs(m, cat.accelerators["h100-sxm"], h100, "qlora", 1e8, 2048, 16, "bf16", 72, "d")[0]
    assert batch_configs(m, cat.accelerators[tpu.accelerator], tpu, "lora", 1e8, 2048, 16, "bf16", 72, "d")[0]


def test_estimate_refuses_flags_a_training_estimate_would_ignore(plan_cli):
    # the training review: --method on a pretraining estimate and --tp on a training one were ignored silently
    base = ["estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--tokens", "1e9", "--count", "8"]
    res = plan_cli(*base, "--stage", "pretrain", "--method", "qlora")
    assert res.code == 2 and "pretraining trains every weight" in res.err, res.err
    res = plan_cli(*base, "--stage", "finetune", "--tp", "2")
    assert res.code == 2 and "drop --tp for --stage finetune" in res.err, res.err
    res = plan_cli(*base, "--stage", "finetune", "--format", "json")
    assert res.code == 0 and json.loads(res.out)["method"] == "lora"


def test_an_rl_trainer_pays_for_its_log_prob_passes(plan_cli, tmp_path):
    # verl recomputes the old policy's log-probs (a forward pass, 2 of a full step's 6 x N FLOPs per token)
    # and a KL penalty adds the reference policy's: the trainer is sized for them
    from planner.data.catalog import load_catalog
    cat = load_catalog()
    m, acc = cat.models["qwen3-8b"], cat.accelerators["h100-sxm"]
    base = training.estimate(m, acc, "full", 1e9, 8, 8192).hours
    assert training.estimate(m, acc, "full", 1e9, 8, 8192, forward_passes=1).hours == pytest.approx(base * 8 / 6)
    assert training.estimate(m, acc, "lora", 1e9, 8, 8192, forward_passes=2).hours == pytest.approx(
        training.estimate(m, acc, "lora", 1e9, 8, 8192).hours * 2)
    hours = {}
    for passes in (0, 2):
        path = tmp_path / f"rl{passes}.yaml"
        path.write_text("name: rl\nsite: {ownership: cloud}\npolicy: {acquisition: [on-demand], accelerators: [h100-sxm]}\n"
                        "jobs:\n  - {name: grpo, stage: rl, model: qwen3-8b, method: full, rollout_tokens_per_s: 2000,\n"
                        f"     rollout_context_tokens: 8192, train_tokens_per_day: 2.0e+8, logprob_passes: {passes}}}\n")
        res = plan_cli(path, "--format", "json", "--quiet", "--explain", "none")
        assert res.code == 0, res.err
        job = json.loads(res.out)["jobs"][0]
        trainer = [p for p in job["placements"] if p["part"] == "grpo/trainer"]
        hours[passes] = sum(p["hours_per_run"] * p["accelerators_per_replica"] for p in trainer)
        if passes == 2:
            assert "2 log-prob passes over each token" in " ".join(job["checks"].values() if isinstance(job["checks"], dict)
                                                                  else map(str, job["checks"]))
    assert hours[2] == pytest.approx(hours[0] * 10 / 6, rel=0.02)  # accelerator-hours per day


def test_qlora_pays_its_dequantisation_per_micro_batch_so_short_sequences_slow_most():
    # Qwen README, one A100-80G: Q-LoRA took 1.35x LoRA's time at 2,048 tokens (7B: 7.0 / 5.2 s/it)
    # and 1.05x at 8,192 (22.3 / 21.3). The planner adds the same fixed time per micro-batch.
    m, acc = MODELS["qwen2.5-7b"], ACCS["a100-80gb"]

    def per_token(method, seq):
        return train_step.seconds_per_token(m, acc, method, seq, "bf16", CAL, count=1)
    extra = {seq: per_token("qlora", seq).total_s - per_token("lora", seq).total_s for seq in (256, 2048, 8192)}
    # the same seconds per micro-batch at every length: the non-embedding weights x the fitted bytes
    per_micro_batch = 6.53e9 * CAL.qlora_dequant_bytes / (CAL.eta_bw * acc.mem_bw_tbps * 1e12)
    for seq, s in extra.items():
        assert s * seq == pytest.approx(per_micro_batch, rel=0.02)
    assert 0.15 < per_micro_batch < 0.3  # the README's 7B rows: 0.09-0.23 s per micro-batch
    ratio = {seq: per_token("qlora", seq).total_s / per_token("lora", seq).total_s for seq in (2048, 8192)}
    assert ratio[2048] > 1.25 and 1.0 < ratio[8192] < 1.15


def test_fine_grained_moe_pretraining_pays_for_its_routed_copies():
    """The training review: Qwen3-30B-A3B on 16 H100 in FP8 trained at 5,275 tokens/s per GPU
    (Megatron-Bridge 25.11); the planner said 13,965 (+165%), as it priced an MoE layer's routed
    copies at nothing beside the all-to-all. With train_moe_bytes every routed copy adds its
    memory-bound work; the MoE rates' median error is within 25% and their signed median near 0."""
    m, h100 = MODELS["qwen3-30b-a3b"], ACCS["h100-sxm"]
    step = train_step.seconds_per_token(m, h100, "pretrain", 4096, "fp8", CAL, 16, 50.0)
    assert step.moe_s > step.memory_s  # 8 routed copies in each of 48 layers
    assert train_step.seconds_per_token(MODELS["llama-3.1-8b"], h100, "pretrain", 4096, "fp8", CAL, 16).moe_s == 0
    rows = _bench("training_ratios").moe_rates(ACCS, MODELS, CAL)
    errors = [r[5] for r in rows]
    assert len(rows) == 13 and statistics.median(abs(e) for e in errors) < 25 and abs(statistics.median(errors)) < 10
    qwen = next(r for r in rows if r[0] == "qwen3-30b-a3b")
    assert qwen[5] < 100  # (+165% before)


def test_qlora_dequantisation_factor_is_what_the_script_fits_on_the_qwen_rows():
    tr = _bench("training_ratios")
    assert CAL.qlora_dequant_bytes == pytest.approx(tr.fitted_dequant_bytes(ACCS, MODELS, CAL), abs=0.01)
    rows = tr.qlora_dequant_bytes(ACCS, MODELS, CAL)
    assert len(rows) == 19 and 40 < statistics.median(r[3] for r in rows) < 60
    # torchtune's 4090 row (one micro-batch of 2 x 2,048 tokens) implies about what the Qwen rows do
    assert 35 < rows[-1][3] < 50
