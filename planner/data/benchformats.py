"""What each serving-benchmark tool's result object holds, read into one dict of fields per run
(data.benchfiles turns the dicts into measurement rows; stdlib only).

Tools (the project's reference notes, serving-benchmarks.md section A, and real saved results):
  vllm          ``benchmark_serving.py`` / ``vllm bench serve --save-result`` (and each run of ``vllm bench
                sweep``'s summary): ``mean_*_ms``, ``total_*_tokens`` over ``completed``, ``--metadata``
                pairs as strings at top level
  sglang        ``bench_serving --output-file``: the same keys; the newest save the server's arguments as
                ``server_info`` (a prefill/decode-disaggregated deployment: its ``prefill`` and ``decode`` lists)
  genai-perf    ``profile_export_genai_perf.json``: one ``{unit, avg, ...}`` object per metric, ``input_config``
  aiperf        ``profile_export_aiperf.json``: genai-perf's layout; the load in ``input_config.loadgen`` (to
                0.9) or ``input_config.phases`` (0.10 and later, ``aiperf_version``), the model in
                ``input_config.models.items``, GPUs in DCGM ``telemetry_data``
  trtllm-bench  ``trtllm-bench throughput --streaming --report_json``: ``engine``, ``world_info``,
                ``request_info``, ``streaming_metrics``; its ``--concurrency`` is never saved
A reader returns tpot_ms, ttft_ms, input_tokens, output_tokens and what the file names of model, tp, pp,
precision, kv_precision, engine and as_of; concurrency, or concurrency_missing (what, how to fix) and
load (the run's request rate, which tells runs of one file apart); hint (a field: what the file says
instead of it, for the message asking for it) and notes (caveats the rows carry to the user).
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from planner.data.errors import InputError, Problem

# Engine dtype/quantization names -> planner precisions; fp16 weights count as "bf16" (same bytes, speed).
_PRECISION = {**dict.fromkeys(("bfloat16", "bf16", "float16", "fp16", "half"), "bf16"),
              **dict.fromkeys(("fp8", "fp8_e4m3", "fp8_e5m2", "w8a8_fp8", "modelopt", "modelopt_fp8"), "fp8"),
              "int8": "int8", "w8a8_int8": "int8",
              **dict.fromkeys(("int4", "awq", "gptq", "awq_marlin", "gptq_marlin", "qoq"), "int4"),
              **dict.fromkeys(("fp4", "nvfp4", "mxfp4", "modelopt_fp4", "petit_nvfp4"), "fp4")}
_GENAI_KEYS = ("time_to_first_token", "inter_token_latency", "request_latency", "output_sequence_length")
_TIME_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
_ENGINES = {"sgl": "sglang", "sglang": "sglang", "vllm": "vllm", "trt": "trtllm", "trtllm": "trtllm",
            "trt-llm": "trtllm", "tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "tgi": "tgi", "lmdeploy": "lmdeploy"}


class BenchFileError(InputError):
    """A benchmark file cannot be turned into rows: says what, where and how to fix it (exit 2)."""
    def __init__(self, path: str | Path, what: str, how_to_fix: str, line: int | None = None) -> None:
        self.path, self.what, self.how_to_fix, self.line = str(path), what, how_to_fix, line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(Problem(what, where, how_to_fix))
        self.args = (f"{where}: {what}. Fix: {how_to_fix}",)

    def __str__(self) -> str:
        return self.args[0]


class Ctx:
    """Where an object came from, and its typed accessors (errors carry file and line)."""
    def __init__(self, path: Path, line: int | None, fmt: str) -> None:
        self.path, self.line, self.fmt = path, line, fmt

    def fail(self, what: str, how: str) -> BenchFileError:
        return BenchFileError(self.path, what, how, self.line)

    def number(self, value: Any, key: str, *, positive: bool = False, text: bool = False) -> float:
        """A finite non-negative (or positive) number; numeric strings only where ``text``."""
        try:
            if isinstance(value, bool) or not isinstance(value, (int, float, str) if text else (int, float)):
                raise ValueError  # noqa: TRY004 (caught below: one message for every bad value)
            x = float(value)
        except ValueError:
            raise self.fail(f"{key} is {value!r}, not a number", f"write a number for {key}") from None
        if not math.isfinite(x) or x < 0 or (positive and x == 0):
            need = "positive" if positive else "non-negative"
            raise self.fail(f"{key} is {value!r}, must be a finite {need} number",
                            f"check {key}; re-run the benchmark if the value is corrupt")
        return x

    def integer(self, value: Any, key: str, *, text: bool = False) -> int:
        """A positive whole number (``text``: also from a string such as --metadata tp=8)."""
        x = self.number(value, key, positive=True, text=text)
        if x != int(x):
            raise self.fail(f"{key} is {value!r}, not a whole number", f"write a whole number for {key}")
        return int(x)

    def metric(self, obj: dict[str, Any], key: str, how: str) -> float:
        """The mandatory non-negative number ``obj[key]``; ``how`` says how to get it recorded."""
        if obj.get(key) is None:
            raise self.fail(f"{self.fmt} result has no {key}", how)
        return self.number(obj[key], key)


def get(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]... or None where any level is missing or not a dict."""
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def _dict(obj: Any) -> dict[str, Any]:
    return obj if isinstance(obj, dict) else {}


