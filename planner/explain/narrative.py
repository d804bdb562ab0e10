"""Explanations: why a plan is what it is, and what to relax when there is none.

The chain of "because" for a plan: each placement's binding resource with its numbers (why); the
binding constraint families with their prices in the user's units (shadow.py: LPs with the fleet
fixed, and the LP relaxation for long-run prices; replanned.py: re-planned finite differences for
caps and targets); every unused catalog accelerator with the reason it cannot serve or the extra
cost of using it (whynot.py); the next-best distinct fleet; and the seeds' three checks per job
(three_checks.py).

diagnosis.py, for a scenario with no plan: an elastic copy of the MILP (penalised shortfall per constraint family: budget, capex,
opex, site power, demand) names what to relax and by how much; the suggested values are rounded up
so that re-planning with them finds a plan.
"""

from __future__ import annotations

import math

from planner.data import colocation, deadline
from planner.data.catalog import OWNED_PROVIDER, is_held
from planner.data.jobs import demand_factor
from planner.data.money import signed_usd as usd
from planner.explain import prices as shadow
from planner.explain import fleet_notes, replan, restricted, splits, whynot, whynot_limits
from planner.explain import three_checks as runit
from planner.explain.replanned import cap_rows, row, target_rows

# --- the explanation rows: binding constraint families with prices -------------------------------

def _fleet_words(fm, res) -> str:
    """How the short-run prices hold the fleet: the systems bought or reserved, or only hourly rentals."""
    held = {fm.offer(oid).acquisition for (oid, t), vs in fm.held_terms.items()
            if t == fm.last and any(round(res.values.get(v.name, 0.0)) > 0 for v in vs)}
    if not held:
        return "with the fleet as planned (hourly rentals or API tokens)"
    return "with the fleet you own" if held == {"buy"} else (
        "with the systems you reserve" if "buy" not in held else "with the systems you own and reserve")


RENTED_WORDS = "renting by the hour, as the plan does for it"
"""how a demand's price reads where the plan rents every system it runs on by the hour: the extra
unit is rented too, whatever the fleet owns (the price is that rent, not owned spare hours)"""


def _rented_only(fm, res) -> set[str]:
    """The demands whose every placement of the last year is on an hourly rental (on-demand, spot)."""
    used: dict[str, set] = {}
    for store in (fm.y, fm.x):
        for (d, _, oid, t), v in store.items():
            if t == fm.last and res.values.get(v.name, 0.0) > 1e-6:
                used.setdefault(d, set()).add(oid)
    for (d, oid, t), v in fm.r.items():
        if t == fm.last and res.values.get(v.name, 0.0) > 1e-6:
            used.setdefault(d, set()).add(oid)
    return {d for d, oids in used.items() if all(fm.offer(o).acquisition in ("on-demand", "spot") for o in oids)}


def _held(fm, res, dk: str) -> float:
    """Users (or rollouts) demand dk's replicas hold in the plan: whole replicas, or a pooled
    demand's load on its pool's replicas (a fraction), plus its API share."""
    d, need = fm.options.demands[dk], fm.demand_at(dk, fm.last)
    whole = round if not d.pool else float
    held = sum(fm.options.serve[k][i].users_per_replica * whole(res.values.get(v.name, 0.0))
               for (k, i, _, t), v in fm.y.items() if k == dk and t == fm.last)
    return held + sum(need * res.values.get(v.name, 0.0) for (k, _, t), v in fm.api.items() if k == dk and t == fm.last)


def _by_year(short, dk: str) -> str:
    """A multi-year plan's short-run price of demand dk in each year, in that year's dollars."""
    prices = short.by_year.get(dk, {}) if short.ok else {}
    if len(prices) < 2:
        return ""
    return " By year: " + ", ".join(f"{t}: {usd(p, 2)}" for t, p in sorted(prices.items())) + "."


def _unpriced(short) -> str:
    """Why a demand row has no short-run price: the LP with the fleet fixed did not solve."""
    return ("the re-solve that prices it, the plan's LP with its fleet fixed, was cut short by the time limit"
            if short.status == "not-solved" else f"the plan's LP with its fleet fixed ended {short.status}")


