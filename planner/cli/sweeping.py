"""`plan sweep`: a grid of --set values or --samples random draws of --vary settings, solved on local
processes or Ray (planner.app.parallel), shown as a table, JSON, Markdown or an HTML chart.
Progress goes to stderr (a bar on a terminal, a line per variant otherwise), never to stdout."""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import typer

from planner.cli import tables
from planner.data.errors import Diagnosis, InfeasibleError, InputError, Problem


@dataclass
class SweepRequest:
    scenario: Path
    sets: list[str]
    fmt: str = "table"
    catalog_paths: tuple[str, ...] = ()
    time_limit_s: float | None = None
    workers: int | None = None
    backend: str = "local"
    address: str | None = None
    samples: int | None = None
    vary: list[str] = field(default_factory=list)
    seed: int = 0
    quiet: bool = False
    measurements: tuple[str, ...] = ()
    """--measurements CSVs (relative to the working directory), added to every variant's own"""

    @property
    def montecarlo(self) -> bool:
        return self.samples is not None or bool(self.vary)


def run_sweep(req: SweepRequest, write: Callable[[str], None]) -> list[dict]:
    """Validate every variant, solve them all, write the result; InfeasibleError when none has a plan."""
    from planner.app import parallel, sweep

    if req.montecarlo:
        from planner.app import montecarlo

        if req.fmt in ("html", "csv"):
            raise InputError(Problem(f"a Monte-Carlo sweep has no {req.fmt.upper()} view", f"--format {req.fmt}",
                                     "use --format table, markdown or json"))
        if req.sets:
            raise InputError(Problem("--set and --samples/--vary do not mix", "--set",
                                     "run the grid and the Monte-Carlo sweep separately"))
        items = montecarlo.samples(req.scenario, req.vary, req.samples or 100, req.seed)
    else:
        items = sweep.variants(req.scenario, req.sets)
    items = sweep.validate(sweep.add_measurements(items, req.measurements), req.catalog_paths)
    start = time.perf_counter()
    with progress(items, req.quiet) as note:
        entries = parallel.run(items, req.catalog_paths, req.time_limit_s, progress=note, workers=req.workers,
                               backend=req.backend, address=req.address)
    closing = sweep.closing_note(entries, time.perf_counter() - start)
    if req.montecarlo:
        text = montecarlo_text(entries, req.fmt, closing)
    elif req.fmt == "json":
        text = tables.to_json(entries)
    elif req.fmt == "html":
        from planner.cli.html import sweep_html

        text = sweep_html(entries, sweep.rows(entries), sweep.columns(entries), closing, req.scenario.name)
    elif req.fmt == "csv":
        from planner.cli.output import csv_text

        text = csv_text(sweep.rows(entries), sweep.columns(entries))
    else:
        rows, cols = sweep.rows(entries), sweep.columns(entries)
        body = tables.markdown_table(rows, cols) if req.fmt == "markdown" else tables.table(rows, cols)
        text = body + "\n\n" + closing + "\n"
    write(text)
    if req.fmt in ("json", "html", "csv") and not req.quiet:
        typer.echo(closing, err=True)
    failed = [e for e in entries if e["summary"]["status"] in sweep.FAILED]
    if failed:
        typer.echo(f"warning: {len(failed)} of {len(entries)} variants failed on their own (variant "
                   f"{', '.join(str(e['variant']) for e in failed[:10])}{', ...' if len(failed) > 10 else ''}); "
                   + ("the table of samples without a plan" if req.montecarlo else "the problem column")
                   + " (JSON: diagnosis) says why", err=True)
    if not any(e["summary"]["status"] in ("optimal", "feasible") for e in entries):
        raise InfeasibleError(Diagnosis("no variant of the sweep has a plan; see the status column"))
    return entries


def progress(items, quiet: bool):
    """A context giving progress(entry, seconds): a bar on a terminal, a line per variant otherwise."""
    from planner.app import sweep

    if quiet:
        return contextlib.nullcontext(None)
    if sys.stderr.isatty():
        @contextlib.contextmanager
        def bar():
            with typer.progressbar(length=len(items), label="solving", file=sys.stderr) as b:
                yield lambda e, sec: b.update(1)
        return bar()

    def note(e, seconds):
        if len(items) > 3:
            typer.echo(f"[{e['variant']}/{len(items)}] {sweep.label(e['settings'])}: "
                       f"{e['summary']['status']} ({seconds:.1f} s)", err=True)
    return contextlib.nullcontext(note)


def montecarlo_text(entries: list[dict], fmt: str, closing: str) -> str:
    """Cost percentiles and fleet wins as a table, Markdown or JSON (with every sample's entry)."""
    from planner.app import montecarlo, sweep

    result = montecarlo.report(entries)
    if fmt == "json":
        return tables.to_json({**result, "entries": entries})
    rows = [{"": k, "$/year": v} for k, v in result["cost_usd_per_year"].items()]
    rows.append({"": "mean", "$/year": result["mean_usd_per_year"]})
    fleets = [{**f, "share": f"{f['share']:.0%}"} for f in result["fleets"]]
    table_of = tables.markdown_table if fmt == "markdown" else tables.table
    body = [f"Monte-Carlo: {result['with_plan']} of {result['samples']} samples have a plan.", "",
            "Cost per year over the samples (percentiles)", table_of(rows, ["", "$/year"]), "",
            "How often each fleet wins",
            table_of(fleets, ["wins", "share", "median_usd_per_year", "fleet"],
                     {"median_usd_per_year": "median $/year"}), ""]
    failed = [e for e in entries if e["summary"]["status"] in sweep.FAILED]
    if failed:  # (the UX review: the reasons were in the JSON only, and the percentiles hid how few had a plan)
        body += [f"Samples without a plan (the percentiles above are over the {result['with_plan']} with one)",
                 table_of([{"sample": e["variant"], "settings": sweep.label(e["settings"]), "status": e["summary"]["status"],
                            "problem": sweep.problem_text(e["summary"])} for e in failed[:MC_FAILED_SHOWN]],
                          ["sample", "settings", "status", "problem"])
                 + (f"\n(and {len(failed) - MC_FAILED_SHOWN} more: --format json lists them all)"
                    if len(failed) > MC_FAILED_SHOWN else ""), ""]
    return "\n".join([*body, closing]) + "\n"


MC_FAILED_SHOWN = 20
"""samples without a plan a Monte-Carlo table lists (the JSON holds every one)"""
