"""Training speed ratios across accelerators: predicted vs MLPerf Training, per round.

    python benchmarks/training_ratios.py [--loo]

Rows: for each MLPerf Training round, the best 8-accelerator submission of Llama 2 70B LoRA
(v4.0-v5.1) and Llama 3.1 8B pretraining (v5.1) per accelerator (reference/scaleout-moe.md §1.3,
"Per-node (8 accelerators)" tables). From that submission's logs (mlcommons/training_results_vX,
<submitter>/results/<system>/<benchmark>/result_*.txt, MLLOG): `minutes`, the olympic mean of
run_stop - run_start over the successful runs (no RCP factor), and `samples`, the mean
samples_count at run_stop of the same runs. Runs converge after different sample counts (seeds,
learning rates: 3,024-3,360 LoRA samples), which no performance model predicts, so the measured
figure is the training speed, samples per minute; the measured speed-up is that speed over the
round's reference accelerator's (H100 SXM in v4.x, H200 SXM in v5.x; B200 for the 8B, which has
no H200 row). The planner's speed-up is the ratio of planner.physics.training.estimate hours for
the same model, method, 8 accelerators and 8,192-token sequences, in the precision the
submission's recipe trained in (its config and log):
  fp8     NVIDIA/NeMo recipes v4.0-v5.0 (FP8=True), Intel Gaudi2 (run_llama_70B_fp8_submission.sh
          --fp8), AMD and MangoBoost MI300X/MI325X/MI355X (FP8=True);
  fp4     v5.1 Llama 3.1 8B on B200/B300/GB200/GB300 (config_common_fp4.sh: FP4=True, nvfp4; the
          logs print fp4='e2m1');
  nvfp4   v5.1 Llama 2 70B LoRA on B200/B300/GB200/GB300: NVFP4 until HEALING_ITER=350 steps
          (2,800 samples at batch 8), then FP8 (HEALING_PRECISION FP8_DS): hours are the
          sample-weighted mix of the fp4 and fp8 estimates.
Prints every row, then the median, signed median and worst error of the ratio (issue 14's target:
median |error| <= 10%). Three calibration factors (train_act_bytes, train_tp_exposed,
train_fp4_efficiency) are fitted on these ratios by benchmarks/calibrate.py --training; --loo
refits them with each row left out in turn and prints the left-out row's error.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.fidelity import load_tables  # noqa: E402
from planner.data.catalog import load_catalog  # noqa: E402
from planner.physics import arch, training  # noqa: E402
from planner.physics.calibration import Calibration, default  # noqa: E402

TARGET = 10.0
SEQ = 8192
HEALING_SAMPLES = 350 * 8
# (round, benchmark, accelerator id, minutes, samples, precision, submitter/system): see the docstring
ROWS = [
    ("v4.0", "llama2-70b-lora", "gaudi2", 77.85, 3168, "fp8", "Intel-HabanaLabs/HLS-Gaudi2-PT"),
    ("v4.0", "llama2-70b-lora", "h100-sxm", 28.07, 3168, "fp8", "NVIDIA/eos_ngc24.04_nemo"),
    ("v4.0", "llama2-70b-lora", "h200-sxm", 24.69, 3216, "fp8", "NVIDIA/h200_ngc24.04_nemo"),
    ("v4.1", "llama2-70b-lora", "b200", 12.72, 3120, "fp8", "NVIDIA/b200_preview_nemo"),
    ("v4.1", "llama2-70b-lora", "h100-sxm", 27.03, 3120, "fp8", "Supermicro/AS-8125GS-TNHR-1"),
    ("v4.1", "llama2-70b-lora", "h200-sxm", 22.64, 3120, "fp8", "Lenovo/SR680aV3-8xH200_SXM_141GB_700W"),
    ("v5.0", "llama2-70b-lora", "b200", 10.66, 3024, "fp8", "Supermicro/SYS-422GA-NBRT-LCC"),
    ("v5.0", "llama2-70b-lora", "gb200", 10.79, 3120, "fp8", "Oracle/2xBM.GPU.GB200.4"),
    ("v5.0", "llama2-70b-lora", "h200-nvl", 25.46, 3120, "fp8", "Dell/XE7740x8H200-NVL-141GB"),
    ("v5.0", "llama2-70b-lora", "h200-sxm", 22.31, 3072, "fp8", "Supermicro/AS-4125GS-TNHR2-LCC"),
    ("v5.0", "llama2-70b-lora", "mi300x", 28.02, 3072, "fp8", "Dell/1xXE9680x8MI300X"),
    ("v5.0", "llama2-70b-lora", "mi325x", 21.58, 3216, "fp8", "Supermicro/8xMI325X_2xEPYC_9575F"),
    ("v5.1", "llama2-70b-lora", "b200", 8.59, 3072, "nvfp4", "Dell/1xXE9680Lx8B200-SXM-180GB"),
    ("v5.1", "llama2-70b-lora", "b300", 8.48, 3360, "nvfp4", "Nebius/nebius_b300_n1"),
    ("v5.1", "llama2-70b-lora", "gb200", 8.96, 3168, "nvfp4", "NVIDIA/tyche_ngpu8_ngc25.09_nemo"),
    ("v5.1", "llama2-70b-lora", "gb300", 5.77, 3072, "nvfp4", "NVIDIA/theia_ngpu8_ngc25.09_nemo"),
    ("v5.1", "llama2-70b-lora", "h200-sxm", 22.94, 3120, "fp8", "Dell/1xXE9680x8H200-SXM-141GB"),
    ("v5.1", "llama2-70b-lora", "mi300x", 27.88, 3168, "fp8", "AMD/MI300X_EPYC_9575F_pytorch_llama2_70b"),
    ("v5.1", "llama2-70b-lora", "mi325x", 20.04, 3072, "fp8", "MangoBoost/MI325X-LLMBoost-GPUBoost-1node"),
    ("v5.1", "llama2-70b-lora", "mi355x", 10.15, 3168, "fp8", "AMD/MI355X_EPYC_9575F_pytorch"),
    ("v5.1", "llama3.1-8b", "b200", 84.38, 173568, "fp4", "Supermicro/SYS-422GS-NBRT-LCC"),
    ("v5.1", "llama3.1-8b", "b300", 75.84, 178176, "fp4", "Nebius/nebius_b300_n1"),
    ("v5.1", "llama3.1-8b", "gb200", 79.32, 181248, "fp4", "NVIDIA/tyche_ngpu8_ngc25.09_nemo"),
    ("v5.1", "llama3.1-8b", "gb300", 67.37, 179712, "fp4", "NVIDIA/theia_ngpu8_ngc25.09_nemo"),
    ("v5.1", "llama3.1-8b", "mi355x", 99.31, 178176, "fp8", "AMD/MI355X_EPYC_9575F_pytorch"),
]
REFERENCE = {"v4.0": "h100-sxm", "v4.1": "h100-sxm", "v5.0": "h200-sxm", "v5.1": "h200-sxm"}
REFERENCE_8B = "b200"  # v5.1 Llama 3.1 8B has no H200 row
MODEL = {"llama2-70b-lora": ("llama-2-70b", "lora"), "llama3.1-8b": ("llama-3.1-8b", "pretrain")}


# Absolute training rates, tokens/s per GPU: NVIDIA Megatron-Bridge performance summary (FP8,
# NeMo 25.11 / 26.04.01 / 26.06; reference/scaleout-moe.md §1.6). The first row anchors train_mfu
# (benchmarks/calibrate.py ANCHOR); the others are printed as checks, not fitted.
ABSOLUTE = [
    ("llama-3.1-8b", "h100-sxm", 8, 14_451), ("llama-3.1-8b", "b200", 8, 30_624),
    ("llama-3.1-8b", "gb200", 8, 31_508), ("llama-3.1-8b", "gb300", 8, 37_556),
    ("llama-3.1-70b", "h100-sxm", 64, 1_664), ("llama-3.1-70b", "gb200", 64, 4_224),
    ("llama-3.1-70b", "gb300", 64, 5_248), ("llama-3.1-405b", "h100-sxm", 1024, 326),
    ("llama-3.1-405b", "gb200", 256, 843), ("llama-3.1-405b", "gb300", 256, 1_048),
]


# The same summary's MoE pretraining, token-dropless, the newest container per model and system
# (scaleout-moe.md s1.6: NeMo 25.09 / 25.11 / 26.04.01 / 26.06; FP8, MXFP8 or, GPT-OSS-120B on
# H100, BF16), at the 4,096-token sequences of every MoE row of the summary (its 25.11 and 26.02
# tables): the expert all-to-all's unhidden share (train_ep_exposed) and the routed copies'
# memory-bound work (train_moe_bytes) are fitted on these (benchmarks/calibrate.py --training);
# each runs on its accelerator's best-networked catalog system (systems.scaleout_gbps).
MOE_SEQ = 4096
MOE_ABSOLUTE = [
    ("deepseek-v3", "h100-sxm", 1024, 1_297, "fp8"), ("deepseek-v3", "b200", 256, 3_328, "fp8"),
    ("deepseek-v3", "b300", 256, 3_541, "fp8"), ("deepseek-v3", "gb200", 256, 4_969, "fp8"),
    ("deepseek-v3", "gb300", 256, 6_338, "fp8"),
    ("qwen3-235b-a22b", "h100-sxm", 256, 1_575, "fp8"), ("qwen3-235b-a22b", "gb200", 256, 7_376, "fp8"),
    ("qwen3-235b-a22b", "gb300", 256, 9_015, "fp8"),
    ("gpt-oss-120b", "h100-sxm", 64, 5_630, "bf16"), ("gpt-oss-120b", "b300", 64, 18_534, "fp8"),
    ("gpt-oss-120b", "gb200", 64, 28_947, "fp8"), ("gpt-oss-120b", "gb300", 64, 33_166, "fp8"),
    ("qwen3-30b-a3b", "h100-sxm", 16, 5_275, "fp8"),
]

# PCIe scale-out (training.PCIE_FLAT, PER_DOUBLING_PCIE): MLPerf Training v4.0 NVIDIA Llama 2 70B LoRA
# on L40S nodes of 4 (PCIe Gen4, 2x 400G between nodes; NeMo 24.04, as the round's 8-H100 eos row),
# minutes and samples read from the logs as ROWS are (10 successful runs each): l40s_n16 (64 cards,
# batch 8) 21.84 min / 3,120 samples, l40s_n96 (384 cards, batch 48) 6.94 min / 5,952 samples.
# Speed (samples per minute) against 8 H100 (eos_ngc24.04_nemo, ROWS); the planner's for the same
# tokens. Printed as checks; PCIE_FLAT was chosen on the first.
PCIE = [("l40s", 64, 21.84, 3120, "NVIDIA/l40s_n16_ngc24.04_nemo"),
        ("l40s", 384, 6.94, 5952, "NVIDIA/l40s_n96_ngc24.04_nemo")]


def pcie_speedups(accs, models, cal: Calibration) -> list[tuple[str, int, float, float, float]]:
    """(accelerator, cards, measured, planner speed-up over 8 H100 SXM, error %) for PCIE."""
    ref = next(r for r in ROWS if r[0] == "v4.0" and r[2] == "h100-sxm")
    mid, method = MODEL["llama2-70b-lora"]
    base = training.estimate(models[mid], accs["h100-sxm"], method, 1e9, 8, seq=SEQ, precision="fp8", cal=cal).hours
    out = []
    for aid, n, minutes, samples, _ in PCIE:
        measured = (samples / minutes) / (ref[4] / ref[3])
        planner = base / training.estimate(models[mid], accs[aid], method, 1e9, n, seq=SEQ, precision="fp8", cal=cal).hours
        out.append((aid, n, measured, planner, (planner / measured - 1) * 100))
    return out


def moe_rates(accs, models, cal: Calibration) -> list[tuple[str, str, int, float, float, float]]:
    """(model, accelerator, GPUs, measured, planner tokens/s per GPU, error %) for MOE_ABSOLUTE."""
    out = []
    for mid, aid, n, measured, precision in MOE_ABSOLUTE:
        est = training.estimate(models[mid], accs[aid], "pretrain", 1e9, n, seq=MOE_SEQ, precision=precision, cal=cal,
                                scaleout_gbps=load_catalog().best_scaleout_gbps(aid))
        rate = 1e9 / (est.hours * 3600) / n
        out.append((mid, aid, n, measured, rate, (rate / measured - 1) * 100))
    return out


def absolute_rates(accs, models, cal: Calibration) -> list[tuple[str, str, int, float, float, float]]:
    """(model, accelerator, GPUs, measured, planner tokens/s per GPU, error %) for ABSOLUTE."""
    out = []
    for mid, aid, n, measured in ABSOLUTE:
        est = training.estimate(models[mid], accs[aid], "pretrain", 1e9, n, seq=SEQ, precision="fp8", cal=cal)
        rate = 1e9 / (est.hours * 3600) / n
        out.append((mid, aid, n, measured, rate, (rate / measured - 1) * 100))
    return out


def hours(accs, models, bench: str, acc: str, precision: str, samples: float, cal: Calibration) -> float:
    """Planner hours per 1e9 tokens for the row's recipe (nvfp4: the FP4 share, then FP8)."""
    mid, method = MODEL[bench]

    def h(p: str) -> float:
        return training.estimate(models[mid], accs[acc], method, 1e9, 8, seq=SEQ, precision=p, cal=cal).hours
    if precision == "nvfp4":
        share = min(samples, HEALING_SAMPLES) / samples
        return share * h("fp4") + (1 - share) * h("fp8")
    return h(precision)


