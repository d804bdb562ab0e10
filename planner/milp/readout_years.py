"""A solved multi-year model read out into the plan's JSON contract (planning is app/planning.py).

The single-period keys keep their meaning where they can, for the final year of the horizon:
  total_cost_usd_per_year      the average yearly cost in the accounting view (purchases annuitised
                               over their useful life, plus running costs), over the horizon
  total_cost_usd_over_horizon  the cash paid over the horizon (= cash_total_usd, the sum of the years'
                               cost_usd; the accounting view's sum is annuitised_total_usd)
  fleet, jobs, utilisation     the final year's fleet (what you hold at the end), its placements and
                               unit costs (accounting view of that year)
Added: npv_usd (the objective: discounted cash, resale credited), cash_total_usd (capex when paid +
opex, undiscounted) and "years": one entry per year with its purchases, fleet, cash and budget.
"""

from __future__ import annotations

from collections import defaultdict

from planner.data.constants import HOURS_PER_YEAR
from planner.data.jobs import hours_per_year
from planner.data.scenario import Scenario
from planner.data.years import year_caps
from planner.milp.readout import (
    _placement,
    _unit_cost,
    batch_placement,
    r2,
    serve_placement,
)
from planner.milp.solve import SolveResult
from planner.milp.years import OPEX, YearModel, active

HOURS = HOURS_PER_YEAR


# --- reading the solution ------------------------------------------------------------------------

def _val(res: SolveResult, var) -> float:
    return res.values.get(var.name, 0.0)


def _int(res: SolveResult, var) -> int:
    return int(round(_val(res, var)))


def _sum(res, terms) -> float:
    return sum(c * _val(res, v) for c, v, _ in terms)


def read_multiyear(s: Scenario, ym: YearModel, res: SolveResult) -> dict:
    years = [_year(s, ym, res, t) for t in ym.years]
    last = ym.years[-1]
    offer_cost = _offer_cost(ym, res, last)
    usage = _usage(ym, res, last)
    jobs = []
    for job in s.jobs:
        keys = sorted(dk for dk, d in ym.options.demands.items() if d.job == job.name)
        placements = [p for dk in keys for p in _placements(ym, res, dk, last)]
        cost = sum(offer_cost[oid] * use.get(dk, 0.0) / total for oid, use in usage.items()
                   for dk in keys if (total := sum(use.values())) > 0)
        jobs.append({"name": job.name, "stage": job.stage, "model": job.model, "priority": job.priority,
                     "cost_usd_per_year": r2(cost), "unit_cost": _unit_cost(job, cost, placements, ym, res, keys),
                     "placements": placements,
                     "unserved": {dk: u for dk, u in years[-1]["unserved"].items() if dk in keys}})
    accounting = sum(y["annuitised_cost_usd"] for y in years)
    cash = sum(y["cost_usd"] for y in years)
    return {
        "scenario": s.name, "status": res.status, "mode": s.budget.mode, "horizon_years": s.horizon_years,
        "total_cost_usd_per_year": r2(accounting / len(years)),
        "total_cost_usd_over_horizon": r2(cash), "annuitised_total_usd": r2(accounting),
        "npv_usd": r2(_npv(ym, res)), "cash_total_usd": r2(cash),
        "salvage_usd": r2(_sum(res, ym.resale.get(last, []))),
        "discount_rate": s.policy.discount_rate,
        "fleet": _fleet(ym, res, last, offer_cost),
        "jobs": jobs,
        "utilisation": years[-1]["utilisation"],
        "years": years,
        "views": {"cash": "capex in the year it is paid plus opex; budgets cap this view",
                  "accounting": "purchases annuitised over their useful life at policy.discount_rate plus opex",
                  "npv": "cash discounted to year 1, resale of systems leaving the fleet credited; minimised",
                  "final_year": "fleet, jobs and utilisation describe the final year of the horizon"},
        "solver": {"name": res.solver, "seconds": r2(res.seconds, 3), "gap": r2(res.gap, 6),
                   "variables": len(ym.prob.variables()), "constraints": len(ym.rows)},
    }


def _npv(ym: YearModel, res) -> float:
    total = sum(ym.discount(t) * sum(_sum(res, ym.cash.get((t, c), [])) for c in ("capex",) + OPEX)
                for t in ym.years)
    total -= sum(ym.discount(t + 1) * _sum(res, ym.resale.get(t, [])) for t in ym.years)
    return total + _sum(res, ym.beyond)


def _offer_cost(ym: YearModel, res, t: int) -> dict[str, float]:
    """Accounting-view cost of each offer in year t (annuitised purchases + running costs)."""
    out: dict[str, float] = defaultdict(float)
    for c, v, oid in ym.capital.get(t, []) + [term for comp in OPEX for term in ym.cash.get((t, comp), [])]:
        out[oid] += c * _val(res, v)
    return out


