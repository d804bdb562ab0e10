"""The plan contract: the JSON that `plan SCENARIO.yaml --format json` writes, as pydantic models.

planner.milp.readout (single period) and planner.milp.readout_years (multi-year) build the plan;
planner.explain adds why, checks, summary, explanations, alternatives and next_best. Every plan the
pipeline returns is validated against Plan (planner.app.pipeline.checked), so a key added there
without a field here is a bug caught at once. Units are in each field's description; an unknown key
fails (extra="forbid"); keys only some plans have are not required. `plan schema --plan` prints
plan_json_schema().
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from planner.data.plan_parts import (
    Alternative,
    ApiPlacement,
    Checks,
    Explanation,
    FleetItem,
    NextBest,
    Placement,
    PoolRow,
    Purchase,
    SolverInfo,
    Stage,
    UnitCost,
    Unserved,
    Utilisation,
    absent,
)

__all__ = [
    "Alternative", "Checks", "Explanation", "FleetItem", "JobPlan", "NextBest", "Placement", "Plan",
    "Purchase", "SolverInfo", "SolverStatus", "UnitCost", "Unserved", "Utilisation", "Views", "YearEntry",
    "Infeasible", "plan_json_schema", "validate_infeasible", "validate_plan",
]


class SolverStatus(str, Enum):
    """The solver's status for a plan: optimal (proven within solver.gap) or feasible (not proven)."""

    optimal = "optimal"
    feasible = "feasible"


