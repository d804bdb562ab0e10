"""Pooled serving replicas (policy.pool_jobs) in the fleet MILP, per year t: additive families.

Serving demands of one pool (data.jobs.pools_of: serve jobs, and the request-size buckets of a
request_mix, of the same model, precision, KV precision, engine and hours per day; where the policy
rents by the hour, also a job alone in its pool beside another pool of the same hours, so that their
replicas share rented systems, R below) share replicas,
as in Melange (Griggs et al., 2024): a replica's capacity is split between the pool's demands by
load. For a pool p, a configuration c = (system, TP, PP), an offer o and a year t (dropped below: every key ends in t):

  y[d,i,o] >= 0   continuous for pooled demands: replica-equivalents of demand d's load on option i
                  (users served / users_per_replica_i), so a demand's traffic may split across
                  configurations and offers; the demand row (fleet.define_demand_constraints) stays
                  sum_i users_i y[d,i,o] >= users_d
  Y[p,c,o]  int   replicas of configuration c that pool p holds on offer o
  load row        sum_{d in p, i of config c} y[d,i,o] <= Y[p,c,o]   (Melange's fractional load:
                  sum over buckets of rate / capacity on that configuration <= replicas)
  R[o,h]    int   systems rented by the hour from offer o, shared by every pool that runs h hours a
                  day: sum_{p,c} slots_c Y[p,c,o] <= accelerators_o (R[o,h] - u), and no idle system:
                  R[o,h] <= sum ceil(slots_c / accelerators_o) Y[p,c,o] + u
Owned offers: Y enters the capacity and hours rows in place of the pooled demands' y (fleet's
serving_terms), and busy power is charged on Y: slots x busy $/accelerator-hour x hours x Y.
N+1: Y[p,c,o] <= bound x u[pool of o] (one spare system per owned pool, model.spare_pool, or shared
rental pool).
Valid inequalities (cuts, see fleet.py): pool-share users_i y[d,i,o] <= users_d u (N+1) and
pool-cover users_i y[d,i,o] <= users_d Y[p,c,o] for a job smaller than one replica.
"""

from __future__ import annotations

import math

import pulp

from planner.data.jobs import hours_per_year
from planner.milp.registry import affine
from planner.physics import costs

SHARED = "(pooled)"
"""the demand slot of a shared rental pool's keys: u[(SHARED, offer, hours/day)]"""


def config_of(opt) -> tuple:
    """(system, TP, PP), and for a half of a replica split across two system types its role and
    pair (options/crossdisagg.py): halves never share replicas with aggregated ones."""
    return (opt.system, opt.tp, opt.pp) + ((opt.half.role, opt.half.pair) if opt.half is not None else ())


def pooled(fm, dk: str) -> str | None:
    """The pool of demand dk, or None when it has replicas of its own."""
    return fm.options.demands[dk].pool


def pool_key(fm, dk: str, i: int, oid: str, t: int) -> tuple | None:
    """The key of the pool replicas Y that pooled demand dk's option i on offer oid in year t loads:
    (pool, config, offer, year); None when dk has replicas of its own."""
    p = pooled(fm, dk)
    return None if p is None else (p, config_of(fm.options.serve[dk][i]), oid, t)


def members(fm) -> dict[tuple, list]:
    """(pool, config, offer, year) -> [(demand, option index, y variable)] over pooled demands' y;
    worked out once per model (model.FleetModel.pool_members, again only if y has grown since);
    callers read it, never change it."""
    if fm.pool_members is not None and fm.pool_members[0] == len(fm.y):
        return fm.pool_members[1]
    out: dict[tuple, list] = {}
    for (dk, i, oid, t), v in sorted(fm.y.items()):
        key = pool_key(fm, dk, i, oid, t)
        if key is not None:
            out.setdefault(key, []).append((dk, i, v))
    fm.pool_members = (len(fm.y), out)
    return out


def define_pool_variables(fm) -> None:
    """Y[p,c,o] int in {0..sum_d ceil(users_d / users_i)}; owned o: busy power on Y; rented o: a
    shared R[o,h] with rent price x hours x R (see the module docstring)."""
    site = fm.scenario.site
    for key, ms in sorted(members(fm).items()):
        oid, t = key[2], key[3]
        dk, i, _ = ms[0]
        opt, d, o = fm.options.serve[dk][i], fm.options.demands[dk], fm.offer(oid)
        up = sum(math.ceil(fm.demand_at(k, t) / max(fm.options.serve[k][j].users_per_replica, 1))
                 for k, j, _ in ms)
        v = fm.var(fm.yp, key, "Integer", 0, up if fm.tight else None)
        fm.pool_opt[key] = (opt, d)
        if costs.is_owned(o):
            system = fm.system_of(oid)
            busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
            fm.cost(t, "power", busy * opt.accelerator_slots * hours_per_year(d), v, oid)
        elif (oid, d.hours_per_day, t) not in fm.rp:
            rv = fm.var(fm.rp, (oid, d.hours_per_day, t), "Integer", 0, fm.cap_of(o))
            fm.cost(t, "rental", o.price_usd_per_hour * fm.factor(oid, t) * hours_per_year(d), rv, oid)


