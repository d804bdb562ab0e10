"""Owned systems and edge units in the fleet MILP: what is bought or reserved, when, and what it
costs in each year, in the objective's view (model.py).

  p[o,t] in {0..cap_o}  systems of buy offer o bought at the start of year t at P[o,t] = purchase_o f_a(t),
                        held for their useful life L_o (whole years) or to the end of the horizon
  k[o,t] in {0..cap_o}  reserved-Ny contracts of offer o starting in year t, held N years
  held(o,t)             the purchases and contracts still held in year t, shared by every job

Annualised (one year): p[o,1] costs owned_fixed_usd_per_year (capital: the purchase less the discounted
residual value at the end of the horizon or of the life, whichever comes first, annuitised over it;
support, ops, hosting, idle power); k[o,1] its rate x 8760.
NPV (years 1..H): P[o,t] p[o,t] is capex in year t; support (P x support fraction), ops, hosting and
idle power are paid each year it is held; reserved contracts pay rate x f(t) x 8760 each year of the
term (terms running past the horizon are discounted into `beyond`); one paid up front (costs.prepaid)
pays the whole term in its first year ('prepaid', _prepaid). A bought system leaves the fleet at the
end of its life or of the horizon (start of year s) after a years of its life L and fetches
P[o,tau] x costs.exit_share(a, L): the market's residual, as a one-year plan reads it (a system
retired at the end of its life still sells; one the horizon's end finds within its life is valued
at the market's price itself where policy.end_of_horizon keeps it: years.kept_at_exit), or with the
trend's resale_fraction rf, max(rf, 1 - (1 - rf) a / L) at the prices of the day ((1 - decline)^a:
used hardware tracks new prices). The accounting view (capital, per year held)
is costs.held_capital_usd_per_year: the purchase less the discounted sale annuitised over the years
held, as a one-year plan's capital, so that one fleet costs the same a year in both.

Edge units e[d,i,o,t] (integer) are bought like systems but serve one demand and are not shared;
their capital is a system's (costs.capital_usd_per_year in one year, the same held capital over years).
"""

from __future__ import annotations

import math

import pulp

from planner.data.constants import HOURS_PER_YEAR
from planner.data.years import kept_at_exit, life_years
from planner.physics import costs



def resale_value(m, oid: str, bought: int, sold: int) -> float:
    """Value of one system bought at the start of year `bought`, sold at the start of year `sold`
    (costs.exit_share)."""
    o, tr = m.offer(oid), m.trend(oid)
    share = costs.exit_share(sold - bought, o.useful_life_years, tr.resale_fraction, tr.decline,
                             kept_at_exit(m.scenario, o, sold - bought))
    return o.purchase_usd * m.factor(oid, bought) * share


def _purchase(m, oid: str, t: int, var, yearly: dict[str, float], fleet: bool = True) -> None:
    """Cash, accounting and resale terms of a purchase of offer oid in year t (npv objective; fleet:
    the systems join the shared fleet; edge units do not)."""
    o, last, rate = m.offer(oid), m.last, m.scenario.policy.discount_rate
    price = o.purchase_usd * m.factor(oid, t)
    out = min(last, t + life_years(o) - 1)  # its last year held: the end of its life or of the horizon
    value = resale_value(m, oid, t, out + 1)
    capital = costs.held_capital_usd_per_year(price, rate, o.useful_life_years, out + 1 - t, value)
    m.pay(t, price, var, oid)
    for h in range(t, out + 1):
        if fleet:
            m.held_terms.setdefault((oid, h), []).append(var)
        m.cost(h, "support", price * m.scenario.site.support_fraction_per_year, var, oid)
        for comp, usd in yearly.items():
            m.cost(h, comp, usd, var, oid)
        m.capital.setdefault(h, []).append((capital, var, oid))
    if value > 0:
        m.resale.setdefault(out, []).append((value, var, oid))


