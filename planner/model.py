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
  m[d,i,o]    >= 0  replicas lost if one system of offer o fails (redundancy), z[d,i,o] bin

Objective: minimise yearly cost = sum_o fixed_o n_o (annuity, support, hosting, idle power or the
reserved commitment) + busy power on owned systems + hourly rentals + edge units.
(max-coverage mode: maximise priority-weighted served demand first, then minimise cost.)

Every constraint is registered under (family, entity) in `FleetModel.rows`; nothing parses names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pulp

from planner import costs
from planner.catalog import Catalog, Offer
from planner.options import Demand, Options, hours_per_year, site_exclusion
from planner.scenario import Scenario

HOURS = costs.HOURS_PER_YEAR
COVERAGE_WEIGHT = 1e9  # $ per unit of weighted unserved share: coverage first, then cost


@dataclass
class FleetModel:
    scenario: Scenario
    catalog: Catalog
    options: Options
    prob: pulp.LpProblem
    elastic: bool = False
    n: dict = field(default_factory=dict)
    y: dict = field(default_factory=dict)
    r: dict = field(default_factory=dict)
    x: dict = field(default_factory=dict)
    b: dict = field(default_factory=dict)
    e: dict = field(default_factory=dict)
    m: dict = field(default_factory=dict)
    z: dict = field(default_factory=dict)
    unserved: dict = field(default_factory=dict)
    slack: dict = field(default_factory=dict)
    rows: dict = field(default_factory=dict)
    cost_terms: dict = field(default_factory=dict)
    """component -> list of (coefficient, variable) making up the yearly cost."""

    def add(self, family: str, entity: str, constraint) -> None:
        key = (family, entity)
        if key in self.rows:
            raise ValueError(f"duplicate constraint {key}")
        name = f"c{len(self.rows)}"
        self.prob.addConstraint(constraint, name)
        self.rows[key] = self.prob.constraints[name]

    def var(self, store: dict, key, cat: str, low: float = 0, up: float | None = None) -> pulp.LpVariable:
        v = self.prob.add_variable(f"v{self._count()}", lowBound=low, upBound=up, cat=cat)
        store[key] = v
        return v

    def _count(self) -> int:
        self._n_vars = getattr(self, "_n_vars", 0) + 1
        return self._n_vars

    def cost(self, component: str, coef: float, var) -> None:
        if coef:
            self.cost_terms.setdefault(component, []).append((coef, var))

    def offer(self, oid: str) -> Offer:
        return self.options.offers[oid]

    def system_of(self, oid: str):
        return self.catalog.systems[self.options.offers[oid].system]

    def total_cost(self) -> pulp.LpAffineExpression:
        return pulp.lpSum(c * v for terms in self.cost_terms.values() for c, v in terms)


def _owned(o: Offer) -> bool:
    return costs.is_owned(o)


def _offers_of_system(fm: FleetModel, system_id: str) -> list[str]:
    return sorted(oid for oid, o in fm.options.offers.items() if o.system == system_id)


def _cap(fm: FleetModel, o: Offer) -> int:
    return o.max_systems if o.max_systems is not None else fm.scenario.policy.max_systems_per_offer


# --- variables ---------------------------------------------------------------------------------

def define_owned_variables(fm: FleetModel) -> None:
    """n[o] in {0..cap_o}; cost fixed_o x n[o] (capital, support, hosting, idle power | commitment)."""
    used_systems = {opt.system for lst in fm.options.serve.values() for opt in lst}
    used_systems |= {opt.system for lst in fm.options.batch.values() for opt in lst}
    for oid, o in sorted(fm.options.offers.items()):
        if not _owned(o) or o.system not in used_systems:
            continue
        v = fm.var(fm.n, oid, "Integer", 0, _cap(fm, o))
        parts = costs.owned_fixed_usd_per_year(o, fm.system_of(oid), fm.scenario.site,
                                               fm.scenario.policy.discount_rate)
        for component, usd in parts.items():
            fm.cost(component, usd, v)


def _serve_offers(fm: FleetModel, d: Demand, system_id: str) -> list[str]:
    out = []
    for oid in _offers_of_system(fm, system_id):
        o = fm.offer(oid)
        if o.acquisition == "spot" and (d.latency_critical or not fm.scenario.policy.spot_for_serving):
            continue
        if site_exclusion(o, fm.catalog.systems[system_id], fm.scenario):
            continue
        out.append(oid)
    return out


