"""A solved multi-year model read out into the plan's JSON contract (planning is app/planning.py).

The single-period keys keep their meaning where they can, for the final year of the horizon:
  total_cost_usd_per_year      the average yearly cost in the accounting view (each purchase's
                               capital per year held: its price less the discounted resale annuitised
                               over the years held, as a one-year plan's; plus running costs), over
                               the horizon
  total_cost_usd_over_horizon  the cash paid over the horizon (= cash_total_usd, the sum of the years'
                               cost_usd; the accounting view's sum is annuitised_total_usd)
  fleet, jobs, utilisation     the final year's fleet (what you hold at the end), its placements and
                               unit costs (accounting view of that year)
Added: npv_usd (the objective: discounted cash, resale credited), cash_total_usd (capex when paid +
opex, undiscounted) and "years": one entry per year with its purchases, fleet, cash and budget.
"""

from __future__ import annotations

from collections import defaultdict

from planner.data.catalog import is_held
from planner.data.constants import HOURS_PER_YEAR
from planner.data.scenario import Scenario
from planner.data.years import budget_basis, budget_key, year_caps
from planner.milp.model import OPEX
from planner.milp.model import FleetModel as YearModel
from planner.milp.pooling import pool_rows
from planner.milp.readout import (
    _int,
    _unit_cost,
    _val,
    cost_by_offer,
    placements_of,
    r2,
    trimmed,
)
from planner.milp.readout_api import api_fleet, api_rows
from planner.milp.readout_use import cost_shares, held_systems, site_hours, usage_of
from planner.milp.solve import SolveResult
from planner.physics import costs

HOURS = HOURS_PER_YEAR


# --- reading the solution ------------------------------------------------------------------------

def _sum(res, terms) -> float:
    return sum(c * _val(res, v) for c, v, _ in terms)


def read_multiyear(s: Scenario, ym: YearModel, res: SolveResult) -> dict:
    res = trimmed(ym, res)
    years = [_year(s, ym, res, t) for t in ym.years]
    last = ym.years[-1]
    offer_cost = cost_by_offer(ym, res, last)
    usage = usage_of(ym, res, last)
    jobs = []
    for job in s.jobs:
        keys = sorted(dk for dk, d in ym.options.demands.items() if d.job == job.name)
        placements = [p for dk in keys for p in placements_of(ym, res, dk, last)]
        cost = sum(offer_cost[oid] * use.get(dk, 0.0) / total for oid, use in cost_shares(ym, res.values, usage, last).items()
                   for dk in keys if (total := sum(use.values())) > 0)
        api = [a for dk in keys for a in api_rows(ym, res.values, dk, last)]
        jobs.append({"name": job.name, "stage": job.stage, "model": job.model, "priority": job.priority,
                     "cost_usd_per_year": r2(cost), "unit_cost": _unit_cost(job, cost, placements, ym, res, keys, api, last),
                     "placements": placements, **({"api": api} if api else {}),
                     "unserved": {dk: u for dk, u in years[-1]["unserved"].items() if dk in keys}})
    accounting = sum(y["annuitised_cost_usd"] for y in years)
    cash = sum(y["cost_usd"] for y in years)
    return {
        "scenario": s.name, "status": res.status, "mode": s.budget.mode, "horizon_years": s.horizon_years,
        "total_cost_usd_per_year": r2(accounting / len(years)),
        "total_cost_usd_over_horizon": r2(cash), "annuitised_total_usd": r2(accounting),
        "npv_usd": r2(_npv(ym, res)), "cash_total_usd": r2(cash), **budget_key(s),
        **({"end_of_horizon": "keep"} if s.kept else {}),
        "committed_after_horizon_usd": r2(_committed_after(ym, res, last)),
        "salvage_usd": r2(_sum(res, ym.resale.get(last, []))),
        "discount_rate": s.policy.discount_rate,
        "demand_met": not any(y["unserved"] for y in years),
        "fleet": _fleet(ym, res, last, offer_cost),
        "jobs": jobs,
        **({"pools": pool_rows(ym, res.values, last)} if ym.yp else {}),
        "utilisation": years[-1]["utilisation"],
        "years": years,
        "views": {"cash": "capex in the year it is paid plus opex; budgets cap this view",
                  "accounting": "purchases annuitised at policy.discount_rate over the years held, less their discounted "
                                "resale (as a one-year plan's capital), plus opex",
                  "npv": "cash discounted to year 1, resale of systems leaving the fleet credited; minimised",
                  "final_year": "fleet, jobs and utilisation describe the final year of the horizon"},
        "solver": {"name": res.solver, "seconds": r2(res.seconds, 3), "gap": r2(res.gap, 6),
                   "variables": len(ym.prob.variables()), "constraints": len(ym.rows)},
    }


