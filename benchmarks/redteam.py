"""The red-team table of issue 16, re-run: every case of its list, through the real `plan` command in a
fresh process, with the exit code and the first line on stderr a user would read (not part of CI).

    python benchmarks/redteam.py [--skip-slow]

One line per case: the case, the exit code, the seconds and the first stderr line that is not
progress (or what was checked, where stdout or a file tells more). --skip-slow leaves out the 50-job
determinism runs and the 500 and 2,000 job plans (minutes on a loaded machine).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BANK = ROOT / "scenarios" / "bank.yaml"
SCENARIOS = ROOT / "scenarios"
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def first_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip() and not x.startswith("planning ")]
    return lines[0][:150] if lines else ""


def plan(*args, timeout=900, env=None, stdin=None) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "planner", *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env or ENV, cwd=ROOT, stdin=stdin)
    return r.returncode, r.stdout, r.stderr, time.perf_counter() - start


def row(case: str, code: int | str, seconds: float, line: str) -> None:
    print(f"{case:<58} {code!s:>4} {seconds:7.1f} s  {line}", flush=True)


def run(case: str, *args, note=None, **kw) -> tuple[int, str, str]:
    code, out, err, took = plan(*args, **kw)
    row(case, code, took, note(code, out, err) if note else first_line(err))
    return code, out, err


def scenario(tmp: Path, name: str, change=None, base: Path = BANK) -> Path:
    doc = yaml.safe_load(base.read_text())
    if change:
        change(doc)
    path = tmp / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def nplus1_jobs(n: int) -> dict:
    """A MILP CBC needs tens of seconds to prove: n serving jobs bought under N+1, CUDA only."""
    models = ["llama-3.1-8b", "qwen3-8b", "gpt-oss-20b", "mistral-small-24b", "gemma-3-27b", "qwen3-32b",
              "llama-3.1-70b", "gpt-oss-120b"]
    jobs = [{"name": f"job-{k:03d}", "stage": "serve", "model": models[k % 8], "precision": ["bf16", "fp8"][k % 2],
             "context_tokens": [4096, 8192, 32768][k % 3], "input_tokens": 512, "output_tokens": 256,
             "concurrent_users": 10 + k, "min_tokens_per_s_per_user": [10, 20, 30][(k // 3) % 3]} for k in range(n)]
    return {"name": f"nplus1-{n}", "site": {"kind": "datacenter"},
            "policy": {"redundancy": "n+1", "acquisition": ["buy"], "stacks": ["cuda"]},
            "solver": {"time_limit_s": 120}, "jobs": jobs}


# --- 1. signals ------------------------------------------------------------------------------------------

def signals(tmp: Path) -> None:
    path = tmp / "slow.yaml"
    path.write_text(yaml.safe_dump(nplus1_jobs(20), sort_keys=False))
    for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")):
        work = tmp / f"tmp-{name}"
        work.mkdir()
        out = tmp / f"plan-{name}.json"
        env = {**ENV, "TMPDIR": str(work)}
        start = time.perf_counter()
        log = tmp / f"err-{name}.txt"
        with open(log, "w") as fh:
            proc = subprocess.Popen([sys.executable, "-m", "planner", path, "--format", "json", "-o", out],
                                    stdout=subprocess.DEVNULL, stderr=fh, text=True, env=env, cwd=ROOT)
            while "(solve)" not in log.read_text() and proc.poll() is None and time.perf_counter() - start < 120:
                time.sleep(0.2)  # the progress line says the MILP is running: signal it then
            time.sleep(1)
            proc.send_signal(sig)
            proc.wait(timeout=120)
        err = log.read_text()
        time.sleep(0.5)
        left = [p.name for p in work.rglob("*")]
        row(f"1. {name} during a solve", proc.returncode, time.perf_counter() - start,
            f"{first_line(err)} | {len(left)} temp file(s) left, output written: {out.exists()}")


# --- 2. forged plans -------------------------------------------------------------------------------------

def forgeries(tmp: Path) -> None:
    plans = {}
    for name in ("bank.yaml", "annual-budget.yaml", "rent-vs-buy.yaml", "support-finetune.yaml", "mixed.yaml"):
        code, out, _, _ = plan(SCENARIOS / name, "--format", "json", "--explain", "none", "--quiet")
        plans[name] = json.loads(out) if code == 0 else None

    def first(p, test):
        return next(x for j in p["jobs"] for x in j["placements"] if test(x))

    def owned(p):
        return next(f for f in p["fleet"] if f["acquisition"] == "buy")

    def scale(node, k=0.1):
        if isinstance(node, dict):
            for key, val in node.items():
                if isinstance(val, (int, float)) and not isinstance(val, bool) and ("usd" in key or "cost" in key):
                    node[key] = val * k
                else:
                    scale(val, k)
        elif isinstance(node, list):
            for x in node:
                scale(x, k)

    def move(p):
        a, b = p["jobs"][0], p["jobs"][1]
        a["cost_usd_per_year"] -= a["cost_usd_per_year"] / 2
        b["cost_usd_per_year"] += a["cost_usd_per_year"]

    def more_rented(p):
        r = next(f for f in p["fleet"] if f["acquisition"] in ("on-demand", "spot"))
        per = r["accelerators"] // r["systems"]
        r["systems"] += 1
        r["accelerators"] += per

    cases = [
        ("annual-budget.yaml", "multi-year: all costs x0.1", scale),
        ("annual-budget.yaml", "multi-year: year-1 fleet emptied", lambda p: p["years"][0].update(fleet=[], utilisation=[])),
        ("annual-budget.yaml", "multi-year: a purchase erased", lambda p: p["years"][2].update(purchases=[])),
        ("annual-budget.yaml", "multi-year: NPV set to 1", lambda p: p.update(npv_usd=1.0)),
        ("bank.yaml", "acquisition buy -> spot", lambda p: owned(p).update(acquisition="spot")),
        ("bank.yaml", "purchase_usd -> 1", lambda p: owned(p).update(purchase_usd=1.0)),
        ("bank.yaml", "$/M tokens -> 0.001", lambda p: p["jobs"][0]["unit_cost"].update(usd_per_million_tokens=0.001)),
        ("mixed.yaml", "cost moved between jobs", move),
        ("rent-vs-buy.yaml", "a rented line 2 -> 3 at the same cost", more_rented),
        ("support-finetune.yaml", "batch share 2.0",
         lambda p: first(p, lambda x: x.get("share_of_runs") is not None).update(share_of_runs=2.0)),
        ("support-finetune.yaml", "batch share -1.0",
         lambda p: first(p, lambda x: x.get("share_of_runs") is not None).update(share_of_runs=-1.0)),
        ("bank.yaml", "3.9 replicas", lambda p: first(p, lambda x: x.get("users_per_replica")).update(replicas=3.9)),
    ]
    for name, label, mutate in cases:
        if plans[name] is None:
            row(f"2. forged {name}: {label}", "-", 0, "the shipped plan did not solve")
            continue
        forged = copy.deepcopy(plans[name])
        try:
            mutate(forged)
        except (StopIteration, IndexError, KeyError):
            row(f"2. forged {name}: {label}", "-", 0, "no such field in this plan")
            continue
        path = tmp / f"forged-{len(label)}-{name}.json"
        path.write_text(json.dumps(forged))
        run(f"2. verify forged: {label}", "verify", SCENARIOS / name, path)


# --- 3 .. 11 ---------------------------------------------------------------------------------------------

def one_year_multiplier(tmp: Path) -> None:
    def change(d):
        d["horizon_years"] = 1
        d["jobs"][0]["demand_multipliers"] = [5]
        d["policy"]["redundancy"] = "none"
    path = scenario(tmp, "one-year.yaml", change)
    run("3. horizon 1 with demand_multipliers [5]", path, "--format", "json", "--no-timings", "--quiet",
        note=lambda c, o, e: (f"users served {sum(p['users_served'] for p in json.loads(o)['jobs'][0]['placements']):,.0f}"
                              if c == 0 else first_line(e)))
    run("3. ... in a sweep (multiplier 5, 1)", "sweep", path, "--set", "jobs.0.demand_multipliers=[5],[1]",
        "--format", "json", "--quiet",
        note=lambda c, o, e: (", ".join(f"x{v['settings']['jobs.0.demand_multipliers'][0]}: {v['summary']['status']} "
                                        f"${v['summary']['total_cost_usd_per_year']:,.0f}/yr" for v in json.loads(o))
                              if c == 0 and o.strip().startswith("[") else first_line(e)))


def outputs(tmp: Path) -> None:
    src = tmp / "in.yaml"
    src.write_text(BANK.read_text())
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    target = tmp / "target.json"
    target.write_text("keep me")
    link = tmp / "link.json"
    link.symlink_to(target)
    dangling = tmp / "dangling.json"
    dangling.symlink_to(tmp / "nowhere.json")
    ro = tmp / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    for label, out, force in (("a FIFO", fifo, True), ("a symlink", link, True), ("/dev/null (a device)", os.devnull, True),
                              ("a directory", tmp, True),
                              ("a read-only folder" + (" (as root: writable)" if root else ""), ro / "plan.json", True),
                              ("the input scenario", src, True), ("a dangling symlink, no --force", dangling, False)):
        run(f"4/8/11. -o {label}" + (" --force" if force else ""), src, "--format", "json", "-o", out,
            *(["--force"] if force else []))
    ro.chmod(0o755)
    kept = stat.S_ISFIFO(os.lstat(fifo).st_mode) and target.read_text() == "keep me" and os.path.islink(dangling)
    row("4. ... afterwards: FIFO, symlink target, dangling link", "-", 0, "all untouched" if kept else "CHANGED")
    old = os.umask(0o022)
    try:
        code, _, _, took = plan(src, "--format", "json", "-o", tmp / "umask.json", "--quiet")
    finally:
        os.umask(old)
    mode = oct(stat.S_IMODE(os.stat(tmp / "umask.json").st_mode)) if code == 0 else "-"
    row("11. new file under umask 022", code, took, f"mode {mode}")
    run("8. -o into a missing folder (sweep, checked first)", "sweep", src, "--set",
        "jobs.0.concurrent_users=100,200", "-o", tmp / "missing" / "sweep.json")


def devices(tmp: Path) -> None:
    link = tmp / "zero.yaml"
    link.symlink_to("/dev/zero")
    for label, args in (("scenario /dev/zero", ("validate", "/dev/zero")), ("scenario /dev/urandom", ("validate", "/dev/urandom")),
                        ("scenario symlink to /dev/zero", ("validate", link)),
                        ("--catalog /dev/zero", ("validate", BANK, "--catalog", "/dev/zero")),
                        ("plan verify PLAN=/dev/zero", ("verify", BANK, "/dev/zero"))):
        run(f"5. {label}", *args)


def determinism(tmp: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from speed import random_job

    rng = random.Random(50)
    body = {"name": "fifty", "site": {"kind": "office"}, "jobs": [random_job(rng, k) for k in range(50)]}
    path = tmp / "fifty.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    for limit in ((), ("--time-limit", "900")):
        outs, took = [], 0.0
        for _ in range(2):
            code, out, _, t = plan(path, "--format", "json", "--no-timings", "--quiet", *limit, timeout=1800)
            outs.append((code, out))
            took += t
        cuts = [len(json.loads(o).get("solver", {}).get("cut_short") or ()) for c, o in outs if c == 0]
        same = outs[0] == outs[1]
        row(f"6. --no-timings at 50 jobs, two runs, limit {limit[1] if limit else 60} s",
            "/".join(str(c) for c, _ in outs), took, ("byte-identical" if same else "different")
            + (f"; cuts said in each: {cuts}" if any(cuts) else "; nothing cut"))


def numbers(tmp: Path) -> None:
    tiny = {"id": "tiny-moe", "name": "tiny", "family": "t", "params_b": 10, "active_params_b": 2, "layers": 8,
            "hidden_size": 1024, "attention_heads": 8, "kv_heads": 8, "head_dim": 128, "ffn_size": 4096,
            "vocab_size": 32000, "source": "test", "as_of": "2026-01-01"}
    cases = [("discount_rate 1e-17", lambda d: d["policy"].update(discount_rate=1e-17)),
             ("useful_life_years 1e-300", lambda d: d.update(prices=[{"offer": "h200-nvl-x4-buy-oem",
                                                                      "useful_life_years": 1e-300}])),
             ("experts_per_token above experts", lambda d: d.update(models=[{**tiny, "experts": 4, "experts_per_token": 8}])),
             ("an MLA model without its ranks", lambda d: d.update(models=[{**tiny, "attention": "mla"}])),
             ("concurrent_users: true", lambda d: d["jobs"][0].update(concurrent_users=True))]
    for label, change in cases:
        run(f"7. {label}", "validate", scenario(tmp, "n.yaml", change))
    acc = (ROOT / "catalog" / "accelerators.csv").read_text().splitlines()
    header = [c.strip() for c in next(x for x in acc if not x.startswith("#")).split(",")]
    cells = next(x for x in acc if x.startswith("h200-nvl,")).split(",")
    for value in ("inf", "1e308"):
        cells[header.index("memory_gb")] = value
        (tmp / "accelerators.csv").write_text(",".join(header) + "\n" + ",".join(cells) + "\n")
        run(f"7. catalog memory_gb {value}", "validate", BANK, "--catalog", tmp / "accelerators.csv")
    run("7. estimate --tokens inf", "estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--stage",
        "finetune", "--tokens", "inf", "--format", "json")
    bad = tmp / "bad.json"
    bad.write_text('{"status": "optimal", "fleet": [')
    run("7. plan verify on malformed plan JSON", "verify", BANK, bad)
    run("7. plan compare on malformed plan JSON", "compare", bad, bad)


def absurd_row(tmp: Path) -> None:
    lines = (ROOT / "catalog" / "systems.csv").read_text().splitlines()
    header = next(x for x in lines if not x.startswith("#"))
    cols = [c.strip() for c in header.split(",")]
    cells = next(x for x in lines if x.startswith("h200-nvl-x4,")).split(",")
    cells[cols.index("accelerators")] = "1000000000"
    (tmp / "systems.csv").write_text(header + "\n" + ",".join(cells) + "\n")
    run("9. a system of 10^9 accelerators", BANK, "--catalog", tmp / "systems.csv", "--quiet")


def exit3_advice(tmp: Path) -> None:
    def change(d):
        d["horizon_years"] = 20
        d["jobs"][0]["growth_per_year"] = 10
        d["budget"] = {"usd_per_year": 2_000_000}
    run("10. exit 3 at growth_per_year 10 over 20 years", scenario(tmp, "grow.yaml", change), "--quiet",
        note=lambda c, o, e: " / ".join(x.strip() for x in (e + o).splitlines() if x.strip().startswith("- "))[:150]
        or first_line(e))


def scale(tmp: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from milp import jobs

    for n in (500, 2000):
        body = {"name": f"large-{n}", "site": {"kind": "datacenter"},
                "policy": {"acquisition": ["buy", "on-demand", "reserved-1y", "reserved-3y", "spot"]},
                "solver": {"time_limit_s": 60, "gap": 0.01}, "jobs": jobs(n, 3)}
        path = tmp / f"large-{n}.yaml"
        path.write_text(yaml.safe_dump(body, sort_keys=False))
        run(f"11. {n} jobs, solver.time_limit_s 60 (whole command)", path, "--format", "json", "--no-timings",
            "-o", tmp / f"large-{n}.json", timeout=1800)


def small_things(tmp: Path) -> None:
    def cheap(d):
        d["site"]["power_usd_per_kwh"] = 0
        d["offers"] = [{"id": "h200-nvl-x4-buy-cheap", "system": "h200-nvl-x4", "acquisition": "buy",
                        "provider": "oem", "purchase_usd": 1e-9, "useful_life_years": 5, "source": "test",
                        "as_of": "2026-12-01"}]
    run("11. near-zero price (a system for $1e-9)", scenario(tmp, "cheap.yaml", cheap), "--format", "json",
        "--explain", "none", "--quiet",
        note=lambda c, o, e: (", ".join(f"{f['systems']}x {f['offer']}" for f in json.loads(o)["fleet"])
                              if c == 0 else first_line(e)))
    own = SCENARIOS / "own-model.yaml"
    run("11. inline params_b 7 for a 14.8B architecture", scenario(tmp, "pb.yaml", lambda d: d["models"][0].update(
        params_b=7.0), base=own), "--quiet", note=lambda c, o, e: next((x for x in e.splitlines() if "params_b" in x), "")[:150])
    run("11. context above the model's maximum", scenario(tmp, "ctx.yaml", lambda d: d["jobs"][0].update(
        context_tokens=65536), base=own), "--quiet",
        note=lambda c, o, e: next((x for x in e.splitlines() if "maximum context" in x), "")[:150])
    run("11. control characters in the scenario name", scenario(tmp, "ctl.yaml", lambda d: d.update(
        name="evil\x1b[2J\rname")), "--quiet",
        note=lambda c, o, e: "escaped" if "\x1b" not in o and "\\x1b[2J" in o else "RAW")
    text = (ROOT / "catalog" / "offers.csv").read_text()
    import csv
    import io
    rows = list(csv.DictReader(x for x in text.splitlines() if not x.startswith("#")))
    r = next(x for x in rows if x["id"] == "h200-nvl-x4-buy-oem")
    r["source"] = '=HYPERLINK("http://x","click")'
    with open(tmp / "offers-formula.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(r))
        w.writeheader()
        w.writerow(r)
    run("11. CSV export of a =HYPERLINK cell", "catalog", "offers", "--format", "csv", "--catalog", tmp / "offers-formula.csv",
        note=lambda c, o, e: "escaped" if not any(x.startswith(("=", "+", "@")) for line in csv.reader(io.StringIO(o))
                                                  for x in line) else "RAW FORMULA")
    (tmp / "bom").mkdir()
    (tmp / "bom" / "offers.csv").write_bytes(b"\xef\xbb\xbf" + (ROOT / "catalog" / "offers.csv").read_bytes())
    run("11. catalog offers.csv with a UTF-8 BOM", "validate", BANK, "--catalog", tmp / "bom" / "offers.csv")
    (tmp / "empty").mkdir()
    run("11. empty catalog folder", "validate", BANK, "--catalog", tmp / "empty")
    secret = tmp / "notes.txt"
    secret.write_text("TOP-SECRET-LINE,password=hunter2\n")
    run("11. scenario catalog: key naming another file", "validate", scenario(tmp, "sec.yaml", lambda d: d.update(
        catalog=str(secret))), note=lambda c, o, e: first_line(e) + (" | SECRET ECHOED" if "hunter2" in e else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-slow", action="store_true")
    a = ap.parse_args()
    print(f"{'case':<58} {'exit':>4} {'seconds':>9}  first stderr line (or what was checked)")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for step in (signals, forgeries, one_year_multiplier, outputs, devices, numbers, absurd_row, exit3_advice,
                     small_things):
            sub = tmp / step.__name__
            sub.mkdir()
            step(sub)
        if not a.skip_slow:
            for step in (determinism, scale):
                sub = tmp / step.__name__
                sub.mkdir()
                step(sub)
    return 0


if __name__ == "__main__":
    sys.exit(main())
