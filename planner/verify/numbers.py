"""The verifier's checks of the numbers a reader acts on, beyond feasibility: each fleet row against
its catalog offer (acquisition, provider, accelerators, power, purchase price), whole replicas and
users, batch shares in [0, 1], each job's cost as its share of the fleet's cost, each job's unit cost
and the utilisation of owned systems.

Job costs: an offer's yearly cost is split between the demands placed on it by the accelerator-hours
each uses (serving: replicas x accelerators they occupy x hours a year; batch: share x runs x
accelerators x hours per run; edge: the devices, or 1 per placement in a single-period plan), so
  cost_j = sum_o cost_o x use_{o,j} / sum_d use_{o,d}.
Unit costs: serving, cost_j / (users served x target tokens/s per user x 3600 x hours a day x 365 x
active_fraction) per output token, the same over input tokens (requests x input tokens) and per
request (output tokens / output tokens per request); training, cost_j per run; RL, cost_j / 365 per day; edge, cost_j per device.
"""

from __future__ import annotations

import math

from planner.data.catalog import Catalog
from planner.data.colocation import spare_pool_of
from planner.data.constants import DAYS_PER_YEAR, HOURS_PER_YEAR, SECONDS_PER_HOUR
from planner.data.jobs import output_tokens_per_s_per_user
from planner.data.scenario import Scenario
from planner.physics import costs
from planner.verify.common import REL, TIGHT, USD, Ledger, Verification, close, owned


def whole(x) -> bool:
    """A whole number as JSON carries it: an int, or a float without a fraction (not a bool)."""
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


def check_fleet_rows(rows: list[dict], cat: Catalog, v: Verification, where: str = "",
                     purchase: bool = True, horizon_years: int | None = None, kept: bool = False) -> None:
    """Each fleet row names its offer's system, accelerator, acquisition, provider, region and tier;
    accelerators and power follow from the systems held; a bought row's purchase_usd is price x
    systems and its residual_value_usd the resale at the horizon (costs.residual_value_usd) x systems
    (`purchase` False: multi-year rows, whose prices and resale follow trends, are checked by years.py)."""
    for f in rows:
        o = cat.offers.get(f["offer"])
        if o is None or o.system not in cat.systems:
            continue  # reported by check_fleet / verify_years
        system = cat.systems[o.system]
        name = f"{where}fleet '{o.id}'"
        n = f["systems"]
        v.check("plan", whole(n) and n >= 1, f"{name}: {n} systems is not a whole number of at least 1")
        v.check("plan", (f["system"], f["accelerator"], f["acquisition"], f["provider"])
                == (o.system, system.accelerator, o.acquisition, o.provider),
                f"{name} is reported as {f['acquisition']} {f['system']} ({f['accelerator']}) from "
                f"{f['provider']}; the catalog offer is {o.acquisition} {o.system} ({system.accelerator}) "
                f"from {o.provider}")
        v.check("plan", (f.get("region"), f.get("tier")) == (o.region, o.tier),
                f"{name} is reported in region '{f.get('region')}', tier '{f.get('tier')}'; the catalog offer is "
                f"in '{o.region}', tier '{o.tier}'")
        v.check("plan", close(f["power_kw"], system.power_kw * n, 1e-4, 0.01),
                f"{name}: {f['power_kw']} kW for {n} systems of {system.power_kw:g} kW")
        if "contract_usd_per_year" in f:  # (single-period plans' reservations)
            want = (o.price_usd_per_hour or 0.0) * HOURS_PER_YEAR * n
            term = costs.RESERVED_TERM_YEARS.get(o.acquisition, 1)
            v.check("costs", ("paid_upfront_usd" in f) == costs.prepaid(o) and close(
                        f.get("paid_upfront_usd", want * term), want * term, 1e-6, 0.01),
                    f"{name}: paid up front ${f.get('paid_upfront_usd')}; the offer is paid {o.payment}"
                    + (f", {term} years of ${want:,.2f} when it starts" if costs.prepaid(o) else ""))
            v.check("costs", o.acquisition in costs.RESERVED_TERM_YEARS and f.get("term_years") ==
                    costs.RESERVED_TERM_YEARS[o.acquisition] and close(f.get("contract_usd_per_year") or 0.0, want, 1e-6, 0.01),
                    f"{name}: a {f.get('term_years')}-year contract at ${f.get('contract_usd_per_year')} a year; the "
                    f"offer is {o.acquisition} at ${o.price_usd_per_hour}/h x {n} systems = ${want:,.2f} a year")
        if o.acquisition != "buy":
            v.check("costs", f.get("purchase_usd") is None and not f.get("residual_value_usd"),
                    f"{name}: a purchase price (${f.get('purchase_usd')}) or residual value "
                    f"(${f.get('residual_value_usd')}) on a {o.acquisition} offer")
        elif purchase:
            got = f.get("purchase_usd")
            v.check("costs", got is not None and close(got, o.purchase_usd * n, 1e-6, 0.01),
                    f"{name}: purchase ${got} for {n} systems at ${o.purchase_usd:,.2f}")
            back, want = f.get("residual_value_usd"), costs.residual_value_usd(o, horizon_years, kept) * n
            age = costs.sale_age_years(o, horizon_years)
            v.check("costs", back is not None and close(back, want, 1e-6, 0.01),
                    f"{name}: residual value ${back} at the end of a {horizon_years}-year horizon; {n} systems "
                    f"of a {o.useful_life_years:g}-year life, sold {age:g} years old, resell for ${want:,.2f}")
            v.check("costs", f.get("sold_after_years", age) == age,
                    f"{name}: sold after {f.get('sold_after_years')} years; a {o.useful_life_years:g}-year life "
                    f"over a {horizon_years}-year horizon sells at {age:g}")