def precision_of(*names: Any) -> str | None:
    """First engine dtype/quantization name that maps to a planner precision ('auto' does not): the
    known names, then TensorRT-LLM's QuantAlgo pattern (_quant: W4A8_INT8 int4, W8A16 int8, ...)."""
    for n in names:
        if isinstance(n, str) and (got := _PRECISION.get(n.strip().lower()) or _quant(n)):
            return got
    return None


def _quant(name: Any) -> str | None:
    """A TensorRT-LLM QuantAlgo name (FP8, FP8_BLOCK_SCALES, NVFP4, W4A16_AWQ, W8A16, INT8, ...) as the
    planner precision of the weights it stores: 4-bit floats fp4, FP8 fp8, 4-bit integers int4, 8-bit
    integers int8; None for anything else (MIXED_PRECISION names no single precision)."""
    n = name.strip().upper() if isinstance(name, str) else ""
    if "NVFP4" in n or "MXFP4" in n:
        return "fp4"
    if n.startswith("FP8") or n == "MXFP8":
        return "fp8"
    if n.startswith("W4"):
        return "int4"
    return "int8" if n.startswith("W8") or n == "INT8" else None


def _date(value: Any) -> str | None:
    """'20250530-203806' or an ISO timestamp -> '2025-05-30'; None if unrecognised."""
    m = re.match(r"(\d{4})-?(\d{2})-?(\d{2})", value) if isinstance(value, str) else None
    return "-".join(m.groups()) if m else None


def detect(obj: dict[str, Any]) -> str:
    """Which tool wrote this result object: vllm, sglang, genai-perf, aiperf, trtllm-bench or unknown."""
    if isinstance(obj.get("engine"), dict) and isinstance(obj.get("world_info"), dict):
        return "trtllm-bench"
    if isinstance(obj.get("input_config"), dict) or any(isinstance(obj.get(k), dict) for k in _GENAI_KEYS):
        aiperf = "aiperf_version" in obj or get(obj, "input_config", "loadgen") is not None
        return "aiperf" if aiperf else "genai-perf"
    if "model_id" in obj or "num_prompts" in obj:
        return "vllm"
    if "dataset_name" in obj or "total_output_tokens_retokenized" in obj or "server_info" in obj:
        return "sglang"
    return "unknown"


