"""The fleet MILP's model: years, variable stores, cost ledgers and per-year data. One model for
every plan: a single-period plan is year 1 alone, costed per year; a multi-year plan is years
1..H, costed as the NPV of the cash paid. The constraint families (fleet.FAMILIES) are the same
functions for both; only the accounting of an owned system differs, as the objective asks:

  objective "annualised" (one year)   min sum_c cost[1, c]: a bought system costs its annuity (less
                                      the residual value over a horizon shorter than its life) plus
                                      support, ops, hosting and idle power; a reserved one its rate
  objective "npv" (years 1..H)        min sum_t (capex_t + opex_t) / (1+r)^(t-1) - resale + reserved
                                      commitments past the horizon (owned.py has the terms)

Stores (t = year; every key ends in t):
  p[o,t] int  systems of buy offer o bought at the start of year t; k[o,t] int reserved contracts
  held(o,t)   = the purchases and contracts of offer o still held in year t (held_terms)
  y[d,i,o,t] replicas (int; pooled demands: continuous load), r[d,o,t] hourly-rented systems,
  x[d,i,o,t] share of batch runs, b[d,i,o,t] a batch option placed on an owned offer,
  e[d,i,o,t] edge units bought, u[...,t] N+1 spares, yp/rp pooled replicas and shared rentals,
  api[d,k,t] API shares, z[s,t] system types in use (complexity.py), unserved[d,t], slack[family,t]
Rows are registered under (family, entity) with entity a tuple ending in t.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulp

from planner.data.catalog import is_held
from planner.data.colocation import spare_pool_of
from planner.data.constants import HOURS_PER_YEAR
from planner.data.jobs import demands_of_job
from planner.data.years import Trend, life_years, trend_for
from planner.milp.registry import Registry
from planner.physics import costs

NO_TREND = Trend()
"""the trend of every offer in a one-year model: no decline, available from year 1, no resale"""
OPEX = ("support", "ops", "hosting", "power", "rental", "reserved", "prepaid", "api", "complexity")
"""cost components paid as running costs (the budget's opex); the rest is capital or capex"""

PAID_AHEAD = ("capex", "prepaid")
"""cash components of a multi-year model paid once for years of use (purchases, reservations paid up
front), which the accounting view replaces by their capital for each year held (FleetModel.capital)"""


@dataclass
class FleetModel(Registry):
    years: list = field(default_factory=lambda: [1])
    npv: bool = False
    """objective: NPV of cash over `years` (multi-year), else the yearly cost of one year"""
    p: dict = field(default_factory=dict)
    k: dict = field(default_factory=dict)
    z: dict = field(default_factory=dict)
    """(system type, year) -> binary: the type is in that year's fleet (complexity.py)"""
    held_terms: dict = field(default_factory=dict)
    """(offer, year) -> [var]: purchases or contracts still held that year"""
    cash: dict = field(default_factory=dict)
    """(year, component) -> [(usd, var, offer)]: the objective's costs of that year"""
    paid: dict = field(default_factory=dict)
    """year -> [(usd, var, offer)]: purchase prices paid that year (the capex budget's view)"""
    capital: dict = field(default_factory=dict)
    """year -> [(usd, var, offer)]: annuitised purchases held that year (npv's accounting view)"""
    resale: dict = field(default_factory=dict)
    """year -> [(usd, var, offer)]: value of systems leaving the fleet at the end of that year"""
    beyond: list = field(default_factory=list)
    """[(discounted usd, var, offer)]: reserved commitments running past the horizon"""
    serve_pairs: dict = field(default_factory=dict)
    """demand -> [(option index, offer id)] the MILP instantiates (see shortlist.py)"""
    batch_pairs: dict = field(default_factory=dict)
    turn_pairs: list = field(default_factory=list)
    """runs of two jobs on one owned offer that must fit side by side (turns.pairs)"""
    turn_beside: dict = field(default_factory=dict)
    """(demand, option, offer) of a placed run -> the serving demands it must fit beside (turns.beside)"""
    pairs_pruned: int = 0
    keep_pairs: dict | None = None
    """demand -> pairs a shortlist must keep (prune.py: those the full model's LP relaxation uses)"""
    prune: bool = True
    _demand: dict = field(default_factory=dict)
    _trends: dict = field(default_factory=dict)
    """accelerator -> its Trend (trend): read for every variable and cost term of an offer"""
    _spare_pools: dict = field(default_factory=dict)
    """(site, system, year) -> the owned offers held there that year, sorted (spare_pool)"""
    pool_members: tuple | None = None
    """(y's size, pooling.members' answer) once asked: five pooled families and the cover cuts each
    read it, and each sorted every y (a 200-job shortlist's rebuild 0.64-0.79 -> 0.37-0.45 s)"""

    @property
    def pairs(self) -> int:
        """The (option, offer) pairs the model instantiates, serving and batch."""
        return sum(map(len, self.serve_pairs.values())) + sum(map(len, self.batch_pairs.values()))

    # --- per-year data ---------------------------------------------------------------------------

    @property
    def first(self) -> int:
        return self.years[0]

    @property
    def last(self) -> int:
        return self.years[-1]

    def trend(self, oid: str) -> Trend:
        if not self.npv:
            return NO_TREND
        acc = self.system_of(oid).accelerator
        if acc not in self._trends:
            self._trends[acc] = trend_for(self.scenario, acc)
        return self._trends[acc]

    def factor(self, oid: str, year: int) -> float:
        """Price factor of offer oid's accelerator in `year`: (1 - decline)^(year - 1)."""
        return (1.0 - self.trend(oid).decline) ** (year - 1)

    def acquirable(self, oid: str) -> list[int]:
        """Years offer oid may be acquired in: from its trend's available_from; systems already owned
        (catalog.is_held) in the first year only, whatever the trends (they are there; none more come)."""
        if is_held(self.offer(oid)):
            return self.years[:1]
        return [t for t in self.years if t >= self.trend(oid).available_from]

    def active(self, oid: str, bought: int, year: int) -> bool:
        """A purchase of offer oid in year `bought` is still in use in `year`."""
        return bought <= year < bought + life_years(self.offer(oid))

    def held(self, oid: str, year: int):
        return pulp.lpSum(self.held_terms.get((oid, year), []))

    def discount(self, year: float) -> float:
        return (1.0 + self.scenario.policy.discount_rate) ** -(year - 1)

    def demand_at(self, dk: str, year: int) -> float:
        """Demand dk's size in `year`: users (serving), runs per year (batch) or units (edge); in a
        multi-year plan grown by data.jobs.demands_of_job."""
        key = (dk, year)
        if key not in self._demand:
            d = self.options.demands[dk]
            if self.npv:
                job = next(j for j in self.scenario.jobs if j.name == d.job)
                d = next(x for x in demands_of_job(job, year) if x.key == dk)
            self._demand[key] = {"serve": d.users, "edge": d.units}.get(d.kind, d.runs_per_year)
        return self._demand[key]

    # --- costs -----------------------------------------------------------------------------------

    def cost(self, year: int, component: str, usd: float, var, oid: str | None) -> None:
        """A cost of `year` in the objective: usd x var, attributed to offer oid."""
        if usd:
            self.cash.setdefault((year, component), []).append((usd, var, oid))

    def pay(self, year: int, usd: float, var, oid: str) -> None:
        """A purchase price paid in `year` (the capex budget; in the NPV objective as 'capex')."""
        if usd:
            self.paid.setdefault(year, []).append((usd, var, oid))
            if self.npv:
                self.cost(year, "capex", usd, var, oid)

    @property
    def cost_terms(self) -> dict[str, list]:
        """component -> [(usd, var)] of the first year: a single-period plan's yearly cost."""
        out: dict[str, list] = {}
        for (t, comp), terms in self.cash.items():
            if t == self.first:
                out.setdefault(comp, []).extend((c, v) for c, v, _ in terms)
        return out

    @property
    def n(self) -> dict:
        """Owned offer -> its systems held in a single-period plan (the year-1 purchase or contract)."""
        return {oid: v for store in (self.p, self.k) for (oid, t), v in store.items() if t == self.first}

    def spend(self, year: int, key: str):
        """What a budget of `year` caps: 'usd' the year's cost in the objective's view, 'capex' the
        purchase prices paid, 'opex' the running costs."""
        if key == "capex":
            return pulp.lpSum(c * v for c, v, _ in self.paid.get(year, []))
        comps = OPEX if key == "opex" else None
        return pulp.lpSum(c * v for (t, comp), terms in sorted(self.cash.items()) if t == year
                          and (comps is None or comp in comps) for c, v, _ in terms)

    def year_cost(self, year: int, basis: str):
        """The cost of `year` in a budget's basis (data.years.budget_basis): the model's own view
        where they agree (spend 'usd': annualised in a one-period model, cash in a multi-year one);
        cash in a one-period model: the purchases paid in full, the running costs, and each
        reservation at its invoices (its rental carries commitment_factor x them); annualised in a
        multi-year model: the running costs, each purchase's capital for a year held
        (owned.py), and the later payments of a reservation running past the horizon spread over
        the years held (carried)."""
        if basis == ("cash" if self.npv else "annualised"):
            return self.spend(year, "usd")
        if not self.npv:
            return self.spend(year, "capex") + self.spend(year, "opex") - pulp.lpSum(
                c * v for c, v, _ in self.carried(year))
        return pulp.lpSum([c * v for (t, comp), terms in sorted(self.cash.items()) if t == year and comp not in PAID_AHEAD
                           for c, v, _ in terms] + [c * v for c, v, _ in self.capital.get(year, [])]
                          + [c * v for c, v, _ in self.carried(year)])

    def carried(self, year: int) -> list[tuple[float, object, str]]:
        """[(usd, var, offer)]: what the reservations held in `year` add to its invoices in the
        accounting view: in a multi-year model, a monthly-paid term running past the horizon carries
        all its payments spread over the years held ((commitment_factor - 1) x a year's fees; one paid
        up front is accounted as capital, owned.py); in a one-period model, its yearly cost less the
        year's invoices ((commitment_factor - costs.invoiced_years) x a year's fees, below 0 for a
        term paid up front within the horizon)."""
        out = []
        for (oid, tau), v in sorted(self.k.items()):
            o = self.offer(oid)
            if self.npv and costs.prepaid(o):
                continue
            held = (self.last + 1 - tau) if self.npv else self.scenario.horizon_years
            more = costs.commitment_factor(o, self.scenario.policy.discount_rate, held) - (
                1.0 if self.npv else costs.invoiced_years(o))
            if abs(more) > 1e-12 and tau <= year < tau + costs.RESERVED_TERM_YEARS[o.acquisition]:
                out.append((more * o.price_usd_per_hour * self.factor(oid, tau) * HOURS_PER_YEAR, v, oid))
        return out

    def npv_expr(self):
        terms = [self.discount(t) * self.spend(t, "usd") for t in self.years]
        terms += [-self.discount(t + 1) * c * v for t in self.years for c, v, _ in self.resale.get(t, [])]
        terms += [c * v for c, v, _ in self.beyond]
        return pulp.lpSum(terms)

    def total_cost(self):
        """The objective's cost: the NPV (multi-year) or the first year's cost."""
        return self.npv_expr() if self.npv else self.spend(self.first, "usd")

    def rental_prices(self) -> dict[str, float]:
        """Rental variable name -> its coefficient in the objective (an NPV's discounted)."""
        return {v.name: c * (self.discount(t) if self.npv else 1.0)
                for (t, comp), terms in self.cash.items() if comp == "rental" for c, v, _ in terms}

    def spare_pool(self, oid: str, t: int) -> tuple[str, int]:
        """The N+1 pool of owned offer oid in year t, named (its first offer, t): the owned offers
        holding systems that year in its data.colocation.spare_pool_of (one system type at one site).
        One idle system there is a spare for any of them (fleet.define_spare_variables)."""
        if not self._spare_pools:
            for (o, year) in sorted(self.held_terms):
                self._spare_pools.setdefault(spare_pool_of(self.offer(o)) + (year,), []).append(o)
        return self._spare_pools[spare_pool_of(self.offer(oid)) + (t,)][0], t

    def spare_pool_offers(self, pool: tuple[str, int]) -> list[str]:
        """The owned offers in an N+1 pool (spare_pool's name for it)."""
        oid, t = pool
        return self._spare_pools[spare_pool_of(self.offer(oid)) + (t,)]

    def cap_of(self, o) -> int:
        return o.max_systems if o.max_systems is not None else self.scenario.policy.max_systems_per_offer

    def edge_cap_of(self, o) -> int | None:
        """An edge offer's cap on the units held: its max_systems, or policy.max_systems_per_offer
        where the scenario sets it; else none (the default cap, 512, is a data centre's: a fleet of
        1,200 robots buys 1,200 devices)."""
        if o.max_systems is not None or "max_systems_per_offer" in self.scenario.policy.model_fields_set:
            return self.cap_of(o)
        return None