def check_placement(p: dict, part, v: Verification) -> None:
    """Replicas, users and accelerators are whole numbers; batch shares lie in [0, 1] and say how
    many runs they are; users served never exceed what the replicas hold or the demand."""
    where = f"'{part.key}' on {p['offer']}"
    for key in ("replicas", "accelerators_per_replica", "tensor_parallel", "pipeline_parallel"):
        v.check("plan", whole(p[key]) and p[key] >= 1, f"{where}: {key} {p[key]} is not a whole number >= 1")
    if part.kind == "serve":
        upr = p["users_per_replica"]
        least = 0 if (p.get("disaggregated") or {}).get("role") == "prefill" else 1  # a prefill half holds no users
        v.check("plan", whole(upr) and upr >= least, f"{where}: users_per_replica {upr} is not a whole number >= {least}")
        served = p.get("users_served")
        if served is not None and whole(upr) and "pool" in p:  # a share of shared replicas
            want = min(round(p["replica_load"] * upr), part.users)
            v.check("demand", served == want and p["replica_load"] <= p["replicas"] * (1 + 1e-6) + 1e-4,
                    f"{where}: reports {served} users served; a load of {p['replica_load']} replicas of {upr} "
                    f"users serves {want} of {part.users} (pool of {p['replicas']} replicas)")
        elif served is not None and whole(upr):  # (their share of the part: verify.placements.check_serve)
            v.check("demand", whole(served) and 0 <= served <= min(p["replicas"] * upr, math.ceil(part.users)),
                    f"{where}: reports {served} users served; {p['replicas']} replicas of {upr} users "
                    f"serve at most {min(p['replicas'] * upr, math.ceil(part.users))} of {part.users}")
    elif part.kind == "batch":
        share = p.get("share_of_runs")
        v.check("plan", isinstance(share, (int, float)) and 0.0 < share <= 1.0 + 1e-9,
                f"{where}: share of runs {share} is not in (0, 1]")
        if isinstance(share, (int, float)) and p.get("runs_per_year") is not None:
            v.check("plan", close(p["runs_per_year"], share * part.runs_per_year, 1e-3,  # share: 4 places
                                  2e-3 + 5e-5 * part.runs_per_year),
                    f"{where}: {p['runs_per_year']} runs a year; a share of {share} of "
                    f"{part.runs_per_year:g} runs is {share * part.runs_per_year:.3f}")


