"""Shared test helpers: run the `plan` CLI in-process and capture what a user would see."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


@dataclass
class Result:
    code: int
    out: str
    err: str


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
        return Result(code, captured.out, captured.err)

    return run
