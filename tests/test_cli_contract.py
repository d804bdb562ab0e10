"""The command-line contract users script against: byte-identical JSON, JSON-only stdout, exit codes,
--output written atomically and never over a file without --force, and solver faults (CBC missing,
killed, out of time) as a warned plan or exit 4."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, SCENARIOS


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "planner", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, **(env or {})}, timeout=300)


@pytest.mark.parametrize("scenario, seeds", [("bank.yaml", ("0", "4242")), ("mixed.yaml", ("0", "77"))])
def test_json_is_byte_identical_across_runs_and_hash_seeds(scenario, seeds):
    outs = [cli(SCENARIOS / scenario, "--format", "json", "--no-timings", env={"PYTHONHASHSEED": seed})
            for seed in seeds]
    for r in outs:
        assert r.returncode == 0, r.stderr
        assert "seconds" not in json.loads(r.stdout)["solver"]  # stdout is JSON and only JSON
    assert all(r.stdout == outs[0].stdout for r in outs)
    if scenario != "bank.yaml":
        return
    # with timings (the default, for scripts that read solver.seconds) only that number differs
    timed = json.loads(cli(SCENARIOS / scenario, "--format", "json").stdout)
    assert isinstance(timed["solver"].pop("seconds"), float)
    assert timed == json.loads(outs[0].stdout)


def test_stdout_is_json_only_on_success_and_infeasibility(tmp_path, plan_cli):
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json")
    assert r.code == 0 and json.loads(r.out)["status"] in ("optimal", "feasible")
    path = tmp_path / "broke.yaml"
    path.write_text((SCENARIOS / "bank.yaml").read_text() + "budget:\n  usd_per_year: 1000\n")
    r = plan_cli(path, "--format", "json")
    assert r.code == 3
    body = json.loads(r.out)
    assert body["status"] == "infeasible" and "budget.usd_per_year" in body["diagnosis"]
    assert r.err.startswith("infeasible: ")


def test_exit_2_prints_nothing_on_stdout(tmp_path, plan_cli):
    path = tmp_path / "bad.yaml"
    path.write_text("name: t\njobs: [1]\n")
    r = plan_cli(path, "--format", "json")
    assert r.code == 2 and r.out == "" and r.err.startswith("error: ")


# --- --output ---------------------------------------------------------------------------------------

def test_output_written_and_never_overwritten_without_force(tmp_path, plan_cli):
    out = tmp_path / "plan.json"
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json", "--no-timings", "--output", out)
    assert r.code == 0 and r.out == "" and f"wrote {out}" in r.err
    first = out.read_text()
    assert json.loads(first)["scenario"] == "bank-assistant"

    out.write_text("my notes\n")
    out.chmod(0o600)  # a private file stays private when --force replaces it
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json", "--output", out)
    assert r.code == 2
    assert r.err.splitlines()[0] == f"error: --output: {out} already exists"
    assert "pass --force" in r.err
    assert out.read_text() == "my notes\n"  # untouched

    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json", "--no-timings", "--output", out, "--force")
    assert r.code == 0 and out.read_text() == first
    assert out.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # no temporary file left behind


def test_output_into_a_missing_folder(tmp_path, plan_cli):
    r = plan_cli(SCENARIOS / "bank.yaml", "--output", tmp_path / "nope" / "plan.txt")
    assert r.code == 2 and "does not exist" in r.err.splitlines()[0]
    assert not (tmp_path / "nope").exists()


def test_no_file_when_the_plan_fails(tmp_path, plan_cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\n")
    out = tmp_path / "plan.txt"
    r = plan_cli(bad, "--output", out)
    assert r.code == 2 and not out.exists()


# --- solver faults ------------------------------------------------------------------------------------

def real_cbc() -> str:
    import cbcbox

    return cbcbox.cbc_bin_path()


def fake_cbc(tmp_path: Path, body: str) -> Path:
    """An executable standing in for cbc: a Python script with the given body (argv in `args`)."""
    path = tmp_path / "cbc"
    path.write_text(f"#!{sys.executable}\nimport os, subprocess, sys\nargs = sys.argv[1:]\n"
                    + textwrap.dedent(body))
    path.chmod(0o755)
    return path


STOP_ON_TIME = """
    code = subprocess.call([{real!r}] + args, stdout=subprocess.DEVNULL)
    sol = args[args.index("-solution") + 1]
    lines = open(sol).read().splitlines(True)
    head = lines[0].split(" - ", 1)
    if {keep}:
        lines[0] = "Stopped on time - " + head[1]
    else:  # what CBC writes when time runs out before any integer solution
        lines[0] = "Stopped on time (no integer solution - continuous used) - " + head[1]
    open(sol, "w").writelines(lines)
    sys.exit(code)
