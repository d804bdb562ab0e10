"""Tests for benchfiles: each asserts a number or message a user would see."""
from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest

from planner.data.benchfiles import BenchFileError, read_benchmark_file
from planner.data.measurements import COLUMNS, Measurement, parse_measurements, write_measurements_csv

SAMPLES = Path(__file__).parent / "data" / "bench"
VLLM = SAMPLES / "vllm_benchmark_serving.json"
SGLANG = SAMPLES / "sglang_bench_serving.jsonl"
GENAI = SAMPLES / "genai_perf_profile_export_genai_perf.json"
TRTLLM = SAMPLES / "trtllm-bench" / "report.json"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_vllm_sample_gives_one_row_with_means_and_metadata():
    [r] = read_benchmark_file(VLLM, system="h100-sxm-x1")
    assert (r.model, r.system, r.tp, r.precision) == ("meta-llama/Llama-3.1-8B-Instruct", "h100-sxm-x1", 1, "bf16")
    assert (r.input_tokens, r.output_tokens, r.concurrency) == (1024, 256, 16)   # 327680/320, 81920/320
    assert (r.tpot_ms, r.ttft_ms) == (6.91, 48.37)
    assert (r.engine, r.as_of) == ("vllm", "2025-06-12")
    assert r.source == f"vllm:{VLLM}"


def test_vllm_missing_system_says_what_where_and_how():
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(VLLM)
    msg = str(e.value)
    assert msg.startswith(f"{VLLM}: system is not recorded in this vllm file (the run's --metadata "
                          "gpu=1xNVIDIA_H100_80GB_HBM3)")
    assert "pass --system ID" in msg and "h100-sxm-x8" in msg
    assert (e.value.what, e.value.line) == ("system is not recorded in this vllm file (the run's --metadata "
                                            "gpu=1xNVIDIA_H100_80GB_HBM3)", None)


def test_vllm_open_loop_run_says_concurrency_is_missing(tmp_path):
    d = json.loads(VLLM.read_text())
    d.update(max_concurrency=None, request_rate=10.0)
    p = _write(tmp_path, "open.json", json.dumps(d))
    with pytest.raises(BenchFileError, match=r"max_concurrency is not recorded \(open loop at request_rate=10.0\)"
                       r".*--max-concurrency N"):
        read_benchmark_file(p, system="h100-sxm-x1")
    [r] = read_benchmark_file(p, system="h100-sxm-x1", concurrency=12)
    assert r.concurrency == 12


def test_vllm_append_result_file_gives_one_row_per_object(tmp_path):
    d = json.loads(VLLM.read_text())
    d2 = dict(d, max_concurrency=64, mean_tpot_ms=9.9)
    p = _write(tmp_path, "appended.json", json.dumps(d) + "\n" + json.dumps(d2))
    rows = read_benchmark_file(p, system="h100-sxm-x1")
    assert [(r.concurrency, r.tpot_ms) for r in rows] == [(16, 6.91), (64, 9.9)]
    assert rows[1].source.endswith("appended.json:2")


def test_sglang_two_runs_need_precision_and_give_two_rows():
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(SGLANG, system="h100-sxm-x1")
    assert str(e.value).startswith(f"{SGLANG}:1: precision is not recorded in this sglang file")
    assert "pass --precision bf16|fp8|int8|int4|fp4" in str(e.value)
    rows = read_benchmark_file(SGLANG, system="h100-sxm-x1", precision="bf16")
    assert [(r.concurrency, r.tpot_ms, r.ttft_ms) for r in rows] == [(16, 6.84, 51.06), (64, 9.72, 117.45)]
    assert [(r.input_tokens, r.output_tokens, r.tp, r.pp) for r in rows] == [(1024, 256, 1, 1)] * 2
    assert [r.model for r in rows] == ["meta-llama/Llama-3.1-8B-Instruct"] * 2
    assert [r.source for r in rows] == [f"sglang:{SGLANG}:1", f"sglang:{SGLANG}:2"]
    assert rows[0].engine == "sglang"


