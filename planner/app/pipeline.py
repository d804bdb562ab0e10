"""The application layer's entry: scenario file in, verified plan out. The CLI and tests call these."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import ValidationError

from planner.app import planning
from planner.app.advice import advise
from planner.app.provenance import provenance
from planner.data import deadline
from planner.data.consistency import resolve
from planner.data.errors import VerificationError
from planner.data.notes import listening
from planner.data.plan import validate_plan
from planner.data.scenario import Scenario, load_scenario
from planner.verify.plan import verify


def plan_scenario(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
                  explain: str = "full", solver: str | None = None) -> dict:
    """The plan for a parsed scenario: single-period, or multi-year when it has per-year settings;
    explain: none | brief | full (planner.explain.narrative); solver overrides solver.name."""
    if solver is not None:
        s = s.model_copy(update={"solver": s.solver.model_copy(update={"name": solver})})
    cat = resolve(s, catalog_paths)
    advise(s, cat)
    plan = checked(planning.make_plan(s, catalog_paths, time_limit_s, explain=explain), s, catalog_paths)
    return {**plan, "provenance": provenance(s, cat)}


def checked(plan: dict, s: Scenario, catalog_paths: tuple[str, ...] = ()) -> dict:
    """The plan, once the independent verifier (planner.verify) re-derives that it is feasible;
    a failure is a bug in the planner: VerificationError (exit 1) listing the failed checks."""
    result = verify(plan, s, resolve(s, catalog_paths))
    if not result.ok:
        raise VerificationError(result.summary() + "\nThis is a bug in the planner: please report it "
                                "with the scenario file.")
    try:  # the JSON contract (planner.data.plan): a key or type the readout changed without it
        validate_plan(plan)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(k) for k in first["loc"]) or "plan"
        raise VerificationError(f"plan breaks the JSON contract ({exc.error_count()} error(s)): {where}: "
                                f"{first['msg']}\nThis is a bug in the planner: please report it with "
                                "the scenario file.") from exc
    return plan


def with_measurements(s: Scenario, paths: tuple[str, ...] = ()) -> Scenario:
    """The scenario with more measurements CSVs (--measurements, paths as given: relative to the
    working directory) after its own `measurements` (relative to the scenario file)."""
    if not paths:
        return s
    return s.model_copy(update={"measurements": [*s.measurements, *(str(p) for p in paths)]})


def load_with_measurements(path: str | Path, measurements: tuple[str, ...] = ()) -> Scenario:
    return with_measurements(load_scenario(path), measurements)


def plan_file(path: str | Path, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
              explain: str = "full", solver: str | None = None, measurements: tuple[str, ...] = (),
              start: float | None = None) -> dict:
    """The plan for a scenario file; its time limit counts from `start` (time.monotonic(); the
    command's start, planner.cli.started) or from before the file is read (2,000 jobs take seconds
    to parse and check), and covers the verification. The warnings and notes said while planning
    (planner.data.notes: stderr's lines) are the plan's `notes`, so that a script keeping only the
    JSON keeps them too."""
    start = time.monotonic() if start is None else start
    said: list[str] = []
    with listening(said.append):  # (the command's own listener prints them on stderr as they come)
        s = load_with_measurements(path, measurements)
        with deadline.budget(time_limit_s or s.solver.time_limit_s, start=start):
            plan = plan_scenario(s, catalog_paths, time_limit_s, explain, solver)
    return {**plan, "notes": said} if said else plan