def _settled(r: dict, price) -> dict:
    """A demand row without a price settles nothing: neither binding nor slack ('open')."""
    return r if price is not None else {**r, "settled": False}


def _demand_rows(s, fm, res, short, long) -> list[dict]:
    """One price row per demand. The short-run price holds the fleet (and, in max-coverage mode,
    the unserved shares) as planned, so no penalty weight of the coverage objective enters it."""
    jobs = {j.name: j for j in s.jobs}
    rows = []
    held, rented = _fleet_words(fm, res), _rented_only(fm, res)
    when = f" in year {fm.last}" if fm.npv else ""
    modes = set(s.policy.acquisition)
    capacity, capital = (("buying capacity as needed", ", capital included") if "buy" in modes else
                         ("reserving capacity as needed", "") if modes & {"reserved-1y", "reserved-3y"} else
                         ("renting capacity as needed", ""))
    for dk, d in sorted(fm.options.demands.items()):
        job = jobs[d.job]
        need = fm.demand_at(dk, fm.last)
        sr = short.demand.get(dk) if short.ok else None
        lr = long.demand.get(dk) if long.ok else None
        tail = f" Long run, {capacity} (LP relaxation{capital}): {usd(lr, 2)} per " if lr is not None else ""
        if d.kind == "serve":
            rl = job.stage == "rl"
            what = "concurrent rollout" if rl else "concurrent user"
            holds = _held(fm, res, dk)
            served = min(holds, need)
            room = math.floor(holds - need + 1e-6) if not d.pool else 0
            down = " (and with any one system down: N+1 holds a spare in each pool)" if fm.u else ""
            gap = f", {need - served:,.0f} unserved" if served < need - 0.5 else ""  # (a pooled load is fractional)
            price = "-" if sr is None else usd(sr, 2)
            part = dk if not rl else job.name  # a request size of a mix: '<job>/<in>x<out>'
            cost = (f"costs nothing more until its planned replicas fill (they hold {holds:,.0f}, {room:,} more than "
                    f"the {need:,} needed); past that, {price}/yr" if room >= 1 and sr else f"costs {price}/yr")
            if not rl and job.requests_per_s is not None:  # (the UX review: a field in requests a second, priced per user)
                rate = job.requests_per_s * demand_factor(job, fm.last)  # (that year's rate: the expert review)
                what_on = f"concurrent user (its {rate:,.3g} requests a second hold {need:,} at once)"
            else:
                what_on = what
            msg = (f"one more {what_on} on '{part}'{when} {cost} {RENTED_WORDS if dk in rented else held} (busy power, tokens or "
                   f"hourly rent for part of a replica); the plan serves {served:,.0f} of {need:,} needed"
                   f"{gap}{down}.{tail + what + '-year.' if tail else ''}{_by_year(short, dk)}")
            if gap and sr is not None and sr <= 1e-9:  # (the review: "costs $0.00/yr ... serves 0 of 300": it would go unserved too)
                msg = (f"one more {what_on} on '{part}'{when} would go unserved, as {need - served:,.0f} do already: the "
                       f"plan serves {served:,.0f} of {need:,} needed (see what binds: the budget or a cap)")
            if sr is None:  # (the expert review: "[slack] ... costs -/yr" where the re-solve never ran)
                msg = (f"one more {what_on} on '{part}'{when}: {_unpriced(short)}; the plan serves {served:,.0f} of "
                       f"{need:,} needed{gap}{down}.{tail + what + '-year.' if tail else ''}")
            field = ("rollout_tokens_per_s" if rl else "concurrent_users" if job.requests_per_s is None
                     else "requests_per_s") + (f" ({dk.split('/', 1)[1]})" if part != job.name else "")
            rows.append(_settled(row("demand", f"jobs.{job.name}.{field}", short.tight.get(dk, False) and room < 1,
                                     sr, f"USD per year per {what}", msg, "short-run"), sr))
        elif d.kind == "batch":
            rl = job.stage == "rl"
            unit = "USD per extra training day" if rl else "USD per extra run"
            what = "training day" if rl else "run"
            cost = (f"costs {usd(sr, 2)} {RENTED_WORDS if dk in rented else held}" if sr is not None else
                    f"has no price here: {_unpriced(short)}")
            msg = (f"one more {what} of '{dk}'{when} {cost} ({need:g} a year planned).{tail + what + '.' if tail else ''}"
                   f"{_by_year(short, dk)}")
            field = "train_tokens_per_day" if rl else "runs_per_year"  # (an RL job's trainer runs once a day)
            rows.append(_settled(row("demand", f"jobs.{job.name}.{field}", short.tight.get(dk, False), sr, unit,
                                     msg, "short-run"), sr))
        else:
            price = (f"costs {usd(lr, 2)} {'in NPV' if fm.npv else 'per year'} (LP relaxation: its share of "
                     "purchase and support)" if lr is not None else
                     "has no price here (the long-run LP relaxation that prices devices was not solved for this plan)")
            msg = f"one more device for '{job.name}'{when} {price}; {need:,} planned."
            rows.append(row("demand", f"jobs.{job.name}.devices", True, lr, "USD per year per device", msg,
                             "long-run"))
    return rows