def define_serving_variables(fm: FleetModel) -> None:
    """y[d,i,o] replicas; r[d,o] hourly-rented systems. Busy power on owned systems and rentals
    are charged for the demand's hours: slots x busy $/accelerator-hour x hours, price x hours."""
    site = fm.scenario.site
    for dk, opts in sorted(fm.options.serve.items()):
        d = fm.options.demands[dk]
        hours = hours_per_year(d)
        for i, opt in enumerate(opts):
            for oid in _serve_offers(fm, d, opt.system):
                o = fm.offer(oid)
                if _owned(o) and oid not in fm.n:
                    continue
                v = fm.var(fm.y, (dk, i, oid), "Integer", 0, None)
                if _owned(o):
                    system = fm.system_of(oid)
                    busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
                    fm.cost("power", busy * opt.accelerator_slots * hours, v)
                elif (dk, oid) not in fm.r:
                    rv = fm.var(fm.r, (dk, oid), "Integer", 0, _cap(fm, o))
                    fm.cost("rental", o.price_usd_per_hour * hours, rv)


def _systems_per_run(accelerators: int, per_system: int) -> int:
    return max(1, math.ceil(accelerators / per_system))


def define_batch_variables(fm: FleetModel) -> None:
    """x[d,i,o] share of runs; on owned offers a binary b places the run there (it must fit at once);
    on rentals each run pays systems x hours x price."""
    site = fm.scenario.site
    for dk, opts in sorted(fm.options.batch.items()):
        d = fm.options.demands[dk]
        for i, opt in enumerate(opts):
            for oid in _offers_of_system(fm, opt.system):
                o = fm.offer(oid)
                system = fm.system_of(oid)
                if site_exclusion(o, system, fm.scenario):
                    continue
                if _owned(o):
                    if oid not in fm.n:
                        continue
                    v = fm.var(fm.x, (dk, i, oid), "Continuous", 0, 1)
                    fm.var(fm.b, (dk, i, oid), "Binary")
                    busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
                    fm.cost("power", busy * opt.accelerators * opt.hours_per_run * d.runs_per_year, v)
                else:
                    per_run = _systems_per_run(opt.accelerators, system.accelerators)
                    if o.max_systems is not None and per_run > o.max_systems:
                        continue
                    v = fm.var(fm.x, (dk, i, oid), "Continuous", 0, 1)
                    fm.cost("rental", per_run * opt.hours_per_run * o.price_usd_per_hour * d.runs_per_year, v)


def define_edge_variables(fm: FleetModel) -> None:
    """e[d,i,o] binary: all of d's units are bought from offer o; cost units x yearly ownership."""
    for dk, opts in sorted(fm.options.edge.items()):
        d = fm.options.demands[dk]
        for i, opt in enumerate(opts):
            for oid in _offers_of_system(fm, opt.system):
                o = fm.offer(oid)
                if o.acquisition != "buy":
                    continue
                v = fm.var(fm.e, (dk, i, oid), "Binary")
                rate = fm.scenario.policy.discount_rate
                unit = o.purchase_usd * (costs.annuity(rate, o.useful_life_years)
                                         + fm.scenario.site.support_fraction_per_year)
                fm.cost("capital", d.units * unit, v)


# --- constraints ---------------------------------------------------------------------------------

def _supply(fm: FleetModel, dk: str, only_offer: str | None = None):
    opts = fm.options.serve[dk]
    return pulp.lpSum(opts[i].users_per_replica * v for (d, i, oid), v in fm.y.items()
                      if d == dk and (only_offer is None or oid == only_offer))


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
    """Owned offer o, at peak: sum_d,i slots_i y[d,i,o] <= accelerators_o n[o] (all serving jobs may
    run at once; TP groups stay inside one system by construction of the options).
    Owned offer o, over the year: sum serve slots y hours_d + sum batch n_i hours_i runs_d x <=
    8760 accelerators_o n[o] (time-sharing: fine-tuning uses hours serving leaves idle).
    A batch run placed on o must fit there at once: accelerators_i b <= accelerators_o n[o], x <= b.
    Rented offer o for demand d: sum_i slots_i y[d,i,o] <= accelerators_o r[d,o]."""
    for oid, nv in sorted(fm.n.items()):
        per = fm.system_of(oid).accelerators
        peak = [(fm.options.serve[dk][i].accelerator_slots, v) for (dk, i, o), v in fm.y.items() if o == oid]
        if peak:
            fm.add("capacity", oid, pulp.lpSum(c * v for c, v in peak) <= per * nv)
        hours = [(fm.options.serve[dk][i].accelerator_slots * hours_per_year(fm.options.demands[dk]), v)
                 for (dk, i, o), v in fm.y.items() if o == oid]
        hours += [(fm.options.batch[dk][i].accelerators * fm.options.batch[dk][i].hours_per_run
                   * fm.options.demands[dk].runs_per_year, v) for (dk, i, o), v in fm.x.items() if o == oid]
        if any(fm.options.batch.get(dk) for (dk, i, o) in fm.x if o == oid):
            fm.add("hours", oid, pulp.lpSum(c * v for c, v in hours) <= HOURS * per * nv)
    for (dk, i, oid), bv in sorted(fm.b.items()):
        per = fm.system_of(oid).accelerators
        fm.add("batch-fit", f"{dk}|{i}|{oid}", fm.options.batch[dk][i].accelerators * bv <= per * fm.n[oid])
        fm.add("batch-link", f"{dk}|{i}|{oid}", fm.x[(dk, i, oid)] <= bv)
    for (dk, oid), rv in sorted(fm.r.items()):
        per = fm.system_of(oid).accelerators
        used = [(fm.options.serve[dk][i].accelerator_slots, v) for (d, i, o), v in fm.y.items()
                if d == dk and o == oid]
        fm.add("rental", f"{dk}|{oid}", pulp.lpSum(c * v for c, v in used) <= per * rv)