def _spare_of(fm, oid: str, hours_per_day: float, t: int) -> tuple:
    return fm.spare_pool(oid, t) if (oid, t) in fm.held_terms else (SHARED, oid, hours_per_day, t)


def define_pool_spares(fm) -> None:
    """N+1 for pooled replicas, u the owned offer's spare or the shared rental pool's (capacity rows
    keep that system free):
      pool-spare   Y[p,c,o] <= bound u
      pool-share   sum_i users_i y[d,i,o] <= users_d u, per pooled demand d and spare pool
    pool-share is the facility-location linking row (see fleet.define_spare_variables): in the LP
    relaxation the spare is priced at the share of each demand the pool carries. It holds in every
    plan whose loads y serve no more than each demand needs, and any plan's loads can be lowered to
    that (y sits in the demand row, a >= row, and the load rows, sum y <= Y), so an optimal plan keeps."""
    if fm.scenario.policy.redundancy != "n+1":
        return
    for key, yv in sorted(fm.yp.items()):
        oid, t = key[2], key[3]
        spare = _spare_of(fm, oid, fm.pool_opt[key][1].hours_per_day, t)
        u = fm.u[spare] if spare in fm.u else fm.var(fm.u, spare, "Binary")
        fm.add("pool-spare", key, yv <= (yv.upBound or fm.cap_of(fm.offer(oid))) * u)
    if not fm.tight:
        return
    share: dict[tuple, list] = {}
    for (dk, i, oid, t), v in sorted(fm.y.items()):
        d = fm.options.demands[dk]
        spare = _spare_of(fm, oid, d.hours_per_day, t)
        if d.pool and spare in fm.u:
            share.setdefault((dk, spare), []).append((v, fm.options.serve[dk][i].users_per_replica))
    for (dk, spare), terms in sorted(share.items()):
        fm.add("pool-share", (dk, *spare), pulp.LpAffineExpression(terms) <= fm.demand_at(dk, spare[-1]) * fm.u[spare],
               cut=True)


def serving_terms(fm) -> list[tuple[str, object, object, object]]:
    """(offer, year, option, demand, integer replicas) on every offer: unpooled demands' y and the
    pools' Y (the capacity rows count whole replicas)."""
    out = [(oid, t, fm.options.serve[dk][i], fm.options.demands[dk], v) for (dk, i, oid, t), v in fm.y.items()
           if pooled(fm, dk) is None]
    out += [(key[2], key[3], *fm.pool_opt[key], v) for key, v in fm.yp.items()]
    return out


def define_pool_constraints(fm) -> None:
    """load rows sum y <= Y; shared rentals: slots <= acc (R - u), R <= whole systems used + u.
    pool-cover (fm.tight only), per pooled demand d smaller than one replica of option i:
      users_i y[d,i,o] <= users_d Y[p,c,o]
    the pooled form of the demand row's coefficient clipping: the load row alone lets the LP
    relaxation hold a tenth of a replica for a job of a tenth of a replica's users; every plan holds
    a whole one (60 generated jobs, seed 3: LP bound 2,001,332 -> 2,198,356 $/yr). Valid for every
    plan whose loads serve no more than each demand needs (any plan's can be lowered to that, see
    define_pool_spares): Y is an integer, at least 1 where d has load, and users_i y <= users_d."""
    for key, ms in sorted(members(fm).items()):
        replicas = fm.yp[key]
        fm.add("pool-load", key, affine([*((1, v) for _, _, v in ms), (-1, replicas)]) <= 0)
        if not fm.tight:
            continue
        for dk, i, v in ms:
            users, need = fm.options.serve[dk][i].users_per_replica, fm.demand_at(dk, key[3])
            if need < users:
                fm.add("pool-cover", (dk, i, key[2], key[3]), affine([(users, v), (-need, replicas)]) <= 0, cut=True)
    used: dict[tuple, list] = {}
    for key, v in fm.yp.items():
        opt, d = fm.pool_opt[key]
        if (key[2], d.hours_per_day, key[3]) in fm.rp:
            used.setdefault((key[2], d.hours_per_day, key[3]), []).append((opt.accelerator_slots, v))
    for (oid, h, t), rv in sorted(fm.rp.items()):
        per = fm.system_of(oid).accelerators
        spare = fm.u.get((SHARED, oid, h, t), 0)
        terms = used.get((oid, h, t), [])
        fm.add("pool-rental", (oid, h, t), pulp.lpSum(c * v for c, v in terms) <= per * (rv - spare))
        fm.add("pool-rental-use", (oid, h, t),
               rv <= pulp.lpSum(math.ceil(c / per - 1e-9) * v for c, v in terms) + spare)


