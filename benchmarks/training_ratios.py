"""Training time ratios across accelerators: predicted vs MLPerf Training, per round.

    python benchmarks/training_ratios.py

For each MLPerf Training round, the best 8-accelerator time of Llama 2 70B LoRA (v4.0-v5.1) and
Llama 3.1 8B pretraining (v5.1) per accelerator (reference/scaleout-moe.md §1.3, "Per-node (8
accelerators)" tables, from the mlcommons results logs) is divided into the round's reference
accelerator's time (H100 SXM in v4.x, H200 SXM in v5.0, B200 in v5.1): the measured speed-up.
The planner's speed-up is the ratio of planner.physics.training.estimate hours for the same
model, method and 8 accelerators, at FP8 (the MLPerf recipes of these submitters train in FP8;
NVFP4 recipes are not modelled). Same model and token count on both sides, so the ratio tests the
accelerator terms (achievable FLOP/s, scale-out inside the node) only. Prints every row, then the
median and worst |error| of the ratio (issue 14's target: median <= 10%). Nothing is fitted here.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.fidelity import load_tables  # noqa: E402
from planner.physics import training  # noqa: E402

TARGET = 10.0
# (round, benchmark, accelerator id, best 8-accelerator minutes): scaleout-moe.md §1.3
ROWS = [
    ("v4.0", "llama2-70b-lora", "gaudi2", 78.11), ("v4.0", "llama2-70b-lora", "h100-sxm", 28.16),
    ("v4.0", "llama2-70b-lora", "h200-sxm", 24.69),
    ("v4.1", "llama2-70b-lora", "b200", 12.96), ("v4.1", "llama2-70b-lora", "h100-sxm", 27.54),
    ("v4.1", "llama2-70b-lora", "h200-sxm", 23.06),
    ("v5.0", "llama2-70b-lora", "b200", 11.21), ("v5.0", "llama2-70b-lora", "gb200", 11.00),
    ("v5.0", "llama2-70b-lora", "h200-nvl", 25.94), ("v5.0", "llama2-70b-lora", "h200-sxm", 23.08),
    ("v5.0", "llama2-70b-lora", "mi300x", 28.99), ("v5.0", "llama2-70b-lora", "mi325x", 21.58),
    ("v5.1", "llama2-70b-lora", "b200", 8.89), ("v5.1", "llama2-70b-lora", "b300", 8.48),
    ("v5.1", "llama2-70b-lora", "gb200", 8.99), ("v5.1", "llama2-70b-lora", "gb300", 5.97),
    ("v5.1", "llama2-70b-lora", "h200-sxm", 23.37), ("v5.1", "llama2-70b-lora", "mi300x", 27.97),
    ("v5.1", "llama2-70b-lora", "mi325x", 20.74), ("v5.1", "llama2-70b-lora", "mi355x", 10.18),
    ("v5.1", "llama3.1-8b", "b200", 84.38), ("v5.1", "llama3.1-8b", "b300", 75.84),
    ("v5.1", "llama3.1-8b", "gb200", 79.32), ("v5.1", "llama3.1-8b", "gb300", 67.37),
    ("v5.1", "llama3.1-8b", "mi355x", 99.71),
]
REFERENCE = {"v4.0": "h100-sxm", "v4.1": "h100-sxm", "v5.0": "h200-sxm", "v5.1": "h200-sxm"}
REFERENCE_8B = "b200"  # v5.1 Llama 3.1 8B has no H200 row
MODEL = {"llama2-70b-lora": ("llama-2-70b", "lora"), "llama3.1-8b": ("llama-3.1-8b", "pretrain")}


def hours(accs, models, bench: str, acc: str) -> float:
    mid, method = MODEL[bench]
    return training.estimate(models[mid], accs[acc], method, 1e9, 8, precision="fp8").hours


def main() -> int:
    accs, models = load_tables()
    errs = []
    print(f"{'round':6} {'benchmark':16} {'accelerator':12} {'ref':10} {'measured x':>10} {'planner x':>10} {'error':>8}")
    for rnd, bench, acc, minutes in ROWS:
        ref = REFERENCE_8B if bench == "llama3.1-8b" else REFERENCE[rnd]
        if acc == ref:
            continue
        ref_min = next(m for r, b, a, m in ROWS if r == rnd and b == bench and a == ref)
        measured = ref_min / minutes
        predicted = hours(accs, models, bench, ref) / hours(accs, models, bench, acc)
        e = (predicted / measured - 1) * 100
        errs.append(e)
        print(f"{rnd:6} {bench:16} {acc:12} {ref:10} {measured:>10.2f} {predicted:>10.2f} {e:>+7.1f}%")
    med = statistics.median(abs(e) for e in errs)
    print(f"\n{len(errs)} ratios: median |error| {med:.1f}%, signed median {statistics.median(errs):+.1f}%, "
          f"worst {max(abs(e) for e in errs):.1f}% (issue target: median <= {TARGET:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
