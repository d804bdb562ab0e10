"""A solved single-period fleet model read out into the plan's JSON contract (planner.data.plan):
fleet, jobs with placements and unit costs, utilisation, solver. Planning itself is app/planning.py."""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict

from planner.data.catalog import is_held
from planner.data.constants import DAYS_PER_YEAR, HOURS_PER_YEAR
from planner.data.jobs import demands_of_job
from planner.data.scenario import Scenario
from planner.data.years import budget_key
from planner.milp import complexity, pooling, trim
from planner.milp.crossdisagg import half_row
from planner.milp.model import PAID_AHEAD
from planner.milp import fleet as model
from planner.milp.readout_api import api_fleet, api_rows
from planner.milp.readout_use import cost_shares, held_systems, site_hours, usage_of
from planner.milp.solve import SolveResult
from planner.options.api import job_tokens
from planner.physics import costs

HOURS = HOURS_PER_YEAR


def r2(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(float(x), nd)


def trimmed(fm: model.FleetModel, res: SolveResult) -> SolveResult:
    """The solution with no pool replica that nothing loads (pooling.trim_pool_replicas), no idle
    owned system or spare (trim.trim_owned), no idle rented system (model.trim_rentals,
    pooling.trim_pool_rentals) and no system type priced that the fleet does not hold
    (complexity.trim_types), its objective lowered by what that saves; idempotent."""
    if not res.ok:
        return res
    values, saved = pooling.trim_pool_replicas(fm, res.values)
    values, owned_saved = trim.trim_owned(fm, values)
    saved += owned_saved
    values, rented_saved = model.trim_rentals(fm, values)
    saved += rented_saved
    values, pooled_saved = pooling.trim_pool_rentals(fm, values)
    saved += pooled_saved
    if fm.z:
        held = {t: held_systems(fm, dataclasses.replace(res, values=values), t) for t in fm.years}
        values, types_saved = complexity.trim_types(fm, values, held)
        saved += types_saved
    if not saved:
        return res
    objective = None if res.objective is None else res.objective - saved
    return dataclasses.replace(res, values=values, objective=objective)


# --- reading the solution ------------------------------------------------------------------------

def _val(res: SolveResult, var) -> float:
    return res.values.get(var.name, 0.0)


def _int(res: SolveResult, var) -> int:
    return int(round(_val(res, var)))


def cost_by_offer(fm: model.FleetModel, res: SolveResult, year: int | None = None) -> dict[str, float]:
    """Cost of `year` (default: the last) attributed to each offer (its fixed costs, busy power,
    rentals, API tokens, its share of its system type's complexity cost), in the accounting view: a
    multi-year plan's purchases annuitised, and a reservation whose term runs past the horizon
    carrying all its payments, their present value annuitised over the years it is held
    (costs.commitment_factor, as a one-year plan reads it)."""
    t = year or fm.last
    out: dict[str, float] = defaultdict(float)
    terms = [term for (tt, comp), ts in fm.cash.items() if tt == t and comp not in (*PAID_AHEAD, complexity.COMPONENT)
             for term in ts]
    for coef, v, oid in terms + (fm.capital.get(t, []) if fm.npv else []):
        out[oid] += coef * _val(res, v)
    if fm.npv:  # a reservation whose term runs past the horizon: all its payments spread over the years held
        for coef, v, oid in fm.carried(t):
            out[oid] += coef * _val(res, v)
    if fm.z:
        for oid, usd in complexity.spread(fm, res.values, t, held_systems(fm, res, t)).items():
            out[oid] += usd
    return out


def read_plan(s: Scenario, fm: model.FleetModel, res: SolveResult) -> dict:
    res = trimmed(fm, res)
    opts = fm.options
    offer_cost = cost_by_offer(fm, res)
    fleet = _fleet(fm, res, offer_cost)
    usage = usage_of(fm, res, fm.first)  # offer -> demand -> accelerator-hours per year
    shares = cost_shares(fm, res.values, usage, fm.first)
    jobs = []
    for job in s.jobs:
        keys = [dk for dk, d in opts.demands.items() if d.job == job.name]
        placements = [p for dk in keys for p in placements_of(fm, res, dk, fm.first)]
        cost = sum(_job_share(fm, res, oid, dk, shares, offer_cost) for dk in keys for oid in offer_cost)
        api = [a for dk in keys for a in api_rows(fm, res.values, dk)]
        jobs.append({"name": job.name, "stage": job.stage, "model": job.model,
                     "cost_usd_per_year": r2(cost),
                     "unit_cost": _unit_cost(job, cost, placements, fm, res, keys, api),
                     "placements": placements,
                     **({"api": api} if api else {}),
                     "unserved": _unserved(fm, res, keys)})
    total = sum(offer_cost.values())
    return {
        "scenario": s.name,
        "status": res.status,
        "total_cost_usd_per_year": r2(total),
        "horizon_years": s.horizon_years,
        "total_cost_usd_over_horizon": r2(total * s.horizon_years),
        "cash_first_year_usd": r2(res.value_of(fm.year_cost(fm.first, "cash"))),
        **budget_key(s), **({"end_of_horizon": "keep"} if s.kept else {}),
        "demand_met": not any(j["unserved"] for j in jobs),
        "cost_breakdown_usd_per_year": {k: r2(sum(c * _val(res, v) for c, v in terms))
                                        for k, terms in sorted(fm.cost_terms.items())},
        "fleet": fleet,
        "jobs": jobs,
        **({"pools": pooling.pool_rows(fm, res.values)} if fm.yp else {}),
        "utilisation": _utilisation(fm, res, usage),
        "solver": {"name": res.solver, "seconds": r2(res.seconds, 3), "gap": r2(res.gap, 6),
                   "variables": len(fm.prob.variables()), "constraints": len(fm.rows),
                   "pairs_pruned": fm.pairs_pruned},
    }


def _fleet(fm, res, offer_cost) -> list[dict]:
    held: dict[str, int] = defaultdict(int)
    held = held_systems(fm, res, fm.last)
    out = []
    for oid in sorted(held, key=lambda o: (-offer_cost.get(o, 0), o)):
        if held[oid] <= 0:
            continue
        o = fm.offer(oid)
        system = fm.system_of(oid)
        edge = sum(_int(res, v) for (_, _, o2, _), v in fm.e.items() if o2 == oid)
        out.append({"system": system.id, "accelerator": system.accelerator, "acquisition": o.acquisition,
                    "provider": o.provider, "region": o.region, "tier": o.tier, "offer": oid,
                    **({"owned": True} if is_held(o) else {}), "systems": held[oid],
                    "accelerators": held[oid] * system.accelerators,
                    **({"edge_units": edge} if 0 < edge < held[oid] else {}),  # beside systems at the site
                    "cost_usd_per_year": r2(offer_cost.get(oid, 0.0)),
                    "purchase_usd": r2(o.purchase_usd * held[oid]) if o.acquisition == "buy" else None,
                    "residual_value_usd": (r2(costs.residual_value_usd(o, fm.scenario.horizon_years, fm.scenario.kept) * held[oid])
                                           if o.acquisition == "buy" else None),
                    **({"sold_after_years": costs.sale_age_years(o, fm.scenario.horizon_years)}
                       if o.acquisition == "buy" and not is_held(o) else {}),
                    **({"term_years": costs.RESERVED_TERM_YEARS[o.acquisition],
                        "contract_usd_per_year": r2(o.price_usd_per_hour * HOURS_PER_YEAR * held[oid])}
                       if o.acquisition in costs.RESERVED_TERM_YEARS else {}),
                    **({"paid_upfront_usd": r2(o.price_usd_per_hour * HOURS_PER_YEAR * held[oid]
                                               * costs.RESERVED_TERM_YEARS[o.acquisition])} if costs.prepaid(o) else {}),
                    "power_kw": r2(system.power_kw * held[oid]),
                    "price_source": o.source, "price_as_of": o.as_of.isoformat()})
    return sorted(out + api_fleet(fm, res.values), key=lambda f: (-f["cost_usd_per_year"], f["offer"]))


def _job_share(fm, res, oid, dk, usage, offer_cost) -> float:
    """An offer's cost split between demands by the accelerator-hours each uses."""
    used = usage.get(oid, {})
    total = sum(used.values())
    if total <= 0:
        return 0.0
    return offer_cost[oid] * used.get(dk, 0.0) / total


def _of_demand(fm, store: str, dk: str) -> list[tuple]:
    """Store `store`'s (key, variable) items of demand dk in key order: sorted(store.items()) read
    per demand from an index built once per model (a 200-job full model has 40,000 replica
    variables; sorting them for each demand took 17 s)."""
    items = getattr(fm, store)
    index = fm.__dict__.setdefault("_readout_index", {})
    hit = index.get(store)
    if hit is None or hit[0] != len(items):
        by: dict[str, list] = {}
        for key, v in sorted(items.items()):
            by.setdefault(key[0], []).append((key, v))
        hit = index[store] = (len(items), by)
    return hit[1].get(dk, [])


def placements_of(fm, res, dk: str, t: int) -> list[dict]:
    """Demand dk's placements in year t."""
    d, need = fm.options.demands[dk], fm.demand_at(dk, t)
    out = []
    if d.kind == "serve":
        for (k, i, oid, tt), v in _of_demand(fm, "y", dk):
            if tt != t:
                continue
            if d.pool:
                out += _pooled_placement(fm, res, dk, i, oid, t, v)
            elif (reps := _int(res, v)) > 0:
                out.append(serve_placement(fm, oid, fm.options.serve[dk][i], dk, reps, need))
        if not d.pool:
            share_users(out, need * (1 - _share_elsewhere(fm, res, dk, t)))
    elif d.kind == "batch":
        for (k, i, oid, tt), v in _of_demand(fm, "x", dk):
            share = _val(res, v)
            if tt == t and share > 1e-6:
                out.append(batch_placement(fm, oid, fm.options.batch[dk][i], dk, share, need))
    else:
        held: dict[tuple, int] = defaultdict(int)
        for (k, i, oid, tau), v in _of_demand(fm, "e", dk):
            if fm.active(oid, tau, t):
                held[(i, oid)] += _int(res, v)
        for (i, oid), units in sorted(held.items()):
            opt = fm.options.edge[dk][i]
            if units > 0:
                out.append(_placement(fm, oid, opt, dk, replicas=units, users_per_replica=1, tp=1, pp=1,
                                      per_replica=1, tps=opt.tokens_per_s, ttft=None, hours=None,
                                      mem=opt.memory_gb, cap=opt.memory_gb_capacity, binding=opt.binding,
                                      regime=opt.binding, extra={"power_w": r2(opt.power_w, 0)}))
    return out


def serve_placement(fm, oid: str, opt, dk: str, replicas: int, users_needed: int) -> dict:
    """One serving placement of the JSON contract (shared by the one-year and multi-year readers)."""
    return _placement(fm, oid, opt, dk, replicas=replicas, users_per_replica=opt.users_per_replica,
                      tp=opt.tp, pp=opt.pp, per_replica=opt.accelerators_per_replica,
                      tps=opt.tokens_per_s_per_user, ttft=opt.ttft_s, hours=None,
                      mem=opt.memory_gb_per_accelerator, cap=opt.memory_gb_capacity,
                      binding=opt.binding, regime=opt.regime,
                      extra={"weights_gb": r2(opt.weights_gb), "kv_gb": r2(opt.kv_gb), "basis": opt.basis,
                             **({"basis_note": opt.basis_note} if opt.basis_note else {}),
                             **({"disaggregated": half_row(opt.half)} if opt.half is not None else {}),
                             "users_served": min(replicas * opt.users_per_replica, users_needed)})


def _share_elsewhere(fm, res, dk: str, t: int) -> float:
    """The share of serving demand dk in year t its own replicas do not carry: on hosted APIs, and
    left unserved (max-coverage)."""
    shares = [_val(res, v) for (_, _, tt), v in _of_demand(fm, "api", dk) if tt == t]
    if (dk, t) in fm.unserved:
        shares.append(_val(res, fm.unserved[(dk, t)]))
    return min(1.0, sum(shares))


def share_users(placements: list[dict], users: float) -> None:
    """A demand's users over its own replicas' placements (in place): each at most what its replicas
    hold, together the users left to them (its demand less its API share and what is left unserved;
    whole users), in proportion to what each holds, largest remainders rounding up: a load balancer
    spreads a job's users over its replicas alike. Whole replicas hold more than the demand: 240 users
    on 2 replicas of 61 and 1 of 171 (293 held) are 100 and 140 served, not 122 and 171, and the unit
    costs count 240 users."""
    held = [p["replicas"] * p["users_per_replica"] for p in placements]
    total = sum(held)
    target = min(total, math.ceil(users - 1e-9))
    if not placements or total <= target:
        return
    raw = [h * target / total for h in held]
    served = [math.floor(r) for r in raw]
    for k in sorted(range(len(raw)), key=lambda k: (served[k] - raw[k], k))[:target - sum(served)]:
        served[k] += 1
    for p, n in zip(placements, served):
        p["users_served"] = n


def _pooled_placement(fm, res, dk: str, i: int, oid: str, t: int, v) -> list[dict]:
    """A pooled demand on one configuration: the pool's replicas there, the share of them its load
    takes (replica_load) and the users that load serves."""
    load = _val(res, v)
    opt, d = fm.options.serve[dk][i], fm.options.demands[dk]
    need = fm.demand_at(dk, t)
    yv = fm.yp.get(pooling.pool_key(fm, dk, i, oid, t))
    if load <= 1e-6 or yv is None or _int(res, yv) <= 0:
        return []
    p = serve_placement(fm, oid, opt, dk, _int(res, yv), need)
    shown = r2(load, 4)  # users served from the load as the plan shows it (the verifier's reading)
    p.update(pool=d.pool, replica_load=shown, users_served=min(need, round(shown * opt.users_per_replica)))
    return [p]


def batch_placement(fm, oid: str, opt, dk: str, share: float, runs_per_year: float) -> dict:
    """One fine-tuning/training placement: its share of the runs, hours per run (spot restarts in)."""
    return _placement(fm, oid, opt, dk, replicas=1, users_per_replica=None, tp=1, pp=1,
                      per_replica=opt.accelerators, tps=None, ttft=None,
                      hours=costs.run_hours(opt.hours_per_run, fm.offer(oid).acquisition),
                      mem=opt.memory_gb_per_accelerator, cap=opt.memory_gb_capacity,
                      binding=opt.binding, regime="compute" if opt.binding != "memory" else "capacity",
                      extra={"share_of_runs": r2(share, 4) or float(f"{share:.4g}"),  # (a sliver: 4 digits)
                             "runs_per_year": r2(share * runs_per_year, 3)})


def _placement(fm, oid, opt, dk, *, replicas, users_per_replica, tp, pp, per_replica, tps, ttft, hours,
               mem, cap, binding, regime, extra) -> dict:
    o = fm.offer(oid)
    return {"part": dk, "system": opt.system, "accelerator": opt.accelerator, "acquisition": o.acquisition,
            "provider": o.provider, "offer": oid, "replicas": replicas,
            "accelerators_per_replica": per_replica, "tensor_parallel": tp, "pipeline_parallel": pp,
            "users_per_replica": users_per_replica, "tokens_per_s_per_user": r2(tps),
            "ttft_s": r2(ttft, 3), "hours_per_run": r2(hours, 3), "memory_gb_per_accelerator": r2(mem),
            "memory_gb_capacity": r2(cap), "binding": binding, "regime": regime, **extra}


PREFILL_HEAVY = 4.0
"""A serving job whose requests carry at least this many input tokens per output token is
prefill-heavy (RAG, summarisation, classification): its headline unit is $ per million input tokens."""


def _unit_cost(job, cost, placements, fm, res, keys, api=(), year: int = 1) -> dict:
    """Unit costs on served demand: the users the placements and API shares serve (never the capacity
    held), each at the job's target speed, for the hours it runs and the share of them it is active
    (options.api.job_tokens); $ per million output tokens, per million input tokens and per request
    are each the job's whole cost over that measure. Headline: input tokens for prefill-heavy jobs.
    Runs and devices are `year`'s (a multi-year plan reads out its final year: its cost over that
    year's runs and devices, not year 1's)."""
    if job.stage in ("serve",):
        served = sum(p["users_served"] for p in placements) + sum(a["users_served"] for a in api)
        if not served:
            return {"usd_per_million_tokens": None}
        t = job_tokens(job)
        out, req = served * t.output_per_user_year, served * t.requests_per_user_year
        inp = req * job.input_tokens  # (the job's own prompts: an API also bills a conversation's history again)
        per_out = r2(cost / out * 1e6, 4)
        return {"usd_per_million_tokens": per_out, "usd_per_million_output_tokens": per_out,
                "usd_per_million_input_tokens": r2(cost / inp * 1e6, 4), "usd_per_request": r2(cost / req, 6),
                "usd_per_million_tokens_blended": r2(cost / (inp + out) * 1e6, 4),
                "headline": "input" if job.input_tokens >= PREFILL_HEAVY * job.output_tokens else "output",
                "output_tokens_per_year": r2(out, 0), "input_tokens_per_year": r2(inp, 0),
                "requests_per_year": r2(req, 0), "usd_per_user_per_year": r2(cost / max(served, 1))}
    if job.stage in ("finetune", "pretrain"):
        return {"usd_per_run": r2(cost / sum(d.runs_per_year for d in demands_of_job(job, year)))}
    if job.stage == "rl":
        return {"usd_per_day": r2(cost / DAYS_PER_YEAR)}
    return {"usd_per_device_per_year": r2(cost / max(sum(d.units for d in demands_of_job(job, year)), 1))}


def _unserved(fm, res, keys) -> dict:
    out = {}
    for dk in keys:
        v = fm.unserved.get((dk, fm.first))
        if v is None:
            continue
        share = _val(res, v)
        d = fm.options.demands[dk]
        if share > 1e-6:
            out[dk] = {"share": r2(share, 4), "users": r2(share * d.users, 1) if d.kind == "serve" else None}
    return out


def _utilisation(fm, res, usage) -> list[dict]:
    out = []
    for oid, v in sorted(fm.n.items()):
        n = _int(res, v)
        if n <= 0:
            continue
        per = fm.system_of(oid).accelerators
        used = site_hours(fm, usage.get(oid, {}))
        out.append({"offer": oid, "systems": n, "accelerator_hours_used": r2(used, 0),
                    "utilisation": r2(used / (HOURS * per * n), 4)})
    return out
