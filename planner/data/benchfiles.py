"""Read serving-benchmark result files into measurement rows (`plan calibrate`; stdlib only).

A file holds one run (one JSON object), several (JSON Lines: vLLM ``--append-result``, SGLang's
``--output-file``; or a JSON array of run objects: ``vllm bench sweep``'s summary), each read by its
tool's reader (data.benchformats: vLLM, SGLang, genai-perf, AIPerf, trtllm-bench). A row holds mean
TPOT/TTFT (ms), configured concurrency and mean input/output tokens per successful request (a
data.measurements.Measurement, the row type the measurements CSV holds). What a run does not record
(the catalog system always; model, TP, precision or concurrency in some) comes from the keyword
arguments (the command's flags), all of a run's missing ones asked for in one message; anything
missing or malformed raises :class:`BenchFileError` (what/where/fix). A caveat the rows carry (failed
requests, speculative decoding) is appended to ``warnings``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planner.data.benchformats import READERS, BenchFileError, Ctx, detect, precision_of
from planner.data.money import listed
from planner.data.measurements import Measurement

__all__ = ["BenchFileError", "read_benchmark_file"]

_FLAG = {"model": "--model NAME", "system": "--system ID (a catalog/systems.csv id, e.g. h100-sxm-x8)",
         "tp": "--tp N", "precision": "--precision bf16|fp8|int8|int4|fp4", "engine": "--engine NAME"}
_FILES = "pass a vLLM, SGLang, genai-perf, AIPerf or trtllm-bench result file"


def _jtype(x: Any) -> str:
    """The JSON name of a parsed value's type (for messages)."""
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return names.get(type(x), "null")


def _parse(path: Path, text: str) -> list[tuple[int | None, dict[str, Any]]]:
    """(line or None, object) per run: one whole-file JSON object, a JSON array of them (each with the
    line it starts on), else JSON Lines."""
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
        if isinstance(whole, list) and whole and all(isinstance(x, dict) for x in whole):
            return _items(text, whole)
        if not isinstance(whole, dict):
            raise BenchFileError(path, f"top level is a JSON {_jtype(whole)}, not an object", _FILES)
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


def _items(text: str, items: list[dict[str, Any]]) -> list[tuple[int | None, dict[str, Any]]]:
    """A JSON array's objects, each with the line its '{' is on (the array parsed once more, element
    by element, for where each starts)."""
    decoder, at, out = json.JSONDecoder(), text.index("[") + 1, []
    for obj in items:
        while text[at] in " \t\r\n,":
            at += 1
        out.append((text.count("\n", 0, at) + 1, obj))
        at = decoder.raw_decode(text, at)[1]
    return out


def _merge(c: Ctx, f: dict[str, Any], given: dict[str, Any]) -> None:
    """The keyword arguments into the run's fields: they fill what it lacks, replace the file's engine
    guess and its checkpoint name (kept as 'served'), and raise where they contradict it."""
    for key, value in given.items():
        if key == "precision" and value is not None and not (value := precision_of(value)):
            raise c.fail(f"precision {given['precision']!r} is not one the planner knows", f"pass {_FLAG[key]}")
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


def _missing(c: Ctx, f: dict[str, Any], concurrency: int | None) -> None:
    """One message for everything the run lacks that no keyword gave: each field, what the file says
    instead where it says something (hint), and the concurrency's own sentence."""
    absent = []
    for key in ("model", "system", "tp", "precision"):
        if f.get(key) in (None, ""):
            absent.append(key)
        elif not isinstance(f[key], int if key == "tp" else str):
            raise c.fail(f"{key} is {f[key]!r}, not a string, in this {c.fmt} file", "edit the file")
    what, how = [], []
    if absent:
        hints = [h for k in absent if (h := f.get("hint", {}).get(k))]
        what.append(f"{listed(absent)} {'is' if len(absent) == 1 else 'are'} not recorded in this {c.fmt} file"
                    + (f" ({'; '.join(hints)})" if hints else ""))
        how.append("pass " + listed([_FLAG[k] for k in absent]))
    if "concurrency_missing" in f and concurrency is None:
        what.append(f["concurrency_missing"][0])
        how.append(f["concurrency_missing"][1])
    if what:
        raise c.fail("; ".join(what), "; ".join(how))


def read_benchmark_file(path: str | Path, *, model: str | None = None, system: str | None = None,
                        tp: int | None = None, precision: str | None = None, engine: str | None = None,
                        concurrency: int | None = None, warnings: list[str] | None = None,
                        filled: dict[str, int] | None = None) -> list[Measurement]:
    """Rows of a vLLM / SGLang / genai-perf / AIPerf / trtllm-bench result file, one per run, in file order.

    Values in the file win and keyword arguments fill what it lacks; a keyword contradicting the file
    raises. ``engine`` overrides the file's guess; ``concurrency`` only fills a run that records none,
    and only where the file's runs without one ran at one load (a sweep over request rates given one
    concurrency would make its runs one row each at the same key); ``model`` names the catalog model
    the run served and replaces the file's checkpoint name (such as a Hugging Face repo), which the
    row's source keeps ("... served <name>"). Caveats go to ``warnings``, "FILE[:LINE]: ...". ``filled``
    (load -> runs) carries the loads --concurrency filled across the files of one command.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")  # tolerate a BOM
    except (OSError, UnicodeDecodeError) as e:
        raise BenchFileError(p, f"cannot read the file ({e})",
                             "check the path; it must be a UTF-8 text file") from None
    given = {"model": model, "system": system, "tp": tp, "precision": precision, "engine": engine}
    rows: list[Measurement] = []
    filled = {} if filled is None else filled  # the load of each run --concurrency fills in, and how many
    for line, obj in _parse(p, text):
        c = Ctx(p, line, detect(obj))
        if c.fmt == "unknown":
            raise c.fail("not a recognised result (no vLLM model_id, SGLang dataset_name, genai-perf "
                         "metrics or trtllm-bench world_info)", _FILES)
        f = READERS[c.fmt](c, obj)
        _merge(c, f, given)
        _missing(c, f, concurrency)
        if "concurrency_missing" in f:
            f["concurrency"] = c.integer(concurrency, "--concurrency")
            filled[f.get("load", "")] = filled.get(f.get("load", ""), 0) + 1
            if len(filled) > 1:
                raise c.fail(f"runs that record no concurrency ran at different loads (request_rate "
                             f"{', '.join(k for k in filled)}): one --concurrency would give them one key, and the plan "
                             "the slowest", "calibrate closed-loop runs (--max-concurrency N), or run plan calibrate "
                             "once per load with its own --concurrency")
        elif concurrency is not None and concurrency != f["concurrency"]:
            raise c.fail(f"concurrency given as {concurrency} but the file says {f['concurrency']}",
                         "drop --concurrency or correct the file")
        if f["tpot_ms"] <= 0:
            raise c.fail(f"mean TPOT is {f['tpot_ms']} ms", "need a streamed run with outputs > 1 token")
        where = str(p) + ("" if line is None else f":{line}")
        if warnings is not None:
            warnings += [f"{where}: {note}" for note in f.get("notes", ())]
        source = f"{c.fmt}:{where}" + (f" served {f['served']}" if f.get("served") else "")
        rows.append(Measurement(str(f["model"]), str(f["system"]), f["tp"], str(f["precision"]), f["input_tokens"],
                                f["output_tokens"], f["concurrency"], round(f["tpot_ms"], 4),
                                None if f["ttft_ms"] is None else round(f["ttft_ms"], 4), source,
                                f.get("pp") or 1, f.get("kv_precision"), f.get("engine"), f.get("as_of"), where))
    return rows