class JobPlan(BaseModel):
    """One job of the scenario: its cost, unit cost, placements and unserved demand."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="the job's name in the scenario")
    stage: Stage = Field(description="the job's stage")
    model: str = Field(description="catalog model id")
    priority: float = absent("the job's weight in max-coverage mode (multi-year plans only)")
    cost_usd_per_year: float = Field(description="USD per year: the job's share of the fleet's cost, split by "
                                                 "accelerator-hours used")
    unit_cost: UnitCost = Field(description="the job's unit cost (keys depend on the stage)")
    placements: list[Placement] = Field(description="where the job runs")
    api: list[ApiPlacement] = absent("the shares of a serving job on hosted token-priced APIs (absent when none)")
    unserved: dict[str, Unserved] = Field(description="demand part -> demand left unserved (max-coverage "
                                                      "mode); empty when all is served")
    why: list[str] = absent("the physical reason for each placement, in order (absent when unexplained)")
    traffic: str = absent("a serve job given as requests_per_s: its conversion to concurrent users by Little's law "
                          "per request size (absent otherwise, or when unexplained)")
    colocation: str = absent("an RL job that colocates (colocate: true): where its trainer and rollouts run together, "
                             "site and software stack (absent otherwise, or when unexplained)")
    split_considered: str = absent("a serving job offered disaggregated prefill/decode serving that the plan serves "
                                   "aggregated: the best split's and the plan's USD per user-year at the cheapest "
                                   "offers (absent when no split was offered, one was chosen, or unexplained)")
    spare: str = absent("N+1 with a serving placement on spot: its spare is spot capacity too, which one reclaim "
                        "of several instances outruns (absent otherwise, or when unexplained)")
    checks: Checks = absent("the three checks before signing (absent when unexplained)")


class Views(BaseModel):
    """What the money figures of a multi-year plan mean."""

    model_config = ConfigDict(extra="forbid")

    cash: str = Field(description="the cash view")
    accounting: str = Field(description="the accounting view")
    npv: str = Field(description="the net present value")
    final_year: str = Field(description="what fleet, jobs and utilisation describe")


class YearEntry(BaseModel):
    """One year of a multi-year plan."""

    model_config = ConfigDict(extra="forbid")

    year: int = Field(description="the year, from 1")
    capex_usd: float = Field(description="USD of purchases paid in the year")
    opex_usd: float = Field(description="USD of running costs in the year (rent, power, hosting, support)")
    cost_usd: float = Field(description="USD paid in the year: capex_usd + opex_usd")
    annuitised_cost_usd: float = Field(description="USD, the year's cost in the accounting view (purchases "
                                                   "annuitised)")
    resale_usd: float = Field(description="USD of resale credited for systems leaving the fleet after the year")
    budget_usd: float | None = Field(description="USD, the year's budget in the plan's budget_basis; null when none")
    budget_capex_usd: float | None = Field(description="USD, the year's capex cap; null when none")
    budget_opex_usd: float | None = Field(description="USD, the year's opex cap; null when none")
    budget_used: float | None = Field(description="fraction of budget_usd used (cost_usd, or annuitised_cost_usd "
                                                  "where the budget_basis is annualised); null when no budget")
    complexity_usd: float = absent("USD of fleet complexity in the year (part of opex_usd): the system types in "
                                   "the year's fleet x policy.cost_per_system_type_usd_year; only when that rate "
                                   "is above 0")
    demand: dict[str, float] = Field(description="demand part -> demand in the year (users, runs per year "
                                                 "or devices)")
    fleet: list[FleetItem] = Field(description="the fleet held in the year")
    purchases: list[Purchase] = Field(description="systems bought or reserved in the year")
    unserved: dict[str, Unserved] = Field(description="demand part -> demand unserved in the year")
    utilisation: list[Utilisation] = Field(description="how busy the owned systems are in the year")


class Plan(BaseModel):
    """A verified plan: the fleet to acquire, where each job runs, what it costs, and why."""

    model_config = ConfigDict(extra="forbid")

    scenario: str = Field(description="the scenario's name")
    status: SolverStatus = Field(description="optimal, or feasible when the solver stopped before a proof")
    mode: Literal["min-cost", "max-coverage"] = absent("the budget mode (multi-year plans only)")
    horizon_years: int = Field(description="years the plan covers")
    total_cost_usd_per_year: float = Field(description="USD per year all-in (multi-year: the accounting "
                                                       "view's average over the horizon)")
    total_cost_usd_over_horizon: float = Field(description="USD over the horizon (multi-year: cash paid)")
    cost_breakdown_usd_per_year: dict[str, float] = absent("cost component (capital, power, rent, ...) -> "
                                                           "USD per year (single-period plans only)")
    annuitised_total_usd: float = absent("USD over the horizon in the accounting view (multi-year only)")
    cash_first_year_usd: float = absent(
        "USD the first year pays: the purchases in full, reservation invoices and running costs (single-period "
        "plans; multi-year plans give each year's cost_usd)")
    end_of_horizon: Literal["keep"] = absent(
        "keep where policy.end_of_horizon keeps the bought systems when the horizon ends: residual_value_usd "
        "(salvage_usd) is then the used market's price, no sale's discount; absent where they are sold")
    budget_basis: Literal["annualised", "cash"] = absent(
        "what budget.usd_per_year caps in this plan: annualised (total_cost_usd_per_year; multi-year "
        "years[].annuitised_cost_usd) or cash (cash_first_year_usd; multi-year years[].cost_usd): budget.basis, "
        "or where unset annualised in single-period plans and cash in multi-year ones; only when a budget "
        "caps the cost")
    npv_usd: float = absent("USD, the net present value of the cash, resale credited: the objective "
                            "(multi-year only)")
    cash_total_usd: float = absent("USD of cash paid over the horizon, undiscounted (multi-year only)")
    committed_after_horizon_usd: float = absent(
        "USD of reservation payments committed to after the horizon (terms running past it), undiscounted; in the "
        "NPV, not in the cash view (multi-year only)")
    salvage_usd: float = absent("USD of resale credited at the end of the horizon (multi-year only)")
    discount_rate: float = absent("yearly discount rate, a fraction (multi-year only)")
    demand_met: bool = absent("false when some demand is left unserved (a max-coverage budget, an elastic plan): "
                              "jobs[].unserved and, multi-year, years[].unserved say which and how much; the "
                              "exit code is 0 all the same")
    provenance: "Provenance" = absent("what the plan was made from: the planner's version, the calibration, "
                                      "digests of the catalog and the scenario (plans from the plan command)")
    notes: list[str] = absent("the warnings and notes said while planning, as printed on stderr (a context below a "
                              "request's tokens, a name read case-insensitively, an RL trainer sized for other "
                              "rollouts, ...); absent when there were none")
    fleet: list[FleetItem] = Field(description="the fleet to acquire (multi-year: held in the final year), "
                                               "costliest first")
    jobs: list[JobPlan] = Field(description="one entry per scenario job, in scenario order")
    pools: list[PoolRow] = absent("replicas that several serving parts share (policy.pool_jobs; single-period "
                                  "plans with such parts)")
    utilisation: list[Utilisation] = Field(description="how busy the owned systems are")
    years: list[YearEntry] = absent("one entry per year (multi-year only)")
    views: Views = absent("what the money figures mean (multi-year only)")
    solver: SolverInfo = Field(description="the solve")
    summary: str = absent("the recommendation in one paragraph (absent when unexplained)")
    explain: Literal["none", "brief", "full"] = absent(
        "how much was explained (--explain): none: reasons and checks only; brief: + LP prices and why-not "
        "from LP bounds; full: + re-planned alternatives, next-best fleet, lifted caps")
    explanations: list[Explanation] = absent("binding constraint families with their prices (single-period, "
                                             "explained plans)")
    alternatives: list[Alternative] = absent("why not each unused catalog accelerator (single-period, "
                                             "explained plans)")
    next_best_acquisition: NextBest = absent(
        "the cheapest fleet without the acquisition mode of the plan's costliest row (buying, renting on demand, "
        "a reservation): the rent-or-buy answer beside the plan; only with --explain full, where the policy allows "
        "another mode and that row is not a system already owned")
    api_fleet: NextBest = absent(
        "the cheapest fleet with every serving job a hosted API may take on APIs (self-hosting it left out): the "
        "API-or-self-host answer beside the plan; only with --explain full, where the policy allows api and the plan "
        "self-hosts some of what an API could serve")
    next_best: NextBest | None = absent("the next-best distinct fleet; null when not evaluated "
                                           "(single-period, explained plans)")


class Provenance(BaseModel):
    """What the plan was made from (planner.app.provenance): an audit trail, not an input."""

    model_config = ConfigDict(extra="forbid")
    planner_version: str = Field(description="the planner's version (plan --version)")
    calibration: str = Field(description="when and on what the performance model's factors were fitted")
    catalog_sha256: str = Field(description="SHA-256 of the catalog as planned (the bundled one, --catalog and the "
                                            "scenario's offers, prices and owned systems), rows sorted by id")
    scenario_sha256: str = Field(description="SHA-256 of the scenario's parsed fields (comments and formatting "
                                             "do not change it)")


class Relaxation(BaseModel):
    """One thing to relax, and by how much, for an infeasible scenario to have a plan."""

    model_config = ConfigDict(extra="allow")
    family: str = Field(description="the constraint family: budget, power, demand, ...")
    constraint: str = Field(description="the scenario key (or job part) to relax")
    shortfall: float = Field(description="by how much it falls short, in `unit`")
    unit: str = Field(description="the unit of shortfall, current and suggested")
    message: str = Field(description="the same in words")
    current: float | None = absent("the scenario's value")
    suggested: float | None = absent("a value with which a plan exists")
    year: int | None = absent("the plan year (multi-year scenarios)")


class Infeasible(BaseModel):
    """What `plan --format json` writes, exit 3, when no plan meets every constraint: the diagnosis
    of the elastic model (planner.explain.diagnosis), never a plan."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["infeasible"]
    scenario: str = Field(description="the scenario file planned")
    diagnosis: str = Field(description="what to relax and by how much, in words")
    relax: list[Relaxation] = Field(description="the same, one row per constraint to relax")
    cut_short: list[str] = absent("the steps the command's time limit cut short")


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema of what `plan --format json` writes: a plan (exit 0), or, exit 3, the
    infeasible scenario's diagnosis (status "infeasible"): one of the two."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(Plan | Infeasible).json_schema()
    schema["title"] = "plan --format json"
    schema["description"] = plan_json_schema.__doc__.split(":", 1)[1].strip()
    return schema


def validate_infeasible(d: dict) -> Infeasible:
    """The diagnosis JSON as Infeasible (pydantic.ValidationError naming the field that breaks it)."""
    return Infeasible.model_validate(d)


def validate_plan(d: dict) -> Plan:
    """The plan as a Plan; pydantic.ValidationError naming the field when it breaks the contract."""
    return Plan.model_validate(d)
