"""The verifier's fleet-wide checks: capacity, availability, budget, power and costs adding up
(see planner/verify.py for the per-placement checks)."""

from __future__ import annotations

import math

from planner.data import sharing
from planner.data.catalog import Catalog, Offer, is_held
from planner.data.colocation import spare_pool_of
from planner.data.constants import HOURS_PER_YEAR
from planner.data.scenario import Scenario
from planner.data.years import budget_basis
from planner.physics import costs
from planner.verify.common import (
    REL,
    TIGHT,
    USD,
    Ledger,
    Verification,
    close,
    offer_problem,
    owned,
)


def system_types(rows) -> dict[str, int]:
    """System type -> systems of that type among fleet rows (hosted-API rows are no system)."""
    out: dict[str, int] = {}
    for f in rows:
        if f["acquisition"] != "api" and f["systems"] > 0:
            out[f["system"]] = out.get(f["system"], 0) + f["systems"]
    return out


def complexity_usd(rows, s: Scenario) -> float:
    """Fleet complexity of a year's fleet: its system types x policy.cost_per_system_type_usd_year."""
    return len(system_types(rows)) * s.policy.cost_per_system_type_usd_year


def check_fleet(fleet: dict, s: Scenario, cat: Catalog, v: Verification, ledger: Ledger, costed: bool = True) -> None:
    used = set(ledger.uses)
    types, rate = system_types(fleet.values()), s.policy.cost_per_system_type_usd_year
    v.check("capacity", used <= set(fleet), f"placements use offers missing from the fleet: "
                                            f"{sorted(used - set(fleet))}")
    site_kw = capex = 0.0
    pools = _owned_pools(fleet, cat)
    for oid, f in sorted(fleet.items()):
        o = cat.offers.get(oid)
        if not v.check("catalog", o is not None and o.system == f["system"], f"fleet offer '{oid}' is not in the catalog"):
            continue
        system = cat.systems[o.system]
        per, n_all = system.accelerators, f["systems"]
        v.check("policy", not offer_problem(o, s, cat), f"fleet '{oid}': {offer_problem(o, s, cat)}")
        v.check("plan", f["accelerators"] == n_all * per and n_all >= 1,
                f"fleet '{oid}': {n_all} systems reported as {f['accelerators']} accelerators")
        n = n_all - ledger.edge_units.get(oid, 0)  # systems hosting serving and batch
        cap = o.max_systems if o.max_systems is not None else (s.policy.max_systems_per_offer if owned(o) else None)
        # (the model caps a rented offer's serving systems and each batch run's apart, rows.availability)
        most = n if owned(o) else max(n - run_systems(ledger, oid, per), run_systems(ledger, oid, per))
        v.check("availability", cap is None or most <= cap, f"'{oid}': {most} systems, at most {cap} available")
        spare = 1 if s.policy.redundancy == "n+1" else 0  # N+1: one idle system in each serving pool
        if owned(o):
            alone = len(pools.get(spare_pool_of(o), [])) < 2  # (several offers: checked as one pool below)
            pool = n - (spare if ledger.serve_slots[oid] and alone else 0)
            v.check("redundancy" if spare else "capacity", ledger.serve_slots[oid] <= pool * per + 1e-6,
                    f"'{oid}': serving needs {ledger.serve_slots[oid]:g} accelerators at once, {n * per} held"
                    + (" with one spare system kept free (N+1)" if spare else ""))
            v.check("capacity", all(a <= n * per for a in ledger.batch_fit.get(oid, [])),
                    f"'{oid}': a batch run needs {max(ledger.batch_fit.get(oid, [0]))} accelerators, {n * per} held")
            _check_turns(oid, n * per, ledger, v)
            v.check("capacity", ledger.slot_hours[oid] <= HOURS_PER_YEAR * n * per * (1 + TIGHT) + ledger.hours_slack[oid],
                    f"'{oid}': {ledger.slot_hours[oid]:,.0f} accelerator-hours a year on {n * per} accelerators")
        else:
            rented = sum(math.ceil(a / per - TIGHT) + spare for a in ledger.rent_slots[oid].values() if a)
            batch = run_systems(ledger, oid, per)
            v.check("capacity", rented + batch <= n,
                    f"'{oid}': placements need {rented + batch} systems at their peak ({rented} for serving all "
                    f"the hours it runs, {batch} for the largest batch run), {n} rented")
            v.check("costs", n <= rented + batch,
                    f"'{oid}': {n} systems rented where the placements need {rented + batch} (an idle "
                    "rented system is never part of a cheapest plan)")
        if o.acquisition == "buy" and n > 0:
            site_kw += system.power_kw * n
            capex += o.purchase_usd * n
        if not costed:
            continue
        expected, exact = _offer_cost(o, system, n, s, ledger)
        most = expected if exact else (ledger.rent_usd.get(oid, 0.0) + ledger.edge_usd.get(oid, 0.0)
                                       + o.price_usd_per_hour * HOURS_PER_YEAR * n)
        if rate:  # its share of its system type's complexity cost, by systems
            share = rate * n_all / types[f["system"]]
            expected, most = expected + share, most + share
        got = f["cost_usd_per_year"]
        hidden = ledger.rent_slack.get(oid, 0.0)  # batch rent behind the plan's rounded run shares
        v.check("costs", expected * (1 - REL) - USD - hidden <= got <= most * (1 + REL) + USD + hidden,
                f"'{oid}' costs ${got:,.2f}/yr; its systems and use cost ${expected:,.2f}"
                + ("" if exact else f" to ${most:,.2f} (spare rented systems held all year)"))
    if s.policy.redundancy == "n+1":
        _check_spare_pools(pools, fleet, cat, v, ledger)
    if s.site.power_cap_kw is not None:
        v.check("power", site_kw <= s.site.power_cap_kw * (1 + TIGHT) + 1e-6,
                f"bought systems draw {site_kw:,.1f} kW; the site allows {s.site.power_cap_kw:g} kW")
    if s.budget.capex_usd_per_year is not None and costed:
        v.check("budget", capex <= s.budget.capex_usd_per_year * (1 + 1e-5) + USD,
                f"purchases ${capex:,.0f}, capex cap ${s.budget.capex_usd_per_year:,.0f}")