def define_availability_constraints(fm: FleetModel) -> None:
    """Rented systems of offer o across demands <= its availability cap (owned caps are bounds)."""
    by_offer: dict[str, list] = {}
    for (dk, oid), rv in fm.r.items():
        by_offer.setdefault(oid, []).append(rv)
    for oid, vs in sorted(by_offer.items()):
        o = fm.offer(oid)
        if o.max_systems is not None and len(vs) > 1:
            fm.add("availability", oid, pulp.lpSum(vs) <= o.max_systems)


def define_redundancy_constraints(fm: FleetModel) -> None:
    """N+1: for each serving demand d and each offer o it uses, demand is met with one system of o
    down: supply_d - sum_i users_i m[d,i,o] >= users_d, where m[d,i,o] >= min(y[d,i,o], R_i) and R_i
    = replicas one system holds (1 for a replica spanning systems). The min is made exact with a
    binary z: m >= R_i z, m >= y - M z, y <= R_i + M z."""
    if fm.scenario.policy.redundancy != "n+1":
        return
    for dk in sorted(fm.options.serve):
        offers = sorted({oid for (d, _, oid) in fm.y if d == dk})
        for oid in offers:
            per = fm.system_of(oid).accelerators
            lost = []
            for (d, i, o), yv in sorted(fm.y.items(), key=lambda kv: kv[0][1]):
                if d != dk or o != oid:
                    continue
                opt = fm.options.serve[dk][i]
                per_system = per // opt.accelerators_per_replica if opt.accelerators_per_replica <= per else 1
                big = fm.options.demands[dk].users // max(opt.users_per_replica, 1) + per_system + 2
                mv = fm.var(fm.m, (dk, i, oid), "Continuous", 0, None)
                zv = fm.var(fm.z, (dk, i, oid), "Binary")
                fm.add("redundancy-min", f"{dk}|{i}|{oid}|a", mv >= per_system * zv)
                fm.add("redundancy-min", f"{dk}|{i}|{oid}|b", mv >= yv - big * zv)
                fm.add("redundancy-min", f"{dk}|{i}|{oid}|c", yv <= per_system + big * zv)
                lost.append(opt.users_per_replica * mv)
            short = fm.unserved.get(dk)
            users = fm.options.demands[dk].users
            fm.add("redundancy", f"{dk}|{oid}", _supply(fm, dk) - pulp.lpSum(lost)
                   + (users * short if short is not None else 0) >= users)


def define_budget_constraints(fm: FleetModel) -> None:
    """Yearly cost <= budget.usd_per_year; purchases paid <= capex cap; running costs <= opex cap."""
    budget = fm.scenario.budget
    if budget.usd_per_year is not None:
        fm.add("budget", "usd_per_year", fm.total_cost() - _elastic(fm, "budget") <= budget.usd_per_year)
    if budget.capex_usd_per_year is not None:
        capex = pulp.lpSum(fm.offer(oid).purchase_usd * v for oid, v in fm.n.items()
                           if fm.offer(oid).acquisition == "buy")
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


ELASTIC_PENALTY = {"budget": 1e3, "capex": 1e3, "opex": 1e3, "power": 1e7}


def define_objective(fm: FleetModel) -> None:
    """min yearly cost (+ coverage and elastic penalties when those modes are on)."""
    obj = fm.total_cost()
    if fm.unserved:
        weight = COVERAGE_WEIGHT * (1e3 if fm.elastic else 1)
        obj += pulp.lpSum(weight * fm.options.demands[dk].priority * v for dk, v in fm.unserved.items())
    if fm.slack:
        obj += pulp.lpSum(ELASTIC_PENALTY[k] * v for k, v in fm.slack.items())
    fm.prob.setObjective(obj)


FAMILIES = (
    define_owned_variables,
    define_serving_variables,
    define_batch_variables,
    define_edge_variables,
    define_demand_constraints,
    define_capacity_constraints,
    define_availability_constraints,
    define_redundancy_constraints,
    define_budget_constraints,
    define_power_constraints,
    define_objective,
)


def build(scenario: Scenario, catalog: Catalog, options: Options, elastic: bool = False) -> FleetModel:
    """The fleet MILP for a scenario, its catalog and its options (see the module docstring)."""
    fm = FleetModel(scenario, catalog, options, pulp.LpProblem("fleet", pulp.LpMinimize), elastic=elastic)
    for define in FAMILIES:
        define(fm)
    return fm