def test_sglang_quantization_and_kv_dtype_map_to_planner_precisions(tmp_path):
    d = json.loads(SGLANG.read_text().splitlines()[0])
    d["server_info"].update(quantization="fp8", kv_cache_dtype="fp8_e4m3", tp_size=2)
    [r] = read_benchmark_file(_write(tmp_path, "q.jsonl", json.dumps(d) + "\n"), system="h100-sxm-x8")
    assert (r.precision, r.kv_precision, r.tp) == ("fp8", "fp8", 2)


def test_malformed_jsonl_line_reports_its_line_number(tmp_path):
    good = SGLANG.read_text().splitlines()
    p = _write(tmp_path, "broken.jsonl", "\n".join([good[0], good[1], good[1][:200]]) + "\n")
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(p, system="h100-sxm-x1", precision="bf16")
    assert e.value.line == 3
    assert str(e.value).startswith(f"{p}:3: malformed JSON")
    assert "repair or delete this line" in str(e.value)


def test_malformed_pretty_json_reports_line_of_the_error(tmp_path):
    text = GENAI.read_text().replace('"avg": 9.85,', '"avg": 9.85,,', 1)
    bad_line = next(i for i, s in enumerate(text.splitlines(), 1) if ",," in s)
    p = _write(tmp_path, "bad.json", text)
    with pytest.raises(BenchFileError, match=rf"^{p}:{bad_line}: malformed JSON"):
        read_benchmark_file(p, system="h100-sxm-x1", tp=1, precision="bf16")


@pytest.mark.parametrize("key, value, expect", [
    ("mean_tpot_ms", -3.0, "mean_tpot_ms is -3.0, must be a finite non-negative number"),
    ("mean_tpot_ms", "6.9", "mean_tpot_ms is '6.9', not a number"),
    ("mean_tpot_ms", None, "sglang result has no mean_tpot_ms"),
    ("total_output_tokens", -256, "total_output_tokens is -256, must be a finite non-negative number"),
    ("max_concurrency", 0, "max_concurrency is 0, must be a finite positive number"),
    ("max_concurrency", 16.5, "max_concurrency is 16.5, not a whole number"),
    ("completed", 0, "no request of this run completed. Fix: check the server's log"),  # (SGLang saves no count sent)
    ("completed", -2, "completed is -2, must be a finite positive number"),
])
def test_bad_values_name_the_key_and_line(tmp_path, key, value, expect):
    lines = SGLANG.read_text().splitlines()
    d = json.loads(lines[1])
    d[key] = value
    p = _write(tmp_path, "v.jsonl", lines[0] + "\n" + json.dumps(d) + "\n")
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(p, system="h100-sxm-x1", precision="bf16")
    assert str(e.value).startswith(f"{p}:2: {expect}")


def test_genai_perf_sample_flat_input_config():
    [r] = read_benchmark_file(GENAI, system="h100-sxm-x1", tp=1, precision="bf16", engine="trtllm")
    assert (r.model, r.concurrency, r.input_tokens, r.output_tokens) == (
        "meta-llama/Llama-3.1-8B-Instruct", 64, 1024, 256)
    assert (r.tpot_ms, r.ttft_ms, r.engine) == (9.85, 121.4, "trtllm")   # inter_token_latency.avg is TPOT


def test_genai_perf_missing_tp_message():
    with pytest.raises(BenchFileError, match=r"tp is not recorded in this genai-perf file\. Fix: pass --tp N"):
        read_benchmark_file(GENAI, system="h100-sxm-x1", precision="bf16")


