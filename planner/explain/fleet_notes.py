"""Sentences about the fleet that the plan's summary ends with (narrative._summary): where parts
that do not pool rent one offer apart, where the fleet mixes many system types whose running costs
the scenario does not price, and where systems bought are sold when a horizon shorter than their
life ends."""

from __future__ import annotations

import math

from planner.data.money import listed
from planner.data.money import signed_usd as usd


MANY_TYPES = 4
"""system types in one fleet from which the plan says what running them costs is left out"""


def many_types(plan: dict, s) -> str:
    """' The fleet mixes 5 system types from 4 providers: ...' where the cheapest fleet to the dollar
    is one nobody would run and the scenario prices no type (an expert review: 5 types, 4 providers,
    CUDA and ROCm for a fine-tuning team whose next-best fleet cost $163 more)."""
    rows = [f for f in plan["fleet"] if f["acquisition"] != "api"]
    types, providers = {f["system"] for f in rows}, {f["provider"] for f in rows}
    if len(types) < MANY_TYPES or "cost_per_system_type_usd_year" in s.policy.model_fields_set:
        return ""
    return (f" The fleet mixes {len(types)} system types from {len(providers)} provider(s): each is its own images, "
            "drivers, spares and on-call runbook, which the plan does not price; set "
            "policy.cost_per_system_type_usd_year to what one more type costs you a year for a fleet of fewer types.")


def rented_apart(plan: dict, s) -> str:
    """' 'chat', 'code' and 'embed' rent h100-sxm-x8 (aws) apart: ...' where parts that do not pool
    (policy.pool_jobs false; an RL job's rollouts) rent the same offer by the hour for the same hours a
    day, each in whole systems of its own, and sharing them would take fewer: the plan says by how much
    (in systems, and dollars at the row's mean cost per system) it may overstate (three models on AWS
    H100 x8 nodes with N+1 and pool_jobs false rent 6, where their replicas fit 3 with one spare)."""
    busy: dict[tuple, dict[str, int]] = {}
    hours = {j.name: getattr(j, "hours_per_day", 24) for j in s.jobs}
    for job in plan["jobs"]:
        for p in job["placements"]:
            if p["acquisition"] in ("on-demand", "spot") and p.get("users_per_replica") and not p.get("pool") \
                    and not p.get("disaggregated"):
                by = busy.setdefault((p["offer"], hours[job["name"]]), {})
                by[job["name"]] = by.get(job["name"], 0) + p["replicas"] * p["accelerators_per_replica"]
    fleet, spare, out = {f["offer"]: f for f in plan["fleet"]}, int(s.policy.redundancy == "n+1"), []
    for (oid, _), by in sorted(busy.items()):
        f = fleet.get(oid)
        if len(by) < 2 or f is None or not f["systems"]:
            continue
        per = f["accelerators"] // f["systems"]
        apart = sum(math.ceil(n / per) + spare for n in by.values())
        together = math.ceil(sum(by.values()) / per) + spare
        if apart > together:
            each = f["cost_usd_per_year"] / f["systems"]
            out.append(f"{listed([repr(j) for j in by])} rent {f['system']} ({f['provider']}) apart, {apart} systems "
                       f"where their replicas' {sum(by.values())} accelerators fit {together} shared"
                       + (" with one N+1 spare" if spare else "") + f" (about {usd(each * (apart - together))} a year less)")
    why = "policy.pool_jobs is false" if not s.policy.pool_jobs else "an RL job's rollouts rent their own"
    return (" " + "; ".join(out) + f": jobs that do not pool ({why}) each rent systems of their own; systems "
            "bought or reserved are shared by every job.") if out else ""


EARLY_SHARE = 0.5
"""a horizon at most this share of a bought system's useful life is 'early' (sold_early): 1 or 2 years of a
4-5-year server; 3 years of 5 (bank.yaml) is a plan's considered term"""


def sold_early(plan: dict, s, cat) -> str:
    """' Bought for a 1-year horizon: ...' where a one-period plan buys systems and sells them when a
    horizon shorter than their useful life ends (policy.end_of_horizon sell, the default): the yearly
    cost is then the first years' loss on resale, which a reader takes for what owning them costs a
    year (an expert review: a $196,000 server planned at $184,633 a year over the default 1 year)."""
    horizon = plan.get("horizon_years") or 1
    if "years" in plan or s.policy.end_of_horizon == "keep":
        return ""
    early = [f for f in plan["fleet"] if f.get("residual_value_usd") and f.get("purchase_usd")
             and f.get("sold_after_years", horizon) >= horizon
             and horizon <= EARLY_SHARE * (cat.offers[f["offer"]].useful_life_years or 0 if f["offer"] in cat.offers else 0)]
    if not early:
        return ""
    paid, back = sum(f["purchase_usd"] for f in early), sum(f["residual_value_usd"] for f in early)
    life = max(cat.offers[f["offer"]].useful_life_years for f in early)
    return (f" Bought for a {horizon:g}-year horizon: the yearly cost nets off a sale when it ends, {usd(back)} for "
            f"the {usd(paid)} paid ({back / paid:.0%}), so it carries the steep early years of a {life:g}-year life; "
            "set horizon_years to the years you will run them, or policy.end_of_horizon: keep.")
