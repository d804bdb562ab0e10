"""The multi-year fleet MILP: years 1..H in one model; bought systems persist, demand grows, prices fall.

The options (options.py) do not change from year to year: a replica serves the same users in year 3
as in year 1. Only the demand, the prices and what may be acquired change.

Per-year data
  g_j(t)       demand factor of job j: demand_multipliers[t-1], else (1 + growth_per_year)^(t-1)
  users[d,t] = ceil(users_d g(t)); runs[d,t] = runs_d g(t); units[d,t] = ceil(units_d g(t))
  f_a(t)     = (1 - decline_a)^(t-1), price factor of accelerator a (its own trend row, else '*');
               applied to purchase prices and hourly/reserved rental prices
  offers of accelerator a may be bought, reserved or rented only from available_from_year_a

Variables (t = year)
  p[o,t]      int   systems of buy offer o bought at the start of year t at P[o,t] = purchase_o f_a(t)
  k[o,t]      int   reserved-Ny contracts of offer o starting in year t (price fixed at f_a(t), N years)
  H[o,t]      = sum of p[o,tau] with tau <= t < tau + L_o (useful life, whole years), or of k[o,tau]
                with tau <= t < tau + N: the owned fleet held in year t, shared by every job
  y[d,i,o,t]  int   replicas; r[d,o,t] int hourly-rented systems; x[d,i,o,t] share of batch runs,
  b[d,i,o,t]  bin   a batch option placed on owned offer o; e[d,i,o,t] int edge units bought;
  u[o,t], u[d,o,t] bin  N+1 spare in an owned pool or in a demand's rentals (fleet.define_spare_variables);
  unserved[d,t] in [0,1] unserved share (max-coverage mode)

Constraints per year: the families of model.py (demand, capacity, hours, batch fit, rental,
availability, redundancy, site power) with H[o,t] in place of n[o]; budgets per year in the cash view:
  capex_t = sum_o P[o,t] p[o,t] (+ edge units bought)           <= capex cap of year t
  opex_t  = support + ops + hosting + idle power of held systems, busy power, rentals, reserved, API tokens <= opex cap
  capex_t + opex_t                                               <= usd cap of year t
  (a cap of year t is budget.years[year=t].<field>, else the plan-wide budget.<field>_per_year).

Resale: a bought system leaves the fleet at the end of its life or of the horizon (start of year s)
after a years of its life L and fetches P[o,tau] (1 - decline_a)^(s - tau) max(rf, 1 - (1 - rf) a / L):
its remaining book value at the prices of the day (used hardware tracks new prices), rf = resale_fraction.

Objective: NPV = sum_t (capex_t + opex_t) / (1+r)^(t-1) - resale / (1+r)^(s-1) + reserved commitments
running past the horizon (discounted the same way). Max-coverage: minimise
COVERAGE_WEIGHT x sum_{d,t} priority_d u[d,t] first, then NPV. The accounting view replaces capex_t
by the annuity P a(r, L) for every year a system is held; it is reported, not optimised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pulp

from planner.data.catalog import Catalog, Offer
from planner.data.constants import HOURS_PER_YEAR
from planner.data.jobs import demands_of_job, hours_per_year
from planner.data.scenario import Scenario
from planner.data.years import Trend, life_years, trend_for, year_caps
from planner.milp.api import api_supply, define_api_variables_years
from planner.milp.registry import COVERAGE_WEIGHT, ELASTIC_PENALTY, TIE_BREAK_USD, Registry
from planner.options.eligibility import batch_offer_exclusion, systems_per_run
from planner.options.types import Options
from planner.physics import costs

HOURS = HOURS_PER_YEAR
RESERVED_YEARS = {"reserved-1y": 1, "reserved-3y": 3}
OPEX = ("support", "ops", "hosting", "power", "rental", "reserved", "api")


@dataclass
class YearModel(Registry):
    years: list = field(default_factory=list)
    p: dict = field(default_factory=dict)
    k: dict = field(default_factory=dict)
    cash: dict = field(default_factory=dict)
    """(year, component) -> [(usd, var, offer)]: capex and the OPEX components, paid that year."""
    capital: dict = field(default_factory=dict)
    """year -> [(usd, var, offer)]: annuitised purchases held that year (accounting view)."""
    resale: dict = field(default_factory=dict)
    """year -> [(usd, var, offer)]: value of systems leaving the fleet at the end of that year."""
    beyond: list = field(default_factory=list)
    """[(discounted usd, var, offer)]: reserved commitments running past the horizon."""
    held_terms: dict = field(default_factory=dict)
    """(offer, year) -> [var]: purchases or contracts still held that year."""

    def trend(self, oid: str) -> Trend:
        return trend_for(self.scenario, self.system_of(oid).accelerator)

    def factor(self, oid: str, year: int) -> float:
        return (1.0 - self.trend(oid).decline) ** (year - 1)

    def acquirable(self, oid: str) -> list[int]:
        return [t for t in self.years if t >= self.trend(oid).available_from]

    def held(self, oid: str, year: int):
        return pulp.lpSum(self.held_terms.get((oid, year), []))

    def discount(self, year: float) -> float:
        return (1.0 + self.scenario.policy.discount_rate) ** -(year - 1)

    def pay(self, year: int, component: str, usd: float, var, oid: str) -> None:
        if usd:
            self.cash.setdefault((year, component), []).append((usd, var, oid))

    def cash_expr(self, year: int, components=None):
        comps = components or ("capex",) + OPEX
        return pulp.lpSum(c * v for comp in comps for c, v, _ in self.cash.get((year, comp), []))

    def npv(self):
        terms = [self.discount(t) * self.cash_expr(t) for t in self.years]
        terms += [-self.discount(t + 1) * c * v for t in self.years for c, v, _ in self.resale.get(t, [])]
        terms += [c * v for c, v, _ in self.beyond]
        return pulp.lpSum(terms)

    def demand_at(self, dk: str, year: int) -> float:
        """Demand dk's size in `year` (data.jobs.demands_of_job): users, runs per year or units."""
        d = self.options.demands[dk]
        job = next(j for j in self.scenario.jobs if j.name == d.job)
        now = next(x for x in demands_of_job(job, year) if x.key == dk)
        return {"serve": now.users, "edge": now.units}.get(d.kind, now.runs_per_year)