def test_genai_perf_nested_config_and_aiperf_loadgen(tmp_path):
    d = json.loads(GENAI.read_text())
    nested = copy.deepcopy(d)
    nested["input_config"] = {"model_names": ["meta-llama/Llama-3.1-8B-Instruct"],
                              "perf_analyzer": {"stimulus": {"concurrency": 32}}}
    [r] = read_benchmark_file(_write(tmp_path, "n.json", json.dumps(nested)), system="s", tp=1, precision="fp8")
    assert r.concurrency == 32
    aiperf = copy.deepcopy(d)
    aiperf["input_config"] = {"endpoint": {"model_names": ["m"]}, "loadgen": {"concurrency": 8}}
    aiperf["inter_token_latency"] = {"unit": "ns", "avg": 9_850_000}
    aiperf["start_time"] = "2025-09-01T10:00:00"
    [r] = read_benchmark_file(_write(tmp_path, "profile_export_aiperf.json", json.dumps(aiperf)),
                              system="s", tp=1, precision="fp8")
    assert (r.model, r.concurrency, r.tpot_ms, r.as_of) == ("m", 8, 9.85, "2025-09-01")
    assert r.source.startswith("aiperf:")


def test_genai_perf_concurrency_from_artifact_dir_or_missing(tmp_path):
    d = json.loads(GENAI.read_text())
    d["input_config"] = {"model": ["m"]}
    run = tmp_path / "m-openai-chat-concurrency4"
    run.mkdir()
    [r] = read_benchmark_file(_write(run, "profile_export_genai_perf.json", json.dumps(d)),
                              system="s", tp=1, precision="bf16")
    assert r.concurrency == 4
    with pytest.raises(BenchFileError, match=r"concurrency is not recorded.*--concurrency N"):
        read_benchmark_file(_write(tmp_path, "x.json", json.dumps(d)), system="s", tp=1, precision="bf16")


def test_genai_perf_non_streaming_run_has_no_tpot(tmp_path):
    d = json.loads(GENAI.read_text())
    del d["inter_token_latency"], d["time_to_first_token"]
    with pytest.raises(BenchFileError, match=r"no inter_token_latency\.avg\. Fix: re-run genai-perf profile with "
                                             r"--streaming"):
        read_benchmark_file(_write(tmp_path, "ns.json", json.dumps(d)), system="s", tp=1, precision="bf16")


def test_keyword_that_contradicts_file_is_refused():
    with pytest.raises(BenchFileError, match=r"tp given as 8 but the file says 1\. Fix: drop --tp"):
        read_benchmark_file(VLLM, system="h100-sxm-x8", tp=8)
    with pytest.raises(BenchFileError, match=r"precision 'fp16x' is not one the planner knows"):
        read_benchmark_file(VLLM, system="h100-sxm-x1", precision="fp16x")


@pytest.mark.parametrize("text, expect", [
    ("", "file is empty"),
    ("[1, 2]", "top level is a JSON array, not an object"),
    ('{"hello": 1}', "not a recognised result"),
    ('{"model_id": "m", "completed": 1}\n[3]\n', ":2: line holds a JSON array, not an object"),
])
def test_unusable_files(tmp_path, text, expect):
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(_write(tmp_path, "f.json", text), system="s")
    assert expect in str(e.value)


def test_unreadable_path_is_a_bench_file_error(tmp_path):
    with pytest.raises(BenchFileError, match="cannot read the file"):
        read_benchmark_file(tmp_path / "nope.json")


def test_csv_columns_and_values(tmp_path):
    rows = read_benchmark_file(SGLANG, system="h100-sxm-x1", precision="bf16")
    rows.append(Measurement("m", "s", 2, "fp8", 100, 10, 1, 5.5, None, "manual"))
    buf = io.StringIO()
    write_measurements_csv(rows, buf)
    out = list(csv.reader(io.StringIO(buf.getvalue())))
    assert tuple(out[0]) == COLUMNS == ("model", "system", "tp", "precision", "input_tokens", "output_tokens",
                                        "concurrency", "tpot_ms", "ttft_ms", "source", "pp", "kv_precision",
                                        "engine", "as_of")
    assert out[2][:9] == ["meta-llama/Llama-3.1-8B-Instruct", "h100-sxm-x1", "1", "bf16", "1024", "256", "64",
                          "9.72", "117.45"]
    assert out[3][8] == "" and out[3][10:] == ["1", "", "", ""]  # pp 1 unless the run says otherwise
    path = tmp_path / "m.csv"
    write_measurements_csv(rows, path)
    assert path.read_text() == buf.getvalue()
    back = parse_measurements(path.read_text(), str(path))  # one row type: what is written reads back
    assert [(r.model, r.system, r.tp, r.pp, r.concurrency, r.tpot_ms, r.ttft_ms) for r in back] == [
        (r.model.lower(), r.system, r.tp, r.pp, r.concurrency, r.tpot_ms, r.ttft_ms) for r in rows]
    assert back[0].where == f"{path}:2" and rows[0].where == f"{SGLANG}:1"


