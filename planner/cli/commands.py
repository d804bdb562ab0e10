"""The `plan` command. Results on stdout, diagnostics on stderr, fixed exit codes:
0 plan found, 1 internal error, 2 bad input, 3 infeasible (with diagnosis), 4 solver failed.

`plan SCENARIO.yaml` is short for `plan run SCENARIO.yaml`.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from planner.cli import tables
from planner.cli.listing import CatalogOpt, catalog_app
from planner.cli.output import check_output, emit
from planner.cli.starter import Template
from planner.data.errors import InfeasibleError, InputError, PlannerError

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  pretty_exceptions_enable=False,
                  help="Plan the cheapest AI hardware fleet (buy or rent) for your jobs, and say why.\n\n"
                       "plan SCENARIO.yaml is short for plan run SCENARIO.yaml.")


def _version(value: bool) -> None:
    if value:
        from planner import __version__
        from planner.physics.calibration import default

        typer.echo(f"plan {__version__} (performance model calibrated {default().fitted_on})")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and the calibration date, then exit")):
    """Plan the cheapest AI hardware fleet (buy or rent) for your jobs, and say why."""
app.add_typer(catalog_app, name="catalog")


class Explain(str, Enum):
    none = "none"
    brief = "brief"
    full = "full"


class SolverName(str, Enum):
    cbc = "cbc"
    highs = "highs"


class Format(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"


@app.command("run")
def run_cmd(
    scenario: Path = typer.Argument(..., help="scenario YAML file"),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json, markdown or html (one "
                                                                   "self-contained file with charts)"),
    catalog: Optional[List[Path]] = CatalogOpt,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="write the plan to this file"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", min=1, help=(
        "wall-clock seconds for the whole plan: options, solve and explanations; what it cuts short is "
        "said (default: the scenario's solver.time_limit_s)")),
    timings: bool = typer.Option(True, "--timings/--no-timings",
                                 help="include the solver's wall-clock seconds; --no-timings makes the "
                                      "output byte-identical from run to run"),
    brief: bool = typer.Option(False, "--brief", help="the decision in at most 25 lines of 100 columns"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress on stderr"),
    explain: Explain = typer.Option(Explain.full, "--explain", help="none: the plan and its reasons only (no "
                                    "re-solves); brief: + prices from LPs and why-not from LP bounds; full: + "
                                    "re-planned alternatives, next-best fleet and lifted caps"),
    solver: Optional[SolverName] = typer.Option(None, "--solver", help="cbc (default) or highs (optional "
                                                "extra: pip install \".[highs]\"); overrides solver.name"),
):
    """Plan the cheapest fleet for SCENARIO and explain it."""
    from planner.cli.running import RunRequest, run_plan

    check_output(output, force, (scenario, *(catalog or ())))  # before minutes of solving, not after
    run_plan(RunRequest(scenario, fmt.value, tuple(str(c) for c in catalog or ()), time_limit, timings, brief, quiet,
                        output is not None, explain.value, solver.value if solver else None),
             write=lambda text: emit(text, output, force))


@app.command("verify")
def verify_cmd(scenario: Path = typer.Argument(..., help="scenario YAML file"),
               plan_json: Path = typer.Argument(..., metavar="PLAN.json", help="plan written by --format json"),
               catalog: Optional[List[Path]] = CatalogOpt):
    """Re-derive from the catalog and SCENARIO that PLAN.json is feasible (exit 5 if it is not)."""
    from planner.data.consistency import resolve
    from planner.data.errors import VerificationError
    from planner.data.scenario import load_scenario
    from planner.verify.plan import read_plan_file, verify

    class PlanRejected(VerificationError):
        exit_code = 5  # the plan file fails; 1 stays "a bug in the planner"

    s = load_scenario(scenario)
    result = verify(read_plan_file(plan_json), s, resolve(s, tuple(str(c) for c in catalog or ())))
    if not result.ok:
        raise PlanRejected(result.summary())
    typer.echo(f"{plan_json}: {result.summary()}")


@app.command("init")
def init_cmd(
    template: Template = typer.Option(Template.serve, "--template", "-t", help="serve (an LLM for users), "
                                      "finetune (monthly runs), mixed (serve by day, fine-tune at night on owned "
                                      "systems) or budget (three years under a yearly budget)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="write the scenario to this file "
                                                                      "(default: stdout)"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
):
    """Write a commented starter scenario to edit, then plan with `plan validate` and `plan FILE`."""
    from planner.cli.starter import template_text

    check_output(output, force)
    emit(template_text(template), output, force)


@app.command("validate")
def validate_cmd(scenario: Path = typer.Argument(..., help="scenario YAML file"),
                 catalog: Optional[List[Path]] = CatalogOpt):
    """Check SCENARIO against the schema and the catalog; print a one-screen summary."""
    from planner.app.advice import advise
    from planner.data.consistency import resolve
    from planner.data.scenario import load_scenario

    s = load_scenario(scenario)
    cat = resolve(s, tuple(str(c) for c in catalog or ()))
    advise(s, cat)
    typer.echo(f"{scenario}: valid. '{s.name}', {len(s.jobs)} job(s), horizon {s.horizon_years} year(s).")
    typer.echo(f"  site: {s.site.ownership} ({s.site.kind}), {s.site.cooling} cooling, "
               f"${s.site.power_usd_per_kwh}/kWh, PUE {s.site.pue}"
               + (f", power cap {s.site.power_cap_kw:g} kW" if s.site.power_cap_kw else ""))
    typer.echo(f"  policy: {', '.join(s.policy.acquisition)}; redundancy {s.policy.redundancy}"
               + (f"; stacks {', '.join(s.policy.stacks)}" if s.policy.stacks else ""))
    if s.budget.usd_per_year is not None:
        typer.echo(f"  budget: ${s.budget.usd_per_year:,.0f} per year")
    for j in s.jobs:
        m = cat.models[j.model]
        typer.echo(f"  - {j.name}: {j.stage} {m.name} ({m.params_b:g}B" +
                   (f", {m.active_params_b:g}B active" if m.is_moe else "") + ")" + _job_summary(j))


def _job_summary(j) -> str:
    if j.stage == "serve":
        load = (f"{j.concurrent_users:,} users" if j.concurrent_users is not None
                else f"{j.requests_per_s:g} requests/s at peak")
        return (f", {j.precision}, {load} x {j.min_tokens_per_s_per_user:g} tok/s, "
                f"{j.context_tokens:,} context, {j.hours_per_day:g} h/day")
    if j.stage == "finetune":
        return f", {j.method}, {j.dataset_tokens * j.epochs:,.0f} tokens/run, {j.runs_per_year:g} runs/yr"
    if j.stage == "pretrain":
        return f", {j.training_tokens:,.0f} tokens within {j.max_days:g} days"
    if j.stage == "rl":
        return f", rollouts {j.rollout_tokens_per_s:,.0f} tok/s, trainer {j.train_tokens_per_day:,.0f} tok/day"
    return f", {j.devices:,} {j.device} devices at {j.min_tokens_per_s:g} tok/s"


@app.command("schema")
def schema_cmd(
    plan: bool = typer.Option(False, "--plan", help="print the JSON Schema of the plan that --format json "
                                                    "writes instead of the scenario's"),
):
    """Print the scenario's JSON Schema (for editor validation and completion), or the plan's."""
    import json

    from planner.data.plan import plan_json_schema
    from planner.data.scenario import Scenario

    schema = plan_json_schema() if plan else Scenario.model_json_schema()
    typer.echo(json.dumps(schema, indent=2, sort_keys=True))


@app.command("estimate")
def estimate_cmd(
    model: str = typer.Option(..., "--model", help="model id (see plan catalog models)"),
    accelerator: str = typer.Option(..., "--accelerator", help="accelerator id"),
    count: int = typer.Option(1, "--count", min=1, help="accelerators"),
    precision: str = typer.Option("bf16", "--precision", help="bf16, fp8, int8, int4 or fp4"),
    kv_precision: Optional[str] = typer.Option(None, "--kv-precision", help="bf16, fp8 or int8"),
    input_tokens: int = typer.Option(1024, "--input-tokens", min=1),
    output_tokens: int = typer.Option(256, "--output-tokens", min=1),
    batch: Optional[int] = typer.Option(None, "--batch", min=1, help="sequences per replica (fixed)"),
    max_throughput: bool = typer.Option(False, "--max-throughput", help="best split and batch for total tok/s"),
    min_tps: Optional[float] = typer.Option(None, "--min-tokens-per-s-per-user", min=0.001),
    tp: Optional[int] = typer.Option(None, "--tp", min=1),
    pp: Optional[int] = typer.Option(None, "--pp", min=1),
    stage: str = typer.Option("serve", "--stage", help="serve, finetune or pretrain"),
    method: str = typer.Option("lora", "--method", help="full, lora or qlora (finetune)"),
    tokens: float = typer.Option(1e8, "--tokens", min=1, max=1e16, help="training tokens (finetune/pretrain)"),
    engine: Optional[str] = typer.Option(None, "--engine", help="vllm, sglang or trtllm (default: vLLM's rules)"),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json"),
    catalog: Optional[List[Path]] = CatalogOpt,
):
    """What-if: memory, speed and time for one model on one accelerator type."""
    from planner.app.estimate import EstimateRequest, run_estimate

    req = EstimateRequest(model, accelerator, count, precision, kv_precision, input_tokens, output_tokens,
                          batch, max_throughput, min_tps, tp, pp, stage, method, tokens, engine)
    result = run_estimate(req, tuple(str(c) for c in catalog or ()))
    if fmt == Format.json:
        typer.echo(tables.to_json(result), nl=False)
    else:
        typer.echo(tables.table([{"field": k, "value": v} for k, v in result.items() if not isinstance(v, dict)]))



@app.command("sweep")
def sweep_cmd(
    scenario: Path = typer.Argument(..., help="scenario YAML file"),
    sets: Optional[List[str]] = typer.Option(None, "--set", help="PATH=V1,V2,... a dotted path into the scenario "
                                                                 "(e.g. budget.usd_per_year=1e6,2e6); repeat for a grid"),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json, markdown or html (a chart of "
                                                                   "cost against the first --set)"),
    catalog: Optional[List[Path]] = CatalogOpt,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="write the comparison to this file"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", min=1, help="wall-clock seconds per variant (options, solve)"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="local worker processes (default: "
                                                                         "one per CPU)"),
    backend: str = typer.Option("local", "--backend", help="local (processes on this machine) or ray "
                                                           '(needs pip install ".[ray]")'),
    address: Optional[str] = typer.Option(None, "--address", help="a Ray cluster's address (ray backend; "
                                                                  "default: start a local Ray)"),
    samples: Optional[int] = typer.Option(None, "--samples", min=1, help="Monte-Carlo: solve this many random "
                                                                         "draws of the --vary settings"),
    vary: Optional[List[str]] = typer.Option(None, "--vary", help="PATH=uniform(LO,HI) or PATH=normal(MEAN,SD), "
                                                                  "bounds as % of the file's value or plain "
                                                                  "numbers; '*' for every list item"),
    seed: int = typer.Option(0, "--seed", help="random seed of the Monte-Carlo draws"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress on stderr"),
):
    """Solve SCENARIO under every combination of --set values (or --samples random draws of --vary)
    and compare the plans."""
    from planner.cli.sweeping import SweepRequest, run_sweep

    check_output(output, force, (scenario, *(catalog or ())))  # never over the swept scenario
    run_sweep(SweepRequest(scenario, list(sets or ()), fmt.value, tuple(str(c) for c in catalog or ()), time_limit,
                           workers, backend, address, samples, list(vary or ()), seed, quiet),
              write=lambda text: emit(text, output, force))


@app.command("compare")
def compare_cmd(
    a: Path = typer.Argument(..., help="scenario YAML (solved now) or plan JSON (from plan --format json)"),
    b: Path = typer.Argument(..., help="the other scenario or plan"),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or markdown"),
    catalog: Optional[List[Path]] = CatalogOpt,
    time_limit: Optional[float] = typer.Option(None, "--time-limit", min=1, help="wall-clock seconds per plan"),
):
    """Put two plans side by side: cost, NPV, fleet, unmet demand, $ per million tokens."""
    from planner.app import sweep

    paths = tuple(str(c) for c in catalog or ())
    result = sweep.compare(sweep.load_plan_or_solve(a, paths, time_limit), sweep.load_plan_or_solve(b, paths, time_limit))
    if fmt == Format.json:
        typer.echo(tables.to_json(result), nl=False)
        return
    names = ("A: " + a.name, "B: " + b.name)
    rows = sweep.compare_rows(result, names)
    cols = ["", *names, "B - A"]
    typer.echo(tables.markdown_table(rows, cols) if fmt == Format.markdown else tables.table(rows, cols))


COMMANDS = {"run", "init", "validate", "schema", "catalog", "estimate", "verify", "sweep", "compare"}


def _route(argv: list[str]) -> list[str]:
    """`plan FILE ...` -> `plan run FILE ...` when the first word is not a command."""
    for i, arg in enumerate(argv):
        if arg.startswith("-"):
            if arg in ("--help", "-h", "--version"):
                return argv
            continue
        if arg in COMMANDS:
            return argv
        return argv[:i] + ["run"] + argv[i:]
    return argv


def main(argv: list[str] | None = None) -> None:
    argv = _route(list(sys.argv[1:] if argv is None else argv))
    from planner.cli.signals import Interrupted, guarded
    from planner.data.notes import listening

    try:
        with guarded(), listening(lambda text: typer.echo(text, err=True)):
            code = app(args=argv, prog_name="plan", standalone_mode=False)
        if isinstance(code, int) and code:  # typer returns an Exit's code in non-standalone mode
            sys.exit(code)
    except Interrupted as exc:
        typer.echo(f"interrupted by {exc}: the solver was stopped and nothing was written", err=True)
        sys.exit(exc.exit_code)
    except PlannerError as exc:
        _report_error(exc)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(getattr(exc, "exit_code", 0))
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("aborted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):  # a usage error from the CLI parser
            exc.show()
            sys.exit(2 if exc.exit_code not in (0, 2) else exc.exit_code)
        if os.environ.get("PLANNER_DEBUG"):
            raise
        typer.echo(f"internal error: {type(exc).__name__}: {exc}\n"
                   "This is a bug in the planner. Rerun with PLANNER_DEBUG=1 for a traceback "
                   "and report it.", err=True)
        sys.exit(1)
    sys.exit(0)


def _report_error(exc: PlannerError) -> None:
    if isinstance(exc, InfeasibleError):
        typer.echo("infeasible: " + exc.diagnosis.summary, err=True)
    elif isinstance(exc, InputError):
        typer.echo("error: " + exc.render(), err=True)
    else:
        typer.echo("error: " + str(exc), err=True)

