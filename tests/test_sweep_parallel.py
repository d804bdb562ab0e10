"""Sweeps on several processes or on Ray give the same answer as one by one; Monte-Carlo sweeps report
cost percentiles and fleet wins, the same for the same seed."""

from __future__ import annotations

import json

import pytest

from conftest import SCENARIOS

GRID = ["sweep", str(SCENARIOS / "bank.yaml"), "--set", "jobs.0.concurrent_users=100,200,400", "--format", "json"]


def test_two_workers_give_the_one_worker_answer_in_variant_order(plan_cli):
    one = plan_cli(*GRID, "--workers", "1")
    two = plan_cli(*GRID, "--workers", "2")
    assert one.code == two.code == 0, two.err
    assert one.out == two.out
    assert [e["variant"] for e in json.loads(two.out)] == [1, 2, 3]


def test_quiet_sweep_prints_nothing_on_stderr_and_progress_never_reaches_stdout(plan_cli):
    loud = plan_cli(*GRID, "--workers", "2", "--set", "site.pue=1.2,1.4")
    assert loud.code == 0 and "[" in loud.err and "optimal (" in loud.err
    json.loads(loud.out)  # stdout is only JSON
    quiet = plan_cli(*GRID, "--workers", "2", "--quiet")
    assert quiet.code == 0 and quiet.err == ""


def test_unknown_backend_is_bad_input(plan_cli):
    r = plan_cli(*GRID, "--backend", "slurm")
    assert r.code == 2 and "unknown backend 'slurm'" in r.err and "local or ray" in r.err


def test_ray_backend_on_a_local_ray_gives_the_same_answer(plan_cli):
    ray = pytest.importorskip("ray", reason='Ray is not installed: pip install ".[ray]" to test the ray backend')
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        on_ray = plan_cli(*GRID, "--backend", "ray")
    finally:
        ray.shutdown()
    local = plan_cli(*GRID, "--workers", "1")
    assert on_ray.code == 0, on_ray.err
    assert on_ray.out == local.out


MC = ["sweep", str(SCENARIOS / "bank.yaml"), "--samples", "6", "--workers", "2",
      "--vary", "jobs.*.concurrent_users=uniform(-30%,+30%)", "--vary", "site.power_usd_per_kwh=uniform(0.05,0.3)"]


def test_monte_carlo_reports_percentiles_and_fleet_wins_the_same_for_the_same_seed(plan_cli):
    a = plan_cli(*MC, "--format", "json")
    b = plan_cli(*MC, "--format", "json", "--workers", "1")
    assert a.code == b.code == 0, a.err
    assert a.out == b.out
    result = json.loads(a.out)
    pct = result["cost_usd_per_year"]
    assert result["samples"] == result["with_plan"] == 6
    assert pct["p5"] <= pct["p25"] <= pct["p50"] <= pct["p75"] <= pct["p95"]
    assert sum(f["wins"] for f in result["fleets"]) == 6
    users = [e["settings"]["jobs.0.concurrent_users"] for e in result["entries"]]
    assert all(140 <= u <= 260 for u in users) and len(set(users)) > 1
    other = plan_cli(*MC, "--format", "json", "--seed", "7")
    assert json.loads(other.out)["entries"] != result["entries"]
    text = plan_cli(*MC)
    assert "How often each fleet wins" in text.out and "p95" in text.out


@pytest.mark.parametrize("vary, says", [
    ("jobs.*.concurrent_users=gauss(1,2)", "is not PATH=uniform(LO,HI)"),
    ("jobs.*.concurrent_users=uniform(20%,-20%)", "low bound is above the high one"),
    ("offers.*.price_usd_per_hour=uniform(-20%,20%)", "is not a list in the scenario"),
    ("jobs.*.concurent_users=uniform(-20%,20%)", "did you mean"),
])
def test_bad_vary_says_what_and_how_to_fix(plan_cli, vary, says):
    r = plan_cli("sweep", SCENARIOS / "bank.yaml", "--samples", "2", "--vary", vary)
    assert r.code == 2 and says in r.err, r.err
    assert "Traceback" not in r.err