def test_json_null_file_is_refused(tmp_path):
    with pytest.raises(BenchFileError, match="top level is a JSON null, not an object"):
        read_benchmark_file(_write(tmp_path, "n.json", "null"), system="s")


def test_non_string_model_in_file_is_refused(tmp_path):
    d = json.loads(VLLM.read_text())
    d["model_id"] = 42
    with pytest.raises(BenchFileError, match=r"model is 42, not a string, in this vllm file\. Fix: edit the file"):
        read_benchmark_file(_write(tmp_path, "m.json", json.dumps(d)), system="s")


def test_trtllm_bench_report_gives_a_row_from_its_engine_world_and_streaming_metrics():
    [r] = read_benchmark_file(TRTLLM, system="h100-sxm-x1", concurrency=64)
    assert (r.model, r.system, r.tp, r.pp, r.precision, r.kv_precision, r.engine) == (
        "meta-llama/Llama-3.1-8B-Instruct", "h100-sxm-x1", 1, 1, "bf16", "bf16", "trtllm")  # kv_cache_dtype null: 16-bit
    assert (r.input_tokens, r.output_tokens, r.concurrency, r.tpot_ms, r.ttft_ms) == (1024, 256, 64, 9.1001, 105.2966)
    assert r.source == f"trtllm-bench:{TRTLLM}"


def test_trtllm_bench_report_asks_for_what_it_does_not_save():
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(TRTLLM, concurrency=64)
    assert str(e.value) == (f"{TRTLLM}: system is not recorded in this trtllm-bench file (the run's GPUs: 1x NVIDIA "
                            "H100 80GB HBM3). Fix: pass --system ID (a catalog/systems.csv id, e.g. h100-sxm-x8)")
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(TRTLLM, system="h100-sxm-x1")
    assert str(e.value) == (f"{TRTLLM}: the run's concurrency is not recorded (trtllm-bench does not save "
                            "--concurrency; this run averaged 62.8 requests in flight). Fix: pass --concurrency N, "
                            "the --concurrency trtllm-bench was given (a run without one sent every request at once: "
                            "the mean in flight, 63, is the nearest reading)")


def test_trtllm_bench_report_without_streaming_has_no_tpot(tmp_path):
    d = json.loads(TRTLLM.read_text())
    del d["streaming_metrics"]
    with pytest.raises(BenchFileError, match=r"trtllm-bench result has no avg_tpot_ms\. Fix: re-run trtllm-bench "
                                             r"throughput with --streaming"):
        read_benchmark_file(_write(tmp_path, "r.json", json.dumps(d)), system="s", concurrency=8)


@pytest.mark.parametrize("quant, kv, precision, kv_precision", [
    ("FP8", "FP8", "fp8", "fp8"),
    ("FP8_BLOCK_SCALES", None, "fp8", "bf16"),
    ("NVFP4", "NVFP4", "fp4", "fp4"),
    ("W4A8_MXFP4_FP8", "FP8", "fp4", "fp8"),
    ("W4A16_AWQ", None, "int4", "bf16"),
    ("W8A16", "INT8", "int8", "int8"),
    ("NO_QUANT", None, "bf16", "bf16"),
])
def test_trtllm_bench_quantization_names_map_to_planner_precisions(tmp_path, quant, kv, precision, kv_precision):
    d = json.loads(TRTLLM.read_text())
    d["engine"].update(quantization=quant, kv_cache_dtype=kv)
    [r] = read_benchmark_file(_write(tmp_path, "q.json", json.dumps(d)), system="s", concurrency=8)
    assert (r.precision, r.kv_precision) == (precision, kv_precision)