def _cap(ym: YearModel, o: Offer) -> int:
    return o.max_systems if o.max_systems is not None else ym.scenario.policy.max_systems_per_offer


def resale_value(ym: YearModel, oid: str, bought: int, sold: int) -> float:
    """Value of one system bought at the start of year `bought`, sold at the start of year `sold`."""
    o, tr = ym.offer(oid), ym.trend(oid)
    age = sold - bought
    share = max(tr.resale_fraction, 1.0 - (1.0 - tr.resale_fraction) * age / o.useful_life_years)
    return o.purchase_usd * ym.factor(oid, bought) * (1.0 - tr.decline) ** age * share


def _purchase(ym: YearModel, oid: str, t: int, var, per_year_fixed: dict[str, float], fleet: bool = True) -> None:
    """Cash, accounting and resale terms of a purchase of offer oid in year t (fleet: the systems
    join the shared fleet H; edge units do not)."""
    o, last, rate = ym.offer(oid), ym.years[-1], ym.scenario.policy.discount_rate
    price = o.purchase_usd * ym.factor(oid, t)
    life = life_years(o)
    ym.pay(t, "capex", price, var, oid)
    for h in range(t, min(last, t + life - 1) + 1):
        if fleet:
            ym.held_terms.setdefault((oid, h), []).append(var)
        ym.pay(h, "support", price * ym.scenario.site.support_fraction_per_year, var, oid)
        for comp, usd in per_year_fixed.items():
            ym.pay(h, comp, usd, var, oid)
        ym.capital.setdefault(h, []).append((price * costs.annuity(rate, o.useful_life_years), var, oid))
    out = min(last, t + life - 1)
    value = resale_value(ym, oid, t, out + 1)
    if value > 0:
        ym.resale.setdefault(out, []).append((value, var, oid))


def define_owned_variables(ym: YearModel) -> None:
    """p[o,t] purchases and k[o,t] reserved contracts, and the held fleet H[o,t] they make."""
    site = ym.scenario.site
    used = {o.system for lst in list(ym.options.serve.values()) + list(ym.options.batch.values()) for o in lst}
    for oid, o in sorted(ym.options.offers.items()):
        if not costs.is_owned(o) or o.system not in used:
            continue
        system = ym.system_of(oid)
        for t in ym.acquirable(oid):
            if o.acquisition == "buy":
                v = ym.var(ym.p, (oid, t), "Integer", 0, _cap(ym, o))
                fixed = costs.owned_fixed_usd_per_year(o, system, site, ym.scenario.policy.discount_rate)
                _purchase(ym, oid, t, v, {"hosting": fixed["hosting"], "power": fixed["power"], "ops": fixed["ops"]})
                continue
            v = ym.var(ym.k, (oid, t), "Integer", 0, _cap(ym, o))
            usd = o.price_usd_per_hour * ym.factor(oid, t) * HOURS
            for h in range(t, t + RESERVED_YEARS[o.acquisition]):
                if h <= ym.years[-1]:
                    ym.held_terms.setdefault((oid, h), []).append(v)
                    ym.pay(h, "reserved", usd, v, oid)
                else:
                    ym.beyond.append((ym.discount(h) * usd, v, oid))