def _system_rows(plan, fm, res, fleet, more) -> list[dict]:
    rows = []
    for oid, delta in sorted(more.items()):
        n = fleet[(shadow.store_of(fm, oid), (oid, fm.first))]
        system = fm.system_of(oid)
        o = fm.offer(oid)
        per = system.accelerators * n
        key = (oid, fm.first)
        limit = fm.rows.get(("capacity", key)) or fm.rows.get(("hours", key))
        binding = limit is not None and shadow.is_tight(limit, res.values)
        busy = ""
        if ("capacity", key) in fm.rows:
            pool = fm.spare_pool(oid, fm.first) if fm.u else None
            alone = pool is None or len(fm.spare_pool_offers(pool)) == 1  # (else its capacity row holds no u)
            opened = round(res.values.get(fm.u[pool].name, 0.0)) if pool in fm.u else 0
            held = {} if alone else {o: k for o in fm.spare_pool_offers(pool)
                                     if (k := fleet.get((shadow.store_of(fm, o), (o, fm.first)), 0))}
            spare = system.accelerators * opened if alone or len(held) == 1 else 0
            used = per - (spare if alone else 0) - shadow.room(fm.rows[("capacity", key)], res.values)
            running = sum(p["replicas"] * p["accelerators_per_replica"] for j in plan["jobs"] for p in j["placements"]
                          if p["offer"] == oid and p.get("users_per_replica") is not None)
            stranded = (f" ({running:g} running replicas; the rest stranded beside replicas that do not tile a "
                        f"{system.accelerators}-accelerator system)" if 0 < running < used - 1e-6 else "")
            shared = ("" if len(held) < 2 or not opened else
                      f"; one system kept free as the N+1 spare among the {sum(held.values()):g} {system.id} at its site "
                      f"({', '.join(f'{n:g} {o}' for o, n in held.items())})")
            runs = max((p["replicas"] * p["accelerators_per_replica"] for j in plan["jobs"] for p in j["placements"]
                        if p["offer"] == oid and p.get("hours_per_run")), default=0)  # (batch: the hours rows hold them)
            busy = (f"; {used:g} of {per} accelerators busy {'serving ' if runs else ''}at peak{stranded}"
                    + (f", {spare:g} kept free as the N+1 spare" if spare else shared)
                    + (f"; batch runs take {runs:g} at a time, " + ("beside serving, on accelerators it leaves free"
                       if used + runs <= per + 1e-6 else "in the hours serving leaves") if runs else ""))
        fixed = shadow.fixed_cost_per_system(fm, oid)
        if delta is None:
            tail = (f"; you own {n} (the scenario's owned)" if is_held(o) else
                    "; its upper bound (the offer's availability or the site's power) allows no more")
        else:
            tail = (f"; one more would add {usd(fixed)}/yr of fixed costs and save {usd(fixed - delta)}/yr of "
                    f"running costs at today's demand: net {'+' if delta >= 0 else ''}{usd(delta)}/yr")
        rows.append(row("systems", oid, binding, delta, "USD per year per extra system",
                         f"{system.id} ({'owned' if is_held(o) else f'{o.acquisition}, {o.provider}'}): {n} held{busy}{tail}",
                         "short-run"))
    return rows