def _owned_pools(fleet: dict, cat: Catalog) -> dict[tuple, list[str]]:
    """N+1 pool -> the fleet's owned offers in it."""
    out: dict[tuple, list[str]] = {}
    for oid in sorted(fleet):
        o = cat.offers.get(oid)
        if o is not None and owned(o):
            out.setdefault(spare_pool_of(o), []).append(oid)
    return out


def _check_spare_pools(pools: dict, fleet: dict, cat: Catalog, v: Verification, ledger: Ledger) -> None:
    """N+1 over a pool of several owned offers: their serving replicas fit with one system kept free."""
    for offers in pools.values():
        slots = sum(ledger.serve_slots[oid] for oid in offers)
        if len(offers) < 2 or not slots:
            continue
        per = cat.systems[cat.offers[offers[0]].system].accelerators
        n = sum(fleet[oid]["systems"] - ledger.edge_units.get(oid, 0) for oid in offers)
        v.check("redundancy", slots <= (n - 1) * per + 1e-6,
                f"{' and '.join(repr(o) for o in offers)}: serving needs {slots:g} accelerators at once, "
                f"{n * per} held with one spare system kept free among them (N+1)")


def run_systems(ledger: Ledger, oid: str, per: int) -> int:
    """Systems of a rented offer the largest batch run on it needs, rented by the hour beside its
    serving rentals (readout.held_systems counts both)."""
    return max([math.ceil(a / per) for a in ledger.batch_fit.get(oid, [])] or [0])


