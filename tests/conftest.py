"""Shared test helpers: run the `plan` CLI in-process and capture what a user would see."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


@dataclass
class Result:
    code: int
    out: str
    err: str


PROGRESS = re.compile(r"^planning .*(s so far|: done in [0-9.]+ s)$")


def without_progress(err: str) -> str:
    """stderr less the progress lines a slow (loaded) machine adds after two seconds, so that tests
    of the first line a user reads do not depend on how busy the machine is."""
    return "".join(line for line in err.splitlines(keepends=True) if not PROGRESS.match(line.rstrip("\n")))


@pytest.fixture
def plan_cli(capsys):
    """plan_cli("validate", "x.yaml") -> Result(code, stdout, stderr), as the `plan` command."""
    from planner.cli import main

    def run(*args: str) -> Result:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return Result(code, captured.out, without_progress(captured.err))

    return run


@lru_cache(maxsize=None)
def shipped_plan(name: str, explain: bool = True):
    """(scenario, plan) for a shipped scenario, planned (single-period or multi-year) and verified
    once per test process (each xdist worker keeps its own cache); tests that change a plan
    deep-copy it first. An infeasible scenario raises InfeasibleError (not cached)."""
    from planner.app.pipeline import plan_scenario
    from planner.data.scenario import load_scenario

    s = load_scenario(SCENARIOS / name)
    return s, plan_scenario(s, explain="full" if explain is True else explain)
