"""Fuzz the planner end to end: generated scenarios, half valid and half invalid (not part of CI).

    python benchmarks/fuzz.py --n 2000 --seed 1 [--workers 2] [--subprocess 20] [--start 0]

A valid scenario must end in a verified plan (exit 0) or a diagnosed infeasibility (exit 3); exit 4
(no plan within the per-scenario time limit) is counted and shown. An invalid one must end in exit 2.
Every plan passes the independent verifier inside the pipeline, so a verifier failure is an exit 1;
a plan whose explanations its own numbers contradict (fuzzgen.explanation_faults: a re-planned
restriction cheaper than the plan's proven bound, a cap said to bind that saves nothing) is counted
as an explanation fault.
Scenarios run in-process (worker processes, for speed); --subprocess more run through the real
`python -m planner` command line, to check the process boundary too. Prints the exit-code counts,
tracebacks, verifier failures, wrong exit codes and the wall time; exits 1 if any of those is found.
Each problem is also printed on stderr as it is found. --start splits a long run into parts that
report one by one: `--start 0 --n 1000`, `--start 1000 --n 1000`, ... are the cases of `--n 2000`.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from planner.app.fuzzgen import (
    EXPLANATION_FAULT,
    invalid_scenario,
    run_mapping,
    valid_scenario,
)

EXPECTED = {"valid": (0, 3, 4), "invalid": (2,)}


def case(seed: int, i: int) -> tuple[str, dict]:
    rng = random.Random(seed * 1_000_003 + i)
    kind = "valid" if i % 2 == 0 else "invalid"
    return kind, (valid_scenario if kind == "valid" else invalid_scenario)(rng)


def run_case(args: tuple[int, int, float]) -> tuple[int, str, int, str, float]:
    seed, i, limit = args
    kind, data = case(seed, i)
    start = time.perf_counter()
    code, message = run_mapping(data, limit)
    return i, kind, code, message, time.perf_counter() - start


def run_cli(seed: int, i: int, folder: Path) -> tuple[int, str, int, str]:
    kind, data = case(seed, i)
    path = folder / f"case-{i}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "planner", str(path), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    bad_stdout = proc.returncode != 0 and proc.stdout.strip() and not proc.stdout.lstrip().startswith("{")
    message = (proc.stderr.strip().splitlines() or [""])[0]
    if "Traceback" in proc.stderr or bad_stdout:
        return i, kind, -1, proc.stderr
    return i, kind, proc.returncode, message


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="scenarios to generate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=5.0, help="wall-clock seconds per scenario (the plan's whole budget)")
    ap.add_argument("--subprocess", type=int, default=20, help="of the scenarios, run this many via the CLI")
    ap.add_argument("--start", type=int, default=0, help="index of the first case (to run a long fuzz in parts)")
    args = ap.parse_args()

    start = time.perf_counter()
    counts: collections.Counter = collections.Counter()
    problems: list[str] = []
    slowest: list[tuple[float, int]] = []
    jobs = [(args.seed, i, args.time_limit) for i in range(args.start, args.start + args.n)]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        for i, kind, code, message, seconds in pool.imap_unordered(run_case, jobs, chunksize=4):
            counts[(kind, code)] += 1
            slowest.append((seconds, i))
            if len(slowest) % 100 == 0:
                print(f"  {len(slowest)} done, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
            if code == -1:
                problems.append(f"case {i} ({kind}): TRACEBACK\n{message}")
            elif code == EXPLANATION_FAULT:
                problems.append(f"case {i} ({kind}): EXPLANATION FAULT {message[:3000]}")
            elif code not in EXPECTED[kind]:
                problems.append(f"case {i} ({kind}): exit {code}: {message[:2000]}")
            if code == -1 or code not in EXPECTED[kind]:
                print(f"PROBLEM {problems[-1]}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.start, args.start + min(args.subprocess, args.n)):
            _, kind, code, message = run_cli(args.seed, i, Path(tmp))
            counts[(f"{kind} (cli)", code)] += 1
            if code == -1 or code not in EXPECTED[kind]:
                problems.append(f"cli case {i} ({kind}): exit {code}: {message[:2000]}")
    wall = time.perf_counter() - start

    print(f"fuzz: {args.n} scenarios from case {args.start} (seed {args.seed}), {args.workers} workers, "
          f"{args.time_limit:g} s limit per scenario, {wall:.0f} s wall")
    print("exit-code counts:")
    for (kind, code), n in sorted(counts.items()):
        print(f"  {kind:15s} exit {code:2d}: {n}")
    tracebacks = sum(n for (k, c), n in counts.items() if c == -1)
    verifier = sum(n for (k, c), n in counts.items() if c == 1)
    faults = sum(n for (k, c), n in counts.items() if c == EXPLANATION_FAULT)
    wrong = len(problems) - tracebacks - verifier - faults
    print(f"tracebacks: {tracebacks}\nverifier failures (exit 1): {verifier}\nexplanation faults: {faults}\n"
          f"unexpected exit codes: {wrong}")
    slowest.sort(reverse=True)
    print("slowest: " + ", ".join(f"case {i} {s:.1f} s" for s, i in slowest[:5]))
    for p in problems[:20]:
        print("\n" + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