def _prepaid_keys(ym: YearModel, oid: str, t: int, n: int) -> dict:
    """A reservation paid up front, started in year t: what it paid then for its whole term, and of
    that the years past the horizon (paid in the cash, used after the plan)."""
    o = ym.offer(oid)
    if not costs.prepaid(o):
        return {}
    term = costs.RESERVED_TERM_YEARS[o.acquisition]
    year = _unit_price(ym, oid, t) * n
    return {"paid_upfront_usd": r2(year * term), "paid_past_horizon_usd": r2(year * max(0, t + term - 1 - ym.last))}


def _committed_after(ym: YearModel, res, last: int) -> float:
    """Reservation payments the plan commits to after its last year (terms running past the
    horizon; the NPV counts them discounted, the cash view ends with the horizon), undiscounted; a
    term paid up front owes nothing after (its year's cash held it all)."""
    total = 0.0
    for (oid, t), v in ym.k.items():
        o = ym.offer(oid)
        if costs.prepaid(o):
            continue
        after = t + costs.RESERVED_TERM_YEARS[o.acquisition] - 1 - last
        if after > 0:
            total += _val(res, v) * o.price_usd_per_hour * ym.factor(oid, t) * HOURS * after
    return total


def _npv(ym: YearModel, res) -> float:
    """The objective's NPV expression (model.npv_expr) at the solution."""
    return res.value_of(ym.npv_expr())


def _owned(ym: YearModel, oid: str) -> bool:
    return any(o == oid for (o, _) in ym.held_terms)


def _bought(ym: YearModel, res, t: int) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for store in (ym.p, ym.k):
        for (oid, tt), v in store.items():
            if tt == t:
                out[oid] += _int(res, v)
    for (dk, i, oid, tt), v in ym.e.items():
        if tt == t:
            out[oid] += _int(res, v)
    return out


def _edge_units(ym: YearModel, res, oid: str, t: int) -> int:
    """Edge units of offer oid in use in year t (deployed with the devices, not at the site)."""
    return sum(_int(res, v) for (_, _, o, tau), v in ym.e.items() if o == oid and ym.active(oid, tau, t))


def _fleet(ym: YearModel, res, t: int, offer_cost: dict[str, float]) -> list[dict]:
    held, bought = held_systems(ym, res, t), _bought(ym, res, t)
    out = []
    for oid in sorted(held, key=lambda o: (-offer_cost.get(o, 0.0), o)):
        if held[oid] <= 0:
            continue
        o, system = ym.offer(oid), ym.system_of(oid)
        paid = sum(_unit_price(ym, oid, tau) * _int(res, v) for (o2, tau), v in ym.p.items()
                   if o2 == oid and ym.active(oid, tau, t))
        paid += sum(_unit_price(ym, oid, tau) * _int(res, v) for (_, _, o2, tau), v in ym.e.items()
                    if o2 == oid and ym.active(oid, tau, t))  # edge units of the offer are bought too
        edge = _edge_units(ym, res, oid, t)
        out.append({"system": system.id, "accelerator": system.accelerator, "acquisition": o.acquisition,
                    "provider": o.provider, "region": o.region, "tier": o.tier, "offer": oid,
                    **({"owned": True} if is_held(o) else {}), "systems": held[oid],
                    "accelerators": held[oid] * system.accelerators, "new_this_year": bought.get(oid, 0),
                    **({"edge_units": edge} if edge else {}),
                    "cost_usd_per_year": r2(offer_cost.get(oid, 0.0)),
                    "purchase_usd": r2(paid) if o.acquisition == "buy" else None,
                    "power_kw": r2(system.power_kw * held[oid]),
                    "price_source": o.source, "price_as_of": o.as_of.isoformat()})
    api = [{**f, "new_this_year": 0} for f in api_fleet(ym, res.values, t)]
    return sorted(out + api, key=lambda f: (-f["cost_usd_per_year"], f["offer"]))


