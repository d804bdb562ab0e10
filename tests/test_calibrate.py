"""`plan calibrate`: benchmark files in, a measurements CSV out that `plan --measurements` uses, and
the physics model's error against the rows (issue 12). Every test goes through the CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from planner.data.catalog import load_catalog
from planner.data.jobs import Workload
from planner.data.measurements import COLUMNS, parse_measurements
from planner.physics import serving

BENCH = Path(__file__).parent / "data" / "bench"
VLLM = BENCH / "vllm_benchmark_serving.json"
SGLANG = BENCH / "sglang_bench_serving.jsonl"
GENAI = BENCH / "genai_perf_profile_export_genai_perf.json"
TRTLLM = BENCH / "trtllm-bench" / "report.json"
FLAGS = ("--system", "h100-sxm-x1", "--tp", "1", "--precision", "bf16")


def test_three_formats_become_one_csv_that_plans_use_as_measured(tmp_path, plan_cli):
    out = tmp_path / "m.csv"
    r = plan_cli("calibrate", VLLM, SGLANG, GENAI, *FLAGS, "-o", out)
    assert r.code == 0, r.err
    assert f"4 row(s) from 3 file(s); plan with --measurements {out}" in r.err
    lines = list(csv.DictReader(io.StringIO(out.read_text())))
    assert tuple(lines[0]) == COLUMNS
    got = [(x["model"], x["system"], x["tp"], x["precision"], x["input_tokens"], x["output_tokens"],
            x["concurrency"], x["tpot_ms"], x["ttft_ms"]) for x in lines]
    assert got == [("llama-3.1-8b", "h100-sxm-x1", "1", "bf16", "1024", "256", "16", "6.91", "48.37"),
                   ("llama-3.1-8b", "h100-sxm-x1", "1", "bf16", "1024", "256", "16", "6.84", "51.06"),
                   ("llama-3.1-8b", "h100-sxm-x1", "1", "bf16", "1024", "256", "64", "9.72", "117.45"),
                   ("llama-3.1-8b", "h100-sxm-x1", "1", "bf16", "1024", "256", "64", "9.85", "121.4")]
    assert lines[0]["source"] == f"vllm:{VLLM} served meta-llama/Llama-3.1-8B-Instruct"  # the checkpoint's name kept
    assert len(parse_measurements(out.read_text(), str(out))) == 4

    sc = tmp_path / "s.yaml"
    sc.write_text("name: h\npolicy: {acquisition: [on-demand], accelerators: [h100-sxm]}\njobs:\n"
                  "  - {name: chat, stage: serve, model: llama-3.1-8b, precision: bf16, concurrent_users: 100,"
                  " input_tokens: 1024, output_tokens: 256, min_tokens_per_s_per_user: 50}\n")
    p = plan_cli(sc, "--measurements", out, "--format", "json", "--explain", "none")
    assert p.code == 0, p.err
    [pl] = json.loads(p.out)["jobs"][0]["placements"]
    assert (pl["system"], pl["basis"], pl["users_per_replica"]) == ("h100-sxm-x1", "measured", 64)
    assert pl["tokens_per_s_per_user"] == pytest.approx(1000 / 9.85, abs=0.01)  # the slower of the two at 64


@pytest.mark.parametrize("sample, flags, users", [
    (VLLM, ("--system", "h100-sxm-x1"), 16),                            # records TP and precision
    (SGLANG, ("--system", "h100-sxm-x1", "--precision", "bf16"), 64),   # dtype 'auto' names no precision
    (GENAI, ("--system", "h100-sxm-x1", "--tp", "1", "--precision", "bf16"), 64),
    (TRTLLM, ("--system", "h100-sxm-x1", "--concurrency", "64"), 64),  # trtllm-bench never saves its concurrency
])
def test_each_format_round_trips_into_a_plan_that_says_measured(tmp_path, plan_cli, monkeypatch, sample, flags, users):
    """The README's steps with one sample file: calibrate, validate, plan tests/data/bench/chat-8b.yaml."""
    monkeypatch.chdir(tmp_path)
    r = plan_cli("calibrate", sample, *flags, "-o", "m.csv")
    assert r.code == 0, r.err
    v = plan_cli("validate", BENCH / "chat-8b.yaml", "--measurements", "m.csv")
    assert v.code == 0 and "used in place of the physics model for chat where they cover" in v.out, v.out + v.err
    p = plan_cli(BENCH / "chat-8b.yaml", "--measurements", "m.csv", "--format", "json", "--explain", "none")
    assert p.code == 0, p.err
    job = json.loads(p.out)["jobs"][0]
    assert {(pl["system"], pl["tensor_parallel"], pl["basis"], pl["users_per_replica"]) for pl in job["placements"]} \
        == {("h100-sxm-x1", 1, "measured", users)}  # never beyond the largest concurrency measured
    assert sum(pl["replicas"] for pl in job["placements"]) == -(-100 // users)
    tool = {VLLM: "vllm", SGLANG: "sglang", GENAI: "genai-perf", TRTLLM: "trtllm-bench"}[sample]
    assert all(f"basis: measured ({tool}:{sample}" in why for why in job["why"])
    assert "the largest concurrency measured binds" in job["why"][0]


def test_measurements_for_no_serving_job_are_a_warning_not_silence(tmp_path, plan_cli):
    out = tmp_path / "m.csv"
    assert plan_cli("calibrate", VLLM, "--system", "h100-sxm-x1", "-o", out).code == 0
    r = plan_cli(Path(__file__).resolve().parents[1] / "scenarios" / "bank.yaml", "--measurements", out,
                 "--explain", "none")  # llama-3.1-70b at fp8; the rows are llama-3.1-8b at bf16
    assert r.code == 0
    assert ("warning: no row of the measurements (1 row(s): llama-3.1-8b bf16) is for a serving job's model and "
            "precision (llama-3.1-70b fp8), so every placement is modelled") in r.err
    assert "basis:" not in r.out


@pytest.mark.parametrize("args, words", [
    ((VLLM,), f"{VLLM}: system is not recorded in this vllm file (the run's --metadata gpu=1xNVIDIA_H100_80GB_HBM3)\n"
              "    To fix: pass --system ID"),
    ((TRTLLM, "--concurrency", "64"), "system is not recorded in this trtllm-bench file (the run's GPUs: 1x NVIDIA H100 "
                                      "80GB HBM3)\n    To fix: pass --system ID"),
    ((TRTLLM, "--system", "h100-sxm-x1"), "this run averaged 62.8 requests in flight)\n    To fix: pass --concurrency N"),
    ((SGLANG, "--system", "h100-sxm-x1"), f"{SGLANG}:1: precision is not recorded in this sglang file\n"
                                           "    To fix: pass --precision bf16|fp8|int8|int4|fp4"),
    ((GENAI, "--system", "h100-sxm-x1"), "tp and precision are not recorded in this genai-perf file\n"
                                          "    To fix: pass --tp N and --precision bf16|fp8|int8|int4|fp4"),  # at once
    ((VLLM, "--system", "h100-sxm-x9"), f"{VLLM}: unknown system 'h100-sxm-x9'"),
    ((VLLM, "--system", "h100-sxm-x1", "--model", "llama-9"), "--model: unknown model 'llama-9'"),
])
def test_what_the_file_lacks_is_asked_for_by_flag_with_exit_2(plan_cli, args, words):
    r = plan_cli("calibrate", *args)
    assert r.code == 2 and r.out == ""
    assert words in r.err


def test_a_checkpoint_the_catalog_does_not_know_needs_model(tmp_path, plan_cli):
    d = json.loads(VLLM.read_text())
    d["model_id"] = "acme/secret-model-7b-instruct"
    f = tmp_path / "run.json"
    f.write_text(json.dumps(d))
    r = plan_cli("calibrate", f, "--system", "h100-sxm-x1")
    assert r.code == 2 and f"{f}: model 'acme/secret-model-7b-instruct' is not a catalog model" in r.err
    assert "pass --model ID" in r.err
    r = plan_cli("calibrate", f, "--system", "h100-sxm-x1", "--model", "llama-2-7b")
    assert r.code == 0, r.err
    row = next(csv.DictReader(io.StringIO(r.out)))
    assert row["model"] == "llama-2-7b" and row["source"].endswith("served acme/secret-model-7b-instruct")


def test_output_is_never_written_over_an_input_or_an_existing_file(tmp_path, plan_cli):
    out = tmp_path / "m.csv"
    out.write_text("keep me")
    r = plan_cli("calibrate", VLLM, "--system", "h100-sxm-x1", "-o", out)
    assert r.code == 2 and "already exists" in r.err and out.read_text() == "keep me"
    r = plan_cli("calibrate", out, "-o", out, "--force")
    assert r.code == 2 and "is an input of this run" in r.err and out.read_text() == "keep me"


def _modelled(cat, model, system, tp, inp, outp, users):
    m, acc = cat.models[model], cat.accelerators[cat.systems[system].accelerator]
    wl = Workload("bf16", "bf16", inp, outp)
    return (serving.tpot_s(m, acc, wl, tp, 1, users) * 1e3, serving.ttft_s(m, acc, wl, tp, 1, batch=users) * 1e3)


def test_report_prints_error_per_row_the_median_and_the_factor_per_accelerator(tmp_path, plan_cli):
    cat = load_catalog()
    lines = ["model,system,tp,precision,input_tokens,output_tokens,concurrency,tpot_ms,ttft_ms,source"]
    # on h100: measured TPOT twice the model's and TTFT half; on a100: exactly the model's, no TTFT
    for users in (8, 32):
        t, f = _modelled(cat, "llama-3.1-8b", "h100-sxm-x1", 1, 1024, 256, users)
        lines.append(f"llama-3.1-8b,h100-sxm-x1,1,bf16,1024,256,{users},{2 * t:.6f},{f / 2:.6f},test")
    t, _ = _modelled(cat, "llama-3.1-8b", "a100-80gb-x8", 2, 512, 128, 4)
    lines.append(f"llama-3.1-8b,a100-80gb-x8,2,bf16,512,128,4,{t:.6f},,test")
    f = tmp_path / "m.csv"
    f.write_text("\n".join(lines) + "\n")
    r = plan_cli("calibrate", f, "--report")
    assert r.code == 0, r.err
    rows = {ln.split()[0]: ln.split() for ln in r.out.splitlines() if ln.startswith(str(f))}
    assert rows[f"{f}:2"][9] == "-50.0%" and rows[f"{f}:2"][12] == "+100.0%"
    assert rows[f"{f}:4"][9] == "+0.0%" and rows[f"{f}:4"][12] == "-"
    assert "median |error|: TPOT 50.0% over 3 row(s), TTFT 100.0% over 2 row(s)" in r.out
    factors = {ln.split()[0]: ln.split() for ln in r.out.splitlines() if ln.startswith(("h100-sxm ", "a100"))}
    assert factors["h100-sxm"][1:] == ["2", "2.000", "0.0%", "0.500", "0.0%"]
    assert factors["a100-80gb"][1:] == ["1", "1.000", "0.0%", "-", "-"]
    assert "model,system" not in r.out  # --report alone prints no CSV


def test_a_run_with_failed_requests_is_written_with_a_warning(tmp_path, plan_cli):
    d = json.loads(VLLM.read_text())
    run = tmp_path / "run.json"
    run.write_text(json.dumps(dict(d, completed=300, failed=20, total_input_tokens=307200, total_output_tokens=76800)))
    r = plan_cli("calibrate", run, "--system", "h100-sxm-x1", "-o", tmp_path / "m.csv")
    assert r.code == 0, r.err
    assert f"warning: {run}: 20 of 320 requests failed: its means are over the 300 that completed" in r.err


def test_one_concurrency_for_open_loop_runs_of_two_files_at_different_rates_is_refused(tmp_path, plan_cli):
    d = json.loads(VLLM.read_text())
    runs = []
    for rate in (2.0, 8.0):
        runs.append(tmp_path / f"r{rate:g}.json")
        runs[-1].write_text(json.dumps(dict(d, max_concurrency=None, request_rate=rate)))
    r = plan_cli("calibrate", *runs, "--system", "h100-sxm-x1", "--concurrency", "16")
    assert r.code == 2 and "ran at different loads (request_rate 2.0, 8.0)" in r.err, r.err