def _replicas_max(ym: YearModel, dk: str, opt, system, t: int) -> int:
    """No plan needs more replicas of one option than its demand's users fill (N+1 is a spare system)."""
    return math.ceil(ym.demand_at(dk, t) / max(opt.users_per_replica, 1))


def define_serving_variables(ym: YearModel) -> None:
    """y[d,i,o,t] replicas on held or rented systems; r[d,o,t] rented systems at price x f(t) x hours."""
    site = ym.scenario.site
    for dk, opts in sorted(ym.options.serve.items()):
        d = ym.options.demands[dk]
        hours = hours_per_year(d)
        for i, opt in enumerate(opts):
            for oid in ym.options.offers_for(dk, opt.system):
                o, system = ym.offer(oid), ym.system_of(oid)
                for t in ym.acquirable(oid):
                    if costs.is_owned(o):
                        if (oid, t) not in ym.held_terms:
                            continue
                        v = ym.var(ym.y, (dk, i, oid, t), "Integer", 0, _replicas_max(ym, dk, opt, system, t))
                        busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
                        ym.pay(t, "power", busy * opt.accelerator_slots * hours, v, oid)
                        continue
                    ym.var(ym.y, (dk, i, oid, t), "Integer", 0, _replicas_max(ym, dk, opt, system, t))
                    if (dk, oid, t) not in ym.r:
                        rv = ym.var(ym.r, (dk, oid, t), "Integer", 0, _cap(ym, o))
                        ym.pay(t, "rental", o.price_usd_per_hour * ym.factor(oid, t) * hours, rv, oid)


def define_batch_variables(ym: YearModel) -> None:
    """x[d,i,o,t] share of year t's runs; b places it on a held offer; rentals pay systems x hours."""
    site = ym.scenario.site
    for dk, opts in sorted(ym.options.batch.items()):
        for i, opt in enumerate(opts):
            for oid in ym.options.offers_for(dk, opt.system):
                o, system = ym.offer(oid), ym.system_of(oid)
                if batch_offer_exclusion(ym.options.demands[dk], opt, o, system):
                    continue
                per_run = systems_per_run(opt.accelerators, system.accelerators)
                for t in ym.acquirable(oid):
                    runs = ym.demand_at(dk, t)
                    if costs.is_owned(o):
                        if (oid, t) not in ym.held_terms:
                            continue
                        v = ym.var(ym.x, (dk, i, oid, t), "Continuous", 0, 1)
                        ym.var(ym.b, (dk, i, oid, t), "Binary")
                        busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
                        ym.pay(t, "power", busy * opt.accelerators * opt.hours_per_run * runs, v, oid)
                    else:
                        v = ym.var(ym.x, (dk, i, oid, t), "Continuous", 0, 1)
                        usd = (per_run * costs.run_hours(opt.hours_per_run, o.acquisition) * o.price_usd_per_hour
                               * ym.factor(oid, t) * runs)
                        ym.pay(t, "rental", usd, v, oid)


def define_edge_variables(ym: YearModel) -> None:
    """e[d,i,o,t] edge units bought in year t (the offers d may use: bought ones); they persist for
    their life like bought systems, count as capex in year t, and units held of offer o in year t
    across demands stay within its cap (max_systems, else policy.max_systems_per_offer)."""
    for dk, opts in sorted(ym.options.edge.items()):
        for i, opt in enumerate(opts):
            for oid in ym.options.offers_for(dk, opt.system):
                for t in ym.acquirable(oid):
                    v = ym.var(ym.e, (dk, i, oid, t), "Integer", 0, _cap(ym, ym.offer(oid)))
                    _purchase(ym, oid, t, v, {}, fleet=False)
    for oid in sorted({oid for (_, _, oid, _) in ym.e}):
        for t in ym.years:
            held = [v for (_, _, o, tau), v in sorted(ym.e.items()) if o == oid and active(ym, oid, tau, t)]
            if len(held) > 1:
                ym.add("availability", (oid, "edge", t), pulp.lpSum(held) <= _cap(ym, ym.offer(oid)))