def _speculative(o: dict[str, Any], si: dict[str, Any]) -> list[str]:
    """The caveat of a run that drafted tokens (vLLM's spec_decode_* keys from the server's metrics,
    SGLang's speculative_algorithm, trtllm-bench's decoding_stats)."""
    how = si.get("speculative_algorithm") or get(o, "decoding_stats", "mode")
    length = o.get("spec_decode_acceptance_length") or o.get("accept_length")
    if not (how and str(how).lower() not in ("null", "none") or any(k.startswith("spec_decode_") for k in o)
            or isinstance(o.get("decoding_stats"), dict) or isinstance(length, (int, float)) and length > 1):
        return []
    said = f" ({how})" if how and str(how).lower() not in ("null", "none") else ""
    accepted = f", {length:.2f} tokens a step" if isinstance(length, (int, float)) and length > 0 else ""
    return [f"the run decoded speculatively{said}{accepted}: its TPOT is below plain decoding's, and a plan "
            "given these rows assumes the same drafts"]


def serving(c: Ctx, o: dict[str, Any]) -> dict[str, Any]:
    """vLLM and SGLang results: same ``mean_*_ms`` and ``total_*_tokens`` keys, different metadata."""
    tool = "vllm bench serve" if c.fmt == "vllm" else "python -m sglang.bench_serving"
    sent = o.get("num_prompts") if isinstance(o.get("num_prompts"), int) else None
    failed = o.get("failed") if isinstance(o.get("failed"), int) else None
    if o.get("completed") == 0:
        lost = failed if failed is not None else sent
        raise c.fail("no request of this run completed" + (f" ({lost} failed)" if lost is not None else ""),
                     "check the server's log, then re-run the benchmark")
    done = c.integer(o.get("completed"), "completed")  # successful requests
    f: dict[str, Any] = {
        "tpot_ms": c.metric(o, "mean_tpot_ms", f"re-run {tool} with streaming and a tokenizer so TPOT "
                            "is recorded (SGLang before mid-2025 did not save it)"),
        "ttft_ms": None if o.get("mean_ttft_ms") is None else c.number(o["mean_ttft_ms"], "mean_ttft_ms"),
        "input_tokens": round(c.metric(o, "total_input_tokens", "regenerate the file") / done),
        "output_tokens": round(c.metric(o, "total_output_tokens", "regenerate the file") / done), "notes": []}
    lost = failed if failed is not None else (sent - done if sent is not None and sent > done else 0)
    if lost:
        f["notes"].append(f"{lost} of {done + lost} requests failed: its means are over the {done} that completed")
    if o.get("max_concurrency") is not None:
        f["concurrency"] = c.integer(o["max_concurrency"], "max_concurrency")
    else:
        rate = o.get("request_rate")
        f["load"] = repr(rate)
        peak = o.get("concurrency") if c.fmt == "sglang" else o.get("max_concurrent_requests")
        peak = f"; measured in flight {peak:g}" if isinstance(peak, (int, float)) else ""
        every = str(rate).lower() in ("inf", "infinity") and sent is not None
        f["concurrency_missing"] = (
            (f"max_concurrency is not recorded (all {sent} prompts sent at once: request_rate inf, no "
             f"--max-concurrency{peak})") if every else
            f"max_concurrency is not recorded (open loop at request_rate={rate!r}{peak})",
            f"re-run {tool} with --max-concurrency N, or pass --concurrency N if it ran closed-loop at N")
    si = _dict(o.get("server_info"))
    if c.fmt == "vllm":  # --metadata KEY=VALUE pairs sit at top level, as strings
        md = {k: o.get(k) for k in ("system", "tp", "tensor_parallel_size", "pp", "pipeline_parallel_size",
                                    "precision", "kv_precision", "kv_cache_dtype", "engine", "framework")}
        said = md["engine"] or md["framework"]  # the server, where --metadata names it (backend is the client's API)
        guess = o.get("backend") if o.get("backend") in ("vllm", "sglang", "tgi", "lmdeploy") else None
        f.update(model=o.get("model_id"), system=md["system"], as_of=_date(o.get("date")),
                 tp=md["tensor_parallel_size"] or md["tp"], pp=md["pipeline_parallel_size"] or md["pp"],
                 precision=precision_of(md["precision"]), engine=_ENGINES.get(str(said).lower(), said) if said else guess,
                 kv_precision=precision_of(md["kv_precision"], md["kv_cache_dtype"]))
        if isinstance(o.get("gpu"), str) and o["gpu"]:  # --metadata gpu=4xNVIDIA_L40S (a convention, not vLLM's key)
            f["hint"] = {"system": f"the run's --metadata gpu={o['gpu']}"}
    else:  # newest SGLang saves the server's arguments as server_info
        halves = {k: si[k] for k in ("prefill", "decode") if isinstance(si.get(k), list)}
        if halves or str(si.get("disaggregation_mode")).lower() in ("prefill", "decode"):
            counts = " and ".join(f"{len(v)} {k}" for k, v in halves.items()) or "prefill or decode"
            raise c.fail(f"a prefill/decode-disaggregated run ({counts} server(s)): its TPOT and TTFT are not those "
                         "of one replica on one system, which a measurements row is",
                         "calibrate runs of an aggregated server (no --disaggregation-mode); the planner weighs "
                         "prefill/decode splits itself")
        f.update(model=si.get("model_path"), tp=si.get("tp_size"), pp=si.get("pp_size"),
                 precision=precision_of(si.get("quantization"), si.get("dtype")),
                 kv_precision=precision_of(si.get("kv_cache_dtype")),
                 engine="sglang" if si or str(o.get("backend")).startswith("sglang") else None)
    f["notes"] += _speculative(o, si)
    return f


