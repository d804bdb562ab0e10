"""The money of a multi-year plan, re-derived from its purchases, the catalog and the scenario's trends
(see planner/verify/years.py for demand, budgets and power).

  prices     a purchase in year t costs purchase_usd f(t) per system, a reserved contract
             price_usd_per_hour f(t) 8760 a year, f(t) = (1 - price_decline_per_year)^(t-1); total =
             unit price x systems
  fleet      owned systems held in year t = those bought in tau <= t < tau + life (useful life in whole
             years; reserved: the contract's years); new_this_year = that year's purchases; each row's
             accelerators, power, acquisition and provider from the catalog; bought rows' purchase_usd
             = what the systems held were paid
  cash       capex_t = sum of that year's purchases (reserved fees are opex); opex_t >= support,
             hosting and idle power of the bought systems held + reserved fees + the fleet's
             system types x policy.cost_per_system_type_usd_year
  accounting annuitised_t - opex_t = sum over bought systems held of their yearly capital: the price
             less the discounted resale annuitised over the years held (nothing back: price_tau x
             annuity(r, life)), plus, for a reservation whose term runs past the horizon, its fee x
             (costs.commitment_factor(years held) - 1): all its payments over the years held; a
             reservation paid up front (costs.prepaid) is opex of its first year, term x fee, and
             capital term x fee x annuity(r, years held) in each year held; the fleet rows add up
             to annuitised_t, each bought row at least its fixed costs
  resale     a bought system leaves at the end of its life or of the horizon (start of year s, a years
             old) for price_tau x costs.exit_share(a, life): the market's residual (past the useful
             life too, down to its floor), or with the trend's resale_fraction rf, (1 - decline)^a
             max(rf, 1 - (1 - rf) a / life)
  NPV        sum_t (capex_t + opex_t) / (1+r)^(t-1) - sum_t resale_t / (1+r)^t + reserved fees owed
             past the horizon, discounted the same way; totals are the sums of the years
"""

from __future__ import annotations

from collections import defaultdict

from planner.data.catalog import Catalog
from planner.data.constants import HOURS_PER_YEAR
from planner.data.scenario import Scenario
from planner.data.years import SPENT_KEY, budget_basis, kept_at_exit, life_years, trend_for
from planner.physics import costs
from planner.verify.common import REL, USD, Verification, close
from planner.verify.fleet import complexity_usd
from planner.verify.numbers import check_fleet_rows, check_utilisation, whole

DEVICES = ("edge", "workstation")
"""System kinds an edge job may buy as devices: no hosting or idle power is charged for those (a device
is not in the data center), and the multi-year readout reports their purchase_usd as 0."""