def _offer_cost(o: Offer, system, n: int, s: Scenario, ledger: Ledger) -> tuple[float, bool]:
    """Yearly cost of an offer from its systems and the use placements make of it; `exact` is False
    where the plan may legitimately hold more rented systems than the minimum (then it is a floor)."""
    oid, per = o.id, system.accelerators
    usd = ledger.edge_usd.get(oid, 0.0)
    if owned(o):
        fixed = sum(costs.owned_fixed_usd_per_year(o, system, s.site, s.policy.discount_rate, s.horizon_years, s.kept).values())
        busy = costs.busy_usd_per_hour(o, system, s.site) / per
        return usd + fixed * n + busy * ledger.slot_hours[oid], True
    usd += ledger.rent_usd.get(oid, 0.0)
    systems = 0
    for key, acc in ledger.rent_slots[oid].items():
        r = math.ceil(acc / per - TIGHT)
        systems += r
        usd += o.price_usd_per_hour * ledger.rent_hours[oid][key] * r
    return usd, systems + run_systems(ledger, oid, per) == n


def cash_first_year(plan: dict, s: Scenario, cat) -> float:
    """What a single-period plan's first year pays, from its rows: the purchases in full, and its
    yearly cost less the purchases' capital and less what each reservation carries beyond its first
    year's invoices (costs.commitment_factor - costs.invoiced_years of a year's fees: a term running
    past the horizon carries more; one paid up front was invoiced in full)."""
    parts = plan.get("cost_breakdown_usd_per_year") or {}
    out = plan["total_cost_usd_per_year"] - parts.get("capital", 0.0)
    for f in plan["fleet"]:
        o = cat.offers.get(f["offer"])
        if o is None:
            continue
        if o.acquisition == "buy" and not is_held(o):
            out += f.get("purchase_usd") or 0.0
        if o.acquisition in costs.RESERVED_TERM_YEARS:
            more = costs.commitment_factor(o, s.policy.discount_rate, s.horizon_years) - costs.invoiced_years(o)
            out -= more * o.price_usd_per_hour * HOURS_PER_YEAR * f["systems"]
    return out


def check_totals(plan: dict, fleet: dict, s: Scenario, v: Verification, cat: Catalog) -> None:
    total = plan["total_cost_usd_per_year"]
    fleet_sum = sum(f["cost_usd_per_year"] for f in fleet.values())
    v.check("costs", close(fleet_sum, total), f"fleet costs add to ${fleet_sum:,.2f}, total ${total:,.2f}")
    parts = plan.get("cost_breakdown_usd_per_year") or {}
    v.check("costs", close(sum(parts.values()), total),
            f"cost breakdown adds to ${sum(parts.values()):,.2f}, total ${total:,.2f}")
    jobs_sum = sum(j["cost_usd_per_year"] or 0.0 for j in plan["jobs"])
    v.check("costs", close(jobs_sum, total, REL, USD * max(1, len(plan["jobs"]))),
            f"job costs add to ${jobs_sum:,.2f}, total ${total:,.2f}")
    b = s.budget
    if "years" not in plan and "cash_first_year_usd" in plan:
        cash = cash_first_year(plan, s, cat)
        v.check("costs", close(plan["cash_first_year_usd"], cash, REL, USD * max(1, len(fleet))),
                f"first year's cash ${plan['cash_first_year_usd']:,.2f}; its purchases, reservation invoices and "
                f"running costs come to ${cash:,.2f}")
    if b.usd_per_year is not None and "years" not in plan:
        cash = budget_basis(s) == "cash"
        spent = plan.get("cash_first_year_usd", 0.0) if cash else total
        v.check("budget", plan.get("budget_basis") == budget_basis(s) and spent <= b.usd_per_year * (1 + 1e-5) + USD,
                f"${spent:,.0f} {'paid in the first year' if cash else 'per year'} ({plan.get('budget_basis')}) "
                f"exceeds budget.usd_per_year ${b.usd_per_year:,.0f} ({budget_basis(s)})")
    if b.opex_usd_per_year is not None and "years" not in plan:
        opex = total - parts.get("capital", 0.0)
        v.check("budget", opex <= b.opex_usd_per_year * (1 + 1e-5) + USD,
                f"running costs ${opex:,.0f} per year exceed budget.opex_usd_per_year ${b.opex_usd_per_year:,.0f}")
    if "years" not in plan:
        v.check("costs", close(plan["total_cost_usd_over_horizon"], total * s.horizon_years),
                f"horizon total ${plan['total_cost_usd_over_horizon']:,.0f} is not {s.horizon_years} x ${total:,.0f}")


