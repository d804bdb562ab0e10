"""Mélange's own solver against the planner, both fed the same capacity table (issue 12).

    git clone https://github.com/tyler-griggs/melange-release ../melange-release
    python benchmarks/melange.py --melange ../melange-release [--slice-factor 4] [--rates 4,32]

--melange is a checkout of Mélange's published code (Griggs et al., "Mélange: Cost Efficient Large
Language Model Serving by Exploiting GPU Heterogeneity", arXiv 2404.14527), here cloned beside this
repository; this script was last run against its commit d46ab43 (2024-06-26). It is not part of
this repository and not a dependency: its melange/ package is copied into a scratch folder and run
there, in its own Python process (this Python; Mélange needs pulp, numpy and pandas), by a
ten-line driver this script writes; its solve time is the wall time of MelangeSolver.run() in that
process (model build + CBC). Without --melange, or with a folder lacking melange/solver.py, the
script says how to get the checkout and exits 2; it exits 1 if the planner costs more (below).

Cases
  example      Mélange's shipped melange/config/example.json (A10G and A100-80GB, a 2x2 bucket
               grid, 30 req/s), at the file's slice_factor and at --slice-factor. The file gives
               bucket indices, not token counts: the planner reads them as 128/512 input and 10/20
               output tokens, so that at 10 tok/s per user a request is in flight 1 or 2 s and the
               file's throughputs are whole concurrencies.
  grid         6x6 request-size buckets (input 64-2048 tokens, output 16-512) of llama-2-7b (bf16,
               the model of Mélange's paper), 4 GPU types (a10g, l4, a100-80gb, h100-sxm, one GPU
               per rented system), a uniform mix and a skewed mix (share ~ 0.6^(i+j): short
               requests dominate), at each of --rates, at --slice-factor.

The capacity table (grid): for each GPU and bucket, U = the most concurrent users one replica
serves at a TPOT of 100 ms (10 tok/s per user) within its memory: physics.serving.largest_batch,
the planner's own performance model. The planner reads it as a measurements CSV (one row per GPU
and bucket: concurrency U at TPOT 100 ms, or a row too slow at concurrency 1 where U = 0), so its
measured basis replaces the physics. Mélange reads the same table as max throughput in req/s:
U / T, with T = output_tokens / 10 tok/s the time a request is in flight (Little's law, as the
planner converts requests_per_s: no TTFT target). A cell where U = 0 gets 1e-9 req/s (Mélange
has no way to say "cannot serve"; its load is then prohibitive).

Both get the same traffic: the planner rounds each bucket's in-flight requests up to whole users
(users_b = ceil(rate_b x T_b)); Mélange is given those rounded rates (users_b / T_b), so neither
is asked for less than the other. Prices: the grid uses the catalog's on-demand offers (ids
printed); the example uses the file's own prices. Both costs are USD per hour (the planner's
yearly cost / 8,760 h). The planner splits a bucket's load continuously across configurations
(Mélange splits it into slice_factor whole slices), so its optimum can only be lower or equal;
the script exits 1 if the planner costs more than Mélange at slice_factor 4 in any case.
"unpooled" is the planner with policy.pool_jobs false (whole replicas per bucket), for reference.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.app.pipeline import plan_scenario  # noqa: E402
from planner.data.catalog import load_catalog  # noqa: E402
from planner.data.jobs import Workload  # noqa: E402
from planner.data.scenario import Scenario  # noqa: E402
from planner.physics import serving  # noqa: E402

MIN_TPS = 10.0  # tok/s per user: TPOT 100 ms (exactly representable both ways)
TPOT_MS = 1000.0 / MIN_TPS
HOURS = 8760.0
MODEL = "llama-2-7b"
GPUS = {"a10g": "a10g-x1-on-demand-aws", "l4": "l4-x1-on-demand-aws",
        "a100-80gb": "a100-80gb-x1-on-demand-runpod-secure", "h100-sxm": "h100-sxm-x1-on-demand-runpod-secure"}
INPUTS = (64, 128, 256, 512, 1024, 2048)
OUTPUTS = (16, 32, 64, 128, 256, 512)
DRIVER = """import json, sys, time
from melange.solver import MelangeSolver
cfg = json.load(open(sys.argv[1]))
t = time.perf_counter()
res = MelangeSolver(cfg["workload_distribution"], cfg["total_request_rate"], cfg["gpu_info"],
                    cfg["slice_factor"]).run()
