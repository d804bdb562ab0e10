"""What each offer of a solved fleet model holds and is used for in one year: the systems held
(owned, rented for serving, for batch runs, edge units) and the accelerator-hours each demand uses
(read by the single-period and multi-year readouts, readout.py and readout_years.py)."""

from __future__ import annotations

from collections import defaultdict

from planner.data.constants import HOURS_PER_YEAR
from planner.data.jobs import hours_per_year
from planner.milp import pooling
from planner.milp.readout_api import api_usage
from planner.options.eligibility import systems_per_run
from planner.physics import costs

HOURS = HOURS_PER_YEAR


def held_systems(fm, res, t: int) -> dict[str, int]:
    """Systems (or edge units) of each offer in use in year t: owned, rented by the hour for a
    demand or a pool, rented for batch runs (the systems the largest run needs, beside the serving
    rentals: at its peak the offer holds both), edge units held."""
    held: dict[str, int] = defaultdict(int)
    runs: dict[str, int] = defaultdict(int)
    for (oid, tt), vs in fm.held_terms.items():
        if tt == t:
            held[oid] += sum(round(res.values.get(v.name, 0.0)) for v in vs)
    for (dk, oid, tt), v in fm.r.items():
        if tt == t:
            held[oid] += round(res.values.get(v.name, 0.0))
    for (oid, _, tt), v in fm.rp.items():
        if tt == t:
            held[oid] += round(res.values.get(v.name, 0.0))
    for (dk, i, oid, tt), v in fm.x.items():
        if tt == t and (oid, t) not in fm.held_terms and res.values.get(v.name, 0.0) > 1e-6:
            per = fm.system_of(oid).accelerators
            runs[oid] = max(runs[oid], max(1, -(-fm.options.batch[dk][i].accelerators // per)))
    for (dk, i, oid, tau), v in fm.e.items():
        if fm.active(oid, tau, t):
            held[oid] += round(res.values.get(v.name, 0.0))
    for oid, n in runs.items():
        held[oid] += n
    return held


def site_hours(fm, use: dict[str, float]) -> float:
    """Accelerator-hours of one offer's usage at the site: its edge demands' units left out."""
    return sum(h for dk, h in use.items() if getattr(fm.options.demands.get(dk), "kind", None) != "edge")


def usage_of(fm, res, t: int) -> dict[str, dict[str, float]]:
    """offer -> demand -> accelerator-hours used in year t (edge: its units all year; API: its cost)."""
    use: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for aid, by in api_usage(fm, res.values, t).items():
        use[aid].update(by)
    for oid, by in pooling.pooled_usage(fm, res.values, t).items():
        for dk, hours in by.items():
            use[oid][dk] += hours
    for (dk, i, oid, tt), v in fm.y.items():
        d = fm.options.demands[dk]
        if tt != t or d.pool:
            continue  # a pooled demand is counted above: its share of the pool's replica-hours
        use[oid][dk] += res.values.get(v.name, 0.0) * fm.options.serve[dk][i].accelerator_slots * hours_per_year(d)
    for (dk, i, oid, tt), v in fm.x.items():
        if tt == t:
            opt = fm.options.batch[dk][i]
            hours = costs.run_hours(opt.hours_per_run, fm.offer(oid).acquisition)
            use[oid][dk] += res.values.get(v.name, 0.0) * opt.accelerators * hours * fm.demand_at(dk, t)
    for (dk, i, oid, tau), v in fm.e.items():
        if fm.active(oid, tau, t):  # a deployed unit is its job's all year (single-accelerator devices)
            use[oid][dk] += res.values.get(v.name, 0.0) * fm.system_of(oid).accelerators * HOURS
    return use


def cost_shares(fm, values: dict[str, float], use: dict[str, dict[str, float]], t: int) -> dict[str, dict[str, float]]:
    """usage_of's answer as the weights an offer's cost is split between demands by:
    - under N+1, an owned offer of a pool of several offers (model.spare_pool: the systems already
      held beside those bought, one spare among them) is split as the pool is, by its offers' summed
      use: the systems are one pool and its spare is the serving jobs', wherever it sits (an expert
      review: a used H100 node bought in year 3, the pool's spare, was charged whole to the one
      LoRA run that used 2 of its GPUs 9 h a month, $141,230 a year; an owned offer serving nothing
      but the spare was already split so);
    - an offer rented by the hour, where no pool shares rentals, by the system-hours each demand
      rents (rentals.system_hours): each pays for its own systems, its N+1 spare and the accelerators
      its replicas strand included (three models on AWS H100 x8 nodes: the 8B job, 2 GPUs busy on two
      nodes of its own, was charged a sixth of six nodes by its busy hours, half what it rents)."""
    out = dict(use)
    for oid, by in rented_system_hours(fm, values, t).items():
        out[oid] = by
    for (oid, tt) in sorted(fm.held_terms):
        if tt != t or not fm.u:
            continue
        pooled: dict[str, float] = defaultdict(float)
        for other in fm.spare_pool_offers(fm.spare_pool(oid, t)):  # (a pool of one offer: its own use)
            for dk, hours in use.get(other, {}).items():
                pooled[dk] += hours
        if pooled:
            out[oid] = pooled
    return out


def rented_system_hours(fm, values: dict[str, float], t: int) -> dict[str, dict[str, float]]:
    """offer rented by the hour -> demand -> accelerator-hours of the systems it rents in year t
    (serving: its rentals r, spare included, x the system's accelerators x its hours; batch: whole
    systems per run x run hours x runs), for the offers no pool shares rentals of (pooling's R)."""
    shared = {oid for (oid, _, tt) in fm.rp if tt == t}
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for (dk, oid, tt), v in fm.r.items():
        if tt == t and oid not in shared:
            per = fm.system_of(oid).accelerators
            out[oid][dk] += round(values.get(v.name, 0.0)) * per * hours_per_year(fm.options.demands[dk])
    for (dk, i, oid, tt), v in fm.x.items():
        if tt == t and oid not in shared and (oid, t) not in fm.held_terms and values.get(v.name, 0.0) > 0:
            opt, per = fm.options.batch[dk][i], fm.system_of(oid).accelerators
            hours = costs.run_hours(opt.hours_per_run, fm.offer(oid).acquisition)
            out[oid][dk] += (values[v.name] * systems_per_run(opt.accelerators, per) * per * hours
                             * fm.demand_at(dk, t))
    return out
