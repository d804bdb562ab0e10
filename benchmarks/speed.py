"""Time to plan 1, 10, 50 and 200 jobs against the full bundled catalog.

    python benchmarks/speed.py [--sizes 1 10 50 200] [--seed 7] [--time-limit 45]

Each size is a random but seeded mix of catalog models and job kinds (serving chats and long
documents, LoRA/QLoRA/full fine-tunes, small pretraining runs, RL, edge), planned under the default
policy (buy, on-demand, reserved 1y/3y; every provider and stack). One line per size: wall seconds
split into options (physics: perf searches), build (the MILP), solve (CBC), the solver's status
and gap, and the model's size. Exits 1 if any size ends without a plan.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.data import consistency as checks  # noqa: E402
from planner.data.catalog import load_catalog  # noqa: E402
from planner.data.scenario import Scenario  # noqa: E402
from planner.milp import fleet as model  # noqa: E402
from planner.milp.solve import solve  # noqa: E402
from planner.options import build as options  # noqa: E402

SERVE_MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "qwen3-30b-a3b", "gemma-3-27b",
                "mistral-small-24b", "gpt-oss-20b", "gpt-oss-120b", "llama-4-scout", "qwen3-235b-a22b",
                "deepseek-v3", "mixtral-8x7b", "llama-3.2-3b"]
TUNE_MODELS = ["llama-3.1-8b", "qwen3-8b", "llama-3.2-3b", "gemma-3-27b", "qwen3-32b", "llama-3.1-70b"]


def _max_context(model: str) -> int:
    """the bundled catalog's longest context for `model` (a longer one is refused: exit 2)"""
    m = load_catalog().models[model]
    return m.max_context_tokens or 1 << 30


def random_job(rng: random.Random, k: int) -> dict:
    kind = rng.choices(["serve", "finetune", "pretrain", "rl", "edge"], [60, 25, 5, 5, 5])[0]
    name = f"job-{k:03d}"
    if kind == "serve":
        ctx = rng.choice([2048, 4096, 8192, 32768, 131072])
        model = rng.choice(SERVE_MODELS)  # (drawn in this order: seeded scenarios stay as they were)
        ctx = min(ctx, _max_context(model))
        return {"name": name, "stage": "serve", "model": model,
                "precision": rng.choice(["bf16", "fp8", "fp8", "int4"]), "context_tokens": ctx,
                "input_tokens": max(1, ctx // 8), "output_tokens": min(1024, ctx // 2),
                "concurrent_users": rng.choice([4, 20, 100, 500, 2000]),
                "min_tokens_per_s_per_user": rng.choice([10, 20, 30, 60]),
                "hours_per_day": rng.choice([24, 24, 12, 8]),
                "latency_critical": rng.random() < 0.2}
    if kind == "finetune":
        return {"name": name, "stage": "finetune", "model": rng.choice(TUNE_MODELS),
                "method": rng.choice(["lora", "qlora", "full"]),
                "dataset_tokens": rng.choice([1e7, 1e8, 1e9]), "runs_per_year": rng.choice([1, 4, 12, 52]),
                "max_hours_per_run": rng.choice([12, 24, 72])}
    if kind == "pretrain":
        return {"name": name, "stage": "pretrain", "model": rng.choice(["llama-3.2-3b", "llama-3.1-8b"]),
                "training_tokens": rng.choice([1e11, 1e12]), "max_days": rng.choice([14, 30])}
    if kind == "rl":
        return {"name": name, "stage": "rl", "model": rng.choice(["qwen3-8b", "qwen3-32b"]),
                "method": "lora", "rollout_tokens_per_s": rng.choice([2000, 20000]),
                "rollout_context_tokens": 16384, "train_tokens_per_day": 1e8}
    return {"name": name, "stage": "edge", "model": rng.choice(["llama-3.2-3b", "llama-3.1-8b"]),
            "device": rng.choice(["robot", "desk", "any"]), "devices": rng.choice([1, 10, 100]),
            "min_tokens_per_s": 5}


def scenario(n: int, seed: int, time_limit: float, gap: float = 0.01) -> Scenario:
    rng = random.Random(seed * 1000 + n)
    return Scenario.model_validate({
        "name": f"speed-{n}", "site": {"kind": "office"},
        "solver": {"time_limit_s": time_limit, "gap": gap, "threads": 1},  # (CBC's serial search:
        # two threads run its parallel tree, whose end can wait 10 s on a busy machine: milp/solvers.py)
        "jobs": [random_job(rng, k) for k in range(n)]})


def run(n: int, seed: int, time_limit: float) -> dict:
    s = scenario(n, seed, time_limit)
    t0 = time.perf_counter()
    cat = checks.resolve(s)
    opts = options.build(s, cat)
    t1 = time.perf_counter()
    fm = model.build(s, cat, opts)
    t2 = time.perf_counter()
    res = solve(fm)
    t3 = time.perf_counter()
    unmet = sum(1 for dk in opts.demands if not (opts.serve.get(dk) or opts.batch.get(dk) or opts.edge.get(dk)))
    return {"jobs": n, "options_s": t1 - t0, "build_s": t2 - t1, "solve_s": t3 - t2, "total_s": t3 - t0,
            "status": res.status, "gap": res.gap, "cost": res.objective, "unplaceable": unmet,
            "variables": len(fm.prob.variables()), "constraints": len(fm.rows),
            "options": sum(len(v) for v in (*opts.serve.values(), *opts.batch.values(), *opts.edge.values())),
            "offers": len(opts.offers)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50, 200])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--time-limit", type=float, default=45)
    a = ap.parse_args()
    print(f"{'jobs':>5} {'options s':>9} {'build s':>8} {'solve s':>8} {'total s':>8}  status    gap      "
          f"vars   rows  options offers unplaceable")
    failed = False
    for n in a.sizes:
        r = run(n, a.seed, a.time_limit)
        gap = "-" if r["gap"] is None else f"{r['gap']:.4f}"
        print(f"{r['jobs']:>5} {r['options_s']:>9.2f} {r['build_s']:>8.2f} {r['solve_s']:>8.2f} {r['total_s']:>8.2f}"
              f"  {r['status']:<9} {gap:<8} {r['variables']:>6} {r['constraints']:>6} {r['options']:>7} "
              f"{r['offers']:>6} {r['unplaceable']:>5}", flush=True)
        failed |= r["status"] not in ("optimal", "feasible")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