def genai(c: Ctx, o: dict[str, Any]) -> dict[str, Any]:
    """genai-perf / AIPerf: metric objects ``{unit, avg, p50, ...}`` plus ``input_config``."""
    ic = _dict(o.get("input_config"))
    tool = "aiperf profile" if c.fmt == "aiperf" else "genai-perf profile"

    def avg(key: str, required: bool, fix: str) -> float | None:
        if (m := o.get(key)) is None and not required:
            return None
        if not isinstance(m, dict) or m.get("avg") is None:
            raise c.fail(f"{c.fmt} result has no {key}.avg", f"re-run {tool} with {fix}")
        unit = m.get("unit", "ms")
        scale = 1.0 if key.endswith("sequence_length") else _TIME_UNIT_MS.get(str(unit))
        if scale is None:
            raise c.fail(f"{key}.unit is {unit!r}", "expected one of ns, us, ms, s")
        return c.number(m["avg"], f"{key}.avg") * scale

    named = [x.get("name") for x in get(ic, "models", "items") or [] if isinstance(x, dict)]  # AIPerf 0.10+
    models = ic.get("model") or ic.get("model_names") or get(ic, "endpoint", "model_names") or named
    lengths = "a --tokenizer" if c.fmt == "genai-perf" else "a --tokenizer and a dataset with prompts it can count"
    f: dict[str, Any] = {
        "tpot_ms": avg("inter_token_latency", True, "--streaming"),  # (latency - TTFT)/(OSL - 1): TPOT
        "ttft_ms": avg("time_to_first_token", False, "--streaming"),
        "input_tokens": round(avg("input_sequence_length", True, lengths) or 0),
        "output_tokens": round(avg("output_sequence_length", True, lengths) or 0),
        "model": models[0] if isinstance(models, list) and models else models,
        "as_of": _date(o.get("start_time")), "notes": []}
    phases = [p for p in ic.get("phases") or [] if isinstance(p, dict) and not p.get("exclude_from_results")]
    profiling = next((p for p in phases if p.get("name") == "profiling"), phases[-1] if phases else {})
    conc = next((v for v in (ic.get("concurrency"), get(ic, "perf_analyzer", "stimulus", "concurrency"),
                             get(ic, "loadgen", "concurrency"),
                             profiling.get("concurrency") if profiling.get("type", "concurrency") == "concurrency"
                             else None) if v is not None), None)
    if conc is None:  # the artifact directory's name encodes the load: ...-concurrency64, concurrency_16
        dirs = (ic.get("artifact_dir"), get(ic, "artifacts", "dir"), get(ic, "output", "artifact_directory"),
                c.path.parent.name)
        m = re.search(r"(?:^|[-_/ ])concurrency[_-]?(\d+)(?:$|[-_/ ])", " ".join(str(d) for d in dirs if d) + " ")
        conc = m.group(1) if m else None
    if conc is not None:
        f["concurrency"] = c.integer(conc, "concurrency", text=True)
    else:
        f["concurrency_missing"] = ("concurrency is not recorded (request-rate run, or an unset default)",
                                    f"re-run {tool} with --concurrency N, or pass --concurrency N")
    gpus = [g.get("gpu_name") for e in _dict(get(o, "telemetry_data", "endpoints")).values()
            for g in _dict(get(e, "gpus")).values() if isinstance(g, dict) and isinstance(g.get("gpu_name"), str)]
    if gpus:
        f["hint"] = {"system": f"its DCGM telemetry saw {len(gpus)}x {gpus[0]}"}
    return f


