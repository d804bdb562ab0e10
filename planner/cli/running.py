"""`plan SCENARIO`: plan, warn on stderr when optimality is not proven, render in the chosen format
(text wrapped to the terminal, --brief, JSON, Markdown, HTML) and hand the text to `write`."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import typer

from planner.cli import started, tables
from planner.cli.progress import Ticker
from planner.data.errors import InfeasibleError, InputError, Problem
from planner.explain.diagnosis import DIAGNOSIS_CUT


@dataclass
class RunRequest:
    scenario: Path
    fmt: str = "table"
    catalog_paths: tuple[str, ...] = ()
    time_limit_s: float | None = None
    timings: bool = True
    brief: bool = False
    quiet: bool = False
    to_file: bool = False
    explain: str = "full"
    solver: str | None = None
    measurements: tuple[str, ...] = ()
    """--measurements CSVs, added to the scenario's own"""


def terminal_width(to_file: bool) -> int | None:
    """Columns to wrap text at: $COLUMNS when set, else the terminal's; None (no wrapping) for a
    file or a pipe, so that scripts and grep see whole lines."""
    if os.environ.get("COLUMNS", "").isdigit():
        return max(40, int(os.environ["COLUMNS"]))
    if to_file or not sys.stdout.isatty():
        return None
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def run_plan(req: RunRequest, write: Callable[[str], None]) -> dict:
    from planner.app.pipeline import plan_file

    if req.brief and req.fmt != "table":
        raise InputError(Problem(f"--brief is a text view; it does not combine with --format {req.fmt}",
                                 "--brief", "drop --brief, or drop --format"))
    try:
        with Ticker(f"planning {req.scenario.name}", req.quiet, steps="options, solve, explanations"):
            plan = plan_file(req.scenario, req.catalog_paths, req.time_limit_s, explain=req.explain,
                             solver=req.solver, measurements=req.measurements, start=started())
    except InfeasibleError as exc:
        found = {"status": "infeasible", "scenario": str(req.scenario), "diagnosis": exc.diagnosis.summary,
                 "relax": exc.diagnosis.relaxations, **({"cut_short": [DIAGNOSIS_CUT]} if exc.diagnosis.cut_short else {})}
        if req.fmt == "json":
            write(tables.to_json(found))
        elif req.fmt in ("markdown", "html", "csv") or req.to_file:  # (on a terminal, stderr has the diagnosis)
            write(render_infeasible(found, req.fmt))
        raise
    _warnings(plan)
    if not req.timings:  # wall time is the one thing that differs from run to run
        plan = {**plan, "solver": {k: v for k, v in plan["solver"].items() if k != "seconds"}}
    write(render(plan, req))
    return plan


def render(plan: dict, req: RunRequest) -> str:
    width = terminal_width(req.to_file)
    if req.brief:
        from planner.cli.brief import brief_text

        return brief_text(plan, width or 100)
    if req.fmt == "html":
        from planner.cli.html import plan_html

        return plan_html(plan)
    if req.fmt == "json":
        return tables.to_json(plan)
    if req.fmt == "csv":
        from planner.cli.output import PLAN_CSV, csv_text

        rows = ([{**row, "year": y["year"]} for y in plan["years"] for row in y["fleet"]] if plan.get("years")
                else plan["fleet"])  # (a multi-year plan: every year's fleet, each row its year's)
        return csv_text(rows, PLAN_CSV)
    from planner.cli import render as report

    return report.plan_markdown(plan) if req.fmt == "markdown" else report.plan_text(plan, width)


def render_infeasible(found: dict, fmt: str) -> str:
    """The diagnosis of a scenario with no plan as a document in `fmt` (text, Markdown or HTML): what
    to relax and by how much, one row per constraint, to pass on as a plan would be."""
    rows = [{"constraint": r["constraint"], "current": r.get("current"), "suggested": r.get("suggested"),
             "unit": r.get("unit"), "what to do": r["message"]} for r in found["relax"]]  # (a job no option runs has none)
    columns = ["constraint", "current", "suggested", "unit", "what to do"]
    title = f"No plan for {Path(found['scenario']).name}: infeasible"
    if fmt == "csv":
        from planner.cli.output import csv_text

        return csv_text(rows, columns)
    if fmt == "html":
        from planner.cli.html import infeasible_html

        return infeasible_html(title, found["diagnosis"], rows, columns)
    if fmt == "markdown":
        return "\n".join([f"# {title}", "", found["diagnosis"].replace("\n  - ", "\n- "), "",
                          tables.markdown_table(rows, columns), ""]) if rows else f"# {title}\n\n{found['diagnosis']}\n"
    return f"{title}\n\n{found['diagnosis']}\n"


def _warnings(plan: dict) -> None:
    from planner.app.planning import CUTS  # (loaded by the planning that made the plan)

    cut = list(plan["solver"].get("cut_short") or ())
    search = CUTS["solve"] in cut and plan["status"] != "optimal"
    if search:  # one warning, not two, when the time limit ended the search
        cut.remove(CUTS["solve"])
    if plan["status"] != "optimal":
        gap = plan["solver"].get("gap")
        typer.echo(("warning: the time limit cut short the MILP search: " if search else "warning: ")
                   + "the plan is feasible but not proven optimal"
                   + (f" (gap up to {gap:.2%})" if gap is not None else "")
                   + "; raise --time-limit (or solver.time_limit_s) for a proof", err=True)
    for what in cut:
        typer.echo(f"warning: the time limit cut short {what}; raise --time-limit (or solver.time_limit_s) "
                   "for the whole plan", err=True)
    pruned = plan["solver"].get("pairs_pruned") or 0
    if pruned and plan["status"] != "optimal":  # (an optimal one is proven against every candidate pair)
        measured = ("the gap is measured against every pair (the full model's bound), and "
                    if plan["solver"].get("gap") is not None else "")
        typer.echo(f"warning: a large scenario: the search ran over a shortlist that left out {pruned:,} of the "
                   f"candidate (configuration, offer) pairs; {measured}a cheaper plan may use one left out; "
                   "split the scenario or narrow the policy to search them all", err=True)