def active(ym: YearModel, oid: str, bought: int, year: int) -> bool:
    """A purchase of offer oid in year `bought` is still in use in `year`."""
    return bought <= year < bought + life_years(ym.offer(oid))


def _edge_held(ym: YearModel, dk: str, t: int):
    return pulp.lpSum(v for (d, _, oid, tau), v in ym.e.items() if d == dk and active(ym, oid, tau, t))


def _supply(ym: YearModel, dk: str, t: int):
    """Users demand dk's replicas serve in year t, each replica counted at most at the year's demand
    (coefficient tightening, as fleet._supply)."""
    opts, need = ym.options.serve[dk], ym.demand_at(dk, t)
    return pulp.lpSum(min(opts[i].users_per_replica, need) * v for (d, i, oid, tt), v in ym.y.items()
                      if d == dk and tt == t) + api_supply(ym, dk, t)


def define_demand_constraints(ym: YearModel) -> None:
    """serve: supply[d,t] + users[d,t] u[d,t] >= users[d,t]; batch: shares + u = 1; edge: units held."""
    coverage = ym.scenario.budget.mode == "max-coverage"
    for dk, d in sorted(ym.options.demands.items()):
        for t in ym.years:
            need = ym.demand_at(dk, t)
            short = ym.var(ym.unserved, (dk, t), "Continuous", 0, 1) if (coverage or ym.elastic) else None
            if d.kind == "serve":
                lhs = _supply(ym, dk, t) + (need * short if short is not None else 0)
                ym.add("demand", (dk, t), lhs >= need)
            elif d.kind == "batch":
                lhs = pulp.lpSum(v for (k, _, _, tt), v in ym.x.items() if k == dk and tt == t)
                ym.add("demand", (dk, t), lhs + (short if short is not None else 0) == 1)
            else:
                lhs = _edge_held(ym, dk, t) + (need * short if short is not None else 0)
                ym.add("demand", (dk, t), lhs >= need)


def define_spare_variables(ym: YearModel) -> None:
    """N+1 per year, as fleet.define_spare_variables: a spare u[o,t] in each owned pool o serving in
    year t, u[d,o,t] in each demand's rentals; y[d,i,o,t] <= ceil(users[d,t] / users_i) u."""
    if ym.scenario.policy.redundancy != "n+1":
        return
    for (dk, i, oid, t), yv in sorted(ym.y.items()):
        opt = ym.options.serve[dk][i]
        pool = (oid, t) if costs.is_owned(ym.offer(oid)) else (dk, oid, t)
        u = ym.u[pool] if pool in ym.u else ym.var(ym.u, pool, "Binary")  # (an LpVariable is falsy)
        need = math.ceil(ym.demand_at(dk, t) / max(opt.users_per_replica, 1))
        ym.add("spare-use", (dk, i, oid, t), yv <= need * u)


