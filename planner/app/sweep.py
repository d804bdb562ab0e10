"""Sweeps: the same scenario under several settings, solved one by one (comparisons: app/compare.py).

`--set PATH=V1,V2,...` names a dotted path into the scenario file's mapping (list items by index:
jobs.0.concurrent_users, budget.usd_per_year, site.power_usd_per_kwh) and the values to try; several
--set give their cartesian product, first --set slowest. Every path is checked against the scenario
schema ("did you mean") and every variant is validated before anything is solved. A variant that
fails on its own (a value out of range, a setting the catalog cannot meet, an error while solving)
is reported in its row and the others go on; a scenario whose every variant is bad input is exit 2.
Values are read as YAML scalars, and 1e6-style numbers as numbers; a value holding commas goes in
brackets ([buy, on-demand]).
"""

from __future__ import annotations

import copy
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel

from planner.data.errors import (
    InfeasibleError,
    InputError,
    PlannerError,
    Problem,
    SolverError,
    suggest,
)
from planner.data.fleet_words import fleet_item
from planner.data.scenario import STAGES, Scenario, parse_scenario
from planner.data.yamlio import load_yaml, read_text

MAX_VARIANTS = 1000


def _split_values(text: str) -> list[str]:
    """'1,2,[a, b]' -> ['1', '2', '[a, b]']: commas inside brackets or braces stay."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[{"
        depth -= ch in "]}"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def parse_value(text: str):
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    return value


def parse_sets(sets: list[str]) -> list[tuple[str, list]]:
    """['budget.usd_per_year=1e6,2e6'] -> [('budget.usd_per_year', [1000000.0, 2000000.0])]."""
    out = []
    for item in sets:
        path, eq, values = item.partition("=")
        path = path.strip()
        if not eq or not path or not values.strip():
            raise InputError(Problem(f"'{item}' is not PATH=VALUE[,VALUE...]", "--set",
                                     "write e.g. --set budget.usd_per_year=1e6,2e6"))
        parts = _split_values(values)
        if any(p == "" for p in parts):
            raise InputError(Problem(f"'{item}' has an empty value", f"--set {path}", "remove the stray comma"))
        if path in [p for p, _ in out]:
            raise InputError(Problem(f"'{path}' is set twice", "--set", "give all its values in one --set"))
        out.append((path, [parse_value(v) for v in parts]))
    return out


def _model_of(annotation) -> type[BaseModel] | None:
    args = getattr(annotation, "__args__", None) or (annotation,)
    for a in args:
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
        inner = _model_of(a) if getattr(a, "__args__", None) else None
        if inner:
            return inner
    return None


def check_path(data: dict, path: str, flag: str = "--set"):
    """Raise InputError unless `path` names a field of the scenario schema reachable in `data`
    (flag: the option the user wrote it in, for the message); return the field's type annotation."""
    where = f"{flag} {path}"
    annotation = None
    model: type[BaseModel] | None = Scenario
    node = data
    walked = []
    for part in path.split("."):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise InputError(Problem(f"'{'.'.join(walked)}' is a list of {len(node)}; '{part}' is not an "
                                         "index in it", where, f"use an index from 0 to {len(node) - 1}"))
            node = node[int(part)]
            if model is not None and walked[-1] == "jobs" and isinstance(node, dict):
                model = STAGES.get(node.get("stage"))
            walked.append(part)
            continue
        if model is None:
            raise InputError(Problem(f"'{'.'.join(walked)}' holds a value, not settings", where,
                                     f"set '{'.'.join(walked)}' itself"))
        if part not in model.model_fields:
            raise InputError(Problem(f"unknown setting '{part}' in '{path}'", where,
                                     suggest(part, model.model_fields, otherwise="known here: "
                                             + ", ".join(sorted(model.model_fields)))))
        annotation = model.model_fields[part].annotation
        model = _model_of(annotation)
        walked.append(part)
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            node = {}
    return annotation if walked else None


def apply_setting(data: dict, path: str, value) -> None:
    """Set data[path] (dotted, list indices as numbers), creating missing mappings."""
    parts = path.split(".")
    node = data
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[int(part)]
        else:
            if not isinstance(node.get(part), (dict, list)):
                node[part] = {}
            node = node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def label(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items())


@dataclass(frozen=True)
class BadVariant:
    """A variant whose input is wrong (exit 2 on its own): its row says why; the others are solved."""

    error: InputError

    @property
    def message(self) -> str:
        return self.error.render()


def parse_variant(variant: dict, where: str, path: Path) -> Scenario | BadVariant:
    """One variant's mapping as a Scenario (its catalog: and measurements: relative to the swept file,
    as load_scenario reads them), or why not."""
    try:
        s = parse_scenario(variant, {}, where)
    except InputError as exc:
        return BadVariant(exc)
    if s.catalog and not Path(s.catalog).is_absolute():
        s.catalog = str((path.parent / s.catalog).resolve())
    s.measurements = [m if Path(m).is_absolute() else str((path.parent / m).resolve()) for m in s.measurements]
    return s