def check_breakdown(plan: dict, fleet: dict, s: Scenario, v: Verification, ledger: Ledger) -> None:
    """The cost components a reader re-derives from the fleet alone (single-period plans): ops is
    site.ops_usd_per_system_year for every bought system that hosts serving or training (edge units
    ride on robots: no data-centre staff), complexity the fleet's system types x
    policy.cost_per_system_type_usd_year, api the hosted APIs' rows."""
    parts = plan.get("cost_breakdown_usd_per_year") or {}
    bought = sum(f["systems"] - ledger.edge_units.get(oid, 0) for oid, f in fleet.items() if f["acquisition"] == "buy")
    ops = bought * s.site.ops_usd_per_system_year
    v.check("costs", close(parts.get("ops", 0.0), ops, REL, USD),
            f"cost breakdown ops ${parts.get('ops', 0.0):,.2f}; {bought} bought systems at "
            f"${s.site.ops_usd_per_system_year:,.0f} a year (site.ops_usd_per_system_year) cost ${ops:,.2f}")
    types, rate = system_types(fleet.values()), s.policy.cost_per_system_type_usd_year
    got = parts.get("complexity", 0.0)
    v.check("costs", close(got, len(types) * rate, REL, USD),
            f"cost breakdown complexity ${got:,.2f}; {len(types)} system types in the fleet at ${rate:,.0f} a year "
            f"(policy.cost_per_system_type_usd_year) cost ${len(types) * rate:,.2f}")
    api = sum(f["cost_usd_per_year"] for f in fleet.values() if f["acquisition"] == "api")
    v.check("costs", close(parts.get("api", 0.0), api, REL, USD),
            f"cost breakdown api ${parts.get('api', 0.0):,.2f}; the hosted-API rows cost ${api:,.2f}")


def _check_turns(oid: str, held: int, ledger: Ledger, v: Verification) -> None:
    """Each run with a deadline fits beside the serving jobs it cannot pause for, and beside the runs
    of other jobs where neither may wait for the other (data/sharing.py: a 35-hour run on the GPUs
    that serving holds 12 hours a day takes 70 hours, past a 48-hour deadline)."""
    serving, runs = ledger.serve_parts.get(oid, []), ledger.batch_runs.get(oid, [])

    def beside(job, hours, deadline, runs_per_year) -> list:
        return [(j, a) for j, h, a in serving if j != job and sharing.beside_serving(hours, deadline, runs_per_year, h)]

    for job, n, hours, deadline, runs_per_year in runs:
        need = n + sum(a for _, a in beside(job, hours, deadline, runs_per_year))
        v.check("deadline", need <= held + 1e-6,
                f"'{oid}': a {hours:,.1f}-hour run of '{job}' cannot pause for the serving beside it and meet its "
                f"{deadline:g}-hour deadline, and does not fit beside it: {need:g} accelerators at once, {held} held")
    for k, (ja, na, ha, da, ra) in enumerate(runs):
        for jb, nb, hb, db, rb in runs[k + 1:]:
            if ja != jb and sharing.side_by_side((ha, da, ra), (hb, db, rb)):
                both = {j for j, _ in beside(ja, ha, da, ra)} & {j for j, _ in beside(jb, hb, db, rb)}
                need = na + nb + sum(a for j, h, a in serving if j in both)
                v.check("deadline", need <= held + 1e-6,
                        f"'{oid}': runs of '{ja}' and '{jb}' can neither wait for the other within their deadlines, "
                        f"and do not fit side by side: {need:g} accelerators at once, {held} held")