def define_capacity_constraints(ym: YearModel) -> None:
    """Per year, as fleet.define_capacity_constraints with H[o,t] for n[o]: peak slots <= acc_o (H - u);
    busy hours <= 8760 acc_o H (when batch work shares the offer); a placed batch run fits at once
    beside the serving jobs that never pause; rented slots <= acc_o (r[d,o,t] - u) and no rented
    system without a replica or the spare."""
    always_on: dict = {}
    for (dk, i, oid, t), v in ym.y.items():
        if ym.options.demands[dk].hours_per_day >= 24:
            always_on.setdefault((oid, t), []).append((ym.options.serve[dk][i].accelerator_slots, v))
    for (oid, t) in sorted(ym.held_terms):
        per = ym.system_of(oid).accelerators
        cap = per * ym.held(oid, t)
        ys = [(ym.options.serve[dk][i], dk, v) for (dk, i, o, tt), v in ym.y.items() if o == oid and tt == t]
        if ys:
            spare = per * ym.u.get((oid, t), 0)
            ym.add("capacity", (oid, t), pulp.lpSum(opt.accelerator_slots * v for opt, _, v in ys) <= cap - spare)
        xs = [(ym.options.batch[dk][i], dk, v) for (dk, i, o, tt), v in ym.x.items() if o == oid and tt == t]
        if xs:
            hours = [opt.accelerator_slots * hours_per_year(ym.options.demands[dk]) * v for opt, dk, v in ys]
            hours += [opt.accelerators * opt.hours_per_run * ym.demand_at(dk, t) * v for opt, dk, v in xs]
            ym.add("hours", (oid, t), pulp.lpSum(hours) <= HOURS * cap)
        if len(ym.acquirable(oid)) > 1:
            ym.add("availability", (oid, t), ym.held(oid, t) <= _cap(ym, ym.offer(oid)))
    for (dk, i, oid, t), bv in sorted(ym.b.items()):
        per = ym.system_of(oid).accelerators
        busy = pulp.lpSum(c * v for c, v in always_on.get((oid, t), []))
        ym.add("batch-fit", (dk, i, oid, t), ym.options.batch[dk][i].accelerators * bv + busy <= per * ym.held(oid, t))
        ym.add("batch-link", (dk, i, oid, t), ym.x[(dk, i, oid, t)] <= bv)
    by_offer: dict = {}
    for (dk, oid, t), rv in sorted(ym.r.items()):
        per = ym.system_of(oid).accelerators
        used = [(ym.options.serve[dk][i].accelerator_slots, v) for (d, i, o, tt), v in ym.y.items()
                if d == dk and o == oid and tt == t]
        spare = ym.u.get((dk, oid, t), 0)
        ym.add("rental", (dk, oid, t), pulp.lpSum(c * v for c, v in used) <= per * (rv - spare))
        ym.add("rental-use", (dk, oid, t), rv <= pulp.lpSum(math.ceil(c / per - 1e-9) * v for c, v in used) + spare)
        by_offer.setdefault((oid, t), []).append(rv)
    for (oid, t), vs in sorted(by_offer.items()):
        cap = ym.offer(oid).max_systems
        if cap is not None and len(vs) > 1:
            ym.add("availability", (oid, t), pulp.lpSum(vs) <= cap)


def define_budget_constraints(ym: YearModel) -> None:
    """Cash view per year: capex_t <= capex cap, opex_t <= opex cap, capex_t + opex_t <= usd cap."""
    for t in ym.years:
        for key, (cap, _) in sorted(year_caps(ym.scenario, t).items()):
            comps = {"usd": None, "capex": ("capex",), "opex": OPEX}[key]
            ym.add("budget", (key, t), ym.cash_expr(t, comps) - _elastic(ym, key, t) <= cap)


def define_power_constraints(ym: YearModel) -> None:
    """Bought systems held in year t: sum_o power_kw_o H[o,t] <= site.power_cap_kw."""
    cap = ym.scenario.site.power_cap_kw
    if cap is None:
        return
    for t in ym.years:
        load = pulp.lpSum(ym.system_of(oid).power_kw * ym.held(oid, t) for (oid, tt) in sorted(ym.held_terms)
                          if tt == t and ym.offer(oid).acquisition == "buy")
        ym.add("power", f"site|{t}", load - _elastic(ym, "power", t) <= cap)


def _elastic(ym: YearModel, family: str, year: int):
    if not ym.elastic:
        return 0
    return ym.var(ym.slack, (family, year), "Continuous", 0, None)


def define_objective(ym: YearModel) -> None:
    """min NPV (+ priority-weighted unserved shares first in max-coverage; + elastic penalties) + the
    tie-break of fleet.define_objective on every purchase, contract and rental."""
    obj = ym.npv() + TIE_BREAK_USD * pulp.lpSum([*ym.p.values(), *ym.k.values(), *ym.r.values()])
    if ym.unserved:
        weight = COVERAGE_WEIGHT * (1e3 if ym.elastic else 1)
        obj += pulp.lpSum(weight * ym.options.demands[dk].priority * v for (dk, _), v in ym.unserved.items())
    if ym.slack:
        obj += pulp.lpSum(ELASTIC_PENALTY["budget" if fam == "usd" else fam] * v for (fam, _), v in ym.slack.items())
    ym.prob.setObjective(obj)


FAMILIES = (
    define_owned_variables,
    define_serving_variables,
    define_spare_variables,
    define_batch_variables,
    define_edge_variables,
    define_api_variables_years,
    define_demand_constraints,
    define_capacity_constraints,
    define_budget_constraints,
    define_power_constraints,
    define_objective,
)


def build(scenario: Scenario, catalog: Catalog, options: Options, elastic: bool = False) -> YearModel:
    """The multi-year MILP (see the module docstring)."""
    ym = YearModel(scenario, catalog, options, pulp.LpProblem("fleet_years", pulp.LpMinimize), elastic=elastic,
                   years=list(range(1, scenario.horizon_years + 1)))
    for define in FAMILIES:
        define(ym)
    return ym