# --- the whole explanation ------------------------------------------------------------------------

def explain_placements(plan: dict, s, cat) -> None:
    """Per-placement reasons ("why") and the seeds' three checks ("checks") for each job, in place
    (what single-period and multi-year plans share), and the one-paragraph "summary"."""
    jobs = {j.name: j for j in s.jobs}
    shared: dict[str, set] = {}  # pool -> the parts whose load its replicas carry
    for pooled in plan.get("pools") or []:
        shared.setdefault(pooled["pool"], set()).update(pooled["load"])
    for job in plan["jobs"]:
        job["why"] = [runit.placement_reason(p, jobs[job["name"]], alone=len(shared.get(p.get("pool"), ())) == 1)
                      for p in job["placements"]]
        spot = sorted({p["offer"] for p in job["placements"] if p["acquisition"] == "spot" and p.get("users_per_replica")})
        if spot and s.policy.redundancy == "n+1":  # (the expert review: one spot spare is no N+1 against a reclaim)
            job["spare"] = (f"N+1 on spot ({', '.join(spot)}): the spare is spot capacity too, and one reclaim can "
                            "take several spot instances at once, which one spare does not cover; "
                            "policy.spot_for_serving: false keeps serving and its spare off spot")
        if traffic := runit.traffic_reason(jobs[job["name"]]):
            job["traffic"] = traffic
        if together := colocation.reason(job, s, cat):
            job["colocation"] = together
        job["checks"] = runit.three_checks(job, jobs[job["name"]], cat, _bought_in_pool(job, plan, s, cat))
    plan["summary"] = _summary(plan, s, cat)


def _bought_in_pool(job: dict, plan: dict, s, cat) -> bool:
    """Under N+1, whether a system bought shares the spare pool (colocation.spare_pool_of) of a system
    already held that the job runs on, and so its cost (milp/readout_use.cost_shares)."""
    if s.policy.redundancy != "n+1":
        return False
    pool = lambda oid: colocation.spare_pool_of(cat.offers[oid]) if oid in cat.offers else None  # noqa: E731
    held = {pool(p["offer"]) for p in job["placements"] if p["provider"] == OWNED_PROVIDER} - {None}
    return any(f["acquisition"] == "buy" and f["provider"] != OWNED_PROVIDER and pool(f["offer"]) in held
               for f in plan["fleet"])


def _summary(plan: dict, s, cat) -> str:
    """The recommendation's paragraph (three_checks.summary) and what it may overstate."""
    return (runit.summary(plan, s) + fleet_notes.rented_apart(plan, s) + fleet_notes.many_types(plan, s)
            + fleet_notes.sold_early(plan, s, cat))



LEVELS = ("none", "brief", "full")


