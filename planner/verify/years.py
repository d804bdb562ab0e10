"""The verifier's checks for multi-year plans (see planner/verify/plan.py for the single-period ones)."""

from __future__ import annotations

from planner.data.catalog import Catalog
from planner.data.jobs import demands_of_job
from planner.data.scenario import Scenario
from planner.data.years import SPENT_KEY, budget_basis
from planner.verify.common import (
    REL,
    TIGHT,
    USD,
    Verification,
    close,
    offer_problem,
)
from planner.verify.fleet import system_types
from planner.verify.years_cash import check_year_money


def verify_years(plan: dict, s: Scenario, cat: Catalog, v: Verification) -> None:
    """Multi-year plans: one entry per year with the demand re-derived from the scenario's growth,
    cash = capex + opex within that year's caps, its complexity cost its system types x the policy's rate, each year's fleet allowed by policy and within
    availability and site power, and the horizon totals adding up."""
    years = plan["years"]
    v.check("years", [y["year"] for y in years] == list(range(1, s.horizon_years + 1)),
            f"plan has years {[y['year'] for y in years]}, horizon {s.horizon_years}")
    jobs = {j.name: j for j in s.jobs}
    edge_need = {t: sum(p.units for j in jobs.values() for p in demands_of_job(j, t) if p.kind == "edge")
                 for t in range(1, s.horizon_years + 1)}
    for y in years:
        t = y["year"]
        want = {p.key: {"serve": p.users, "edge": p.units}.get(p.kind, p.runs_per_year)
                for j in jobs.values() for p in demands_of_job(j, t)}
        got = y.get("demand", {})
        v.check("years", sorted(got) == sorted(want) and all(close(got[k], want[k], 1e-3, 1e-3) for k in want),
                f"year {t}: demand {got}, the scenario's growth gives {want}")
        # edge units may be bought ahead of growing demand (a yearly budget spreads their purchases),
        # never beyond the most the edge jobs need in this year or a later one
        ahead = max((n for tau, n in edge_need.items() if tau >= t), default=0)
        edge_held = sum(f.get("edge_units", 0) for f in y["fleet"])
        v.check("power", 0 <= edge_held <= ahead,
                f"year {t}: {edge_held} systems said to be edge units; the edge jobs need {edge_need.get(t, 0)} "
                f"this year and at most {ahead} in any year from it")
        v.check("costs", close(y["cost_usd"], y["capex_usd"] + y["opex_usd"], REL, USD),
                f"year {t}: cost ${y['cost_usd']:,.2f} is not capex + opex")
        spent = y[SPENT_KEY[budget_basis(s)]]
        for key, amount in (("budget_usd", spent), ("budget_capex_usd", y["capex_usd"]),
                            ("budget_opex_usd", y["opex_usd"])):
            cap = y.get(key)
            v.check("budget", cap is None or amount <= cap * (1 + 1e-5) + USD,
                    f"year {t}: ${amount:,.0f} exceeds {key} ${cap:,.0f}" if cap is not None else "")
        rate = s.policy.cost_per_system_type_usd_year
        if rate or "complexity_usd" in y:
            types = system_types(y["fleet"])
            v.check("costs", close(y.get("complexity_usd") or 0.0, len(types) * rate, REL, USD),
                    f"year {t}: complexity ${y.get('complexity_usd') or 0.0:,.2f}; {len(types)} system types in the "
                    f"year's fleet at ${rate:,.0f} a year (policy.cost_per_system_type_usd_year) cost "
                    f"${len(types) * rate:,.2f}")
        site_kw = 0.0
        for f in y["fleet"]:
            if f["acquisition"] == "api":  # tokens from a hosted API: verify/api.py checks the final year's rows
                v.check("catalog", f["offer"] in cat.api_offers, f"year {t}: API offer '{f['offer']}' is not in the catalog")
                continue
            o = cat.offers.get(f["offer"])
            if not v.check("catalog", o is not None, f"year {t}: fleet offer '{f['offer']}' is not in the catalog"):
                continue
            v.check("policy", not offer_problem(o, s, cat), f"year {t}: '{o.id}': {offer_problem(o, s, cat)}")
            if o.acquisition == "buy" and cat.systems[o.system].kind not in ("edge",) and f["systems"]:
                at_site = f["systems"] - f.get("edge_units", 0)  # edge units are deployed with their devices
                site_kw += f["power_kw"] * max(at_site, 0) / f["systems"]
        if s.site.power_cap_kw is not None:
            v.check("power", site_kw <= s.site.power_cap_kw * (1 + TIGHT) + 1e-6,
                    f"year {t}: bought systems draw {site_kw:,.1f} kW; the site allows {s.site.power_cap_kw:g} kW")
        v.check("policy", not y.get("unserved") or s.budget.mode == "max-coverage",
                f"year {t}: {sorted(y['unserved'])} left unserved outside max-coverage mode")
    check_year_money(plan, s, cat, v)
    cash = sum(y["cost_usd"] for y in years)
    v.check("costs", close(cash, plan["total_cost_usd_over_horizon"]),
            f"years add to ${cash:,.0f}, horizon total ${plan['total_cost_usd_over_horizon']:,.0f}")
    mean = sum(y["annuitised_cost_usd"] for y in years) / len(years)
    v.check("costs", close(mean, plan["total_cost_usd_per_year"]),
            f"years average ${mean:,.0f} per year (accounting view), plan says ${plan['total_cost_usd_per_year']:,.0f}")
    final = sum(f["cost_usd_per_year"] for f in plan["fleet"])
    v.check("costs", close(final, years[-1]["annuitised_cost_usd"]),
            f"final fleet costs ${final:,.0f}, final year ${years[-1]['annuitised_cost_usd']:,.0f}")