"""


def test_time_limit_always_set():
    from planner.milp.solvers import make_solver

    solver, _ = make_solver(0.2, 0.001)
    assert solver.timeLimit == 0.25  # never 0 (no limit): at least MIN_LIMIT_S
    solver, _ = make_solver(4.637, 0.001)
    assert solver.timeLimit == 4.64  # fractional seconds, not truncated to whole ones
    solver, _ = make_solver(60, 0.001)
    assert solver.timeLimit == 60


def test_one_thread_is_cbcs_serial_search_not_a_one_worker_tree():
    """solvers.CBC_THREADS_MIN: `-threads 1` ran CBC's tree in a worker whose end could wait 10 s
    for a missed wake-up (7 runs in 2,000 on a loaded machine); one thread passes no -threads."""
    from planner.milp.solvers import make_solver

    for threads, said in ((1, []), (2, ["threads 2"]), (8, ["threads 8"])):
        solver, name = make_solver(5, 0.001, threads=threads)
        assert name.startswith("cbc")
        assert [o for o in solver.getOptions() if o.startswith("threads")] == said


def test_cbc_missing(monkeypatch, tmp_path, plan_cli):
    monkeypatch.setenv("PLANNER_CBC", str(tmp_path / "no-cbc-here"))
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json")
    assert r.code == 4 and r.out == ""
    assert r.err.splitlines()[0] == f"error: PLANNER_CBC is set to {tmp_path / 'no-cbc-here'}, which is not an executable file."


def test_cbc_killed(monkeypatch, tmp_path, plan_cli):
    monkeypatch.setenv("PLANNER_CBC", str(fake_cbc(tmp_path, "import signal\nos.kill(os.getpid(), signal.SIGKILL)\n")))
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json")
    assert r.code == 4 and r.out == ""
    assert r.err.startswith("error: the solver (cbc (cbcbox)) stopped without a result: it crashed, was killed")


def test_out_of_time_with_a_plan_warns_with_its_gap(monkeypatch, tmp_path, plan_cli):
    """CBC stopped by its time limit with an incumbent, on one core (no HiGHS prover beside it:
    app/beside.py): the plan is printed, verified, marked 'feasible', and stderr warns that
    optimality is not proven."""
    from planner.milp import mipbound, screening

    monkeypatch.setattr(mipbound, "cores", lambda: 1)
    limits, real = [], screening.search
    monkeypatch.setattr(screening, "search", lambda fm, **k: limits.append(k.get("time_limit_s")) or real(fm, **k))
    monkeypatch.setenv("PLANNER_CBC", str(fake_cbc(tmp_path, STOP_ON_TIME.format(real=real_cbc(), keep=True))))
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json", "--explain", "none")  # (the plan's own search)
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    assert plan["status"] == "feasible" and plan["solver"]["gap"] is not None
    assert "warning: the plan is feasible but not proven optimal (gap up to" in r.err
    assert len(limits) == 1 and limits[0] > 0.5 * 60  # one search, given (nearly) the whole limit: no first share


def test_a_plan_cbc_leaves_unproven_is_proven_by_highs_beside_it(monkeypatch, tmp_path, plan_cli):
    """CBC stopped by its time limit with an incumbent, twice (its first share, then its search from
    that plan): on two cores HiGHS's prover of the same model (app/beside.py) proves the plan
    optimal, the plan being CBC's (or the prover's where cheaper), verified, with no warning."""
    from planner.app import beside
    from planner.milp import mipbound

    if mipbound.cores() < mipbound.MIN_CORES:
        pytest.skip("one core: no prover beside CBC")
    started = []
    real = beside.prover
    monkeypatch.setattr(beside, "prover", lambda bound: started.append(real(bound)) or started[-1])
    monkeypatch.setenv("PLANNER_CBC", str(fake_cbc(tmp_path, STOP_ON_TIME.format(real=real_cbc(), keep=True))))
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json", "--explain", "none")
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    assert len(started) == 1 and started[0].proc is None  # started once, stopped
    assert plan["status"] == "optimal" and plan["solver"]["gap"] <= 0.001 + 1e-12, plan["solver"]
    assert "not proven optimal" not in r.err
    assert plan["total_cost_usd_per_year"] == pytest.approx(135670.91, rel=1e-6)


def test_a_search_the_time_limit_stopped_is_warned_once(capsys):
    """A feasible plan whose search the time limit ended gets one warning naming both (with the gap
    and the fix), not two; other cuts keep their own line."""
    from planner.app.planning import CUTS
    from planner.cli.running import _warnings

    _warnings({"status": "feasible", "solver": {"gap": 0.0388, "cut_short": [CUTS["solve"], CUTS["explanations"]]}})
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == ("warning: the time limit cut short the MILP search: the plan is feasible but not proven "
                        "optimal (gap up to 3.88%); raise --time-limit (or solver.time_limit_s) for a proof")
    assert len(lines) == 2 and lines[1].startswith("warning: the time limit cut short the explanations")


def test_a_shortlisted_plan_is_warned_of_only_when_not_proven(capsys):
    """A shortlisted plan proven optimal against the full model's bound (every candidate pair) gets
    no shortlist warning (it said "not proven over every candidate" under "optimal"); a feasible one
    is told what its gap covers and what the shortlist may have missed."""
    from planner.cli.running import _warnings

    _warnings({"status": "optimal", "solver": {"gap": 0.001, "pairs_pruned": 362}})
    assert capsys.readouterr().err == ""
    _warnings({"status": "feasible", "solver": {"gap": 0.0235, "pairs_pruned": 8960}})
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "(gap up to 2.35%)" in lines[0]
    assert lines[1] == ("warning: a large scenario: the search ran over a shortlist that left out 8,960 of the "
                        "candidate (configuration, offer) pairs; the gap is measured against every pair (the full "
                        "model's bound), and a cheaper plan may use one left out; split the scenario or narrow the "
                        "policy to search them all")


def test_out_of_time_without_a_plan_is_exit_4(monkeypatch, tmp_path, plan_cli):
    monkeypatch.setenv("PLANNER_CBC", str(fake_cbc(tmp_path, STOP_ON_TIME.format(real=real_cbc(), keep=False))))
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json")
    assert r.code == 4 and r.out == ""
    assert r.err.splitlines()[0] == "error: no plan within the solver's limits (status: not-solved)."
    assert "raise solver.time_limit_s" in r.err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux) to fill standard output")
def test_a_full_disk_behind_stdout_is_said_not_called_a_bug():
    """`plan bank.yaml > file` on a full disk: exit 2 saying standard output could not be written,
    not 'internal error ... a bug in the planner'."""
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "planner", str(SCENARIOS / "bank.yaml"), "--explain", "none"],
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "standard output could not be written: No space left on device" in r.stderr
    assert "bug" not in r.stderr


@pytest.mark.parametrize("content, said", [
    ("h100-sxm-x8-buy-thinkmate,x,2026-01-01,h100-sxm-x8,buy,thinkmate,global,oem,,1000\n",
     "the first line is not a header naming the columns (no 'id' column)"),
    ("# only a comment\n", "the file holds no header and no rows"),
    ("id,purchase_usd\n", "the file holds a header but no rows"),
])
def test_a_catalog_override_that_would_change_nothing_is_refused(tmp_path, plan_cli, content, said):
    """An offers.csv override without its header line read as a header and no rows: the plan used
    the bundled price and said nothing. Such a file, or one with no rows, exits 2 saying why."""
    folder = tmp_path / "cat"
    folder.mkdir()
    (folder / "offers.csv").write_text(content)
    r = plan_cli(SCENARIOS / "bank.yaml", "--catalog", folder, "--explain", "none")
    assert r.code == 2 and said in r.err and "To fix" in r.err, r.err


def test_dash_reads_the_scenario_from_stdin_and_writes_to_stdout(tmp_path):
    """`cat bank.yaml | plan - -o -`: the scenario from standard input (as the not-found message
    suggests), the plan on standard output (no file named '-')."""
    r = subprocess.run([sys.executable, "-m", "planner", "-", "--explain", "none", "-q", "-o", "-"],
                       input=(SCENARIOS / "bank.yaml").read_text(), capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Plan for 'bank-assistant': optimal")
    assert not (tmp_path / "-").exists()


def test_a_short_limit_is_searched_whole_by_cbc_alone(monkeypatch, tmp_path, plan_cli):
    """A 5 s limit (under beside.WHOLE_MIN_S): one CBC search of the whole time, no first share and no
    prover (a first share that found no plan cost an infeasible scenario its diagnosis)."""
    from planner.milp import screening

    limits, real = [], screening.search
    monkeypatch.setattr(screening, "search", lambda fm, **k: limits.append(k.get("time_limit_s")) or real(fm, **k))
    monkeypatch.setenv("PLANNER_CBC", str(fake_cbc(tmp_path, STOP_ON_TIME.format(real=real_cbc(), keep=True))))
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "json", "--explain", "none", "--time-limit", "5")
    assert r.code == 0, r.err
    assert len(limits) == 1 and limits[0] > 3.5, limits