def trtllm(c: Ctx, o: dict[str, Any]) -> dict[str, Any]:
    """trtllm-bench's report: the engine's model and quantization, the world's TP x PP, the requests'
    mean lengths, and (only with --streaming) mean TPOT and TTFT. It never saves --concurrency: a run
    whose engine held one request at a time (max_batch_size 1) and averaged one in flight ran at 1."""
    eng, world = o["engine"], o["world_info"]
    req, stream = _dict(o.get("request_info")), _dict(o.get("streaming_metrics"))
    streamed = "re-run trtllm-bench throughput with --streaming, which records TPOT and TTFT"
    f: dict[str, Any] = {
        "tpot_ms": c.metric(stream, "avg_tpot_ms", streamed),
        "ttft_ms": None if stream.get("avg_ttft_ms") is None else c.number(stream["avg_ttft_ms"], "avg_ttft_ms"),
        "model": eng.get("model") or eng.get("model_path"), "tp": world.get("tp_size"), "pp": world.get("pp_size"),
        "engine": "trtllm", "notes": _speculative(o, {})}
    for key, mean, dataset in (("input_tokens", "avg_input_length", "avg_isl"),
                               ("output_tokens", "avg_output_length", "avg_osl")):
        value = req.get(mean) if req.get(mean) is not None else get(o, "dataset", dataset)
        f[key] = round(c.metric({mean: value}, mean, "regenerate the report (request_info is written by every run)"))
    quant = eng.get("quantization")
    plain = quant is None or str(quant).strip().upper() in ("", "NO_QUANT", "NONE")
    f["precision"] = precision_of(eng.get("dtype")) if plain else _quant(quant)
    if "kv_cache_dtype" in eng:  # null: the cache is kept at the model's 16-bit dtype
        kv = eng["kv_cache_dtype"]
        f["kv_precision"] = "bf16" if kv is None or str(kv).strip().upper() in ("", "NO_QUANT", "NONE") \
            else _quant(kv)
    mean = req.get("avg_num_concurrent_requests")
    known = isinstance(mean, (int, float)) and not isinstance(mean, bool) and math.isfinite(mean) and mean > 0
    if known and world.get("max_batch_size") == 1 and mean <= 1.05:
        f["concurrency"] = 1
    else:
        f["concurrency_missing"] = (
            "the run's concurrency is not recorded (trtllm-bench does not save --concurrency"
            + (f"; this run averaged {mean:.1f} requests in flight)" if known else ")"),
            "pass --concurrency N, the --concurrency trtllm-bench was given" + (
                f" (a run without one sent every request at once: the mean in flight, {max(1, round(mean))}, is "
                "the nearest reading)" if known else ""))
    gpu = get(o, "machine", "name")
    if isinstance(gpu, str) and gpu:
        f["hint"] = {"system": f"the run's GPUs: {world.get('world_size', '?')}x {gpu}"}
    return f


READERS = {"vllm": serving, "sglang": serving, "genai-perf": genai, "aiperf": genai, "trtllm-bench": trtllm}