print(json.dumps({"result": res, "seconds": time.perf_counter() - t}))
"""


class Case:
    """One comparison: buckets (input, output), GPU types with $/h and users per replica per
    bucket, and in-flight users per bucket."""

    def __init__(self, name: str, buckets: list[tuple[int, int]], gpus: dict[str, tuple[float, list[int]]],
                 users: list[int], slice_factor: int, note: str = "") -> None:
        self.name, self.buckets, self.gpus, self.users, self.slice_factor = name, buckets, gpus, users, slice_factor
        self.note = note

    def seconds(self, b: int) -> float:
        return self.buckets[b][1] / MIN_TPS

    def rates(self) -> list[float]:
        return [u / self.seconds(b) for b, u in enumerate(self.users)]


def melange_config(case: Case, rows: int, cols: int) -> dict:
    rates = case.rates()
    total = sum(rates)
    shape = lambda xs: [xs[r * cols:(r + 1) * cols] for r in range(rows)]  # noqa: E731
    info = {g: {"cost": price, "tputs": shape([max(u / case.seconds(b), 1e-9) for b, u in enumerate(caps)])}
            for g, (price, caps) in case.gpus.items()}
    return {"gpu_info": info, "workload_distribution": shape([r / total for r in rates]),
            "total_request_rate": total, "slice_factor": case.slice_factor}


def run_melange(scratch: Path, config: dict) -> tuple[dict | None, float]:
    path = scratch / "config.json"
    path.write_text(json.dumps(config))
    proc = subprocess.run([sys.executable, str(scratch / "driver.py"), str(path)], cwd=scratch, capture_output=True,
                          text=True, env={"PYTHONPATH": str(scratch), "PATH": "/usr/bin:/bin"}, timeout=600)
    if proc.returncode:
        if "ModuleNotFoundError" in proc.stderr and "melange" not in proc.stderr.splitlines()[-1]:
            print(f"error: Mélange needs pulp, numpy and pandas in this Python ({sys.executable}):\n"
                  f"{proc.stderr.splitlines()[-1]}\n    To fix: pip install pulp numpy pandas", file=sys.stderr)
            raise SystemExit(2)
        raise SystemExit(f"Mélange failed:\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["result"], out["seconds"]


def planner_scenario(case: Case, csv_path: Path, systems: dict[str, str], pool: bool = True) -> Scenario:
    rates = case.rates()
    total = sum(rates)
    lines = ["model,system,tp,precision,input_tokens,output_tokens,concurrency,tpot_ms,ttft_ms,source"]
    offers = []
    for g, (price, caps) in case.gpus.items():
        system = systems[g]
        offers.append({"id": f"{system}-melange", "system": system, "acquisition": "on-demand",
                       "provider": "melange-bench", "price_usd_per_hour": price,
                       "source": "benchmarks/melange.py: the price Mélange is given", "as_of": "2026-12-03"})
        for (inp, outp), u in zip(case.buckets, caps):
            conc, tpot = (u, TPOT_MS) if u >= 1 else (1, 2 * TPOT_MS)
            lines.append(f"{MODEL},{system},1,bf16,{inp},{outp},{conc},{tpot},,capacity table ({case.name})")
    csv_path.write_text("\n".join(lines) + "\n")
    mix = [{"input_tokens": i, "output_tokens": o, "share": r / total} for (i, o), r in zip(case.buckets, rates)]
    return Scenario.model_validate({
        "name": f"melange-{case.name}", "measurements": [str(csv_path)], "offers": offers,
        "policy": {"acquisition": ["on-demand"], "providers": ["melange-bench"], "redundancy": "none",
                   "pool_jobs": pool},
        "jobs": [{"name": "svc", "stage": "serve", "model": MODEL, "precision": "bf16", "requests_per_s": total,
                  "request_mix": mix, "min_tokens_per_s_per_user": MIN_TPS}]})


def run_planner(case: Case, scratch: Path, systems: dict[str, str], pool: bool = True) -> tuple[float, dict, float, float]:
    s = planner_scenario(case, scratch / f"{case.name}.csv", systems, pool)
    t = time.perf_counter()
    plan = plan_scenario(s, explain="none")
    wall = time.perf_counter() - t
    fleet: dict[str, int] = {}
    for f in plan["fleet"]:
        fleet[f["accelerator"]] = fleet.get(f["accelerator"], 0) + f["accelerators"]
    measured = {p["basis"] for j in plan["jobs"] for p in j["placements"]}
    assert measured == {"measured"}, f"{case.name}: placements not all measured: {measured}"
    return plan["total_cost_usd_per_year"] / HOURS, fleet, wall, plan["solver"].get("seconds", float("nan"))


def capacity(cat, acc: str, inp: int, outp: int) -> int:
    m = cat.models[MODEL]
    u, _ = serving.largest_batch(m, cat.accelerators[acc], Workload("bf16", "bf16", inp, outp), 1, 1, MIN_TPS)
    return u


def grid_cases(cat, rates: list[float], slice_factor: int) -> list[Case]:
    buckets = [(i, o) for i in INPUTS for o in OUTPUTS]
    gpus = {g: (cat.offers[oid].price_usd_per_hour, [capacity(cat, g, i, o) for i, o in buckets])
            for g, oid in GPUS.items()}
    mixes = {"uniform": [1.0] * len(buckets),
             "skewed": [0.6 ** (r + c) for r in range(len(INPUTS)) for c in range(len(OUTPUTS))]}
    out = []
    for mix, w in mixes.items():
        shares = [x / sum(w) for x in w]
        for rate in rates:
            users = [max(1, math.ceil(rate * sh * o / MIN_TPS - 1e-9)) for sh, (_, o) in zip(shares, buckets)]
            out.append(Case(f"grid-{mix}-{rate:g}rps", buckets, gpus, users, slice_factor))
    return out


def example_cases(path: Path, slice_factors: list[int]) -> list[Case]:
    cfg = json.loads(path.read_text())
    dist, rate = cfg["workload_distribution"], cfg["total_request_rate"]
    buckets = [(i, o) for i in (128, 512) for o in (10, 20)]
    seconds = [o / MIN_TPS for _, o in buckets]
    flat = [x for row in dist for x in row]
    users = [rate * x * t for x, t in zip(flat, seconds)]
    gpus = {}
    for name, g in cfg["gpu_info"].items():
        caps = [x * t for x, t in zip([x for row in g["tputs"] for x in row], seconds)]
        gpus[name] = (g["cost"], [round(c) for c in caps])
        assert all(abs(c - round(c)) < 1e-9 for c in caps)
    assert all(abs(u - round(u)) < 1e-9 for u in users)
    return [Case(f"example-sf{sf}", buckets, gpus, [round(u) for u in users], sf) for sf in slice_factors]


def fleet_text(fleet: dict[str, int]) -> str:
    return " + ".join(f"{n} {g}" for g, n in sorted(fleet.items()) if n) or "-"


REPO = "https://github.com/tyler-griggs/melange-release"
GET_IT = (f"To get it: git clone {REPO} ../melange-release\n"
          "    then: python benchmarks/melange.py --melange ../melange-release")


def main() -> int:
    usage = "python benchmarks/melange.py --melange PATH [--slice-factor 4] [--rates 4,32]"
    ap = argparse.ArgumentParser(usage=usage, description=__doc__.split("\n\n")[0],
                                 epilog=f"PATH is a checkout of Mélange's published code. {GET_IT}",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--melange", type=Path, metavar="PATH", help="a checkout of Mélange's published code (how to "
                    "get it: below; not a dependency)")
    ap.add_argument("--slice-factor", type=int, default=4, help="Mélange's slices per bucket (default 4)")
    ap.add_argument("--rates", default="4,32", help="total request rates of the grids, req/s (default 4,32)")
    args = ap.parse_args()
    if args.melange is None:
        print(f"error: --melange PATH is missing: this benchmark runs Mélange's own solver from a checkout of its "
              f"published code ({REPO}); nothing was run.\n    {GET_IT}", file=sys.stderr)
        return 2
    if not (args.melange / "melange" / "solver.py").is_file():
        print(f"error: {args.melange / 'melange' / 'solver.py'} not found: --melange is not a checkout of "
              f"Mélange's published code.\n    {GET_IT}", file=sys.stderr)
        return 2
    cat = load_catalog()
    with tempfile.TemporaryDirectory(prefix="melange-bench-") as tmp:
        scratch = Path(tmp)
        shutil.copytree(args.melange / "melange", scratch / "melange")
        (scratch / "driver.py").write_text(DRIVER)
        example = args.melange / "melange" / "config" / "example.json"
        file_sf = json.loads(example.read_text()).get("slice_factor", 1)
        cases = example_cases(example, sorted({file_sf, args.slice_factor}))
        cases += grid_cases(cat, [float(r) for r in args.rates.split(",")], args.slice_factor)
        print(f"Mélange ({args.melange}) against the planner; model {MODEL} bf16, TPOT <= {TPOT_MS:g} ms; "
              f"grid prices: " + ", ".join(f"{g} ${cat.offers[o].price_usd_per_hour:g}/h ({o})" for g, o in GPUS.items()))
        head = (f"{'case':<24} {'sf':>2} {'req/s':>7} {'Mélange $/h':>11} {'planner $/h':>11} {'ratio':>6} "
                f"{'Mélange s':>9} {'planner s':>9} {'MILP s':>7} {'unpooled $/h':>12}  Mélange fleet | planner fleet")
        print(head)
        print("-" * len(head))
        worse = []
        for case in cases:
            rows = 2 if case.name.startswith("example") else len(INPUTS)
            systems = ({"A10G": "a10g-x1", "A100-80GB": "a100-80gb-x1"} if case.name.startswith("example")
                       else {g: oid.split("-on-demand")[0] for g, oid in GPUS.items()})
            config = melange_config(case, rows, len(case.buckets) // rows)
            mel, mel_s = run_melange(scratch, config)
            mel_cost = mel["cost"] if mel else float("nan")
            mel_fleet = {g: n for g, n in (mel or {}).items() if g != "cost"}
            cost, fleet, wall, milp = run_planner(case, scratch, systems)
            alone = run_planner(case, scratch, systems, pool=False)[0]
            ratio = cost / mel_cost if mel else float("nan")
            print(f"{case.name:<24} {case.slice_factor:>2} {config['total_request_rate']:>7.2f} {mel_cost:>11.3f} "
                  f"{cost:>11.3f} {ratio:>6.3f} {mel_s:>9.2f} {wall:>9.2f} {milp:>7.2f} {alone:>12.3f}  "
                  f"{fleet_text(mel_fleet)} | {fleet_text(fleet)}")
            if case.slice_factor == 4 and not cost <= mel_cost * (1 + 1e-6):  # plans state cents per year
                worse.append(case.name)
    print("planner <= Mélange at slice_factor 4 in every case" if not worse
          else f"FAIL: the planner costs more than Mélange in {', '.join(worse)}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