def ratio_errors(accs, models, cal: Calibration) -> list[tuple[tuple, str, float, float, float]]:
    """(row, reference, measured speed-up, planner speed-up, error %) for every non-reference row."""
    out = []
    for row in ROWS:
        rnd, bench, acc, minutes, samples, prec, _ = row
        ref = REFERENCE_8B if bench == "llama3.1-8b" else REFERENCE[rnd]
        if acc == ref:
            continue
        rr = next(r for r in ROWS if r[0] == rnd and r[1] == bench and r[2] == ref)
        measured = (samples / minutes) / (rr[4] / rr[3])
        predicted = hours(accs, models, bench, ref, rr[5], rr[4], cal) / hours(accs, models, bench, acc, prec, samples, cal)
        out.append((row, ref, measured, predicted, (predicted / measured - 1) * 100))
    return out


def summary(errs: list[float]) -> str:
    return (f"{len(errs)} ratios: median |error| {statistics.median(abs(e) for e in errs):.1f}%, "
            f"signed median {statistics.median(errs):+.1f}%, worst {max(abs(e) for e in errs):.1f}%")

# QLoRA's dequantisation (train_step.dequant_s, calibration qlora_dequant_bytes), two public profiles
# of LoRA against QLoRA on one card:
# - QwenLM/Qwen README.md "Profiling of Memory and Speed": one A100-SXM4-80G, CUDA 11.8, PyTorch
#   2.0, flash attention 2, batch 1, gradient accumulation 8 (s/iter is 8 micro-batches of one
#   sequence), LoRA against Q-LoRA (the Int4 model) at 256-8,192 tokens. The Qwen(1) models are not
#   in the catalog: their non-embedding parameters are layers x (4 h^2 + 3 h f) from their configs
#   (hidden h, layers, per-projection MLP width f; Qwen technical report, arXiv 2309.16609, Table 1):
#   1.8B 24 x (2048, 5,504), 7B 32 x (4096, 11,008), 14B 40 x (5120, 13,696).
# - pytorch/torchtune README.md "Memory and training speed": Llama 3.1 8B on one RTX 4090, batch 2
#   (one micro-batch of two sequences), packed to 2,048 tokens, torch.compile: LoRA 3,083 tokens/s,
#   QLoRA 2,413.
QLORA_SEQ = (256, 512, 1024, 2048, 4096, 8192)
QLORA_ROWS = [
    ("qwen-1.8b", 24, 2048, 5504, (1.0, 1.0, 1.1, 1.7, 3.3, 6.8), (1.4, 1.4, 1.4, 2.0, 3.4, 6.5)),
    ("qwen-7b", 32, 4096, 11008, (1.2, 1.5, 2.8, 5.2, 10.1, 21.3), (3.0, 3.0, 3.5, 7.0, 11.6, 22.3)),
    ("qwen-14b", 40, 5120, 13696, (1.6, 2.4, 4.4, 8.4, 17.0, 36.0), (5.3, 6.3, 8.2, 11.8, 20.1, 38.3)),
]
QLORA_MICRO_BATCHES, QLORA_ACCELERATOR = 8, "a100-80gb"
TORCHTUNE_QLORA = ("llama-3.1-8b", "rtx-4090", 2, 2048, 3083.0, 2413.0)
"""(model, accelerator, sequences per micro-batch, tokens each, LoRA tokens/s, QLoRA tokens/s)"""


