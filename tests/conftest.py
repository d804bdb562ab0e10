"""Shared test helpers: run the `plan` CLI in-process and capture what a user would see."""

from __future__ import annotations

import json
import os
import pickle
import re
import time
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


PROGRESS = re.compile(r"^planning .*(s so far|: (done in|stopped after) [0-9.]+ s)$")


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


_SHARED: Path | None = None
"""where xdist workers of one run share the shipped plans (None: not under xdist)"""


@pytest.fixture(scope="session", autouse=True)
def _plans_shared_by_workers(tmp_path_factory):
    """Under pytest-xdist, a folder all workers of this run see (the parent of each worker's
    basetemp, as xdist documents), so that a shipped scenario is planned once per run, not once
    per worker: choose-go.yaml with full explanations takes ~16 s."""
    global _SHARED
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _SHARED = tmp_path_factory.getbasetemp().parent / "shipped-plans"
        _SHARED.mkdir(exist_ok=True)
    yield
    _SHARED = None


def _once_per_run(key: str, compute):
    """compute() once per test run: the first worker to take KEY's lock computes and stores it, the
    others wait and read it. Nothing is stored if compute raises (each worker then raises itself)."""
    if _SHARED is None:
        return compute()
    stored, lock = _SHARED / f"{key}.pickle", _SHARED / f"{key}.lock"
    waited = 0.0
    while not stored.exists():
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            if waited > 600:  # a worker died holding the lock: plan here
                return compute()
            time.sleep(0.05)
            waited += 0.05
            continue
        try:
            if stored.exists():
                break
            value = compute()
            part = stored.with_suffix(".part")
            part.write_bytes(pickle.dumps(value))
            os.replace(part, stored)
            return value
        finally:
            lock.unlink()
    return pickle.loads(stored.read_bytes())


@lru_cache(maxsize=None)
def shipped_plan(name: str, explain: bool | str = True):
    """(scenario, plan) for a shipped scenario, planned (single-period or multi-year) and verified
    once per test run (each xdist worker keeps its own copy; the first to need it plans it, the
    others read it); tests that change a plan deep-copy it first. An infeasible scenario raises
    InfeasibleError (not cached)."""
    from planner.app.pipeline import plan_scenario
    from planner.data.scenario import load_scenario

    s = load_scenario(SCENARIOS / name)
    level = "full" if explain is True else "none" if explain is False else explain  # (False and "none": one plan)
    return s, _once_per_run(f"{name}-{level}", lambda: plan_scenario(s, explain=level))


def planned_json(plan_cli, path: Path, text: str) -> dict:
    """The JSON plan of the scenario `text` (written to `path`) through the `plan` command, without
    explanations; the command must succeed."""
    path.write_text(text)
    res = plan_cli(path, "--format", "json", "--no-timings", "--quiet", "--explain", "none")
    assert res.code == 0, res.err
    return json.loads(res.out)