def check_job_costs(plan: dict, fleet: dict, s: Scenario, cat: Catalog, v: Verification, ledger: Ledger,
                    parts: dict[str, list]) -> None:
    """Each job's cost is its accelerator-hour share of each offer's cost; unit costs follow."""
    usage = _cost_shares(fleet, s, cat, ledger)
    totals = {oid: sum(use.values()) for oid, use in usage.items()}
    jobs = {j.name: j for j in s.jobs}
    for pj in plan["jobs"]:
        job = jobs.get(pj["name"])
        if job is None:
            continue
        keys = [p.key for p in parts[job.name]]
        want = sum(fleet[oid]["cost_usd_per_year"] * use.get(k, 0.0) / totals[oid]
                   for oid, use in usage.items() if oid in fleet and totals[oid] > 0 for k in keys)
        got = pj["cost_usd_per_year"] or 0.0
        v.check("costs", close(got, want, REL, USD),
                f"job '{job.name}' costs ${got:,.2f}/yr; its share of the fleet's accelerator-hours costs "
                f"${want:,.2f}")
        _check_unit_cost(pj, job, parts[job.name], got, v)


def _cost_shares(fleet: dict, s: Scenario, cat: Catalog, ledger: Ledger) -> dict[str, dict[str, float]]:
    """Offer -> part -> accelerator-hours, the weights of each offer's cost: an offer rented by the
    hour that no pool shares weighs the systems each part rents (its replicas' systems rounded up,
    its N+1 spare, whole systems per batch run) x their hours; under N+1 the owned offers of one
    pool (colocation.spare_pool_of: one system type at the site, one spare among them) weigh as the
    pool's offers together; any other offer, the accelerator-hours each part uses."""
    out = {oid: dict(use) for oid, use in ledger.usage.items() if sum(use.values()) > 0}
    spare = 1 if s.policy.redundancy == "n+1" else 0
    for oid in fleet:
        o = cat.offers.get(oid)
        if o is None or owned(o) or any(isinstance(k, tuple) for k in ledger.rent_slots[oid]):
            continue  # (a pool's shared rentals: split by use)
        per = cat.systems[o.system].accelerators
        rented = {k: (math.ceil(a / per - TIGHT) + spare) * per * ledger.rent_hours[oid][k]
                  for k, a in ledger.rent_slots[oid].items() if a}
        for k, h in ledger.rent_batch[oid].items():
            rented[k] = rented.get(k, 0.0) + h
        if sum(rented.values()) > 0:
            out[oid] = rented
    if s.policy.redundancy != "n+1":
        return out
    pools: dict[tuple, list[str]] = {}
    for oid in fleet:
        o = cat.offers.get(oid)
        if o is not None and owned(o):
            pools.setdefault(spare_pool_of(o), []).append(oid)
    for oids in pools.values():
        pooled: dict[str, float] = {}
        for oid in oids:
            for k, h in out.get(oid, {}).items():
                pooled[k] = pooled.get(k, 0.0) + h
        for oid in oids:
            if pooled:
                out[oid] = pooled
    return out


