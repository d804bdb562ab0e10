"""The application layer: scenario file in, checked plan out. The CLI and tests call these."""

from __future__ import annotations

from pathlib import Path

from planner.scenario import Scenario, load_scenario


def plan_scenario(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None) -> dict:
    """The plan for a parsed scenario (single-period)."""
    from planner.plan import make_plan

    return make_plan(s, catalog_paths, time_limit_s)


def plan_file(path: str | Path, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None) -> dict:
    return plan_scenario(load_scenario(path), catalog_paths, time_limit_s)