def test_trtllm_bench_mixed_precision_asks_for_one(tmp_path):
    d = json.loads(TRTLLM.read_text())
    d["engine"]["quantization"] = "MIXED_PRECISION"  # per-layer formats: no one precision to record
    with pytest.raises(BenchFileError, match=r"precision is not recorded in this trtllm-bench file\. Fix: pass "
                                             r"--precision"):
        read_benchmark_file(_write(tmp_path, "q.json", json.dumps(d)), system="s", concurrency=8)
    [r] = read_benchmark_file(_write(tmp_path, "q.json", json.dumps(d)), system="s", concurrency=8, precision="fp8")
    assert r.precision == "fp8"


def test_aiperf_0_10_reads_its_phases_model_and_gpus(tmp_path):
    """AIPerf 0.10+ (schema 1.3): the load in input_config.phases, the model in models.items, no loadgen."""
    d = json.loads(GENAI.read_text())
    d.pop("input_config")
    d.update(aiperf_version="0.10.0", schema_version="1.3", input_config={
        "models": {"items": [{"name": "meta-llama/Llama-3.1-8B-Instruct"}]},
        "phases": [{"name": "warmup", "type": "concurrency", "exclude_from_results": True, "concurrency": 4},
                   {"name": "profiling", "type": "concurrency", "requests": 96, "concurrency": 16}]},
        telemetry_data={"endpoints": {"dcgm:9400": {"gpus": {"gpu_0": {"gpu_name": "NVIDIA A100-SXM4-80GB"},
                                                            "gpu_1": {"gpu_name": "NVIDIA A100-SXM4-80GB"}}}}})
    p = _write(tmp_path, "profile_export_aiperf.json", json.dumps(d))
    [r] = read_benchmark_file(p, system="a100-80gb-x1", tp=1, precision="bf16")
    assert (r.model, r.concurrency, r.source) == ("meta-llama/Llama-3.1-8B-Instruct", 16, f"aiperf:{p}")
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(p)
    assert e.value.what == ("system, tp and precision are not recorded in this aiperf file (its DCGM telemetry saw "
                            "2x NVIDIA A100-SXM4-80GB)")  # every field it lacks, at once
    assert e.value.how_to_fix.startswith("pass --system ID (a catalog/systems.csv id, e.g. h100-sxm-x8), --tp N and "
                                         "--precision")
    d["input_config"].pop("phases")
    folder = tmp_path / "concurrency_32"
    folder.mkdir()
    [r] = read_benchmark_file(_write(folder, "profile_export_aiperf.json", json.dumps(d)), system="s", tp=1,
                              precision="bf16")
    assert r.concurrency == 32  # from the artifact folder's name


def test_a_json_array_of_runs_is_read_run_by_run_with_their_lines(tmp_path):
    """vllm bench sweep's summary.json: an array of run objects."""
    d = json.loads(VLLM.read_text())
    text = json.dumps([d, dict(d, max_concurrency=64, mean_tpot_ms=9.9)], indent=2)
    rows = read_benchmark_file(_write(tmp_path, "summary.json", text), system="h100-sxm-x1")
    assert [(r.concurrency, r.tpot_ms) for r in rows] == [(16, 6.91), (64, 9.9)]
    starts = [str(no) for no, s in enumerate(text.splitlines(), 1) if s == "  {"]
    assert [r.where.rsplit(":", 1)[1] for r in rows] == starts and len(starts) == 2


