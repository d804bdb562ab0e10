"""Per-year data of a multi-year scenario: hardware trends, demand factors, yearly budget caps, and
the checks of per-year settings against the horizon. Plain Python: no solver here."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.data.catalog import Offer
from planner.data.errors import InputError, Problem
from planner.data.jobs import demand_factor
from planner.data.scenario import Scenario


@dataclass(frozen=True)
class Trend:
    decline: float = 0.0
    available_from: int = 1
    resale_fraction: float | None = None
    """None: not set by the scenario, a system leaving the fleet fetches the market's residual
    (physics.costs.exit_share)"""


def trend_for(s: Scenario, accelerator: str) -> Trend:
    """The trend of one accelerator: '*' rows first, then its own row; each row's explicitly set
    fields (a field no row sets keeps Trend's default)."""
    names = {"price_decline_per_year": "decline", "available_from_year": "available_from",
             "resale_fraction": "resale_fraction"}
    got: dict = {}
    for star in (True, False):
        for t in s.trends:
            if (t.accelerator == "*") == star and (star or t.accelerator == accelerator):
                got.update({names[f]: getattr(t, f) for f in t.model_fields_set & names.keys()})
    return Trend(**got)


MAX_DEMAND_FACTOR = 1000
"""A job's demand in any year is at most this many times its stated size: growth_per_year 10 over 20
years (11^19, about 6e19) made the MILP's numbers so far apart that CBC called a plannable scenario
infeasible and the diagnosis found nothing to relax."""


def _times(factor: float) -> str:
    return f"{factor:,.0f}" if factor < 1e6 else f"{factor:.3g}"


def check_multiyear(s: Scenario) -> None:
    """Per-year settings that only make sense against the horizon; every problem at once (exit 2)."""
    problems = []
    for i, j in enumerate(s.jobs):
        if j.demand_multipliers and len(j.demand_multipliers) < s.horizon_years:
            problems.append(Problem(
                f"demand_multipliers has {len(j.demand_multipliers)} value(s) for {s.horizon_years} years",
                f"jobs.{i}.demand_multipliers ({j.name})", "give one factor per year, year 1 first"))
        if j.demand_multipliers and j.growth_per_year:
            problems.append(Problem("both growth_per_year and demand_multipliers are set", f"jobs.{i} ({j.name})",
                                    "keep one: a yearly rate or one factor per year"))
        elif (peak := max(range(1, s.horizon_years + 1), key=lambda t: demand_factor(j, t))) and \
                demand_factor(j, peak) > MAX_DEMAND_FACTOR:
            key = "demand_multipliers" if j.demand_multipliers else "growth_per_year"
            problems.append(Problem(
                f"year {peak}'s demand would be {_times(demand_factor(j, peak))} times the stated size "
                f"(at most {MAX_DEMAND_FACTOR:,} is planned: beyond it the numbers are too far apart for the solver)",
                f"jobs.{i}.{key} ({j.name})",
                f"lower {key} or horizon_years, or plan the later years as a scenario of their own"))
    seen = set()
    for i, yb in enumerate(s.budget.years):
        if yb.year > s.horizon_years:
            problems.append(Problem(f"year {yb.year} is beyond horizon_years ({s.horizon_years})",
                                    f"budget.years.{i}.year", "remove it or raise horizon_years"))
        if yb.year in seen:
            problems.append(Problem(f"year {yb.year} has two budget entries", f"budget.years.{i}.year",
                                    "merge them into one"))
        seen.add(yb.year)
    if problems:
        raise InputError(problems)


BASIS_WORDS = {"annualised": "annualised cost (purchases spread over the years held, net of resale, plus running costs)",
               "cash": "cash (purchases in full when paid, reservation invoices, running costs)"}
"""each budget basis in the words a plan, validate and a diagnosis use"""


def budget_basis(s: Scenario) -> str:
    """What budget.usd_per_year (and budget.years[].usd) caps: budget.basis, or where it is unset the
    plan's own view: 'annualised' (the yearly cost a one-period plan minimises) or 'cash' (each
    year's payments, what a multi-year plan's years add up)."""
    return s.budget.basis or ("cash" if s.multi_year else "annualised")


SPENT_KEY = {"annualised": "annuitised_cost_usd", "cash": "cost_usd"}
"""a multi-year plan's year key that budget.usd_per_year caps, by budget basis (budget_basis)"""


def budget_key(s: Scenario) -> dict:
    """A plan's {"budget_basis": ...} where a budget caps the year's cost (budget_basis), else {}."""
    capped = s.budget.usd_per_year is not None or any(y.usd is not None for y in s.budget.years)
    return {"budget_basis": budget_basis(s)} if capped else {}


def year_caps(s: Scenario, year: int) -> dict[str, tuple[float, str]]:
    """{'usd'|'capex'|'opex': (cap, the field a user edits)} for one year ('usd' in budget_basis's view)."""
    out = {}
    entry = next(((i, yb) for i, yb in enumerate(s.budget.years) if yb.year == year), None)
    for key, own, wide in (("usd", "usd", "usd_per_year"), ("capex", "capex_usd", "capex_usd_per_year"),
                           ("opex", "opex_usd", "opex_usd_per_year")):
        if entry and getattr(entry[1], own) is not None:
            out[key] = (getattr(entry[1], own), f"budget.years.{entry[0]}.{own}")
        elif getattr(s.budget, wide) is not None:
            out[key] = (getattr(s.budget, wide), f"budget.{wide}")
    return out


def kept_at_exit(s: Scenario, o: Offer, age: int) -> bool:
    """A bought system leaving the fleet `age` years old is kept at its market value, not sold:
    policy.end_of_horizon keep, and the horizon's end, not its life's (life_years), takes it out."""
    return s.kept and age < life_years(o)


def life_years(o: Offer) -> int:
    return max(1, int(math.floor(o.useful_life_years + 0.5)))
