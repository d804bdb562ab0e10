"""`plan calibrate FILE...`: benchmark results to a measurements CSV (stdout, or -o written safely
the way --output is), and with --report the physics model's error against the rows and the
per-accelerator factors that would fit them (planner.app.calibrate)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import typer

from planner.cli import tables
from planner.cli.output import check_output, emit


@dataclass
class CalibrateRequest:
    files: list[Path]
    model: str | None = None
    system: str | None = None
    tp: int | None = None
    precision: str | None = None
    engine: str | None = None
    concurrency: int | None = None
    output: Path | None = None
    force: bool = False
    report: bool = False
    catalog_paths: tuple[str, ...] = ()


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}".replace("-0.0%", "+0.0%")


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def report_text(compared, factors) -> str:
    from planner.app.calibrate import median_abs

    rows = [{"row": c.row.where, "model": c.row.model, "system": c.row.system, "TPxPP": f"{c.row.tp}x{c.row.pp}",
             "precision": c.row.precision, "in/out": f"{c.row.input_tokens}/{c.row.output_tokens}",
             "users": c.row.concurrency, "TPOT meas": _ms(c.row.tpot_ms), "TPOT model": _ms(c.tpot_ms),
             "TPOT err": _pct(c.tpot_error) if c.tpot_ms is not None else "no fit",
             "TTFT meas": _ms(c.row.ttft_ms), "TTFT model": _ms(c.ttft_ms), "TTFT err": _pct(c.ttft_error)}
            for c in compared]
    tpot, ttft = median_abs([c.tpot_error for c in compared]), median_abs([c.ttft_error for c in compared])
    n_tpot = sum(c.tpot_error is not None for c in compared)
    n_ttft = sum(c.ttft_error is not None for c in compared)
    lines = [f"Physics model against {len(compared)} measured row(s); error = modelled / measured - 1, "
             "times in ms", "", tables.table(rows), "",
             f"median |error|: TPOT {_pct(tpot).lstrip('+')} over {n_tpot} row(s), "
             f"TTFT {_pct(ttft).lstrip('+')} over {n_ttft} row(s)"]
    unfit = [c.row.where for c in compared if c.tpot_ms is None]
    if unfit:
        lines.append(f"the physics model says {len(unfit)} row(s) do not fit in memory: {', '.join(unfit[:3])}")
    frows = [{"accelerator": f.accelerator, "rows": f.rows,
              "TPOT factor": "-" if f.tpot is None else f"{f.tpot:.3f}",
              "TPOT err after": _pct(f.tpot_error_after).lstrip("+"),
              "TTFT factor": "-" if f.ttft is None else f"{f.ttft:.3f}",
              "TTFT err after": _pct(f.ttft_error_after).lstrip("+")} for f in factors]
    lines += ["", "Per-accelerator factors that would fit these rows (measured = factor x modelled; "
              "geometric mean, median |error| after applying it)", "", tables.table(frows), "",
              "The planner does not apply these factors: one set of global factors serves every accelerator "
              "(planner/physics/calibration.py). To plan with your own numbers, pass the rows as a CSV: "
              "plan calibrate FILE... -o measurements.csv, then plan SCENARIO --measurements measurements.csv."]
    return "\n".join(lines) + "\n"


def run_calibrate(req: CalibrateRequest) -> None:
    from planner.app.calibrate import compare, factors, read_rows
    from planner.data.catalog import load_catalog
    from planner.data.measurements import write_measurements_csv

    check_output(req.output, req.force, req.files)  # before reading anything
    catalog = load_catalog(*req.catalog_paths)
    warnings: list[str] = []  # the rows' caveats (failed requests, speculative decoding), on stderr
    rows = read_rows(req.files, catalog, model=req.model, system=req.system, tp=req.tp, precision=req.precision,
                     engine=req.engine, concurrency=req.concurrency, warnings=warnings)
    for w in warnings:
        typer.echo(f"warning: {w}", err=True)
    if req.output is not None or not req.report:
        buf = io.StringIO()
        write_measurements_csv(rows, buf)
        emit(buf.getvalue(), req.output, req.force)
        if req.output is not None:
            typer.echo(f"{len(rows)} row(s) from {len(req.files)} file(s); plan with --measurements "
                       f"{req.output}", err=True)
    if req.report:
        compared = compare(rows, catalog)
        typer.echo(report_text(compared, factors(compared)), nl=False)