def test_one_concurrency_for_a_sweep_over_request_rates_is_refused(tmp_path):
    d = json.loads(VLLM.read_text())
    runs = [dict(d, max_concurrency=None, request_rate=r) for r in (1.0, 10.0)]
    p = _write(tmp_path, "sweep.jsonl", "\n".join(json.dumps(x) for x in runs))
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(p, system="h100-sxm-x1", concurrency=64)
    assert e.value.line == 2 and e.value.what.startswith(
        "runs that record no concurrency ran at different loads (request_rate 1.0, 10.0)")
    assert "run plan calibrate once per load" in e.value.how_to_fix
    same = _write(tmp_path, "repeat.jsonl", "\n".join(json.dumps(dict(runs[0], mean_tpot_ms=x)) for x in (7.0, 7.2)))
    assert [r.concurrency for r in read_benchmark_file(same, system="h100-sxm-x1", concurrency=12)] == [12, 12]
    every = _write(tmp_path, "inf.json", json.dumps(dict(d, max_concurrency=None, request_rate="inf")))
    with pytest.raises(BenchFileError, match=r"all 320 prompts sent at once: request_rate inf, no --max-concurrency"):
        read_benchmark_file(every, system="h100-sxm-x1")


def test_failed_requests_and_speculative_decoding_are_said(tmp_path):
    d = json.loads(VLLM.read_text())
    with pytest.raises(BenchFileError, match=r"no request of this run completed \(8 failed\)\. Fix: check the "
                                             r"server's log"):
        read_benchmark_file(_write(tmp_path, "f.json", json.dumps(dict(d, completed=0, failed=8))), system="s")
    notes: list[str] = []
    p = _write(tmp_path, "p.json", json.dumps(dict(d, completed=300, total_input_tokens=307200,
                                                   total_output_tokens=76800, spec_decode_acceptance_length=2.4)))
    [r] = read_benchmark_file(p, system="s", warnings=notes)
    assert r.input_tokens == 1024  # over the requests that completed
    assert notes == [f"{p}: 20 of 320 requests failed: its means are over the 300 that completed",
                     f"{p}: the run decoded speculatively, 2.40 tokens a step: its TPOT is below plain decoding's, "
                     "and a plan given these rows assumes the same drafts"]
    s = json.loads(SGLANG.read_text().splitlines()[0])
    s["server_info"] = {"model_path": "m", "tp_size": 1, "dtype": "bfloat16", "speculative_algorithm": "EAGLE3"}
    notes.clear()
    read_benchmark_file(_write(tmp_path, "s.jsonl", json.dumps(s)), system="s", warnings=notes)
    assert notes and "decoded speculatively (EAGLE3)" in notes[0]


def test_a_disaggregated_sglang_run_is_not_a_replica_row(tmp_path):
    s = json.loads(SGLANG.read_text().splitlines()[0])
    half = {"model_path": "m", "tp_size": 1, "dtype": "auto"}
    s["server_info"] = {"internal_states": [], "prefill": [dict(half, disaggregation_mode="prefill")],
                        "decode": [dict(half, disaggregation_mode="decode")] * 2}
    with pytest.raises(BenchFileError) as e:
        read_benchmark_file(_write(tmp_path, "pd.jsonl", json.dumps(s)), system="s", precision="bf16")
    assert e.value.what.startswith("a prefill/decode-disaggregated run (1 prefill and 2 decode server(s))")
    assert "calibrate runs of an aggregated server" in e.value.how_to_fix


@pytest.mark.parametrize("metadata, engine", [({"framework": "sgl"}, "sglang"), ({"engine": "trt-llm"}, "trtllm"),
                                              ({"backend": "openai"}, None), ({}, "vllm")])
def test_vllm_client_runs_name_the_server_engine_from_metadata_not_the_client_api(tmp_path, metadata, engine):
    d = dict(json.loads(VLLM.read_text()), **metadata)
    [r] = read_benchmark_file(_write(tmp_path, "e.json", json.dumps(d)), system="s")
    assert r.engine == engine


def test_a_trtllm_bench_run_one_request_at_a_time_needs_no_concurrency(tmp_path):
    d = json.loads(TRTLLM.read_text())
    d["world_info"]["max_batch_size"] = 1
    d["request_info"]["avg_num_concurrent_requests"] = 0.998
    [r] = read_benchmark_file(_write(tmp_path, "bs1.json", json.dumps(d)), system="s")
    assert r.concurrency == 1