def _unserved(s: Scenario, ym: YearModel, res, t: int) -> dict:
    """Unserved demand of year t: share, users and tokens/s (serving), runs (batch), units (edge)."""
    jobs = {j.name: j for j in s.jobs}
    out = {}
    for (dk, tt), v in sorted(ym.unserved.items()):
        share = _val(res, v)
        if tt != t or share <= 1e-6:
            continue
        d, need = ym.options.demands[dk], ym.demand_at(dk, t)
        entry = {"share": r2(share, 4)}
        if d.kind == "serve":
            job = jobs[d.job]
            per_user = getattr(job, "min_tokens_per_s_per_user", None) or job.min_tokens_per_s_per_rollout
            entry.update(users=r2(share * need, 1), tokens_per_s=r2(share * need * per_user, 1))
        elif d.kind == "batch":
            entry["runs"] = r2(share * need, 3)
        else:
            entry["units"] = r2(share * need, 1)
        out[dk] = entry
    return out


def _year(s: Scenario, ym: YearModel, res, t: int) -> dict:
    capex = _sum(res, ym.cash.get((t, "capex"), []))
    opex = sum(_sum(res, ym.cash.get((t, c), [])) for c in OPEX)
    caps = {k: v[0] for k, v in year_caps(s, t).items()}
    offer_cost = cost_by_offer(ym, res, t)
    fleet = _fleet(ym, res, t, offer_cost)
    purchases = [{"offer": f["offer"], "system": f["system"], "accelerator": f["accelerator"],
                  "acquisition": f["acquisition"], "systems": f["new_this_year"],
                  "unit_price_usd": r2(_unit_price(ym, f["offer"], t)),
                  "total_usd": r2(_unit_price(ym, f["offer"], t) * f["new_this_year"]),
                  **_prepaid_keys(ym, f["offer"], t, f["new_this_year"])}
                 for f in fleet if f["new_this_year"] and f["acquisition"] in ("buy", "reserved-1y", "reserved-3y")]
    usage = usage_of(ym, res, t)
    util = []
    for f in fleet:
        site = f["systems"] - f.get("edge_units", 0)  # edge units are deployed, not at the site
        if _owned(ym, f["offer"]) and site > 0:
            used = site_hours(ym, usage.get(f["offer"], {}))
            util.append({"offer": f["offer"], "systems": site, "accelerator_hours_used": r2(used, 0),
                         "utilisation": r2(used / (HOURS * site * ym.system_of(f["offer"]).accelerators), 4)})
    budget, annuitised = caps.get("usd"), sum(offer_cost.values())
    spent = annuitised if budget_basis(s) == "annualised" else capex + opex
    return {"year": t, "capex_usd": r2(capex), "opex_usd": r2(opex), "cost_usd": r2(capex + opex),
            "annuitised_cost_usd": r2(annuitised), "resale_usd": r2(_sum(res, ym.resale.get(t, []))),
            "budget_usd": budget, "budget_capex_usd": caps.get("capex"), "budget_opex_usd": caps.get("opex"),
            "budget_used": r2(spent / budget, 4) if budget else None,
            **({"complexity_usd": r2(_sum(res, ym.cash.get((t, "complexity"), [])))} if ym.z else {}),
            "demand": {dk: r2(ym.demand_at(dk, t), 3) for dk in sorted(ym.options.demands)},
            "fleet": fleet, "purchases": purchases, "unserved": _unserved(s, ym, res, t), "utilisation": util}


def _unit_price(ym: YearModel, oid: str, t: int) -> float:
    o = ym.offer(oid)
    if o.acquisition == "buy":
        return o.purchase_usd * ym.factor(oid, t)
    return o.price_usd_per_hour * ym.factor(oid, t) * HOURS
