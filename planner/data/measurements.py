"""The user's own serving measurements: CSV files (scenario key `measurements`, `--measurements`,
written by `plan calibrate`) of mean TPOT and TTFT at a concurrency, per model, system, TP and
precision. Where rows exist for a (model, system, tp, precision[, pp]) they replace the physics
model there (planner.physics.measured); every bad row is an InputError (exit 2) at file:line.

Columns: model, system, tp, precision, input_tokens, output_tokens, concurrency, tpot_ms, ttft_ms,
source; optional pp (default 1), kv_precision, engine, as_of. ttft_ms may be empty.

One row type (Measurement) for both ways in: a CSV line read here, and a benchmark run read by
data.benchfiles (`plan calibrate`), which writes them back out with write_measurements_csv.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO

from planner.data.errors import InputError, Problem
from planner.data.yamlio import read_text

REQUIRED = ("model", "system", "tp", "precision", "input_tokens", "output_tokens", "concurrency",
            "tpot_ms", "ttft_ms", "source")
OPTIONAL = ("pp", "kv_precision", "engine", "as_of")
COLUMNS = REQUIRED + OPTIONAL
"""the order plan calibrate writes them in"""
PRECISIONS = ("bf16", "fp8", "int8", "int4", "fp4")


@dataclass(frozen=True)
class Measurement:
    """One measured run: mean TPOT and TTFT (ms) at a configured concurrency, for requests of
    input_tokens in and output_tokens out, of `model` on `system` split TP x PP at `precision`.
    `where` is the file (and line) it was read from, for messages."""
    model: str
    system: str
    tp: int
    precision: str
    input_tokens: int
    output_tokens: int
    concurrency: int
    tpot_ms: float
    ttft_ms: float | None
    source: str
    pp: int = 1
    kv_precision: str | None = None
    engine: str | None = None
    as_of: str | None = None
    where: str = ""

    @property
    def key(self) -> tuple[str, str, int, int, str]:
        return (self.model, self.system, self.tp, self.pp, self.precision)


def _number(text: str, column: str, where: str, *, whole: bool, positive: bool = True) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(Problem(f"{column} is {text!r}, not a number", where,
                                 f"write a {'whole ' if whole else ''}number in the {column} column"))
    if not math.isfinite(x) or x < 0 or (positive and x == 0) or (whole and x != int(x)) or x > 1e9:
        raise InputError(Problem(f"{column} is {text!r}", where, f"{column} must be a "
                                 f"{'whole ' if whole else ''}{'positive' if positive else 'non-negative'} number"))
    return x


def parse_measurements(text: str, name: str) -> list[Measurement]:
    """The rows of one measurements CSV; InputError at file:line for a bad header or row."""
    reader = csv.reader(io.StringIO(text))
    header = [h.strip().lower() for h in next(reader, [])]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(Problem(f"missing column(s) {', '.join(missing)}", f"{name}:1",
                                 "the header needs " + ", ".join(REQUIRED) + " (optional: " + ", ".join(OPTIONAL) + ")"))
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if unknown:
        raise InputError(Problem(f"unknown column(s) {', '.join(unknown)}", f"{name}:1",
                                 "remove them; allowed: " + ", ".join(REQUIRED + OPTIONAL)))
    rows = []
    for line, cells in enumerate(reader, 2):
        if not any(c.strip() for c in cells):
            continue
        where = f"{name}:{line}"
        if len(cells) != len(header):
            raise InputError(Problem(f"{len(cells)} cells, the header has {len(header)}", where,
                                     "one cell per column (leave optional ones empty)"))
        row = {h: c.strip() for h, c in zip(header, cells)}
        for c in ("model", "system", "precision", "source"):
            if not row[c]:
                raise InputError(Problem(f"{c} is empty", where, f"fill in the {c} column"))
        if row["precision"] not in PRECISIONS:
            raise InputError(Problem(f"precision {row['precision']!r} is unknown", where,
                                     "use one of " + ", ".join(PRECISIONS)))
        ints = {c: int(_number(row[c], c, where, whole=True))
                for c in ("tp", "input_tokens", "output_tokens", "concurrency")}
        pp = int(_number(row["pp"], "pp", where, whole=True)) if row.get("pp") else 1
        ttft = _number(row["ttft_ms"], "ttft_ms", where, whole=False, positive=False) if row["ttft_ms"] else None
        rows.append(Measurement(row["model"].lower(), row["system"].lower(), ints["tp"], row["precision"],
                                ints["input_tokens"], ints["output_tokens"], ints["concurrency"],
                                _number(row["tpot_ms"], "tpot_ms", where, whole=False), ttft, row["source"], pp,
                                row.get("kv_precision") or None, row.get("engine") or None, row.get("as_of") or None,
                                where))
    return rows


def write_measurements_csv(rows: Iterable[Measurement], path_or_file: str | Path | IO[str]) -> None:
    """A header and one line per row, columns in COLUMNS order; None is an empty cell (what
    parse_measurements reads back)."""
    if isinstance(path_or_file, (str, Path)):
        with open(path_or_file, "w", encoding="utf-8", newline="") as fh:
            return write_measurements_csv(rows, fh)
    w = csv.writer(path_or_file, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(["" if getattr(r, k) is None else getattr(r, k) for k in COLUMNS] for r in rows)


def load_measurements(paths: tuple[str, ...]) -> tuple[Measurement, ...]:
    """Every row of the files, in order, named as given (cached: the options and the verifier read
    the same rows; the cache knows each file by its absolute path, size and modification time, so a
    relative name read from another directory, or a file rewritten, is read afresh)."""
    return _load(tuple((str(p), _stamp(p)) for p in paths))


def _stamp(path: str) -> tuple[str, int, int] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None  # read_text says what is wrong with it
    return str(Path(path).resolve()), st.st_mtime_ns, st.st_size


@lru_cache(maxsize=16)
def _load(files: tuple[tuple[str, tuple | None], ...]) -> tuple[Measurement, ...]:
    out: list[Measurement] = []
    for name, _ in files:
        out += parse_measurements(read_text(Path(name), "measurements CSV"), name)
    return tuple(out)


def check_names(rows, catalog) -> None:
    """Every row names a catalog model and system, and a TP x PP that the system can hold."""
    from planner.data.errors import suggest

    problems = []
    for r in rows:
        if r.model not in catalog.models:
            problems.append(Problem(f"unknown model '{r.model}'", r.where, suggest(r.model, catalog.models, "models")))
        elif r.system not in catalog.systems:
            problems.append(Problem(f"unknown system '{r.system}'", r.where,
                                    suggest(r.system, catalog.systems, "systems")))
        elif r.tp > catalog.systems[r.system].scaleup_domain:
            problems.append(Problem(f"TP{r.tp} exceeds {r.system}'s scale-up domain "
                                    f"({catalog.systems[r.system].scaleup_domain})", r.where, "check the tp column"))
    if problems:
        raise InputError(problems[:20])
