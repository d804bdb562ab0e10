"""The fleet MILP: one define_* function per variable or constraint family, in a fixed order.

Sets: demands D (serving users, batch runs, edge units), offers O (system x acquisition x
provider), options I_d (how demand d runs on one system type, from options.py).

Variables
  n[o]        int   systems held under owned offer o (buy, reserved), shared by all jobs
  y[d,i,o]    int   replicas of serving option i for demand d on offer o
  r[d,o]      int   systems rented by the hour (on-demand, spot) from offer o for demand d
  x[d,i,o]    [0,1] share of batch demand d's runs done with option i on offer o
  b[d,i,o]    bin   batch option i placed on owned offer o (it must fit there at once)
  e[d,i,o]    bin   edge option i bought from offer o for all of d's units
  u[o], u[d,o] bin  N+1 spare: one idle system held in owned pool o, or in demand d's rentals of o

Objective: minimise yearly cost = sum_o fixed_o n_o (annuity, support, hosting, idle power or the
reserved commitment) + busy power on owned systems + hourly rentals + edge units.
(max-coverage mode: maximise priority-weighted served demand first, then minimise cost.)

Every constraint is registered under (family, entity) in `FleetModel.rows`; nothing parses names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pulp

from planner.data.catalog import Catalog, Offer
from planner.data.constants import HOURS_PER_YEAR
from planner.data.jobs import hours_per_year
from planner.data.scenario import Scenario
from planner.milp import pooling
from planner.milp.api import api_supply, define_api_variables
from planner.milp.registry import COVERAGE_WEIGHT, ELASTIC_PENALTY, TIE_BREAK_USD, Registry
from planner.options import shortlist
from planner.options.eligibility import batch_offer_exclusion, systems_per_run
from planner.options.types import Demand, Options
from planner.physics import costs

HOURS = HOURS_PER_YEAR


@dataclass
class FleetModel(Registry):
    n: dict = field(default_factory=dict)
    serve_pairs: dict = field(default_factory=dict)
    """demand -> [(option index, offer id)] the MILP instantiates (see shortlist.py)."""
    batch_pairs: dict = field(default_factory=dict)
    pairs_pruned: int = 0
    keep_pairs: dict | None = None
    """demand -> pairs a shortlist must keep (prune.py: those the full model's LP relaxation uses)."""
    prune: bool = True
    cost_terms: dict = field(default_factory=dict)
    """component -> list of (coefficient, variable) making up the yearly cost."""

    def cost(self, component: str, coef: float, var) -> None:
        if coef:
            self.cost_terms.setdefault(component, []).append((coef, var))

    def total_cost(self) -> pulp.LpAffineExpression:
        return pulp.lpSum(c * v for terms in self.cost_terms.values() for c, v in terms)


def _owned(o: Offer) -> bool:
    return costs.is_owned(o)


def _cap(fm: FleetModel, o: Offer) -> int:
    return o.max_systems if o.max_systems is not None else fm.scenario.policy.max_systems_per_offer


# --- variables ---------------------------------------------------------------------------------

def _batch_offers(fm: FleetModel, d: Demand, opt) -> list[str]:
    """Offers a batch option may use: those its demand may use (options.offers_for) that can host
    the run (options.batch_offer_exclusion: a rental's cap holds one run, spot meets the deadline)."""
    system = fm.catalog.systems[opt.system]
    return [oid for oid in fm.options.offers_for(d.key, opt.system)
            if not batch_offer_exclusion(d, opt, fm.offer(oid), system)]


def define_pairs(fm: FleetModel) -> None:
    """Candidate (option, offer) pairs per demand, reduced by shortlist.select (exact for small
    scenarios; a documented heuristic above shortlist.PRUNE_ABOVE pairs)."""
    serve = {dk: [(i, oid) for i, opt in enumerate(opts)
                  for oid in fm.options.offers_for(dk, opt.system)]
             for dk, opts in sorted(fm.options.serve.items())}
    batch = {dk: [(i, oid) for i, opt in enumerate(opts)
                  for oid in _batch_offers(fm, fm.options.demands[dk], opt)]
             for dk, opts in sorted(fm.options.batch.items())}
    fm.serve_pairs, fm.batch_pairs, fm.pairs_pruned = shortlist.select(
        fm.scenario, fm.catalog, fm.options, serve, batch, fm.keep_pairs, fm.prune)


def define_owned_variables(fm: FleetModel) -> None:
    """n[o] in {0..cap_o} for owned offers some pair uses; cost fixed_o x n[o] (capital, less the
    resale at the end of a horizon shorter than the useful life; support, ops, hosting, idle power |
    the reserved commitment)."""
    used = {oid for pairs in (*fm.serve_pairs.values(), *fm.batch_pairs.values()) for _, oid in pairs}
    for oid, o in sorted(fm.options.offers.items()):
        if not _owned(o) or oid not in used:
            continue
        v = fm.var(fm.n, oid, "Integer", 0, _cap(fm, o))
        parts = costs.owned_fixed_usd_per_year(o, fm.system_of(oid), fm.scenario.site,
                                               fm.scenario.policy.discount_rate, fm.scenario.horizon_years)
        for component, usd in parts.items():
            fm.cost(component, usd, v)


def define_serving_variables(fm: FleetModel) -> None:
    """y[d,i,o] replicas, at most ceil(users_d / users_i) (no fleet needs more of one option: N+1 is a
    spare system, not extra replicas); r[d,o] hourly-rented systems. Busy power on owned systems and
    rentals are charged for the demand's hours: slots x busy $/accelerator-hour x hours, price x hours."""
    site = fm.scenario.site
    for dk, pairs in sorted(fm.serve_pairs.items()):
        d = fm.options.demands[dk]
        hours = hours_per_year(d)
        for i, oid in pairs:
            opt, o = fm.options.serve[dk][i], fm.offer(oid)
            up = math.ceil(d.users / max(opt.users_per_replica, 1)) if fm.tight else None
            v = fm.var(fm.y, (dk, i, oid), "Continuous" if d.pool else "Integer", 0, up)
            if d.pool:
                continue  # a pooled demand's load: replicas, power and rent are the pool's (pooling.py)
            if _owned(o):
                system = fm.system_of(oid)
                busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
                fm.cost("power", busy * opt.accelerator_slots * hours, v)
            elif (dk, oid) not in fm.r:
                rv = fm.var(fm.r, (dk, oid), "Integer", 0, _cap(fm, o))
                fm.cost("rental", o.price_usd_per_hour * hours, rv)


def define_spare_variables(fm: FleetModel) -> None:
    """N+1 (policy.redundancy: n+1): every pool of serving systems holds one spare, so any one
    system can fail and its replicas restart on the spare. A pool is an owned offer o (shared by
    every job) or one demand's hourly rentals of offer o. u = 1 when the pool serves anything:
      y[d,i,o] <= ceil(users_d / users_i) u_pool        (variable upper bound: tight, no big-M;
                                                        no demand needs more replicas than its users)
    and the capacity rows (define_capacity_constraints) keep one system free: slots <= acc_o (n_o - u_o).
    In the LP relaxation a pool carrying all of a demand has u = 1, so its spare is priced in."""
    if fm.scenario.policy.redundancy != "n+1":
        return
    for (dk, i, oid), yv in sorted(fm.y.items()):
        d, opt = fm.options.demands[dk], fm.options.serve[dk][i]
        if d.pool:
            continue  # pooling.define_pool_spares
        pool = oid if oid in fm.n else (dk, oid)
        u = fm.u[pool] if pool in fm.u else fm.var(fm.u, pool, "Binary")  # (an LpVariable is falsy)
        fm.add("spare-use", (dk, i, oid), yv <= math.ceil(d.users / max(opt.users_per_replica, 1)) * u)


def define_batch_variables(fm: FleetModel) -> None:
    """x[d,i,o] share of runs; on owned offers a binary b places the run there (it must fit at once);
    on rentals each run pays systems x run hours x price (spot: hours x SPOT_RESTART_OVERHEAD).
    b exists only where fitting at once is not implied: a run on one system with no always-on
    serving beside it needs n[o] >= 1, which the hours row already forces (x > 0 => n > 0)."""
    site = fm.scenario.site
    always_on = {oid for dk, pairs in fm.serve_pairs.items() if fm.options.demands[dk].hours_per_day >= 24
                 for _, oid in pairs}
    for dk, pairs in sorted(fm.batch_pairs.items()):
        d = fm.options.demands[dk]
        for i, oid in pairs:
            opt, o = fm.options.batch[dk][i], fm.offer(oid)
            system = fm.system_of(oid)
            v = fm.var(fm.x, (dk, i, oid), "Continuous", 0, 1)
            if _owned(o):
                if opt.accelerators > system.accelerators or oid in always_on:
                    fm.var(fm.b, (dk, i, oid), "Binary")
                busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
                fm.cost("power", busy * opt.accelerators * opt.hours_per_run * d.runs_per_year, v)
            else:
                per_run = systems_per_run(opt.accelerators, system.accelerators)
                hours = costs.run_hours(opt.hours_per_run, o.acquisition)
                fm.cost("rental", per_run * hours * o.price_usd_per_hour * d.runs_per_year, v)


def define_edge_variables(fm: FleetModel) -> None:
    """e[d,i,o] binary: all of d's units are bought from offer o (the offers d may use: bought
    ones, options.demand_offer_exclusion); cost units x yearly ownership. An offer whose cap
    cannot hold d's units gets no variable (define_availability_constraints caps the sum)."""
    for dk, opts in sorted(fm.options.edge.items()):
        d = fm.options.demands[dk]
        for i, opt in enumerate(opts):
            for oid in fm.options.offers_for(dk, opt.system):
                o = fm.offer(oid)
                if d.units > _cap(fm, o):
                    continue
                v = fm.var(fm.e, (dk, i, oid), "Binary")
                rate = fm.scenario.policy.discount_rate
                unit = o.purchase_usd * (costs.annuity(rate, o.useful_life_years)
                                         + fm.scenario.site.support_fraction_per_year)
                fm.cost("capital", d.units * unit, v)


# --- constraints ---------------------------------------------------------------------------------

def _y_of(fm: FleetModel, dk: str) -> list[tuple[int, str, pulp.LpVariable]]:
    """Demand dk's replica variables as (option index, offer, variable), sorted."""
    index = getattr(fm, "_y_index", None)
    if index is None or index[0] != len(fm.y):
        by: dict[str, list] = {}
        for (d, i, oid), v in sorted(fm.y.items()):
            by.setdefault(d, []).append((i, oid, v))
        index = (len(fm.y), by)
        fm._y_index = index
    return index[1].get(dk, [])


def _supply(fm: FleetModel, dk: str):
    """Users demand dk's replicas serve, each replica counted at most at the demand itself
    (min(users_i, users_d): coefficient tightening of the covering row; one replica that holds
    every user covers the demand whole, and the LP may not use a fraction of it for a fraction of
    the price)."""
    opts, users = fm.options.serve[dk], fm.options.demands[dk].users
    cap = users if fm.tight and not fm.options.demands[dk].pool else float("inf")  # pooled y is a load
    return pulp.lpSum(min(opts[i].users_per_replica, cap) * v for i, oid, v in _y_of(fm, dk)) + api_supply(fm, dk)


def define_demand_constraints(fm: FleetModel) -> None:
    """serve: sum users_i y[d,i,o] (+ unserved_d) >= users_d;  batch, edge: shares sum to 1."""
    coverage = fm.scenario.budget.mode == "max-coverage"
    for dk, d in sorted(fm.options.demands.items()):
        short = None
        if coverage or fm.elastic:
            short = fm.var(fm.unserved, dk, "Continuous", 0, 1)
        if d.kind == "serve":
            lhs = _supply(fm, dk) + (d.users * short if short is not None else 0)
            fm.add("demand", dk, lhs >= d.users)
        else:
            store = fm.x if d.kind == "batch" else fm.e
            lhs = pulp.lpSum(v for (k, _, _), v in store.items() if k == dk)
            fm.add("demand", dk, lhs + (short if short is not None else 0) == 1)


def define_capacity_constraints(fm: FleetModel) -> None:
    """Owned offer o, at peak: sum_d,i slots_i y[d,i,o] <= accelerators_o (n[o] - u[o]) (all serving
    jobs may run at once, beside the N+1 spare u; TP groups stay inside one system by construction
    of the options).
    Owned offer o, over the year: sum serve slots y hours_d + sum batch n_i hours_i runs_d x <=
    8760 accelerators_o n[o] (time-sharing: fine-tuning uses hours serving leaves idle).
    A batch run placed on o must fit there at once beside the serving jobs that never pause
    (24 h/day): accelerators_i b + sum_{24h d,i} slots_i y[d,i,o] <= accelerators_o n[o], x <= b.
    Part-day serving jobs are assumed idle at the same hours (nights, weekends), so a run uses
    their slots then; a run longer than that idle window is checkpointed and resumed in the next.
    Rented offer o for demand d: sum_i slots_i y[d,i,o] <= accelerators_o (r[d,o] - u[d,o]), and no
    rented system without a replica or the spare: r[d,o] <= sum_i ceil(slots_i / acc_o) y[d,i,o] + u[d,o]
    (trim_rentals then lowers r to exactly ceil(sum_i slots_i y / accelerators_o))."""
    serve_on: dict[str, list] = {}
    for oid, opt, d, v in pooling.serving_terms(fm):  # pooled demands count as their pools' replicas
        serve_on.setdefault(oid, []).append((opt, d, v))
    batch_on: dict[str, list] = {}
    for (dk, i, oid), v in fm.x.items():
        if oid in fm.n:
            batch_on.setdefault(oid, []).append((fm.options.batch[dk][i], fm.options.demands[dk], v))
    for oid, nv in sorted(fm.n.items()):
        per = fm.system_of(oid).accelerators
        serving = serve_on.get(oid, [])
        if serving:
            spare = fm.u.get(oid, 0)
            fm.add("capacity", oid, pulp.lpSum(opt.accelerator_slots * v for opt, _, v in serving) <= per * (nv - spare))
        if batch_on.get(oid):
            hours = [(opt.accelerator_slots * hours_per_year(d), v) for opt, d, v in serving]
            hours += [(opt.accelerators * opt.hours_per_run * d.runs_per_year, v) for opt, d, v in batch_on[oid]]
            fm.add("hours", oid, pulp.lpSum(c * v for c, v in hours) <= HOURS * per * nv)
    for (dk, i, oid), bv in sorted(fm.b.items()):
        per = fm.system_of(oid).accelerators
        need = fm.options.batch[dk][i].accelerators
        always_on = [(opt.accelerator_slots, v) for opt, d, v in serve_on.get(oid, []) if d.hours_per_day >= 24]
        if always_on:
            fm.add("batch-fit", (dk, i, oid),
                   need * bv + pulp.lpSum(c * v for c, v in always_on) <= per * fm.n[oid])
        else:  # the same row with its integer rounding: ceil(need / per) systems (a tighter LP)
            fm.add("batch-fit", (dk, i, oid), math.ceil(need / per) * bv <= fm.n[oid])
        fm.add("batch-link", (dk, i, oid), fm.x[(dk, i, oid)] <= bv)
    rented: dict[tuple, list] = {}
    for (dk, i, oid), v in fm.y.items():
        if (dk, oid) in fm.r:
            rented.setdefault((dk, oid), []).append((fm.options.serve[dk][i].accelerator_slots, v))
    for (dk, oid), rv in sorted(fm.r.items()):
        per = fm.system_of(oid).accelerators
        used = rented.get((dk, oid), [])
        spare = fm.u.get((dk, oid), 0)
        fm.add("rental", (dk, oid), pulp.lpSum(c * v for c, v in used) <= per * (rv - spare))
        fm.add("rental-use", (dk, oid), rv <= pulp.lpSum(math.ceil(c / per - 1e-9) * v for c, v in used) + spare)


def trim_rentals(fm: FleetModel, values: dict[str, float]) -> tuple[dict[str, float], float]:
    """A solution with every hourly rental r[d,o] lowered to ceil(sum_i slots_i y[d,i,o] / acc_o),
    and the yearly cost that saves. Within the solver's gap the MILP may keep rented systems that
    hold no replica; lowering r keeps every row satisfied (the rental row still holds, the
    availability caps and budgets only loosen), so the trimmed solution is feasible and no costlier."""
    out, saved = dict(values), 0.0
    price = {v.name: c for c, v in fm.cost_terms.get("rental", [])}
    for (dk, oid), rv in sorted(fm.r.items()):
        per = fm.system_of(oid).accelerators
        slots = sum(fm.options.serve[dk][i].accelerator_slots * round(values.get(v.name, 0.0))
                    for i, o, v in _y_of(fm, dk) if o == oid)
        need = math.ceil(slots / per - 1e-6)
        if need and (dk, oid) in fm.u:
            need += 1  # the pool's N+1 spare
        held = round(values.get(rv.name, 0.0))
        if held > need:
            out[rv.name] = float(need)
            saved += price.get(rv.name, 0.0) * (held - need)
    return out, saved


def define_availability_constraints(fm: FleetModel) -> None:
    """Systems of offer o across demands <= its availability cap: rented r[d,o], and edge units
    bought, sum_{d,i} units_d e[d,i,o] (owned n[o] has its cap as a bound; a single variable's
    cap is its bound too)."""
    by_offer: dict[str, list] = {}
    for (dk, oid), rv in fm.r.items():
        by_offer.setdefault(oid, []).append(rv)
    for (oid, _), rv in fm.rp.items():
        by_offer.setdefault(oid, []).append(rv)
    for (dk, i, oid), ev in fm.e.items():
        by_offer.setdefault(oid, []).append(fm.options.demands[dk].units * ev)
    for oid, vs in sorted(by_offer.items()):
        o = fm.offer(oid)
        if o.max_systems is not None and len(vs) > 1:
            fm.add("availability", oid, pulp.lpSum(vs) <= o.max_systems)


def define_budget_constraints(fm: FleetModel) -> None:
    """Yearly cost <= budget.usd_per_year; purchases paid (bought systems n[o] and edge units
    units_d e[d,i,o], at purchase_usd) <= capex cap; running costs <= opex cap."""
    budget = fm.scenario.budget
    if budget.usd_per_year is not None:
        fm.add("budget", "usd_per_year", fm.total_cost() - _elastic(fm, "budget") <= budget.usd_per_year)
    if budget.capex_usd_per_year is not None:
        capex = pulp.lpSum(fm.offer(oid).purchase_usd * v for oid, v in fm.n.items()
                           if fm.offer(oid).acquisition == "buy")
        capex += pulp.lpSum(fm.offer(oid).purchase_usd * fm.options.demands[dk].units * v
                            for (dk, _, oid), v in sorted(fm.e.items()))
        fm.add("budget", "capex_usd_per_year", capex - _elastic(fm, "capex") <= budget.capex_usd_per_year)
    if budget.opex_usd_per_year is not None:
        opex = pulp.lpSum(c * v for comp, terms in fm.cost_terms.items() if comp != "capital" for c, v in terms)
        fm.add("budget", "opex_usd_per_year", opex - _elastic(fm, "opex") <= budget.opex_usd_per_year)


def define_power_constraints(fm: FleetModel) -> None:
    """Bought systems at the site: sum_o power_kw_o n[o] <= site.power_cap_kw."""
    cap = fm.scenario.site.power_cap_kw
    if cap is None:
        return
    load = pulp.lpSum(fm.system_of(oid).power_kw * v for oid, v in fm.n.items() if fm.offer(oid).acquisition == "buy")
    fm.add("power", "site", load - _elastic(fm, "power") <= cap)


def _elastic(fm: FleetModel, family: str):
    if not fm.elastic:
        return 0
    return fm.var(fm.slack, family, "Continuous", 0, None)


def define_objective(fm: FleetModel) -> None:
    """min yearly cost (+ coverage and elastic penalties when those modes are on) + a tie-break of
    TIE_BREAK_USD per system held or rented, so that no idle system is ever bought, even at a
    near-zero price."""
    obj = fm.total_cost() + TIE_BREAK_USD * pulp.lpSum([*fm.n.values(), *fm.r.values()])
    if fm.unserved:
        weight = COVERAGE_WEIGHT * (1e3 if fm.elastic else 1)
        obj += pulp.lpSum(weight * fm.options.demands[dk].priority * v for dk, v in fm.unserved.items())
    if fm.slack:
        obj += pulp.lpSum(ELASTIC_PENALTY[k] * v for k, v in fm.slack.items())
    fm.prob.setObjective(obj)


FAMILIES = (
    define_pairs,
    define_owned_variables,
    define_serving_variables,
    pooling.define_pool_variables,
    define_spare_variables,
    pooling.define_pool_spares,
    define_batch_variables,
    define_edge_variables,
    define_api_variables,
    define_demand_constraints,
    define_capacity_constraints,
    pooling.define_pool_constraints,
    define_availability_constraints,
    define_budget_constraints,
    define_power_constraints,
    define_objective,
)


def build(scenario: Scenario, catalog: Catalog, options: Options, elastic: bool = False,
          tight: bool = True, prune: bool = True, keep_pairs: dict | None = None) -> FleetModel:
    """The fleet MILP for a scenario, its catalog and its options (see the module docstring);
    prune=False instantiates every pair (no shortlist), keep_pairs adds pairs to a shortlist."""
    fm = FleetModel(scenario, catalog, options, pulp.LpProblem("fleet", pulp.LpMinimize), elastic=elastic,
                    tight=tight, prune=prune, keep_pairs=keep_pairs)
    for define in FAMILIES:
        define(fm)
    return fm