def _half_key(role: str, pair: tuple) -> dict:
    """A pool row's `disaggregated`: which half of which pair (plan contract PoolHalf)."""
    return {"role": role, "prefill_system": pair[0], "prefill_tensor_parallel": pair[2],
            "decode_system": pair[1], "decode_tensor_parallel": pair[3]}


def trim_pool_replicas(fm, values: dict[str, float]) -> tuple[dict[str, float], float]:
    """Each pool's replicas Y lowered to ceil(its members' summed load), and the objective's cost
    that saves (Y's own terms: owned systems' busy power). A plan the solver stopped short of its
    optimum may hold a replica no member loads (a pool row the readout never shows, a system the
    verifier finds idle); lowering Y keeps the load row, and the shared rentals are lowered after it
    to what the replicas left need (trim_pool_rentals). Runs before the fleet's trims."""
    out, saved = dict(values), 0.0
    for key, ms in sorted(members(fm).items()):
        yv = fm.yp.get(key)
        if yv is None:
            continue
        need = math.ceil(sum(values.get(v.name, 0.0) for _, _, v in ms) - 1e-6)
        held = round(values.get(yv.name, 0.0))
        if held > need:
            out[yv.name] = float(max(need, 0))
            saved += fm.prob.objective.get(yv, 0.0) * (held - max(need, 0))
    return out, saved


def trim_pool_rentals(fm, values: dict[str, float]) -> tuple[dict[str, float], float]:
    """Shared rentals lowered to ceil(sum slots Y / accelerators) (+ the spare), like
    fleet.trim_rentals; returns the values and the yearly cost saved."""
    out, saved = dict(values), 0.0
    price = fm.rental_prices()
    for (oid, h, t), rv in sorted(fm.rp.items()):
        per = fm.system_of(oid).accelerators
        slots = sum(fm.pool_opt[key][0].accelerator_slots * round(values.get(v.name, 0.0))
                    for key, v in fm.yp.items()
                    if key[2] == oid and key[3] == t and fm.pool_opt[key][1].hours_per_day == h)
        need = math.ceil(slots / per - 1e-6)
        if need and (SHARED, oid, h, t) in fm.u:
            need += 1
        held = round(values.get(rv.name, 0.0))
        if held > need:
            out[rv.name] = float(need)
            saved += price.get(rv.name, 0.0) * (held - need)
    return out, saved


def pooled_usage(fm, values: dict[str, float], year: int | None = None) -> dict[str, dict[str, float]]:
    """offer -> pooled demand -> accelerator-hours in `year` (default: the last): each pool row's
    replica-hours split between its demands by the load each puts on it."""
    use: dict[str, dict[str, float]] = {}
    for key, ms in members(fm).items():
        if key[3] != (year or fm.last):
            continue
        yv = fm.yp.get(key)
        if yv is None:
            continue
        opt, d = fm.pool_opt[key]
        hours = round(values.get(yv.name, 0.0)) * opt.accelerator_slots * hours_per_year(d)
        loads = [(dk, round(values.get(v.name, 0.0), 4)) for dk, _, v in ms]  # as pool_rows shows them
        total = sum(x for _, x in loads)
        for dk, x in loads:
            if total > 1e-9 and x > 1e-9:
                use.setdefault(key[2], {}).setdefault(dk, 0.0)
                use[key[2]][dk] += hours * x / total
    return use


def pool_rows(fm, values: dict[str, float], year: int | None = None) -> list[dict]:
    """The plan's `pools` in `year` (default: the last): which demands share which replicas, with
    the load each puts on them."""
    out = []
    for key, ms in sorted(members(fm).items()):
        yv = fm.yp.get(key)
        reps = round(values.get(yv.name, 0.0)) if yv is not None else 0
        loads = {dk: round(values.get(v.name, 0.0), 4) for dk, _, v in ms if values.get(v.name, 0.0) > 1e-6}
        if reps <= 0 or not loads:
            continue
        p, (system, tp, pp, *half), oid, t = key
        if t != (year or fm.last):
            continue
        opt, _ = fm.pool_opt[key]
        out.append({"pool": p, "offer": oid, "system": system, "accelerator": opt.accelerator,
                    "tensor_parallel": tp, "pipeline_parallel": pp, "accelerators_per_replica": tp * pp,
                    "replicas": reps, "load": loads, **({"disaggregated": _half_key(*half)} if half else {})})
    return out