def explain_plan(plan: dict, s, cat, opts, fm, res, time_limit_s=None, level: str = "full") -> None:
    """Add to the plan, in place, by level:
    none   per-placement reasons ("why"), the three checks per job ("checks") and the "summary":
           read from the plan, no re-solve;
    brief  + "explanations" from LPs on the built model (short-run prices with the fleet fixed) and
           "alternatives" (why-not, one row per unused catalog accelerator) from reasons and LP bounds;
    full   + long-run prices and the value of one more system (LPs), the forced-accelerator MILPs
           nearest the plan, the "next_best" fleet, lifted caps and raised targets (MILPs bounded by
           work, replan.MAX_NODES).
    The plan's values were read already, so the model may be re-solved here; bounds are restored."""
    explain_placements(plan, s, cat)
    splits.note_all(plan, s, cat, opts)
    plan["explain"] = level
    if level == "none":
        return
    limit = time_limit_s or s.solver.time_limit_s
    fleet = shadow.decisions(fm, res)
    unused = sorted(restricted.accelerators_with_options(fm.options) - {f["accelerator"] for f in plan["fleet"]})
    kept: dict = {}
    base = plan["total_cost_usd_per_year"]
    objective = whynot.weighted(fm, res)  # (a coverage-first objective: the LP bounds are on it, not on costs)
    if level == "brief":
        bounds = whynot.lp_bounds(s, cat, fm, unused, limit)
        short = shadow.short_run(fm, fleet, limit)
        outcomes, more, long = {}, {}, shadow.LPPrices(None, "not-solved")
    else:
        before = whynot.variants_for(plan, s, cat, fm, [])
        plan_first(before, fm, res)
        lifted_from_plan(before, fm, res)
        with replan.Runner(s, cat, opts, limit, base, milp_budget(res)) as runner:
            runner.add(before, workers=1)  # re-planned on one core while this one works on the LPs below
            bounds = whynot.lp_bounds(s, cat, fm, unused, limit, keep=kept)
            short = shadow.short_run(fm, fleet, limit)
            runner.add(whynot.variants_for(plan, s, cat, fm, whynot.forced_to_solve(bounds, base if objective is None else objective), kept, []))
            more = shadow.one_more_system(fm, fleet, short, limit)
            long = shadow.long_run(fm, limit) if _time_left() else shadow.LPPrices(None, "not-solved")
        outcomes = runner.out
    plan["explanations"] = (_demand_rows(s, fm, res, short, long) + target_rows(plan, s, outcomes)
                            + _system_rows(plan, fm, res, fleet, more) + cap_rows(plan, s, outcomes, long))
    limits = whynot_limits.limits_of(s, cat, fm, whynot.without_plan(bounds, outcomes), limit)
    plan["alternatives"] = whynot.alternatives(plan, s, cat, fm, outcomes, bounds, limits, objective)
    plan["next_best"] = whynot.next_best(plan, outcomes)
    if (other := whynot.next_mode(plan, outcomes)) is not None:
        plan["next_best_acquisition"] = other
    if (apis := whynot.api_fleet(plan, outcomes)) is not None:
        plan["api_fleet"] = apis
    plan["summary"] = _summary(plan, s, cat)


EXPLAIN_SHARE = 1.0
EXPLAIN_FLOOR_S = 5.0
"""The re-planned variants' MILPs (--explain full) may take together EXPLAIN_SHARE of the seconds
the plan's own solve took, and at least EXPLAIN_FLOOR_S (within the command's time limit), counted
from the re-plans' start, building their models included: the explanations of a plan never take
much longer than the plan (counted from the first model built instead, the 20-job fleets below took
0.7 s more each).
Those the time stops are said cut short (solver.cut_short, and the rows they explain say so or keep
their LP bound). The next-best fleet, lifted caps and raised targets start re-planning on one core
while the other solves the why-not LP bounds and the short-run prices; the forced accelerators those
bounds pick join them (16 generated buy-only N+1 fleets of 5-20 jobs, seeds 3-6, whole command:
98.5-111.7 s in all over three runs, against 119.5 s when every re-plan waited for the LP bounds;
92.0 s with the models' build counted in the budget)."""


def plan_first(variants, fm, res) -> None:
    """A raised target is first tried with the plan's own fleet (replan.fleet_fixed): every plan
    of the raised target is a plan of the scenario (a configuration fast enough for the higher
    target serves at least as many users at the lower one), so the variant costs at least the
    plan's proven lower bound, objective x (1 - gap); a fleet within the variants' gap of that
    bound is the answer. Not for shortlisted models (the two shortlists may differ) nor
    max-coverage plans (the objective weighs coverage, not dollars)."""
    if fm.pairs_pruned or fm.unserved or not res.ok or res.gap is None or res.objective is None:
        return
    for v in variants:
        if v.key[0] == "target":
            v.fleet, v.floor = replan.fleet_of(fm, res), res.objective * (1 - res.gap)


def lifted_from_plan(variants, fm, res) -> None:
    """A lifted cap's MILP starts from the plan, which is a plan of the variant too (Variant.start):
    bounded by work, its search then ends no dearer than the plan, and it prunes by the plan's cost
    from its first node (20 generated buy-only N+1 jobs, N+1 lifted, 300 nodes: the gap it ends on
    fell from 8.1% to 4.6% on seed 4; seed 5 was proven where it was not)."""
    if res.ok:
        for v in variants:
            if v.lifted:
                v.start = (fm, res.values)


