"""The application layer: scenario file in, checked plan out. The CLI and tests call these."""

from __future__ import annotations

from pathlib import Path

from planner.scenario import Scenario, load_scenario


def plan_scenario(s: Scenario, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None) -> dict:
    """The plan for a parsed scenario: single-period, or multi-year when it has per-year settings."""
    if s.multi_year:
        from planner.multiyear_plan import make_multiyear_plan

        return checked(make_multiyear_plan(s, catalog_paths, time_limit_s), s, catalog_paths)
    from planner.plan import make_plan

    return checked(make_plan(s, catalog_paths, time_limit_s), s, catalog_paths)


def checked(plan: dict, s: Scenario, catalog_paths: tuple[str, ...] = ()) -> dict:
    """The plan, once the independent verifier (planner.verify) re-derives that it is feasible;
    a failure is a bug in the planner: VerificationError (exit 1) listing the failed checks."""
    from planner.checks import resolve
    from planner.errors import VerificationError
    from planner.verify import verify

    result = verify(plan, s, resolve(s, catalog_paths))
    if not result.ok:
        raise VerificationError(result.summary() + "\nThis is a bug in the planner: please report it "
                                "with the scenario file.")
    return plan


def plan_file(path: str | Path, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None) -> dict:
    return plan_scenario(load_scenario(path), catalog_paths, time_limit_s)
