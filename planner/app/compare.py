"""`plan compare A B`: two plans side by side (cost, NPV, fleet, unmet demand, $ per million tokens),
each a plan JSON file (from `plan --format json`) or a scenario file solved now."""

from __future__ import annotations

from pathlib import Path

from planner.app.sweep import fleet_text, summarise, unmet_text
from planner.data.errors import InputError, Problem


def load_plan_or_solve(path: str | Path, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
                       measurements: tuple[str, ...] = ()) -> dict:
    """A plan JSON file (from `plan --format json`) as it is, or a scenario file solved now (with the
    --measurements CSVs added to its own, as `plan run` does)."""
    path = Path(path)
    if is_plan_file(path):
        from planner.verify.plan import read_plan_file

        return read_plan_file(path)
    from planner.app.pipeline import plan_file

    return plan_file(path, catalog_paths, time_limit_s, explain="none",  # compare reads costs and fleets only
                     measurements=measurements)


def is_plan_file(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".json"


def compare_plans(a: Path, b: Path, catalog_paths: tuple[str, ...] = (), time_limit_s: float | None = None,
                  measurements: tuple[str, ...] = ()) -> dict:
    """`plan compare A B`: each a plan JSON or a scenario solved now; --measurements need a scenario."""
    if measurements and is_plan_file(a) and is_plan_file(b):
        raise InputError(Problem("--measurements applies to a scenario solved now, and both are plan files",
                                 "--measurements", "compare a plan file with the scenario solved with "
                                 "--measurements (plan compare plan.json scenario.yaml --measurements m.csv), "
                                 "or drop --measurements"))
    return compare(load_plan_or_solve(a, catalog_paths, time_limit_s, measurements),
                   load_plan_or_solve(b, catalog_paths, time_limit_s, measurements))


COMPARE_ROWS = [("status", "status"), ("horizon (years)", "horizon_years"), ("$/year", "total_cost_usd_per_year"),
                ("$ over horizon (annuitised)", "annuitised_total_usd"), ("NPV $", "npv_usd"),
                ("cash $ (multi-year)", "cash_total_usd"), ("$/M output tokens (serving)", "usd_per_million_tokens")]
"""the rows of `plan compare`; the horizon's total is the annuitised view's in both kinds of plan
(a one-year plan's $/year x years, a multi-year plan's annuitised_total_usd), so that the two add up
the same costs: a multi-year plan's total_cost_usd_over_horizon is its cash, which leaves out the
resale and the fees owed past the horizon (its own row, and the NPV, show them)"""


def compare(a: dict, b: dict) -> dict:
    """Two plans' summaries and the differences (B - A) of their numbers."""
    sa, sb = summarise(a), summarise(b)
    diff = {}
    for _, key in COMPARE_ROWS:
        if isinstance(sa.get(key), (int, float)) and isinstance(sb.get(key), (int, float)):
            diff[key] = round(sb[key] - sa[key], 4)
    out = {"a": {"scenario": a["scenario"], "summary": sa}, "b": {"scenario": b["scenario"], "summary": sb},
           "difference": diff}
    ha, hb = sa.get("horizon_years"), sb.get("horizon_years")
    if ha and hb and ha != hb:
        out["warning"] = (f"the plans cover {ha} and {hb} years: compare their $/year (each its own horizon's yearly "
                          "cost); their totals over the horizon and NPVs add up different numbers of years")
    return out


def compare_rows(result: dict, names: tuple[str, str]) -> list[dict]:
    sa, sb, diff = result["a"]["summary"], result["b"]["summary"], result["difference"]
    out = [{"": "scenario", names[0]: result["a"]["scenario"], names[1]: result["b"]["scenario"], "B - A": ""}]
    for title, key in COMPARE_ROWS:
        if sa.get(key) is None and sb.get(key) is None:
            continue
        out.append({"": title, names[0]: sa.get(key), names[1]: sb.get(key), "B - A": diff.get(key)})
    out.append({"": "fleet", names[0]: fleet_text(sa["fleet"]), names[1]: fleet_text(sb["fleet"]), "B - A": ""})
    out.append({"": "unmet", names[0]: unmet_text(sa["unserved"]), names[1]: unmet_text(sb["unserved"]), "B - A": ""})
    return out