def variants(path: str | Path, sets: list[str]) -> list[tuple[dict, Scenario | BadVariant]]:
    """Every combination of the --set values, each a validated Scenario (or why it is not one)."""
    path = Path(path)
    data, lines = load_yaml(read_text(path), str(path))
    parsed = parse_sets(sets)
    if not parsed:
        raise InputError(Problem("nothing to sweep", "--set", "add --set PATH=V1,V2 (e.g. budget.usd_per_year=1e6,2e6)"))
    if not isinstance(data, dict):
        parse_scenario(data, lines, str(path))
    for p, _ in parsed:
        check_path(data, p)
    combos = list(itertools.product(*[vals for _, vals in parsed]))
    if len(combos) > MAX_VARIANTS:
        raise InputError(Problem(f"{len(combos)} variants; at most {MAX_VARIANTS}", "--set",
                                 "sweep fewer values, or split the sweep"))
    out = []
    for combo in combos:
        settings = {p: v for (p, _), v in zip(parsed, combo)}
        variant = copy.deepcopy(data)
        for p, v in settings.items():
            apply_setting(variant, p, v)
        out.append((settings, parse_variant(variant, f"{path} with {label(settings)}", path)))
    return out


def add_measurements(items: list[tuple[dict, Scenario | BadVariant]], paths: tuple[str, ...]) -> list:
    """--measurements CSVs (relative to the working directory) added to every variant after its own;
    read once first under the names given (a bad row: exit 2 at file:line), then passed on as
    absolute paths so that worker processes, whatever their directory, read the same files."""
    if not paths:
        return items
    from planner.app.pipeline import with_measurements
    from planner.data.measurements import load_measurements

    load_measurements(tuple(paths))
    absolute = tuple(str(Path(p).resolve()) for p in paths)
    return [(settings, s if isinstance(s, BadVariant) else with_measurements(s, absolute)) for settings, s in items]


def validate(items: list[tuple[dict, Scenario | BadVariant]], catalog_paths: tuple[str, ...] = ()) -> list:
    """Catalog references, measurement names and per-year settings of every variant, before any
    solve: the items with each variant that fails them a BadVariant; exit 2 (the first variant's
    problems) when all do."""
    from planner.data.consistency import resolve
    from planner.data.measurements import check_names, load_measurements
    from planner.data.years import check_multiyear

    out = []
    for settings, s in items:
        if not isinstance(s, BadVariant):
            try:
                cat = resolve(s, catalog_paths)
                if s.measurements:
                    check_names(load_measurements(tuple(s.measurements)), cat)
                if s.multi_year:
                    check_multiyear(s)
            except InputError as exc:
                s = BadVariant(InputError(exc.problems, source=f"variant {label(settings)}"))
        out.append((settings, s))
    if out and all(isinstance(s, BadVariant) for _, s in out):
        raise out[0][1].error
    return out


def run(items, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None, progress=None) -> list[dict]:
    """Solve each variant in turn: [{"variant", "settings", "summary"}]; infeasible or unsolved
    variants carry their status and diagnosis instead of a plan. `progress(entry, seconds)` is
    called after each (the JSON stays free of timings, so it is the same run to run)."""
    out = []
    for n, (settings, s) in enumerate(items, 1):
        entry, seconds = solve_entry(n, settings, s, catalog_paths, time_limit_s)
        out.append(entry)
        if progress:
            progress(entry, seconds)
    return out


def solve_entry(n: int, settings: dict, s: Scenario, catalog_paths: tuple[str, ...] = (),
                time_limit_s: float | None = None) -> tuple[dict, float]:
    """One variant's entry and its wall seconds (planner.app.parallel runs this in worker processes)."""
    start = time.perf_counter()
    try:
        if isinstance(s, BadVariant):
            raise s.error
        summary = summarise(solve_variant(s, catalog_paths, time_limit_s))
    except InfeasibleError as exc:
        summary = {"status": "infeasible", "diagnosis": exc.diagnosis.summary}
    except SolverError as exc:
        summary = {"status": "solver-failed", "diagnosis": str(exc)}
    except InputError as exc:
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        summary = {"status": "bad-input", "diagnosis": exc.render(), "problem": exc.problems[0].message + more}
    except Exception as exc:  # a bug shown in this variant's row: the other variants still count
        what = str(exc) if isinstance(exc, PlannerError) else f"internal error: {type(exc).__name__}: {exc}"
        summary = {"status": "error", "diagnosis": what, "problem": what.splitlines()[0] if what else "error"}
    return {"variant": n, "settings": settings, "summary": summary}, time.perf_counter() - start


