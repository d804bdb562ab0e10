"""`plan calibrate`: benchmark result files (vLLM, SGLang, genai-perf, AIPerf, trtllm-bench; data.benchfiles) or
measurements CSVs in, measurement rows out (written as the CSV that `--measurements` reads), and
the physics model's error against them.

A run names its model as the served checkpoint (a Hugging Face repo such as
meta-llama/Llama-3.1-8B-Instruct); the row needs the catalog's id. data.checkpoints.catalog_model
finds it: the id itself, a checkpoint the catalog row names or its source cites, or either after
dropping the organisation and a tuning or quantisation suffix (-Instruct, -FP8, ...); otherwise
--model must say which it is.

The report compares, row by row, the physics model at the row's own configuration (its model,
system's accelerator, TP x PP, precision, request size, engine) and concurrency, as
benchmarks/fidelity.py predicts its rows:
    TPOT  serving.tpot_s at batch = min(concurrency, the KV cache's and the engine's cap)
    TTFT  serving.ttft_s at batch = concurrency (the closed-loop mean)
    error = modelled / measured - 1
and per accelerator the factor that would fit its rows: the geometric mean of measured / modelled
(the single multiplier that minimises the squared log error), with the median error left after
applying it. The planner does not apply such factors (one set of global factors serves every
accelerator: physics/calibration.py); passing the CSV as --measurements uses the rows themselves.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from planner.data.benchfiles import read_benchmark_file
from planner.data.checkpoints import catalog_model as _catalog_model
from planner.data.checkpoints import stem as _stem
from planner.data.errors import InputError, Problem, suggest
from planner.data.jobs import Workload, kv_precision_of
from planner.data.measurements import Measurement, check_names, parse_measurements
from planner.data.yamlio import read_text
from planner.physics import engines, serving
from planner.physics.calibration import default

def read_rows(files: list[Path], catalog, *, model: str | None = None, system: str | None = None,
              tp: int | None = None, precision: str | None = None, engine: str | None = None,
              concurrency: int | None = None, warnings: list[str] | None = None) -> list[Measurement]:
    """Every row of the files in order: benchmark results (the flags fill what a run lacks) and
    measurements CSVs (complete already). Names are checked against the catalog (exit 2 at file:line)."""
    if model is not None and model.lower() not in catalog.models:
        raise InputError(Problem(f"unknown model '{model}'", "--model", suggest(model, catalog.models, "models")))
    rows: list[Measurement] = []
    filled: dict[str, int] = {}  # (the loads one --concurrency fills, across the files)
    for path in files:
        if path.suffix.lower() == ".csv":
            rows += parse_measurements(read_text(path, "measurements CSV"), str(path))
            continue
        for r in read_benchmark_file(path, model=model and model.lower(), system=system, tp=tp,
                                     precision=precision, engine=engine, concurrency=concurrency, warnings=warnings,
                                     filled=filled):
            mid = _catalog_model(r.model, catalog.models)
            if mid is None:
                raise InputError(Problem(f"model '{r.model}' is not a catalog model", r.where,
                                         "pass --model ID, the catalog model it is ("
                                         + suggest(_stem(r.model), catalog.models, "models") + ")"))
            if mid != r.model:
                r = dataclasses.replace(r, model=mid, source=f"{r.source} served {r.model}")
            rows.append(dataclasses.replace(r, system=r.system.lower()))
    check_names(rows, catalog)
    return rows


@dataclass(frozen=True)
class Compared:
    row: Measurement
    accelerator: str
    tpot_ms: float | None  # modelled; None: the configuration does not fit in memory
    ttft_ms: float | None

    @property
    def tpot_error(self) -> float | None:
        return None if self.tpot_ms is None else self.tpot_ms / self.row.tpot_ms - 1

    @property
    def ttft_error(self) -> float | None:
        if self.ttft_ms is None or not self.row.ttft_ms:
            return None
        return self.ttft_ms / self.row.ttft_ms - 1


def compare(rows: list[Measurement], catalog) -> list[Compared]:
    """The physics model beside each row (see the module docstring)."""
    out = []
    for r in rows:
        m = catalog.models[r.model]
        acc = catalog.accelerators[catalog.systems[r.system].accelerator]
        wl = Workload(r.precision, kv_precision_of(r.precision, r.kv_precision if r.kv_precision in
                                                   ("bf16", "fp8", "int8") else None),
                      r.input_tokens, r.output_tokens)
        engine = r.engine if r.engine in engines.ENGINES else None  # tgi, lmdeploy: vLLM's rules
        cap = min(serving.max_batch_by_memory(m, acc, wl, r.tp, r.pp), default().max_batch)
        if cap < 1:
            out.append(Compared(r, acc.id, None, None))
            continue
        tpot = serving.tpot_s(m, acc, wl, r.tp, r.pp, min(r.concurrency, cap), engine=engine) * 1e3
        ttft = serving.ttft_s(m, acc, wl, r.tp, r.pp, batch=r.concurrency, engine=engine) * 1e3
        out.append(Compared(r, acc.id, tpot, ttft))
    return out


@dataclass(frozen=True)
class Factor:
    accelerator: str
    rows: int
    tpot: float | None  # measured / modelled, geometric mean over the rows
    tpot_error_after: float | None  # median |error| with the factor applied
    ttft: float | None
    ttft_error_after: float | None


def _fit(ratios: list[float]) -> tuple[float | None, float | None]:
    """(geometric mean of measured/modelled, median |error| after multiplying by it)."""
    if not ratios:
        return None, None
    k = math.exp(statistics.fmean(math.log(x) for x in ratios))
    return k, statistics.median(abs(k / x - 1) for x in ratios)


def factors(compared: list[Compared]) -> list[Factor]:
    """Per accelerator, the multiplier on the modelled TPOT and TTFT that fits its rows best."""
    out = []
    for acc in sorted({c.accelerator for c in compared}):
        mine = [c for c in compared if c.accelerator == acc]
        tpot = _fit([c.row.tpot_ms / c.tpot_ms for c in mine if c.tpot_ms])
        ttft = _fit([c.row.ttft_ms / c.ttft_ms for c in mine if c.ttft_ms and c.row.ttft_ms])
        out.append(Factor(acc, len(mine), *tpot, *ttft))
    return out


def median_abs(errors: list[float | None]) -> float | None:
    got = [abs(e) for e in errors if e is not None]
    return statistics.median(got) if got else None
