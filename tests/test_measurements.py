"""The user's own measurements replace the physics model where they have rows (issue 12)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from planner.app.planning import make_plan
from planner.data.catalog import load_catalog
from planner.data.errors import InputError
from planner.data.measurements import parse_measurements
from planner.data.scenario import Scenario
from planner.physics import measured
from planner.verify.plan import verify

CSV = Path(__file__).parent / "data" / "measurements" / "llama8b-rtx4090.csv"
HEADER = "model,system,tp,precision,input_tokens,output_tokens,concurrency,tpot_ms,ttft_ms,source\n"


def scenario(input_tokens=512, output_tokens=128, users=40) -> Scenario:
    return Scenario.model_validate({
        "name": "m", "measurements": [str(CSV)],
        "policy": {"acquisition": ["on-demand"], "accelerators": ["rtx-4090"]},
        "jobs": [{"name": "chat", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8",
                  "concurrent_users": users, "input_tokens": input_tokens, "output_tokens": output_tokens,
                  "context_tokens": 8192, "min_tokens_per_s_per_user": 40}]})


def test_measured_rows_set_users_speed_and_basis_and_the_verifier_agrees():
    s = scenario()
    plan = make_plan(s, explain=False)
    [p] = plan["jobs"][0]["placements"]
    assert p["basis"] == "measured" and p["basis_note"].startswith("measured: synthetic")
    rows = measured.rows_for(parse_measurements(CSV.read_text(), str(CSV)), "llama-3.1-8b", "rtx-4090-x1", 1, 1, "fp8")
    tpot, _ = measured.at(rows, 512, 128, p["users_per_replica"])
    assert p["tokens_per_s_per_user"] == pytest.approx(1000 / tpot, abs=0.01) and 1000 / tpot >= 40
    assert p["users_per_replica"] <= 64  # never beyond the largest concurrency measured
    assert verify(plan, s, load_catalog()).ok
    forged = copy.deepcopy(plan)
    forged["jobs"][0]["placements"][0]["basis"] = "modelled"
    assert not verify(forged, s, load_catalog()).ok


def test_far_outside_the_measured_sizes_the_physics_model_stands_and_says_why():
    plan = make_plan(scenario(input_tokens=6000, output_tokens=1500, users=4), explain=False)
    for p in plan["jobs"][0]["placements"]:
        assert p["basis"] == "modelled"
        assert "measurements cover 512-8000 input and 128-600 output tokens" in p["basis_note"]


def test_interpolation_is_monotone_and_stays_in_range():
    rows = parse_measurements(HEADER + "m,s,1,fp8,1000,100,1,10,50,x\nm,s,1,fp8,1000,100,8,20,,x\n"
                              "m,s,1,fp8,1000,100,4,25,80,x\n", "t.csv")
    assert measured.at(rows, 1000, 100, 2)[0] == pytest.approx(10 + 15 / 3)  # 1 -> 4 rises to 25
    assert measured.at(rows, 1000, 100, 6)[0] == 25  # the dip at 8 is lifted to 25: never faster with more users
    assert measured.at(rows, 1000, 100, 9) is None  # beyond the largest concurrency measured
    assert measured.at(rows, 1000, 100, 3)[1] is None  # a row without TTFT: TTFT is not measured
    cap, why = measured.capacity(rows, 5000, 100, 10, None)
    assert cap is None and "beyond them" in why


@pytest.mark.parametrize("line, words", [
    ("llama-3.1-8b,rtx-4090-x1,1,fp8,512,128,four,10,,x", "t.csv:2: concurrency is 'four', not a number"),
    ("llama-3.1-8b,rtx-4090-x1,1,fp9,512,128,4,10,,x", "t.csv:2: precision 'fp9' is unknown"),
    ("llama-3.1-8b,rtx-4090-x1,0,fp8,512,128,4,10,,x", "t.csv:2: tp is '0'"),
    ("llama-3.1-8b,rtx-4090-x1,1,fp8,512,128,4,10", "t.csv:2: 8 cells, the header has 10"),
])
def test_bad_rows_name_file_and_line(line, words):
    with pytest.raises(InputError) as e:
        parse_measurements(HEADER + line + "\n", "t.csv")
    assert words in str(e.value)


def test_an_unknown_system_in_the_file_exits_2_with_its_line(tmp_path, plan_cli):
    bad = tmp_path / "m.csv"
    bad.write_text(HEADER + "llama-3.1-8b,rtx-4090-x9,1,fp8,512,128,4,10,,x\n")
    sc = tmp_path / "s.yaml"
    sc.write_text("name: t\nmeasurements: [m.csv]\njobs:\n  - {name: c, stage: serve, model: llama-3.1-8b, "
                  "concurrent_users: 4}\n")
    r = plan_cli(sc)
    assert r.code == 2 and f"{bad}:2: unknown system 'rtx-4090-x9'" in r.err


def _one_job(tmp_path, measurements: str = "") -> Path:
    sc = tmp_path / "s.yaml"
    sc.write_text(f"name: t\n{measurements}policy: {{acquisition: [on-demand], accelerators: [rtx-4090]}}\n"
                  "jobs:\n  - {name: chat, stage: serve, model: llama-3.1-8b, precision: fp8, concurrent_users: 40,"
                  " input_tokens: 512, output_tokens: 128, context_tokens: 8192, min_tokens_per_s_per_user: 40}\n")
    return sc


def test_measurements_flag_makes_placements_measured_and_verify_needs_the_same_flag(tmp_path, plan_cli, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)  # --measurements paths are relative to the working directory
    (tmp_path / "m.csv").write_text(CSV.read_text())
    sc = _one_job(tmp_path)
    plain = plan_cli(sc, "--format", "json", "--explain", "none", "--no-timings")
    r = plan_cli(sc, "--measurements", "m.csv", "--format", "json", "--explain", "none", "--no-timings",
                 "-o", "plan.json")
    assert plain.code == 0 and r.code == 0, r.err
    assert {p["basis"] for p in json.loads(plain.out)["jobs"][0]["placements"]} == {"modelled"}
    placements = json.loads((tmp_path / "plan.json").read_text())["jobs"][0]["placements"]
    assert {p["basis"] for p in placements} == {"measured"}
    ok = plan_cli("verify", sc, "plan.json", "--measurements", "m.csv")
    assert ok.code == 0, ok.err
    without = plan_cli("verify", sc, "plan.json")  # the plan claims measurements the scenario lacks
    assert without.code == 5 and "reports basis measured" in without.out + without.err
    v = plan_cli("validate", sc, "--measurements", "m.csv")
    assert v.code == 0 and "measurements: 12 row(s) from 1 file(s)" in v.out


def test_measurements_flag_adds_to_the_scenarios_own_and_bad_rows_exit_2_at_file_and_line(tmp_path, plan_cli,
                                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.csv").write_text(CSV.read_text())
    (tmp_path / "bad.csv").write_text(HEADER + "llama-3.1-8b,rtx-4090-x1,1,fp8,512,128,4,10,,x\n"
                                      "llama-3.1-8b,rtx-4090-x1,1,fp8,512,128,8,-3,,x\n")
    sc = _one_job(tmp_path, "measurements: [m.csv]\n")
    r = plan_cli(sc, "--measurements", "bad.csv", "--explain", "none")
    assert r.code == 2 and r.out == ""
    assert "bad.csv:3: tpot_ms is '-3'" in r.err and "To fix:" in r.err
    r = plan_cli("validate", sc, "--measurements", "bad.csv")
    assert r.code == 2 and "bad.csv:3:" in r.err
    r = plan_cli(sc, "--measurements", "missing.csv")
    assert r.code == 2 and "missing.csv: file not found" in r.err
    r = plan_cli(sc, "--measurements", "m.csv", "-o", "m.csv", "--force")  # never written over an input
    assert r.code == 2 and "is an input of this run" in r.err


def test_a_sweep_reads_the_scenarios_measurements_relative_to_the_scenario_file(tmp_path, plan_cli, monkeypatch):
    import json

    (tmp_path / "m.csv").write_text(CSV.read_text())
    sc = _one_job(tmp_path, "measurements: [m.csv]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # m.csv is beside the scenario, not in the working directory
    r = plan_cli("sweep", sc, "--set", "jobs.0.concurrent_users=20,40", "--format", "json", "--workers", "1", "-q")
    assert r.code == 0, r.err
    assert [e["summary"]["status"] for e in json.loads(r.out)] == ["optimal", "optimal"]  # not 'bad-input'
    assert "file not found" not in r.out + r.err


def _sixty_users(folder: Path) -> Path:
    """60 users at 1,024 tokens of context on RTX 4090s: the physics model puts 39 on a replica (2
    replicas, $5,957/yr), the synthetic rows (physics x0.6) 64 (1 replica, $2,978/yr)."""
    folder.mkdir(exist_ok=True)
    sc = folder / "s.yaml"
    sc.write_text("name: t\npolicy: {acquisition: [on-demand], accelerators: [rtx-4090]}\njobs:\n"
                  "  - {name: chat, stage: serve, model: llama-3.1-8b, precision: fp8, concurrent_users: 60,"
                  " input_tokens: 512, output_tokens: 128, context_tokens: 1024, min_tokens_per_s_per_user: 40}\n")
    return sc


def test_sweep_takes_measurements_relative_to_the_working_directory_for_every_variant(tmp_path, plan_cli,
                                                                                      monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.csv").write_text(CSV.read_text())
    sc = _sixty_users(tmp_path / "scenarios")  # m.csv is in the working directory, not beside the scenario
    sweep = ("sweep", sc, "--set", "jobs.0.concurrent_users=60,100", "--format", "json", "--workers", "1", "-q")
    plain, measured_ = plan_cli(*sweep), plan_cli(*sweep, "--measurements", "m.csv")
    assert plain.code == 0 and measured_.code == 0, measured_.err
    cost = [[e["summary"]["total_cost_usd_per_year"] for e in json.loads(r.out)] for r in (plain, measured_)]
    assert cost == [pytest.approx([5956.8, 8935.2], abs=1), pytest.approx([2978.4, 5956.8], abs=1)]
    (tmp_path / "bad.csv").write_text(HEADER + "llama-3.1-8b,rtx-4090-x1,1,fp8,512,128,8,-3,,x\n")
    r = plan_cli(*sweep, "--measurements", "bad.csv")
    assert r.code == 2 and r.out == "" and "bad.csv:2: tpot_ms is '-3'" in r.err
    (tmp_path / "names.csv").write_text(HEADER + "llama-3.1-8b,rtx-4090-x9,1,fp8,512,128,8,10,,x\n")
    r = plan_cli(*sweep, "--measurements", "names.csv")  # every variant fails the same way: exit 2, not 3
    assert r.code == 2 and "names.csv:2: unknown system 'rtx-4090-x9'" in r.err
    r = plan_cli(*sweep, "--measurements", "m.csv", "-o", "m.csv", "--force")
    assert r.code == 2 and "is an input of this run" in r.err and (tmp_path / "m.csv").read_text() == CSV.read_text()


def test_compare_shows_what_the_measurements_change(tmp_path, plan_cli, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.csv").write_text(CSV.read_text())
    sc = _sixty_users(tmp_path / "scenarios")
    assert plan_cli(sc, "--format", "json", "--explain", "none", "-o", "modelled.json").code == 0
    r = plan_cli("compare", "modelled.json", sc, "--measurements", "m.csv", "--format", "json")
    assert r.code == 0, r.err
    result = json.loads(r.out)
    assert result["a"]["summary"]["fleet"][0]["systems"] == 2 and result["b"]["summary"]["fleet"][0]["systems"] == 1
    assert result["difference"]["total_cost_usd_per_year"] == pytest.approx(-2978.4, abs=1)
    r = plan_cli("compare", "modelled.json", "modelled.json", "--measurements", "m.csv")
    assert r.code == 2 and "--measurements applies to a scenario solved now" in r.err
    r = plan_cli("compare", "modelled.json", sc, "--measurements", "missing.csv")
    assert r.code == 2 and "missing.csv: file not found" in r.err