def milp_budget(res) -> float:
    return max(EXPLAIN_FLOOR_S, EXPLAIN_SHARE * res.seconds)


def _time_left() -> bool:
    """Whether the command's time limit (data.deadline) leaves time for one more step; a step
    left out is recorded as cut short."""
    if deadline.left() > 0:
        return True
    deadline.cut("explanations")
    return False


def on_objective(outcomes: dict, plan: dict, per_year: float) -> dict:
    """A multi-year plan's re-planned variants, each priced as the plan is chosen, by its NPV: the
    plan's yearly cost plus the NPV it adds, spread over the horizon's discounted years (as the why-not
    bounds are). Their own accounting averages could rank a fleet of a higher NPV below the plan
    (the UX review: "costs $1,239 less per year: not the cheapest" of a fleet whose NPV was $3,287 more)."""
    base = plan["total_cost_usd_per_year"]
    return {k: ({**got, "cost": base + (got["npv"] - plan["npv_usd"]) / per_year} if got.get("npv") is not None else got)
            for k, got in outcomes.items()}


def explain_years(plan: dict, s, cat, opts, ym, res, time_limit_s=None, level: str = "full") -> None:
    """A multi-year plan's explanation, by level as explain_plan: reasons and checks (none); why-not
    from LP bounds (brief); the nearest forced accelerators, the next-best fleet, lifted caps and
    raised targets re-planned over the whole horizon (full). Costs compare in the accounting view's
    yearly average (total_cost_usd_per_year); an LP bound on NPV is turned into that view by the
    horizon's sum of discount factors."""
    explain_placements(plan, s, cat)
    splits.note_all(plan, s, cat, opts)
    plan["explain"] = level
    if level == "none":
        return
    limit = time_limit_s or s.solver.time_limit_s
    unused = sorted(restricted.accelerators_with_options(opts) - {f["accelerator"] for f in plan["fleet"]})
    per_year = sum((1 + s.policy.discount_rate) ** -(t - 1) for t in range(1, s.horizon_years + 1))
    base = plan["total_cost_usd_per_year"]
    outcomes, long = {}, shadow.LPPrices(None, "not-solved")
    with replan.Runner(s, cat, opts, limit, None, milp_budget(res)) as runner:
        if level == "full":
            before = whynot.variants_for(plan, s, cat, ym, [])
            lifted_from_plan(before, ym, res)
            runner.add(before, workers=1)  # re-planned on one core while this one works on the LPs below
        objective = whynot.weighted(ym, res)  # (bounds on a coverage-first objective stay as they are)
        bounds = {a: b if b is None or objective is not None else base + (b - plan["npv_usd"]) / per_year
                  for a, b in whynot.lp_bounds(s, cat, ym, unused, limit).items()}
        short = shadow.short_run(ym, shadow.decisions(ym, res), limit)
        if level == "full":
            forced = whynot.variants_for(plan, s, cat, ym, whynot.forced_to_solve(bounds, base if objective is None else objective), None, [])
            runner.add(forced)
    if level == "full":
        outcomes = on_objective(runner.out, plan, per_year)
    plan["explanations"] = (_demand_rows(s, ym, res, short, long) + target_rows(plan, s, outcomes)
                            + cap_rows(plan, s, outcomes, long))
    limits = whynot_limits.limits_of(s, cat, ym, whynot.without_plan(bounds, outcomes), limit)
    plan["alternatives"] = whynot.alternatives(plan, s, cat, ym, outcomes, bounds, limits, objective)
    plan["next_best"] = whynot.next_best(plan, outcomes)
    if (other := whynot.next_mode(plan, outcomes)) is not None:
        plan["next_best_acquisition"] = other
    if (apis := whynot.api_fleet(plan, outcomes)) is not None:
        plan["api_fleet"] = apis
    plan["summary"] = _summary(plan, s, cat)