def check_year_money(plan: dict, s: Scenario, cat: Catalog, v: Verification) -> None:
    years, last, rate = plan["years"], s.horizon_years, s.policy.discount_rate
    site = s.site

    def factor(o, t: int) -> float:
        return (1.0 - trend_for(s, cat.systems[o.system].accelerator).decline) ** (t - 1)

    def unit_price(o, t: int) -> float:
        return o.purchase_usd * factor(o, t) if o.acquisition == "buy" else o.price_usd_per_hour * factor(o, t) * HOURS_PER_YEAR

    def term(o) -> int:
        return life_years(o) if o.acquisition == "buy" else costs.RESERVED_TERM_YEARS[o.acquisition]

    def exit_usd(o, tau: int, age: int) -> float:
        """what one system of o bought in year tau fetches leaving `age` years later: the market's
        share, or the trend's book value where the scenario sets resale_fraction"""
        tr = trend_for(s, cat.systems[o.system].accelerator)
        return unit_price(o, tau) * costs.exit_share(age, o.useful_life_years, tr.resale_fraction, tr.decline,
                                                     kept_at_exit(s, o, age))

    bought: dict[str, dict[int, int]] = defaultdict(dict)  # offer -> year -> systems acquired
    for y in years:
        t = y["year"]
        for b in y["purchases"]:
            o = cat.offers.get(b["offer"])
            where = f"year {t}: purchase of '{b['offer']}'"
            if not v.check("catalog", o is not None and o.system in cat.systems and o.acquisition in ("buy", *costs.RESERVED_TERM_YEARS)
                           and (b["system"], b["acquisition"]) == (o.system, o.acquisition),
                           f"{where} does not match an owned catalog offer"):
                continue
            n = b["systems"]
            v.check("plan", whole(n) and n >= 1 and o.id not in bought or t not in bought[o.id],
                    f"{where}: {n} systems is not a whole number >= 1, or the offer is bought twice")
            bought[o.id][t] = n
            want = unit_price(o, t)
            v.check("costs", close(b["unit_price_usd"], want, 1e-6, 0.01) and close(b["total_usd"], want * n, 1e-6, 0.01),
                    f"{where}: ${b['unit_price_usd']:,.2f} x {n} = ${b['total_usd']:,.2f}; the catalog price "
                    f"with the year's trend is ${want:,.2f} x {n} = ${want * n:,.2f}")
            ahead = costs.RESERVED_TERM_YEARS.get(o.acquisition, 1) if costs.prepaid(o) else 0
            past = max(0, t + ahead - 1 - last) if ahead else 0
            v.check("costs", ("paid_upfront_usd" in b) == bool(ahead) and close(b.get("paid_upfront_usd", 0.0), want * n * ahead, 1e-6, 0.01)
                    and close(b.get("paid_past_horizon_usd", 0.0), want * n * past, 1e-6, 0.01),
                    f"{where}: paid up front ${b.get('paid_upfront_usd')} (${b.get('paid_past_horizon_usd')} past the "
                    f"horizon); the offer is paid {o.payment}" + (f": {ahead} years of ${want * n:,.2f}" if ahead else ""))

    def held(oid: str, t: int) -> int:
        o = cat.offers[oid]
        return sum(n for tau, n in bought[oid].items() if tau <= t < tau + term(o))

    npv = 0.0
    for y in years:
        t = y["year"]
        rows = {f["offer"]: f for f in y["fleet"]}
        check_fleet_rows(y["fleet"], cat, v, f"year {t}: ", purchase=False)
        for oid in sorted(set(rows) | set(bought)):
            o = cat.offers.get(oid)
            if o is None or not costs.is_owned(o):
                continue
            f = rows.get(oid, {})
            want = held(oid, t)
            v.check("plan", f.get("systems", 0) == want and f.get("new_this_year", 0) == bought[oid].get(t, 0),
                    f"year {t}: '{oid}' holds {f.get('systems', 0)} systems ({f.get('new_this_year', 0)} new); its "
                    f"purchases give {want} ({bought[oid].get(t, 0)} new)")
        capex = capital = fixed_opex = 0.0
        for oid, per_year in bought.items():
            o = cat.offers[oid]
            system = cat.systems[o.system]
            for tau, n in per_year.items():
                price = unit_price(o, tau)
                if tau == t and o.acquisition == "buy":
                    capex += price * n
                if not tau <= t < tau + term(o):
                    continue
                if o.acquisition == "buy":
                    fixed = costs.owned_fixed_usd_per_year(o, system, site, rate)
                    held_years = min(last, tau + term(o) - 1) + 1 - tau
                    capital += costs.held_capital_usd_per_year(price, rate, o.useful_life_years, held_years,
                                                               exit_usd(o, tau, held_years)) * n
                    kept = 0.0 if system.kind in DEVICES else fixed["hosting"] + fixed["power"] + fixed["ops"]
                    fixed_opex += (price * site.support_fraction_per_year + kept) * n
                elif costs.prepaid(o):  # the term's fees in its first year; accounted as capital over the years held
                    paid = price * term(o) * n
                    held_years = min(last, tau + term(o) - 1) + 1 - tau
                    fixed_opex += paid if tau == t else 0.0
                    capital += paid * costs.annuity(rate, held_years) - (paid if tau == t else 0.0)
                else:
                    fixed_opex += price * n  # (a term past the horizon: all its payments over the years held)
                    capital += price * n * (costs.commitment_factor(o, rate, last + 1 - tau) - 1.0)
        fixed_opex += complexity_usd(y["fleet"], s)
        v.check("costs", close(y["capex_usd"], capex), f"year {t}: capex ${y['capex_usd']:,.2f}; the year's "
                f"purchases cost ${capex:,.2f}")
        v.check("costs", y["opex_usd"] >= fixed_opex * (1 - REL) - USD,
                f"year {t}: opex ${y['opex_usd']:,.2f}; the systems held cost at least ${fixed_opex:,.2f} to "
                "keep (support, hosting, idle power, reserved fees, fleet complexity)")
        v.check("costs", close(y["annuitised_cost_usd"] - y["opex_usd"], capital),
                f"year {t}: accounting cost ${y['annuitised_cost_usd']:,.2f} less opex ${y['opex_usd']:,.2f} "
                f"is not the purchases' annuities ${capital:,.2f}")
        rows_cost = sum(f["cost_usd_per_year"] for f in y["fleet"])
        v.check("costs", close(rows_cost, y["annuitised_cost_usd"]),
                f"year {t}: fleet rows cost ${rows_cost:,.2f}, the year ${y['annuitised_cost_usd']:,.2f}")
        for f in y["fleet"]:
            o = cat.offers.get(f["offer"])
            if o is not None and o.acquisition == "buy" and o.id in bought:
                paid = sum(unit_price(o, tau) * n for tau, n in bought[o.id].items() if tau <= t < tau + term(o))
                got = f.get("purchase_usd") or 0.0
                v.check("costs", close(got, paid, 1e-6, 0.01) or (got == 0 and cat.systems[o.system].kind in DEVICES),
                        f"year {t}: '{o.id}' reports purchase ${f.get('purchase_usd')}; its systems cost ${paid:,.2f}")
            v.check("costs", f["cost_usd_per_year"] >= -USD, f"year {t}: '{f['offer']}' costs ${f['cost_usd_per_year']}")
        resale = 0.0
        for oid, per_year in bought.items():
            o = cat.offers[oid]
            if o.acquisition != "buy":
                continue
            for tau, n in per_year.items():
                if min(last, tau + term(o) - 1) == t:
                    resale += n * exit_usd(o, tau, t + 1 - tau)
        v.check("costs", close(y["resale_usd"], resale), f"year {t}: resale ${y['resale_usd']:,.2f}; the systems "
                f"leaving fetch ${resale:,.2f}")
        v.check("costs", close(y["cost_usd"], y["capex_usd"] + y["opex_usd"]),
                f"year {t}: cost ${y['cost_usd']:,.2f} is not capex + opex")
        if y.get("budget_usd"):
            spent = y[SPENT_KEY[budget_basis(s)]]
            v.check("budget", close(y.get("budget_used") or 0.0, spent / y["budget_usd"], 0.0, 6e-5),
                    f"year {t}: budget_used {y.get('budget_used')} of ${y['budget_usd']:,.0f} for ${spent:,.2f} "
                    f"({budget_basis(s)})")
        check_utilisation(y["utilisation"], rows, cat, v, None, f"year {t}: ")
        npv += (1.0 + rate) ** -(t - 1) * y["cost_usd"] - (1.0 + rate) ** -t * y["resale_usd"]
    for oid, per_year in bought.items():
        o = cat.offers[oid]
        if o.acquisition in costs.RESERVED_TERM_YEARS and not costs.prepaid(o):
            npv += sum(n * unit_price(o, tau) * (1.0 + rate) ** -(h - 1) for tau, n in per_year.items()
                       for h in range(tau, tau + term(o)) if h > last)
    v.check("costs", close(plan["npv_usd"], npv), f"NPV ${plan['npv_usd']:,.2f}; the years' cash and resale "
            f"discounted at {rate:g} give ${npv:,.2f}")
    v.check("costs", plan.get("discount_rate") == rate, f"discount rate {plan.get('discount_rate')}, policy {rate}")
    v.check("costs", close(plan["salvage_usd"], years[-1]["resale_usd"]) and close(plan["cash_total_usd"],
            sum(y["cost_usd"] for y in years)) and close(plan["annuitised_total_usd"],
            sum(y["annuitised_cost_usd"] for y in years)),
            "salvage, cash total or accounting total is not the sum of the years")
    v.check("plan", plan["fleet"] == years[-1]["fleet"], "the plan's fleet is not the final year's fleet")
