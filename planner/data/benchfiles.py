"""Read serving-benchmark result files into measurement rows (`plan calibrate`; stdlib only).

Formats (the project's reference notes, serving-benchmarks.md section A): vLLM ``benchmark_serving.py`` /
``vllm bench serve --save-result`` JSON (``--append-result``: one object per line); SGLang ``bench_serving
--output-file`` JSONL (one run per line); genai-perf ``profile_export_genai_perf.json`` and AIPerf
``profile_export_aiperf.json``; TensorRT-LLM ``trtllm-bench throughput --streaming --report_json`` (section A4:
its ``engine``, ``world_info``, ``request_info`` and ``streaming_metrics``). A row holds mean TPOT/TTFT (ms), configured concurrency and mean input/output
tokens per successful request (a data.measurements.Measurement, the row type the measurements CSV holds);
anything missing or malformed raises :class:`BenchFileError` (what/where/fix).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from planner.data.errors import InputError, Problem
from planner.data.measurements import Measurement

# Engine dtype/quantization names -> planner precisions; fp16 weights count as "bf16" (same bytes, speed).
_PRECISION = {**dict.fromkeys(("bfloat16", "bf16", "float16", "fp16", "half"), "bf16"),
              **dict.fromkeys(("fp8", "fp8_e4m3", "fp8_e5m2", "w8a8_fp8"), "fp8"), "int8": "int8",
              "w8a8_int8": "int8", **dict.fromkeys(("int4", "awq", "gptq"), "int4"),
              **dict.fromkeys(("fp4", "nvfp4", "mxfp4", "modelopt_fp4"), "fp4")}
_FLAG = {"model": "--model NAME", "system": "--system ID (a catalog/systems.csv id, e.g. h100-sxm-x8)",
         "tp": "--tp N", "precision": "--precision bf16|fp8|int8|int4|fp4", "engine": "--engine NAME"}
_GENAI_KEYS = ("time_to_first_token", "inter_token_latency", "request_latency", "output_sequence_length")
_TIME_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


class BenchFileError(InputError):
    """A benchmark file cannot be turned into rows: says what, where and how to fix it (exit 2)."""
    def __init__(self, path: str | Path, what: str, how_to_fix: str, line: int | None = None) -> None:
        self.path, self.what, self.how_to_fix, self.line = str(path), what, how_to_fix, line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(Problem(what, where, how_to_fix))
        self.args = (f"{where}: {what}. Fix: {how_to_fix}",)

    def __str__(self) -> str:
        return self.args[0]


class _Ctx:
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


def _get(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]... or None where any level is missing or not a dict."""
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def _jtype(x: Any) -> str:
    """The JSON name of a parsed value's type (for messages)."""
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return names.get(type(x), "null")


def _precision(*names: Any) -> str | None:
    """First engine dtype/quantization name that maps to a planner precision ('auto' does not)."""
    return next((_PRECISION[n.strip().lower()] for n in names
                 if isinstance(n, str) and n.strip().lower() in _PRECISION), None)


def _date(value: Any) -> str | None:
    """'20250530-203806' or an ISO timestamp -> '2025-05-30'; None if unrecognised."""
    m = re.match(r"(\d{4})-?(\d{2})-?(\d{2})", value) if isinstance(value, str) else None
    return "-".join(m.groups()) if m else None


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


def _detect(obj: dict[str, Any]) -> str:
    """Which tool wrote this result object: vllm, sglang, genai-perf, aiperf, trtllm-bench or unknown."""
    if isinstance(obj.get("engine"), dict) and isinstance(obj.get("world_info"), dict):
        return "trtllm-bench"
    if isinstance(obj.get("input_config"), dict) or any(isinstance(obj.get(k), dict) for k in _GENAI_KEYS):
        return "aiperf" if _get(obj, "input_config", "loadgen") is not None else "genai-perf"
    if "model_id" in obj or "num_prompts" in obj:
        return "vllm"
    if "dataset_name" in obj or "total_output_tokens_retokenized" in obj or "server_info" in obj:
        return "sglang"
    return "unknown"