def _check_unit_cost(pj: dict, job, parts: list, cost: float, v: Verification) -> None:
    unit, name = pj["unit_cost"], f"job '{job.name}'"

    def same(key: str, want: float, digits: int = 2) -> None:
        got = unit.get(key)
        v.check("costs", got is not None and close(got, want, REL, 0.6 * 10 ** -digits),
                f"{name}: {key} is {got if got is None else format(got, '.6g')}; its cost ${cost:,.2f}/yr gives {want:.{digits + 2}g}")

    if job.stage == "serve":
        placed = [p for p in pj["placements"] if p.get("users_served") is not None]
        served = sum(p["users_served"] for p in placed) + sum(a["users_served"] for a in pj.get("api") or [])
        if not served:
            v.check("costs", unit.get("usd_per_million_tokens") is None,
                    f"{name}: a price per million tokens with no user served")
            return
        # served demand: users served at the job's target speed, its hours and its active share
        tps = output_tokens_per_s_per_user(job)
        tokens = served * tps * SECONDS_PER_HOUR * job.hours_per_day * DAYS_PER_YEAR * job.active_fraction
        requests = tokens / job.output_tokens
        same("usd_per_million_tokens", cost / tokens * 1e6, 4)
        same("usd_per_million_output_tokens", cost / tokens * 1e6, 4)
        same("usd_per_million_input_tokens", cost / (requests * job.input_tokens) * 1e6, 4)
        same("usd_per_request", cost / requests, 6)
        if "usd_per_million_tokens_blended" in unit:
            same("usd_per_million_tokens_blended", cost / (requests * job.input_tokens + tokens) * 1e6, 4)
        v.check("costs", unit.get("headline") == ("input" if job.input_tokens >= 4 * job.output_tokens else "output"),
                f"{name}: headline unit '{unit.get('headline')}' for {job.input_tokens} input and "
                f"{job.output_tokens} output tokens per request")
        v.check("costs", close(unit.get("output_tokens_per_year") or 0.0, tokens, REL, 1.0),
                f"{name}: {unit.get('output_tokens_per_year')} output tokens a year; {served} users at "
                f"{tps:.2f} tok/s for {job.hours_per_day:g} h a day, {job.active_fraction:g} active, make {tokens:,.0f}")
        same("usd_per_user_per_year", cost / max(served, 1))
    elif job.stage in ("finetune", "pretrain"):
        runs = sum(p.runs_per_year for p in parts)  # (the plan's year's runs: a multi-year plan's final year)
        got = unit.get("usd_per_run")
        # (the job's cost is stated to the cent: half a cent over the runs is hidden by its rounding)
        v.check("costs", got is not None and runs > 0 and close(got, cost / runs, REL, 0.006 + 0.005 / runs),
                f"{name}: usd_per_run is {got}; ${cost:,.2f}/yr over {runs:g} runs gives "
                f"{cost / runs if runs else float('nan'):.2f}")
    elif job.stage == "rl":
        same("usd_per_day", cost / DAYS_PER_YEAR)
    else:  # (the plan's year's devices: a multi-year plan's final year)
        same("usd_per_device_per_year", cost / max(sum(p.units for p in parts), 1))


def check_utilisation(rows: list[dict], fleet: dict, cat: Catalog, v: Verification, ledger: Ledger | None,
                      where: str = "") -> None:
    """Owned offers' accelerator-hours and utilisation: re-derived from the placements (when known),
    at most the hours in a year, and the share of them stated."""
    for u in rows:
        f = fleet.get(u["offer"])
        o = cat.offers.get(u["offer"])
        name = f"{where}utilisation of '{u['offer']}'"
        site = f["systems"] - f.get("edge_units", 0) if f is not None else 0  # edge units are deployed
        if not v.check("plan", f is not None and o is not None and owned(o) and u["systems"] == site,
                       f"{name}: not an owned offer of the fleet, or {u['systems']} systems against the fleet's"):
            continue
        hours = HOURS_PER_YEAR * f["accelerators"] * site / f["systems"]
        used = u["accelerator_hours_used"]
        slack = 5e-5 + 0.5 / max(hours, 1.0) + 1e-9  # utilisation shown to 4 places, hours to whole hours
        v.check("plan", 0.0 <= used <= hours * (1 + 1e-6) + 1 and close(u["utilisation"], used / hours, 0.0, slack),
                f"{name}: {used:,.0f} accelerator-hours of {hours:,.0f} reported as {u['utilisation']}")
        if ledger is not None:
            v.check("plan", close(used, ledger.slot_hours[o.id], REL, 1.0),
                    f"{name}: {used:,.0f} accelerator-hours reported, the placements use "
                    f"{ledger.slot_hours[o.id]:,.0f}")