def solve_variant(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None) -> dict:
    """The checked plan `plan run` would make, without the per-placement explanations of
    single-period plans (they re-solve the model once per alternative; a sweep compares numbers)."""
    from planner.app.pipeline import checked, plan_scenario
    from planner.app.planning import make_plan

    if s.multi_year:
        return plan_scenario(s, catalog_paths, time_limit_s)
    return checked(make_plan(s, catalog_paths, time_limit_s, explain=False), s, catalog_paths)


# --- summaries and tables ---------------------------------------------------------------------------

def summarise(plan: dict) -> dict:
    """The numbers a comparison needs, from a single-period or multi-year plan."""
    serve = [j for j in plan["jobs"] if (j.get("unit_cost") or {}).get("output_tokens_per_year")]
    tokens = sum(j["unit_cost"]["output_tokens_per_year"] for j in serve)
    cost = sum(j["cost_usd_per_year"] or 0.0 for j in serve)
    unserved = {}
    for entry in plan.get("years") or [{"unserved": {dk: u for j in plan["jobs"] for dk, u in j.get("unserved", {}).items()}}]:
        for dk, u in entry["unserved"].items():
            worst = unserved.get(dk)
            if worst is None or u["share"] > worst["share"]:
                unserved[dk] = {**u, **({"year": entry["year"]} if "year" in entry else {})}
    return {"status": plan["status"], "horizon_years": plan.get("horizon_years"),
            "total_cost_usd_per_year": plan["total_cost_usd_per_year"],
            "total_cost_usd_over_horizon": plan.get("total_cost_usd_over_horizon"),
            "annuitised_total_usd": plan.get("annuitised_total_usd", plan.get("total_cost_usd_over_horizon")),
            "npv_usd": plan.get("npv_usd"), "cash_total_usd": plan.get("cash_total_usd"),
            "fleet": [{"systems": f["systems"], "system": f["system"], "acquisition": f["acquisition"],
                       "provider": f["provider"], "offer": f["offer"]} for f in plan["fleet"]],
            "unserved": unserved,
            "usd_per_million_tokens": round(cost / tokens * 1e6, 4) if tokens else None}


def fleet_text(fleet: list[dict]) -> str:
    """The fleet in words, the provider named where two rows share a system and acquisition ('2x
    b200-x1 on-demand, 1x b200-x1 on-demand' read as a fault of the plan: the new-user review)."""
    kinds = [(f["system"], f["acquisition"]) for f in fleet]
    twice = [kinds.count(k) > 1 for k in kinds]
    return ", ".join(fleet_item(f, provider=two, brackets=two) for f, two in zip(fleet, twice)) or "-"


def unmet_text(unserved: dict) -> str:
    parts = []
    for dk, u in sorted(unserved.items()):
        what = f"{u['users']:,.0f} users" if u.get("users") is not None else f"{u['share']:.0%}"
        parts.append(f"{dk} {what}" + (f" (y{u['year']})" if u.get("year") else ""))
    return "; ".join(parts) or "-"


def rows(entries: list[dict]) -> list[dict]:
    out = []
    for e in entries:
        s = e["summary"]
        out.append({"#": e["variant"], **{k: v for k, v in e["settings"].items()}, "status": s["status"],
                    "$/year": s.get("total_cost_usd_per_year"), "NPV $": s.get("npv_usd"),
                    "fleet": fleet_text(s.get("fleet", [])), "unmet": unmet_text(s.get("unserved", {})),
                    "$/M out": s.get("usd_per_million_tokens"), "problem": problem_text(s)})
    return out


FAILED = ("bad-input", "error")
"""Statuses of a variant that failed on its own (exit 2 or 1 had it been planned alone)."""


def problem_text(summary: dict) -> str | None:
    """Why a failed variant has no plan, in one line (the whole message is its JSON diagnosis)."""
    return summary["problem"][:160] if summary["status"] in FAILED else None


def columns(entries: list[dict]) -> list[str]:
    cols = ["#", *entries[0]["settings"], "status", "$/year"]
    if any(e["summary"].get("npv_usd") is not None for e in entries):
        cols.append("NPV $")
    cols += ["fleet", "unmet", "$/M out"]
    return cols + ["problem"] if any(e["summary"]["status"] in FAILED for e in entries) else cols


def closing_note(entries: list[dict], wall_s: float) -> str:
    solved = sum(e["summary"]["status"] in ("optimal", "feasible") for e in entries)
    return (f"Swept {len(entries)} variants in {wall_s:.1f} s ({wall_s / max(len(entries), 1):.2f} s each); "
            f"{solved} with a plan, {len(entries) - solved} without.")