def _prepaid(m, oid: str, t: int, var) -> None:
    """A reservation paid up front in year t: the term's fees in that year's cash (opex, 'prepaid'),
    the systems held for the term (within the horizon), and, in the accounting view, the payment
    annuitised over the years held, as a purchase's capital with nothing back."""
    o, rate = m.offer(oid), m.scenario.policy.discount_rate
    term = costs.RESERVED_TERM_YEARS[o.acquisition]
    paid = o.price_usd_per_hour * m.factor(oid, t) * HOURS_PER_YEAR * term
    m.cost(t, "prepaid", paid, var, oid)
    out = min(m.last, t + term - 1)
    for h in range(t, out + 1):
        m.held_terms.setdefault((oid, h), []).append(var)
        m.capital.setdefault(h, []).append((paid * costs.annuity(rate, out + 1 - t), var, oid))


def _used_owned(m) -> set[str]:
    return {oid for pairs in (*m.serve_pairs.values(), *m.batch_pairs.values()) for _, oid in pairs}


def define_owned_variables(m) -> None:
    """p[o,t] purchases and k[o,t] reserved contracts of owned offers some pair uses, the held fleet
    they make, and their costs (see the module docstring)."""
    site, rate = m.scenario.site, m.scenario.policy.discount_rate
    used = _used_owned(m)
    for oid, o in sorted(m.options.offers.items()):
        if not costs.is_owned(o) or oid not in used:
            continue
        system = m.system_of(oid)
        for t in m.acquirable(oid):
            store = m.p if o.acquisition == "buy" else m.k
            v = m.var(store, (oid, t), "Integer", 0, m.cap_of(o))
            if not m.npv:
                m.held_terms[(oid, t)] = [v]
                for comp, usd in costs.owned_fixed_usd_per_year(o, system, site, rate, m.scenario.horizon_years,
                                                                m.scenario.kept).items():
                    m.cost(t, comp, usd, v, oid)
                if o.acquisition == "buy":
                    m.pay(t, o.purchase_usd, v, oid)
            elif o.acquisition == "buy":
                fixed = costs.owned_fixed_usd_per_year(o, system, site, rate)
                _purchase(m, oid, t, v, {"hosting": fixed["hosting"], "power": fixed["power"], "ops": fixed["ops"]})
            elif costs.prepaid(o):
                _prepaid(m, oid, t, v)
            else:
                usd = o.price_usd_per_hour * m.factor(oid, t) * HOURS_PER_YEAR
                for h in range(t, t + costs.RESERVED_TERM_YEARS[o.acquisition]):
                    if h <= m.last:
                        m.held_terms.setdefault((oid, h), []).append(v)
                        m.cost(h, "reserved", usd, v, oid)
                    else:
                        m.beyond.append((m.discount(h) * usd, v, oid))


def define_edge_variables(m) -> None:
    """e[d,i,o,t] edge units bought in year t from the offers d may use (bought ones); they count
    as capex in year t and are held for their life (one year in a single-period plan, costed at
    a system's capital plus support); the demand row asks for units[d,t] held; the units of one offer held
    in a year stay within its cap (model.edge_cap_of), and each variable within the most units d asks
    for in any year (no plan that buys more is cheaper)."""
    rate = m.scenario.policy.discount_rate
    for dk, opts in sorted(m.options.edge.items()):
        most = max(math.ceil(m.demand_at(dk, t) - 1e-9) for t in m.years)
        for i, opt in enumerate(opts):
            for oid in m.options.offers_for(dk, opt.system):
                o = m.offer(oid)
                cap = m.edge_cap_of(o)
                for t in m.acquirable(oid):
                    v = m.var(m.e, (dk, i, oid, t), "Integer", 0, most if cap is None else min(cap, most))
                    if m.npv:
                        _purchase(m, oid, t, v, {}, fleet=False)
                        continue
                    m.cost(t, "capital", costs.capital_usd_per_year(o, rate, m.scenario.horizon_years, m.scenario.kept), v, oid)
                    m.cost(t, "support", o.purchase_usd * m.scenario.site.support_fraction_per_year, v, oid)
                    m.pay(t, o.purchase_usd, v, oid)


def edge_held(m, dk: str, t: int):
    """Demand dk's edge units in use in year t."""
    return pulp.lpSum(v for (d, _, oid, tau), v in sorted(m.e.items()) if d == dk and m.active(oid, tau, t))