def _held(ym: YearModel, res, t: int) -> dict[str, int]:
    """Systems (or edge units) of each offer in use in year t."""
    held: dict[str, int] = defaultdict(int)
    for (oid, tt), vs in ym.held_terms.items():
        if tt == t:
            held[oid] += sum(_int(res, v) for v in vs)
    for (dk, i, oid, tau), v in ym.e.items():
        if active(ym, oid, tau, t):
            held[oid] += _int(res, v)
    for (dk, oid, tt), v in ym.r.items():
        if tt == t:
            held[oid] += _int(res, v)
    for (dk, i, oid, tt), v in ym.x.items():
        if tt == t and not _owned(ym, oid) and _val(res, v) > 1e-6:
            per = ym.system_of(oid).accelerators
            held[oid] = max(held[oid], max(1, -(-ym.options.batch[dk][i].accelerators // per)))
    return held


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


def _fleet(ym: YearModel, res, t: int, offer_cost: dict[str, float]) -> list[dict]:
    held, bought = _held(ym, res, t), _bought(ym, res, t)
    out = []
    for oid in sorted(held, key=lambda o: (-offer_cost.get(o, 0.0), o)):
        if held[oid] <= 0:
            continue
        o, system = ym.offer(oid), ym.system_of(oid)
        paid = sum(_unit_price(ym, oid, tau) * _int(res, v) for (o2, tau), v in ym.p.items()
                   if o2 == oid and active(ym, oid, tau, t))
        out.append({"system": system.id, "accelerator": system.accelerator, "acquisition": o.acquisition,
                    "provider": o.provider, "region": o.region, "tier": o.tier, "offer": oid, "systems": held[oid],
                    "accelerators": held[oid] * system.accelerators, "new_this_year": bought.get(oid, 0),
                    "cost_usd_per_year": r2(offer_cost.get(oid, 0.0)),
                    "purchase_usd": r2(paid) if o.acquisition == "buy" else None,
                    "power_kw": r2(system.power_kw * held[oid]),
                    "price_source": o.source, "price_as_of": o.as_of.isoformat()})
    return out


def _usage(ym: YearModel, res, t: int) -> dict[str, dict[str, float]]:
    """offer -> demand -> accelerator-hours used in year t."""
    use: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for (dk, i, oid, tt), v in ym.y.items():
        if tt == t:
            d = ym.options.demands[dk]
            use[oid][dk] += _val(res, v) * ym.options.serve[dk][i].accelerator_slots * hours_per_year(d)
    for (dk, i, oid, tt), v in ym.x.items():
        if tt == t:
            opt = ym.options.batch[dk][i]
            use[oid][dk] += _val(res, v) * opt.accelerators * opt.hours_per_run * ym.demand_at(dk, t)
    for (dk, i, oid, tau), v in ym.e.items():
        if active(ym, oid, tau, t):
            use[oid][dk] += _val(res, v)
    return use


def _placements(ym: YearModel, res, dk: str, t: int) -> list[dict]:
    d, out = ym.options.demands[dk], []
    if d.kind == "serve":
        need = ym.demand_at(dk, t)
        for (k, i, oid, tt), v in sorted(ym.y.items()):
            reps = _int(res, v)
            if k == dk and tt == t and reps > 0:
                out.append(serve_placement(ym, oid, ym.options.serve[dk][i], dk, reps, need))
    elif d.kind == "batch":
        for (k, i, oid, tt), v in sorted(ym.x.items()):
            share = _val(res, v)
            if k == dk and tt == t and share > 1e-6:
                out.append(batch_placement(ym, oid, ym.options.batch[dk][i], dk, share, ym.demand_at(dk, t)))
    else:
        held = defaultdict(int)
        for (k, i, oid, tt), v in sorted(ym.e.items()):
            if k == dk and active(ym, oid, tt, t):
                held[(i, oid)] += _int(res, v)
        for (i, oid), units in sorted(held.items()):
            opt = ym.options.edge[dk][i]
            if units > 0:
                out.append(_placement(ym, oid, opt, dk, replicas=units, users_per_replica=1, tp=1, pp=1,
                                      per_replica=1, tps=opt.tokens_per_s, ttft=None, hours=None, mem=opt.memory_gb,
                                      cap=opt.memory_gb_capacity, binding=opt.binding, regime=opt.binding,
                                      extra={"power_w": r2(opt.power_w, 0)}))
    return out


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
    offer_cost = _offer_cost(ym, res, t)
    fleet = _fleet(ym, res, t, offer_cost)
    purchases = [{"offer": f["offer"], "system": f["system"], "accelerator": f["accelerator"],
                  "acquisition": f["acquisition"], "systems": f["new_this_year"],
                  "unit_price_usd": r2(_unit_price(ym, f["offer"], t)),
                  "total_usd": r2(_unit_price(ym, f["offer"], t) * f["new_this_year"])}
                 for f in fleet if f["new_this_year"] and f["acquisition"] in ("buy", "reserved-1y", "reserved-3y")]
    usage = _usage(ym, res, t)
    util = []
    for f in fleet:
        if _owned(ym, f["offer"]):
            used = sum(usage.get(f["offer"], {}).values())
            util.append({"offer": f["offer"], "systems": f["systems"], "accelerator_hours_used": r2(used, 0),
                         "utilisation": r2(used / (HOURS * f["accelerators"]), 4)})
    budget = caps.get("usd")
    return {"year": t, "capex_usd": r2(capex), "opex_usd": r2(opex), "cost_usd": r2(capex + opex),
            "annuitised_cost_usd": r2(sum(offer_cost.values())), "resale_usd": r2(_sum(res, ym.resale.get(t, []))),
            "budget_usd": budget, "budget_capex_usd": caps.get("capex"), "budget_opex_usd": caps.get("opex"),
            "budget_used": r2((capex + opex) / budget, 4) if budget else None,
            "demand": {dk: r2(ym.demand_at(dk, t), 3) for dk in sorted(ym.options.demands)},
            "fleet": fleet, "purchases": purchases, "unserved": _unserved(s, ym, res, t), "utilisation": util}


def _unit_price(ym: YearModel, oid: str, t: int) -> float:
    o = ym.offer(oid)
    if o.acquisition == "buy":
        return o.purchase_usd * ym.factor(oid, t)
    return o.price_usd_per_hour * ym.factor(oid, t) * HOURS
