"""A sweep goes on when one variant fails on its own (bad input, a bug, a solver failure): the
variant's row says why; and a sweep never writes its table over the scenario it sweeps."""

from __future__ import annotations

import json
import shutil

from conftest import SCENARIOS

FINETUNE = SCENARIOS / "support-finetune.yaml"


def test_a_variant_with_bad_input_is_reported_in_its_row_and_the_others_are_solved(plan_cli):
    res = plan_cli("sweep", FINETUNE, "--set", "jobs.0.runs_per_year=6,-1,12", "--set",
                   "policy.accelerators=[rtx-4090],[no-such-gpu]", "--workers", "1", "--format", "json")
    assert res.code == 0, res.err
    entries = json.loads(res.out)
    status = {(e["settings"]["jobs.0.runs_per_year"], e["settings"]["policy.accelerators"][0]): e["summary"]
              for e in entries}
    assert status[(6, "rtx-4090")]["status"] == status[(12, "rtx-4090")]["status"] == "optimal"
    assert status[(6, "no-such-gpu")]["status"] == "bad-input"
    assert "unknown accelerator 'no-such-gpu'" in status[(6, "no-such-gpu")]["problem"]
    assert "runs_per_year" in status[(-1, "rtx-4090")]["problem"]
    assert "warning: 4 of 6 variants failed on their own" in res.err
    table = plan_cli("sweep", FINETUNE, "--set", "jobs.0.runs_per_year=6,-1", "--workers", "1")
    assert table.code == 0 and "problem" in table.out and "greater than" in table.out


def test_a_sweep_whose_every_variant_is_bad_input_is_exit_2(plan_cli):
    res = plan_cli("sweep", FINETUNE, "--set", "jobs.0.runs_per_year=-1,-2")
    assert res.code == 2 and "greater than" in res.err


def test_a_variant_that_fails_inside_the_planner_does_not_abort_the_sweep(plan_cli, monkeypatch):
    from planner.app import sweep

    real = sweep.solve_variant

    def flaky(s, *args):
        if s.jobs[0].runs_per_year == 7:
            raise ZeroDivisionError("float division by zero")
        return real(s, *args)

    monkeypatch.setattr(sweep, "solve_variant", flaky)
    res = plan_cli("sweep", FINETUNE, "--set", "jobs.0.runs_per_year=6,7,12", "--workers", "1", "--format", "json")
    assert res.code == 0, res.err
    summaries = [e["summary"] for e in json.loads(res.out)]
    assert [s["status"] for s in summaries] == ["optimal", "error", "optimal"]
    assert "internal error: ZeroDivisionError" in summaries[1]["problem"]


def test_sweep_output_over_the_swept_scenario_is_refused_even_with_force(plan_cli, tmp_path):
    path = tmp_path / "s.yaml"
    shutil.copy(FINETUNE, path)
    before = path.read_text()
    res = plan_cli("sweep", path, "--set", "jobs.0.runs_per_year=6,12", "-o", path, "--force")
    assert res.code == 2 and "is an input of this run" in res.err
    assert path.read_text() == before
