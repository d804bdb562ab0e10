"""The scenario's parts that are not jobs, site or policy: the strict base every part derives from
(unknown keys and YAML booleans for numbers refused), budgets, price overrides, hardware trends,
solver settings and the systems already owned. planner.data.scenario re-exports them."""

from __future__ import annotations

from typing import Literal, Optional, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.data.notes import note


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data):
        """`concurrent_users: true` is not 1: a YAML true/false is refused where a number belongs."""
        if isinstance(data, dict):
            for key, value in data.items():
                field = cls.model_fields.get(key) if isinstance(key, str) else None
                if isinstance(value, bool) and field is not None and "bool" not in str(field.annotation):
                    if "str" in str(field.annotation) and "float" not in str(field.annotation):
                        raise ValueError(f"{key}: YAML reads yes/no/on/off/true/false as {str(value).lower()}, "
                                         f"not as text; quote it: {key}: '...'")
                    raise ValueError(f"{key}: {str(value).lower()} is not a number; write a number")
            data = {key: _lower_case(key, value, cls.model_fields.get(key)) if isinstance(key, str) else value
                    for key, value in data.items()}
        return data


LOWER_CASE_FIELDS = ("region", "regions")
"""text fields whose values are lower-case by pattern, not by a list of choices"""


def _choices(annotation) -> set[str]:
    """The lower-case words a field's Literal (or list or Optional of one) allows."""
    out: set[str] = set()
    if get_origin(annotation) is Literal:
        return {a for a in get_args(annotation) if isinstance(a, str)}
    for arg in get_args(annotation):
        out |= _choices(arg)
    return out


def _lower_case(key: str, value, field):
    """A value written with capitals ('FP8', 'N+1', 'EU') read as the lower-case word the field takes,
    with a note on stderr, as catalog ids are (data.consistency); anything else unchanged."""
    if field is None:
        return value
    allowed = _choices(field.annotation)
    if not allowed and key not in LOWER_CASE_FIELDS:
        return value

    def one(v):
        if isinstance(v, str) and v != v.lower() and (v.lower() in allowed or key in LOWER_CASE_FIELDS):
            note(f"note: {key} '{v}' is read as '{v.lower()}' (values are lower-case)")
            return v.lower()
        return v
    return [one(v) for v in value] if isinstance(value, list) else one(value)


class YearBudget(Strict):
    year: int = Field(ge=1, description="the year of the horizon these caps apply to, from 1")
    usd: Optional[float] = Field(None, ge=0, le=1e13, description="cap on that year's cost, USD")
    capex_usd: Optional[float] = Field(None, ge=0, le=1e13, description="cap on that year's purchases, USD")
    opex_usd: Optional[float] = Field(None, ge=0, le=1e13, description=(
        "cap on that year's rentals, power, hosting and support, USD"))


class Budget(Strict):
    usd_per_year: Optional[float] = Field(None, ge=0, le=1e13, description=(
        "cap on the cost of each year, in the view `basis` names"))
    capex_usd_per_year: Optional[float] = Field(None, ge=0, le=1e13, description="cap on purchases paid per year")
    opex_usd_per_year: Optional[float] = Field(None, ge=0, le=1e13, description="cap on rentals, power, hosting")
    years: list[YearBudget] = Field(default_factory=list, description="per-year caps (multi-year plans)")
    mode: Literal["min-cost", "max-coverage"] = Field(
        "min-cost", description=("max-coverage: within the budget, least sum over jobs of priority x the share "
                                 "of the job's demand left unserved, then least cost"))
    basis: Optional[Literal["annualised", "cash"]] = Field(None, description=(
        "what usd_per_year and budget.years[].usd cap: 'annualised', the year's cost in the accounting "
        "view (each purchase's price less its discounted resale spread over the years it is held, a "
        "reservation's whole term spread over the horizon, plus running costs: the plan's $/year), or "
        "'cash', what the year pays (purchases in full in the year bought, reservation invoices, running "
        "costs). Unset: annualised in a one-period plan, cash in a multi-year plan (years.budget_basis). "
        "capex_usd_per_year and opex_usd_per_year are always the purchases paid and the running costs"))


class PriceOverride(Strict):
    offer: str = Field(description="id of the catalog offer to change (see `plan catalog offers`)")
    price_usd_per_hour: Optional[float] = Field(None, gt=0, le=1e6, description="new price, USD per system-hour")
    purchase_usd: Optional[float] = Field(None, gt=0, le=1e10, description="new purchase price, USD per system")
    useful_life_years: Optional[float] = Field(None, ge=0.5, le=50, description="new useful life of a purchase, years")
    max_systems: Optional[int] = Field(None, ge=0, le=10_000_000, description="new availability cap, systems (0: none)")


class HardwareTrend(Strict):
    accelerator: str = Field("*", description="accelerator id, or '*' for every accelerator")
    price_decline_per_year: float = Field(0.0, ge=0, lt=1, description="fraction per year")
    available_from_year: int = Field(1, ge=1, description="first year of the horizon it can be bought or rented")
    resale_fraction: Optional[float] = Field(None, ge=0, le=1, description=(
        "what a bought system leaving the fleet fetches. Unset (the default): the used market's price, "
        "about 0.61 x 0.72^age of a new one's (at least 0.61 x 3%), also when sold at the end of its useful life (physics.costs.exit_share). "
        "A number: the straight-line book value instead, from the purchase price down to this fraction of "
        "it at the end of the useful life (0: book value falling to nothing, not no resale)"))


class Solver(Strict):
    name: Literal["cbc", "highs"] = Field("cbc", description=(
        "MILP solver: cbc (bundled, the default) or highs (HiGHS: highspy is installed with the tool)"))
    time_limit_s: float = Field(60, gt=0, le=3600, description="seconds for the whole plan (--time-limit overrides)")
    gap: float = Field(0.001, ge=0, le=1, description="relative optimality gap accepted")
    threads: int = Field(1, ge=1, le=64, description=(
        "solver threads: 1 is CBC's serial search; more run its parallel tree, which on a busy machine "
        "can pause 10 s at its end (a CBC fault: 8 small solves in 1,000 with 2 threads, none serial)"))


class OwnedSystems(Strict):
    """Systems you already hold: used at no capital (sunk; no resale counted), their power, hosting and
    operations paid as for any owned system (support and spares, a share of the purchase price: none)."""

    system: str = Field(description="catalog system id (see `plan catalog systems`), e.g. h100-sxm-x8")
    count: int = Field(ge=1, le=1_000_000, description="how many of that system you hold")
