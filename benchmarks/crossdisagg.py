"""Cost with and without disaggregated serving across two system types (options/crossdisagg.py).

    python benchmarks/crossdisagg.py

Each case is one serving job on H100 and H200 nodes (the catalog's offers, explanations off),
planned twice: with the pairs offered (as shipped) and with none (options.crossdisagg.MAX_PAIRS = 0,
so aggregated serving and disaggregation inside one system only). Prints each plan's cost per year,
the users it serves per accelerator held, the saving, the pairs chosen (prefill system, replicas x TP ->
decode system, replicas x TP) and the wall time of each plan. A pair the physics offers may still lose
to whole systems of one type (small demands): the two costs are then equal.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.app.planning import make_plan  # noqa: E402
from planner.data.scenario import Scenario  # noqa: E402
from planner.options import crossdisagg  # noqa: E402

CASES = [  # model, input, output tokens, tok/s per user, TTFT limit s, users, acquisition
    ("llama-3.3-70b", 8192, 256, 40, 2.0, 400, "on-demand"),
    ("llama-3.3-70b", 8192, 256, 40, 2.0, 60, "on-demand"),
    ("llama-3.3-70b", 8192, 256, 40, 2.0, 400, "buy"),
    ("llama-3.3-70b", 2048, 512, 30, 1.0, 400, "on-demand"),
    ("llama-3.3-70b", 32000, 512, 30, 8.0, 200, "on-demand"),
    ("qwen3-32b", 8192, 512, 50, 2.0, 400, "on-demand"),
    ("llama-3.1-8b", 8192, 256, 60, 1.0, 400, "on-demand"),
    ("llama-3.3-70b", 1024, 512, 20, None, 400, "on-demand"),
]


def scenario(model, sin, sout, tps, ttft, users, acq) -> Scenario:
    job = {"name": "serve", "stage": "serve", "model": model, "precision": "fp8", "input_tokens": sin,
           "output_tokens": sout, "context_tokens": sin + sout, "concurrent_users": users,
           "min_tokens_per_s_per_user": tps, **({"max_ttft_s": ttft} if ttft else {})}
    return Scenario.model_validate({"name": "cross", "policy": {"acquisition": [acq],
                                    "accelerators": ["h100-sxm", "h200-sxm"]}, "jobs": [job]})


def run(s: Scenario) -> tuple[float, float, str, float]:
    start = time.perf_counter()
    plan = make_plan(s, explain="none")
    seconds = time.perf_counter() - start
    accs = sum(f["accelerators"] for f in plan["fleet"])
    pairs: dict[tuple, dict] = {}
    for p in plan["jobs"][0]["placements"]:
        if "disaggregated" in p:
            h = p["disaggregated"]
            key = (h["prefill_system"], h["prefill_tensor_parallel"], h["decode_system"], h["decode_tensor_parallel"])
            pairs.setdefault(key, {})[h["role"]] = p["replicas"]
    pair = ", ".join(f"{ps} {got.get('prefill', 0)}x TP{tp_p} -> {ds} {got.get('decode', 0)}x TP{tp_d}"
                     for (ps, tp_p, ds, tp_d), got in sorted(pairs.items())) or "-"
    return plan["total_cost_usd_per_year"], s.jobs[0].concurrent_users / accs, pair, seconds


def main() -> int:
    print(f"{'case':<44} {'$/yr with':>12} {'$/yr without':>13} {'saving':>7} {'users/acc':>10} "
          f"{'(without)':>9}  pairs chosen; seconds with/without")
    for case in CASES:
        with_cost, with_upa, pair, t1 = run(scenario(*case))
        keep = crossdisagg.MAX_PAIRS
        crossdisagg.MAX_PAIRS = 0
        try:
            without, without_upa, _, t2 = run(scenario(*case))
        finally:
            crossdisagg.MAX_PAIRS = keep
        model, sin, sout, tps, ttft, users, acq = case
        label = f"{model} {sin}/{sout} {tps}t/s ttft {ttft or '-'} {users}u {acq}"
        print(f"{label:<44} {with_cost:>12,.0f} {without:>13,.0f} {1 - with_cost / without:>7.1%} "
              f"{with_upa:>10.2f} {without_upa:>9.2f}  {pair}; {t1:.1f}/{t2:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