def qlora_dequant_bytes(accs, models, cal: Calibration) -> list[tuple[str, int, float, float]]:
    """Each profile's row and length: (model, tokens per micro-batch, the extra seconds per
    micro-batch measured, the qlora_dequant_bytes that extra implies: extra x eta_bw x bandwidth /
    non-embedding weights)."""
    out = []
    bandwidth = cal.eta_bw * accs[QLORA_ACCELERATOR].mem_bw_tbps * 1e12
    for name, layers, h, f, lora, qlora in QLORA_ROWS:
        weights = layers * (4 * h * h + 3 * h * f)
        for seq, a, b in zip(QLORA_SEQ, lora, qlora):
            extra = (b - a) / QLORA_MICRO_BATCHES
            out.append((name, seq, extra, extra * bandwidth / weights))
    mid, aid, sequences, seq, lora_rate, qlora_rate = TORCHTUNE_QLORA
    tokens = sequences * seq
    extra = tokens / qlora_rate - tokens / lora_rate
    weights = arch.param_counts(models[mid])["non_embedding"]
    out.append((f"{mid} {aid}", tokens, extra, extra * cal.eta_bw * accs[aid].mem_bw_tbps * 1e12 / weights))
    return out


def fitted_dequant_bytes(accs, models, cal: Calibration) -> float:
    """The median of qlora_dequant_bytes' implied values: robust to the rows where the two times
    differ by less than the Qwen table's 0.1 s rounding (long sequences)."""
    return statistics.median(r[3] for r in qlora_dequant_bytes(accs, models, cal))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    accs, models = load_tables()
    cal = default()
    rows = ratio_errors(accs, models, cal)
    print(f"{'round':6} {'benchmark':16} {'accelerator':12} {'precision':9} {'ref':10} "
          f"{'measured x':>10} {'planner x':>10} {'error':>8}")
    for (rnd, bench, acc, _, _, prec, _), ref, measured, predicted, e in rows:
        print(f"{rnd:6} {bench:16} {acc:12} {prec:9} {ref:10} {measured:>10.2f} {predicted:>10.2f} {e:>+7.1f}%")
    errs = [r[4] for r in rows]
    print(f"\n{summary(errs)} (issue target: median <= {TARGET:.0f}%)")
    print(f"fitted: train_act_bytes {cal.train_act_bytes:g}, train_tp_exposed {cal.train_tp_exposed:g}, "
          f"train_fp4_efficiency {cal.train_fp4_efficiency:g} (3 factors on {len(errs)} ratios)")
    print("\nabsolute tokens/s per GPU, FP8 pretraining, Megatron-Bridge (first row anchors train_mfu):")
    for mid, aid, n, measured, rate, e in absolute_rates(accs, models, cal):
        print(f"  {mid:15} {n:>5}x {aid:9} measured {measured:>7,.0f} planner {rate:>7,.0f} {e:>+7.1f}%")
    print(f"MoE pretraining (train_ep_exposed {cal.train_ep_exposed:g} and train_moe_bytes {cal.train_moe_bytes:g} "
          "fitted on these):")
    moe = moe_rates(accs, models, cal)
    for mid, aid, n, measured, rate, e in moe:
        print(f"  {mid:15} {n:>5}x {aid:9} measured {measured:>7,.0f} planner {rate:>7,.0f} {e:>+7.1f}%")
    print(f"  {summary([r[5] for r in moe])}".replace("ratios", "rates"))
    print("PCIe scale-out, Llama 2 70B LoRA fp8, speed against 8 H100 SXM (v4.0, NeMo 24.04):")
    for aid, n, measured, planner, e in pcie_speedups(accs, models, cal):
        print(f"  {n:>5}x {aid:9} measured {measured:>5.2f}x planner {planner:>5.2f}x {e:>+7.1f}%")
    print(f"QLoRA dequantisation, Qwen README ({QLORA_ACCELERATOR}) and torchtune README (qlora_dequant_bytes "
          f"{cal.qlora_dequant_bytes:g} is the median of the implied bytes per parameter):")
    for name, tokens, extra, implied in qlora_dequant_bytes(accs, models, cal):
        print(f"  {name:20} {tokens:>5} tokens per micro-batch  QLoRA - LoRA {extra * 1000:>6.0f} ms  implies {implied:>6.1f} B")
    print(f"  median {fitted_dequant_bytes(accs, models, cal):.1f} B")
    if "--loo" in argv:
        from benchmarks.calibrate import fit_training
        loo = []
        for i, row in enumerate(rows):
            keep = [r[0] for j, r in enumerate(rows) if j != i]
            held = fit_training(cal, accs, models, keep, log=lambda *_: None)
            e = next(r[4] for r in ratio_errors(accs, models, held) if r[0] is row[0])
            loo.append(e)
            print(f"  leave out {row[0][0]} {row[0][1]:16} {row[0][2]:9}: {e:+6.1f}%")
        print(f"leave-one-out: {summary(loo)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
