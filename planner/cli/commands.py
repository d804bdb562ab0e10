"""The `plan` command. Results on stdout, diagnostics on stderr, fixed exit codes:
0 plan found, 1 internal error, 2 bad input, 3 infeasible (with diagnosis), 4 solver failed.

`plan SCENARIO.yaml` is short for `plan run SCENARIO.yaml`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from planner.cli import tables
from planner.cli.choices import CompareFormat, EstimateFormat, Explain, Format, SolverName, format_for
from planner.cli.listing import CatalogOpt, catalog_app
from planner.cli.output import check_output, emit
from planner.cli.starter import Template
from planner.cli.summary import budget_summary, job_summary, site_summary, trends_summary
from planner.data.errors import InfeasibleError, InputError, PlannerError
from planner.data.years import budget_basis, check_multiyear

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


MeasurementsOpt = typer.Option(None, "--measurements", metavar="PATH", help="a CSV of your own measured TPOT/TTFT "
                               "(plan calibrate writes one); repeatable, added to the scenario's measurements; "
                               "relative to the working directory")


def _measured(paths: Optional[List[Path]]) -> tuple[str, ...]:
    return tuple(str(p) for p in paths or ())


@app.command("run")
def run_cmd(
    scenario: Path = typer.Argument(..., help="scenario YAML file"),
    fmt: Optional[Format] = typer.Option(None, "--format", "-f", help="table, json, markdown, html (one "
                                         "self-contained file with charts) or csv (the fleet rows, for a "
                                         "spreadsheet); default: --output's extension (.json, .md, .html, .csv), "
                                         "else table"),
    catalog: Optional[List[Path]] = CatalogOpt,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="write the plan to this file"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", min=1, help=(
        "wall-clock seconds for the whole plan: options, solve and explanations; what it cuts short is "
        "said (default: the scenario's solver.time_limit_s)")),
    timings: bool = typer.Option(True, "--timings/--no-timings",
                                 help="include the solver's wall-clock seconds; --no-timings makes the "
                                      "output byte-identical from run to run (save re-planned "
                                      "alternatives a busy machine stopped: solver.explanations_stopped)"),
    brief: bool = typer.Option(False, "--brief", help="the decision in at most 25 lines of 100 columns"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress on stderr"),
    explain: Explain = typer.Option(Explain.full, "--explain", help="none: the plan and its reasons only (no "
                                    "re-solves); brief: + prices from LPs and why-not from LP bounds; full: + "
                                    "re-planned alternatives, next-best fleet and lifted caps"),
    solver: Optional[SolverName] = typer.Option(None, "--solver", help="cbc (default) or highs (HiGHS: "
                                                "highspy is installed with the tool); overrides solver.name"),
    measurements: Optional[List[Path]] = MeasurementsOpt,
):
    """Plan the cheapest fleet for SCENARIO and explain it."""
    from planner.cli.running import RunRequest, run_plan

    check_output(output, force, (scenario, *(catalog or ()), *(measurements or ())))  # before solving, not after
    run_plan(RunRequest(scenario, format_for(fmt, output), tuple(str(c) for c in catalog or ()), time_limit, timings, brief,
                        quiet, output is not None, explain.value, solver.value if solver else None, _measured(measurements)),
             write=lambda text: emit(text, output, force))


@app.command("verify")
def verify_cmd(scenario: Path = typer.Argument(..., help="scenario YAML file"),
               plan_json: Path = typer.Argument(..., metavar="PLAN.json", help="plan written by --format json"),
               catalog: Optional[List[Path]] = CatalogOpt,
               measurements: Optional[List[Path]] = MeasurementsOpt):
    """Re-derive from the catalog and SCENARIO that PLAN.json is feasible (exit 5 if it is not);
    pass the --measurements the plan was made with."""
    from planner.app.pipeline import load_with_measurements
    from planner.data.consistency import resolve
    from planner.data.errors import VerificationError
    from planner.verify.plan import read_plan_file, verify

    class PlanRejected(VerificationError):
        exit_code = 5  # the plan file fails; 1 stays "a bug in the planner"

    s = load_with_measurements(scenario, _measured(measurements))
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
                 catalog: Optional[List[Path]] = CatalogOpt,
                 measurements: Optional[List[Path]] = MeasurementsOpt):
    """Check SCENARIO (and its measurements) against the schema and the catalog; print a one-screen summary."""
    from planner.app.advice import advise
    from planner.app.pipeline import load_with_measurements
    from planner.data.consistency import resolve
    from planner.data.measurements import check_names, load_measurements

    s = load_with_measurements(scenario, _measured(measurements))
    check_multiyear(s)  # (the per-year settings a plan checks: validate and run agree)
    cat = resolve(s, tuple(str(c) for c in catalog or ()))
    advise(s, cat)
    rows = load_measurements(tuple(s.measurements)) if s.measurements else ()
    check_names(rows, cat)
    typer.echo(f"{scenario}: valid. '{s.name}', {len(s.jobs)} job(s), horizon {s.horizon_years} year(s).")
    typer.echo(f"  site: {site_summary(s)}")
    typer.echo(f"  policy: {', '.join(s.policy.acquisition) or 'no acquisition mode (owned systems only)'}; "
               f"redundancy {s.policy.redundancy}"
               + (f"; stacks {', '.join(s.policy.stacks)}" if s.policy.stacks else ""))
    budget = budget_summary(s.budget, budget_basis(s), s.multi_year)
    if budget:
        typer.echo(f"  budget: {budget}")
    if s.trends:
        typer.echo(f"  trends: {trends_summary(s.trends)}")
    if rows:
        used = [j.name for j in s.jobs if j.stage == "serve" and (j.model, j.precision) in {(r.model, r.precision)
                                                                                          for r in rows}]
        typer.echo(f"  measurements: {len(rows)} row(s) from {len(s.measurements)} file(s), used in place of the "
                   "physics model " + (f"for {', '.join(used)} where they cover its systems and request sizes"
                                       if used else "for no serving job (see the warning)"))
    for j in s.jobs:
        m = cat.models[j.model]
        typer.echo(f"  - {j.name}: {j.stage} {m.name} ({m.params_b:g}B" +
                   (f", {m.active_params_b:g}B active" if m.is_moe else "") + ")" + job_summary(j))


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
    method: Optional[str] = typer.Option(None, "--method", help="full, lora or qlora (finetune; default lora)"),
    tokens: float = typer.Option(1e8, "--tokens", min=1, max=1e16, help="training tokens (finetune/pretrain)"),
    sequence_tokens: Optional[int] = typer.Option(
        None, "--sequence-tokens", min=128, max=1_000_000,
        help="training sequence length (finetune/pretrain; default as in a scenario: 2048 finetune, 8192 pretrain)"),
    engine: Optional[str] = typer.Option(None, "--engine", help="vllm, sglang or trtllm (default: vLLM's scheduling at TensorRT-LLM's step overhead)"),
    layout: Optional[str] = typer.Option(None, "--layout", help="tp (default) or ep-dp: an MoE served with expert "
                                                                "parallelism and data-parallel attention"),
    disaggregated: bool = typer.Option(False, "--disaggregated", help="also size separate prefill and decode pools "
                                                                      "and compare them with aggregated serving"),
    decode_accelerator: Optional[str] = typer.Option(
        None, "--decode-accelerator", help="prefill on --accelerator's node, decode on this one's, the KV cache "
                                           "sent over their network (implies --disaggregated)"),
    decode_tp: Optional[int] = typer.Option(None, "--decode-tp", min=1, help="the decode half's TP "
                                                                             "(with --decode-accelerator)"),
    max_ttft_s: Optional[float] = typer.Option(None, "--max-ttft-s", min=0.001,
                                               help="first-token limit: the batch (or, with --decode-accelerator, "
                                                    "the prefill half) is sized for it"),
    context_tokens: Optional[int] = typer.Option(None, "--context-tokens", min=1, max=10_000_000,
                                                 help="KV cache held per sequence, tokens, as a serve job's "
                                                      "context_tokens (default: input + output tokens)"),
    open_loop: bool = typer.Option(False, "--open-loop", help="requests arrive at a rate, one by one (a job given "
                                                              "as requests_per_s), not as a closed loop of --batch "
                                                              "clients: TTFT waits for the prompts ahead, not a wave"),
    fmt: EstimateFormat = typer.Option(EstimateFormat.table, "--format", "-f", help="table or json"),
    catalog: Optional[List[Path]] = CatalogOpt,
):
    """What-if: memory, speed and time for one model on one accelerator type."""
    from planner.app.estimate import EstimateRequest, run_estimate

    req = EstimateRequest(model, accelerator, count, precision, kv_precision, input_tokens, output_tokens,
                          batch, max_throughput, min_tps, tp, pp, stage, method, tokens, engine, layout,
                          disaggregated or decode_accelerator is not None, decode_accelerator, decode_tp, max_ttft_s,
                          sequence_tokens, open_loop, context_tokens)
    result = run_estimate(req, tuple(str(c) for c in catalog or ()))
    if fmt == EstimateFormat.json:
        typer.echo(tables.to_json(result), nl=False)
    else:
        typer.echo(tables.table([{"field": k, "value": v} for k, v in result.items() if not isinstance(v, dict)]))



@app.command("sweep")
def sweep_cmd(
    scenario: Path = typer.Argument(..., help="scenario YAML file"),
    sets: Optional[List[str]] = typer.Option(None, "--set", help="PATH=V1,V2,... a dotted path into the scenario "
                                                                 "(e.g. budget.usd_per_year=1e6,2e6); repeat for a grid"),
    fmt: Optional[Format] = typer.Option(None, "--format", "-f", help="table, json, markdown, html (a chart of "
                                         "cost against the first --set) or csv; default: --output's extension, "
                                         "else table"),
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
    measurements: Optional[List[Path]] = MeasurementsOpt,
):
    """Solve SCENARIO under every combination of --set values (or --samples random draws of --vary)
    and compare the plans; --measurements apply to every variant."""
    from planner.cli.sweeping import SweepRequest, run_sweep

    check_output(output, force, (scenario, *(catalog or ()), *(measurements or ())))  # never over an input
    run_sweep(SweepRequest(scenario, list(sets or ()), format_for(fmt, output), tuple(str(c) for c in catalog or ()), time_limit,
                           workers, backend, address, samples, list(vary or ()), seed, quiet, _measured(measurements)),
              write=lambda text: emit(text, output, force))


@app.command("compare")
def compare_cmd(
    a: Path = typer.Argument(..., help="scenario YAML (solved now) or plan JSON (from plan --format json)"),
    b: Path = typer.Argument(..., help="the other scenario or plan"),
    fmt: Optional[CompareFormat] = typer.Option(None, "--format", "-f", help="table, json or markdown; default: "
                                                "--output's extension (.json, .md), else table"),
    catalog: Optional[List[Path]] = CatalogOpt,
    time_limit: Optional[float] = typer.Option(None, "--time-limit", min=1, help="wall-clock seconds per plan"),
    measurements: Optional[List[Path]] = MeasurementsOpt,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="write the comparison to this file"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress on stderr (compare prints none; "
                                                            "accepted as run and sweep accept it)"),
):
    """Put two plans side by side: cost, NPV, fleet, unmet demand, $ per million tokens. --measurements
    apply to each scenario solved now: plan compare modelled.json SCENARIO --measurements m.csv shows
    what your measurements change."""
    from planner.app import compare

    check_output(output, force, (a, b, *(catalog or ()), *(measurements or ())))  # never over an input
    result = compare.compare_plans(a, b, tuple(str(c) for c in catalog or ()), time_limit, _measured(measurements))
    fmt = CompareFormat(format_for(fmt, output, CompareFormat))
    if fmt == CompareFormat.json:
        emit(tables.to_json(result), output, force)
        return
    names = ("A: " + a.name, "B: " + b.name)
    rows = compare.compare_rows(result, names)
    cols = ["", *names, "B - A"]
    table = tables.markdown_table(rows, cols) if fmt == CompareFormat.markdown else tables.table(rows, cols)
    emit((table if table.endswith("\n") else table + "\n") + (f"\nNote: {result['warning']}.\n" if result.get("warning") else ""),
         output, force)  # (the caveat in the file too: a report passed on keeps it)
    if result.get("warning"):
        typer.echo(f"warning: {result['warning']}", err=True)


@app.command("calibrate")
def calibrate_cmd(
    files: List[Path] = typer.Argument(..., metavar="FILE", help="vLLM --save-result JSON, SGLang bench_serving JSONL, "
                                       "genai-perf/AIPerf profile_export*.json, trtllm-bench --report_json, or a CSV"),
    model: Optional[str] = typer.Option(None, "--model", help="the catalog model the runs served (default: matched "
                                        "from the file's model name)"),
    system: Optional[str] = typer.Option(None, "--system", help="the catalog system the runs used (only vLLM "
                                         "--metadata system=ID records it), e.g. h100-sxm-x8"),
    tp: Optional[int] = typer.Option(None, "--tp", min=1, help="tensor-parallel size, where the file lacks it"),
    precision: Optional[str] = typer.Option(None, "--precision", help="bf16, fp8, int8, int4 or fp4, where the "
                                            "file lacks it"),
    engine: Optional[str] = typer.Option(None, "--engine", help="the serving engine (vllm, sglang, trtllm)"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="clients of a run whose file "
                                              "records none (an open-loop run; every trtllm-bench report)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="write the measurements CSV to this file "
                                          "(default: stdout)"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
    report: bool = typer.Option(False, "--report", help="print the physics model's error against the rows and "
                                "the per-accelerator factors that would fit them"),
    catalog: Optional[List[Path]] = CatalogOpt,
):
    """Turn serving-benchmark results into a measurements CSV for --measurements (and --report the
    physics model's error against them)."""
    from planner.cli.calibrating import CalibrateRequest, run_calibrate

    run_calibrate(CalibrateRequest(list(files), model, system, tp, precision, engine, concurrency, output, force,
                                   report, tuple(str(c) for c in catalog or ())))


COMMANDS = {"run", "init", "validate", "schema", "catalog", "estimate", "verify", "sweep", "compare", "calibrate"}


def _route(argv: list[str]) -> list[str]:
    """`plan FILE ...` -> `plan run FILE ...` when the first word is not a command."""
    for i, arg in enumerate(argv):
        if arg.startswith("-") and arg != "-":  # ('-': the scenario on standard input)
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
    except BrokenPipeError:  # the reader closed early (`| head`): nothing more to say, and no
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # second error at exit's flush
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