def _parse(path: Path, text: str) -> list[tuple[int | None, dict[str, Any]]]:
    """(line or None, object) per run: one whole-file JSON object, else JSON Lines."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as e:
        lines = [(no, s) for no, s in enumerate(text.splitlines(), 1) if s.strip()]
        if not lines:
            raise BenchFileError(path, "file is empty", "pass a benchmark result file") from None
        try:
            json.loads(lines[0][1])
        except json.JSONDecodeError:  # not JSON Lines either: report where the whole-file parse failed
            raise BenchFileError(path, f"malformed JSON ({e.msg}, column {e.colno})",
                                 "repair or regenerate the file", e.lineno) from None
    else:
        if not isinstance(whole, dict):
            raise BenchFileError(path, f"top level is a JSON {_jtype(whole)}, not an object",
                                 "pass a vLLM, SGLang, genai-perf or trtllm-bench result file")
        return [(None, whole)]
    out: list[tuple[int | None, dict[str, Any]]] = []
    for no, s in lines:
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as e:
            raise BenchFileError(path, f"malformed JSON ({e.msg}, column {e.colno})", "repair or delete this "
                                 "line (a run killed mid-write leaves a partial line)", no) from None
        if not isinstance(obj, dict):
            raise BenchFileError(path, f"line holds a JSON {_jtype(obj)}, not an object",
                                 "each line must be one benchmark result object", no)
        out.append((no, obj))
    return out


def _serving(c: _Ctx, o: dict[str, Any]) -> dict[str, Any]:
    """vLLM and SGLang results: same ``mean_*_ms`` and ``total_*_tokens`` keys, different metadata."""
    tool = "vllm bench serve" if c.fmt == "vllm" else "python -m sglang.bench_serving"
    done = c.integer(o.get("completed"), "completed")  # successful requests
    f: dict[str, Any] = {
        "tpot_ms": c.metric(o, "mean_tpot_ms", f"re-run {tool} with streaming and a tokenizer so TPOT "
                            "is recorded (SGLang before mid-2025 did not save it)"),
        "ttft_ms": None if o.get("mean_ttft_ms") is None else c.number(o["mean_ttft_ms"], "mean_ttft_ms"),
        "input_tokens": round(c.metric(o, "total_input_tokens", "regenerate the file") / done),
        "output_tokens": round(c.metric(o, "total_output_tokens", "regenerate the file") / done)}
    if o.get("max_concurrency") is not None:
        f["concurrency"] = c.integer(o["max_concurrency"], "max_concurrency")
    else:
        seen = o.get("concurrency") if c.fmt == "sglang" else o.get("max_concurrent_requests")
        seen = f"; measured in-flight {seen}" if isinstance(seen, (int, float)) else ""
        f["concurrency_missing"] = (
            f"max_concurrency is not recorded (open loop at request_rate={o.get('request_rate')!r}{seen})",
            f"re-run {tool} with --max-concurrency N, or pass --concurrency N if it ran closed-loop at N")
    guess = o.get("backend") if o.get("backend") in ("vllm", "sglang", "tgi", "lmdeploy") else None
    if c.fmt == "vllm":  # --metadata KEY=VALUE pairs sit at top level, as strings
        md = {k: o.get(k) for k in ("system", "tp", "tensor_parallel_size", "pp", "pipeline_parallel_size",
                                    "precision", "kv_precision", "kv_cache_dtype", "engine")}
        f.update(model=o.get("model_id"), system=md["system"], as_of=_date(o.get("date")),
                 tp=md["tensor_parallel_size"] or md["tp"], pp=md["pipeline_parallel_size"] or md["pp"],
                 precision=_precision(md["precision"]), engine=md["engine"] or guess,
                 kv_precision=_precision(md["kv_precision"], md["kv_cache_dtype"]))
        if isinstance(o.get("gpu"), str) and o["gpu"]:  # --metadata gpu=4xNVIDIA_L40S (a convention, not a key of vLLM's)
            f["hint"] = {"system": f"the run's --metadata gpu={o['gpu']}"}
    else:  # newest SGLang saves the server's arguments as server_info
        si = o.get("server_info") if isinstance(o.get("server_info"), dict) else {}
        f.update(model=si.get("model_path"), tp=si.get("tp_size"), pp=si.get("pp_size"),
                 precision=_precision(si.get("quantization"), si.get("dtype")),
                 kv_precision=_precision(si.get("kv_cache_dtype")),
                 engine="sglang" if si or str(o.get("backend")).startswith("sglang") else None)
    return f


def _genai(c: _Ctx, o: dict[str, Any]) -> dict[str, Any]:
    """genai-perf / AIPerf: metric objects ``{unit, avg, p50, ...}`` plus ``input_config``."""
    ic = o.get("input_config") if isinstance(o.get("input_config"), dict) else {}
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

    models = ic.get("model") or ic.get("model_names") or _get(ic, "endpoint", "model_names")
    f: dict[str, Any] = {
        "tpot_ms": avg("inter_token_latency", True, "--streaming"),  # (latency - TTFT)/(OSL - 1): TPOT
        "ttft_ms": avg("time_to_first_token", False, "--streaming"),
        "input_tokens": round(avg("input_sequence_length", True, "a --tokenizer") or 0),
        "output_tokens": round(avg("output_sequence_length", True, "a --tokenizer") or 0),
        "model": models[0] if isinstance(models, list) and models else models,
        "as_of": _date(o.get("start_time"))}
    conc = next((v for v in (ic.get("concurrency"), _get(ic, "perf_analyzer", "stimulus", "concurrency"),
                             _get(ic, "loadgen", "concurrency")) if v is not None), None)
    if conc is None:  # the artifact directory name encodes the load: ...-concurrency64
        m = re.search(r"-concurrency(\d+)", f"{ic.get('artifact_dir', '')} {c.path.parent.name}")
        conc = m.group(1) if m else None
    if conc is not None:
        f["concurrency"] = c.integer(conc, "concurrency", text=True)
    else:
        f["concurrency_missing"] = ("concurrency is not recorded (request-rate run, or an unset default)",
                                    f"re-run {tool} with --concurrency N, or pass --concurrency N")
    return f


def _trtllm(c: _Ctx, o: dict[str, Any]) -> dict[str, Any]:
    """trtllm-bench's report: the engine's model and quantization, the world's TP x PP, the requests'
    mean lengths, and (only with --streaming) mean TPOT and TTFT. It never saves --concurrency."""
    eng, world = o["engine"], o["world_info"]
    req = o.get("request_info") if isinstance(o.get("request_info"), dict) else {}
    stream = o.get("streaming_metrics") if isinstance(o.get("streaming_metrics"), dict) else {}
    streamed = "re-run trtllm-bench throughput with --streaming, which records TPOT and TTFT"
    f: dict[str, Any] = {
        "tpot_ms": c.metric(stream, "avg_tpot_ms", streamed),
        "ttft_ms": None if stream.get("avg_ttft_ms") is None else c.number(stream["avg_ttft_ms"], "avg_ttft_ms"),
        "model": eng.get("model") or eng.get("model_path"), "tp": world.get("tp_size"), "pp": world.get("pp_size"),
        "engine": "trtllm"}
    for key, mean, dataset in (("input_tokens", "avg_input_length", "avg_isl"),
                               ("output_tokens", "avg_output_length", "avg_osl")):
        value = req.get(mean) if req.get(mean) is not None else _get(o, "dataset", dataset)
        f[key] = round(c.metric({mean: value}, mean, "regenerate the report (request_info is written by every run)"))
    quant = eng.get("quantization")
    plain = quant is None or str(quant).strip().upper() in ("", "NO_QUANT", "NONE")
    f["precision"] = _precision(eng.get("dtype")) if plain else _quant(quant)
    if "kv_cache_dtype" in eng:  # null: the cache is kept at the model's 16-bit dtype
        kv = eng["kv_cache_dtype"]
        f["kv_precision"] = "bf16" if kv is None or str(kv).strip().upper() in ("", "NO_QUANT", "NONE") \
            else _quant(kv)
    mean = req.get("avg_num_concurrent_requests")
    known = isinstance(mean, (int, float)) and not isinstance(mean, bool) and math.isfinite(mean) and mean > 0
    f["concurrency_missing"] = (
        "the run's concurrency is not recorded (trtllm-bench does not save --concurrency"
        + (f"; this run averaged {mean:.1f} requests in flight)" if known else ")"),
        "pass --concurrency N, the --concurrency trtllm-bench was given" + (
            f" (a run without one sent every request at once: the mean in flight, {max(1, round(mean))}, is the "
            "nearest reading)" if known else ""))
    gpu = _get(o, "machine", "name")
    if isinstance(gpu, str) and gpu:
        f["hint"] = {"system": f"the run's GPUs: {world.get('world_size', '?')}x {gpu}"}
    return f


def read_benchmark_file(path: str | Path, *, model: str | None = None, system: str | None = None,
                        tp: int | None = None, precision: str | None = None, engine: str | None = None,
                        concurrency: int | None = None) -> list[Measurement]:
    """Rows of a vLLM / SGLang / genai-perf / AIPerf / trtllm-bench result file, one per run, in file order.

    Values in the file win and keyword arguments fill what it lacks; a keyword contradicting the file
    raises. ``engine`` overrides the file's guess; ``concurrency`` only fills an open-loop/unset run;
    ``model`` names the catalog model the run served and replaces the file's checkpoint name (such
    as a Hugging Face repo), which the row's source keeps ("... served <name>").
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")  # tolerate a BOM
    except (OSError, UnicodeDecodeError) as e:
        raise BenchFileError(p, f"cannot read the file ({e})",
                             "check the path; it must be a UTF-8 text file") from None
    given = {"model": model, "system": system, "tp": tp, "precision": precision, "engine": engine}
    rows: list[Measurement] = []
    for line, obj in _parse(p, text):
        c = _Ctx(p, line, _detect(obj))
        if c.fmt == "unknown":
            raise c.fail("not a recognised result (no vLLM model_id, SGLang dataset_name, genai-perf "
                         "metrics or trtllm-bench world_info)", "pass a vLLM/SGLang/genai-perf/AIPerf/trtllm-bench "
                         "result file")
        f = {"genai-perf": _genai, "aiperf": _genai, "trtllm-bench": _trtllm}.get(c.fmt, _serving)(c, obj)
        for key, value in given.items():
            if key == "precision" and value is not None and not (value := _precision(value)):
                raise c.fail(f"precision {precision!r} is not one the planner knows", f"pass {_FLAG[key]}")
            if value is None:
                continue
            if key == "model" and f.get(key) not in (None, "", value):
                f["served"] = f[key]  # the checkpoint's own name; the row names the catalog model
            if f.get(key) is None or key in ("engine", "model"):  # the file's engine is only a guess
                f[key] = value
            elif str(f[key]).lower() != str(value).lower():
                raise c.fail(f"{key} given as {value} but the file says {f[key]}",
                             f"drop {_FLAG[key].split()[0]} or correct the file")
        for key in [k for k in ("tp", "pp") if f.get(k) is not None]:
            f[key] = c.integer(f[key], f"{key} (parallel size)", text=True)
        for key in ("model", "system", "tp", "precision"):
            if not isinstance(f.get(key), int if key == "tp" else str) or f[key] == "":
                absent = f.get(key) in (None, "")
                what = "is not recorded in this" if absent else f"is {f[key]!r}, not a string, in this"
                hint = f.get("hint", {}).get(key)
                raise c.fail(f"{key} {what} {c.fmt} file" + (f" ({hint})" if absent and hint else ""),
                             f"pass {_FLAG[key]}" if absent else "edit the file")
        if "concurrency_missing" in f:
            if concurrency is None:
                raise c.fail(*f["concurrency_missing"])
            f["concurrency"] = c.integer(concurrency, "--concurrency")
        elif concurrency is not None and concurrency != f["concurrency"]:
            raise c.fail(f"concurrency given as {concurrency} but the file says {f['concurrency']}",
                         "drop --concurrency or correct the file")
        if f["tpot_ms"] <= 0:
            raise c.fail(f"mean TPOT is {f['tpot_ms']} ms", "need a streamed run with outputs > 1 token")
        where = str(p) + ("" if line is None else f":{line}")
        source = f"{c.fmt}:{where}" + (f" served {f['served']}" if f.get("served") else "")
        rows.append(Measurement(str(f["model"]), str(f["system"]), f["tp"], str(f["precision"]), f["input_tokens"],
                                f["output_tokens"], f["concurrency"], round(f["tpot_ms"], 4),
                                None if f["ttft_ms"] is None else round(f["ttft_ms"], 4), source,
                                f.get("pp") or 1, f.get("kv_precision"), f.get("engine"), f.get("as_of"), where))
    return rows

