"""Explanations: why a plan is what it is, and what to relax when there is none.

The chain of "because" for a plan: each placement's binding resource with its numbers (why); the
binding constraint families with their prices in the user's units (shadow.py: LPs with the fleet
fixed, and the LP relaxation for long-run prices; whynot.py: re-planned finite differences for caps
and targets); every unused catalog accelerator with the reason it cannot serve or the extra cost of
using it; the next-best distinct fleet; and the seeds' three checks per job (runit.py).

diagnose(): an elastic copy of the MILP (penalised shortfall per constraint family: budget, capex,
opex, site power, demand) names what to relax and by how much; the suggested values are rounded up
so that re-planning with them finds a plan.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from planner.data import deadline
from planner.explain import prices as shadow
from planner.explain import replan, splits, whynot
from planner.explain import three_checks as runit

# --- the explanation rows: binding constraint families with prices -------------------------------

def _usd(x: float, digits: int = 0) -> str:
    return f"-${abs(x):,.{digits}f}" if x < 0 else f"${x:,.{digits}f}"


def _got(outcomes: dict, key: tuple) -> dict | None:
    got = outcomes.get(key)
    return None if got is None or got["status"] == "skipped" else got


def _row(family, constraint, binding, price, unit, message, basis) -> dict:
    return {"family": family, "constraint": constraint, "binding": bool(binding),
            "shadow_price": None if price is None else round(price, 4), "unit": unit, "message": message,
            "basis": basis}


def _fleet_words(fm, res) -> str:
    """How the short-run prices hold the fleet: the systems owned, or only hourly rentals."""
    owned = any(round(res.values.get(v.name, 0.0)) > 0 for (_, t), vs in fm.held_terms.items()
                if t == fm.last for v in vs)
    return "with the fleet you own" if owned else "with the fleet as planned (hourly rentals or API tokens)"


def _served(fm, res, dk: str) -> float:
    """Users (or rollouts) demand dk's replicas serve in the plan, at most its demand: whole replicas,
    or a pooled demand's load on its pool's replicas (a fraction), plus its API share."""
    d, need = fm.options.demands[dk], fm.demand_at(dk, fm.last)
    whole = round if not d.pool else float
    held = sum(fm.options.serve[k][i].users_per_replica * whole(res.values.get(v.name, 0.0))
               for (k, i, _, t), v in fm.y.items() if k == dk and t == fm.last)
    held += sum(need * res.values.get(v.name, 0.0) for (k, _, t), v in fm.api.items() if k == dk and t == fm.last)
    return min(held, need)


def _by_year(short, dk: str) -> str:
    """A multi-year plan's short-run price of demand dk in each year, in that year's dollars."""
    prices = short.by_year.get(dk, {}) if short.ok else {}
    if len(prices) < 2:
        return ""
    return " By year: " + ", ".join(f"{t}: {_usd(p, 2)}" for t, p in sorted(prices.items())) + "."


def _demand_rows(s, fm, res, short, long) -> list[dict]:
    """One price row per demand. The short-run price holds the fleet (and, in max-coverage mode,
    the unserved shares) as planned, so no penalty weight of the coverage objective enters it."""
    jobs = {j.name: j for j in s.jobs}
    rows = []
    held = _fleet_words(fm, res)
    when = f" in year {fm.last}" if fm.npv else ""
    for dk, d in sorted(fm.options.demands.items()):
        job = jobs[d.job]
        need = fm.demand_at(dk, fm.last)
        sr = short.demand.get(dk) if short.ok else None
        lr = long.demand.get(dk) if long.ok else None
        tail = f" Long run, buying capacity as needed (LP relaxation, capital included): {_usd(lr, 2)} per " if lr is not None else ""
        if d.kind == "serve":
            rl = job.stage == "rl"
            what = "concurrent rollout" if rl else "concurrent user"
            served = _served(fm, res, dk)
            down = " (and with any one system down: N+1 holds a spare in each pool)" if fm.u else ""
            gap = f", {need - served:,.0f} unserved" if served < need - 0.5 else ""  # (a pooled load is fractional)
            price = "-" if sr is None else _usd(sr, 2)
            part = dk if not rl else job.name  # a request size of a mix: '<job>/<in>x<out>'
            msg = (f"one more {what} on '{part}'{when} costs {price}/yr {held} (busy power, tokens or "
                   f"hourly rent for part of a replica); the plan serves {served:,.0f} of {need:,} needed"
                   f"{gap}{down}.{tail + what + '-year.' if tail else ''}{_by_year(short, dk)}")
            field = ("rollout_tokens_per_s" if rl else "concurrent_users" if job.requests_per_s is None
                     else "requests_per_s") + (f" ({dk.split('/', 1)[1]})" if part != job.name else "")
            rows.append(_row("demand", f"jobs.{job.name}.{field}",
                             short.tight.get(dk, False), sr, f"USD per year per {what}", msg, "short-run"))
        elif d.kind == "batch":
            unit = "USD per extra training day" if job.stage == "rl" else "USD per extra run"
            msg = (f"one more run of '{dk}'{when} costs {'-' if sr is None else _usd(sr, 2)} {held}"
                   f" ({need:g} a year planned).{tail + 'run.' if tail else ''}{_by_year(short, dk)}")
            rows.append(_row("demand", f"jobs.{job.name}.runs_per_year", short.tight.get(dk, False), sr, unit,
                             msg, "short-run"))
        else:
            msg = (f"one more device for '{job.name}'{when} costs {'-' if lr is None else _usd(lr, 2)} "
                   f"{'in NPV' if fm.npv else 'per year'} (LP relaxation: its share of purchase and support); "
                   f"{need:,} planned.")
            rows.append(_row("demand", f"jobs.{job.name}.devices", True, lr, "USD per year per device", msg,
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
        row = fm.rows.get(("capacity", key)) or fm.rows.get(("hours", key))
        binding = row is not None and shadow.is_tight(row, res.values)
        busy = ""
        if ("capacity", key) in fm.rows:
            spare = system.accelerators * round(res.values.get(fm.u[key].name, 0.0)) if key in fm.u else 0
            used = per - spare - shadow.room(fm.rows[("capacity", key)], res.values)
            busy = f"; {used:g} of {per} accelerators busy at peak" + (
                f", {spare:g} kept free as the N+1 spare" if spare else "")
        fixed = shadow.fixed_cost_per_system(fm, oid)
        if delta is None:
            tail = "; its upper bound (the offer's availability or the site's power) allows no more"
        else:
            tail = (f"; one more would add {_usd(fixed)}/yr of fixed costs and save {_usd(fixed - delta)}/yr of "
                    f"running costs at today's demand: net {'+' if delta >= 0 else ''}{_usd(delta)}/yr")
        rows.append(_row("systems", oid, binding, delta, "USD per year per extra system",
                         f"{system.id} ({o.acquisition}, {o.provider}): {n} held{busy}{tail}", "short-run"))
    return rows


def _least(got: dict) -> str:
    """'at least ' when a lifted cap's re-plan was not proven optimal (its fleet is the best found
    within its work or time limit: the plan's saving without the cap is at least what it shows)."""
    return "" if got["status"] == "optimal" else "at least "


def _cap_rows(plan, s, outcomes, long) -> list[dict]:
    base = plan["total_cost_usd_per_year"]
    tol = max(1.0, s.solver.gap * base)
    rows = []
    got = _got(outcomes, ("cap", "power"))
    if got is not None:
        cap = s.site.power_cap_kw
        used = sum(f["power_kw"] or 0.0 for f in plan["fleet"] if f["acquisition"] == "buy")
        lp = long.rows.get(("power", ("site", 1))) if long.ok else None
        lp_text = f"; LP relaxation: {_usd(-lp)} per kW-year" if lp else ""
        if got.get("cost") is not None and got["cost"] < base - tol and got["power_kw"] > cap:
            price = (got["cost"] - base) / (got["power_kw"] - cap)
            msg = (f"site power binds: the plan draws {used:,.1f} of {cap:,.1f} kW; with +{got['power_kw'] - cap:,.1f} kW "
                   f"the cheapest fleet ({whynot.fleet_text(got['fleet'])}) costs {_least(got)}{_usd(base - got['cost'])}/yr less: "
                   f"{_usd(-price)} per extra kW-year (re-planned){lp_text}")
            rows.append(_row("power", "site.power_cap_kw", True, price, "USD per year per kW", msg, "re-planned"))
        else:
            rows.append(_row("power", "site.power_cap_kw", False, 0.0, "USD per year per kW",
                             f"site power does not bind: the plan draws {used:,.1f} of {cap:,.1f} kW and more "
                             "power would not change it", "re-planned"))
    for name in ("usd_per_year", "capex_usd_per_year", "opex_usd_per_year"):
        got = _got(outcomes, ("cap", name))
        if got is None:
            continue
        cap = getattr(s.budget, name)
        constraint = f"budget.{name}"
        if s.budget.mode == "max-coverage" and name == "usd_per_year":
            unserved = sum((u.get("users") or 0.0) for j in plan["jobs"] for u in j["unserved"].values())
            if got.get("cost") is not None and unserved > got["unserved_users"] + 1e-6:
                extra = got["cost"] - base
                price = extra / (unserved - got["unserved_users"])
                rows.append(_row("budget", constraint, True, price, "USD per year per extra user served",
                                 f"the budget binds: {unserved:,.0f} users go unserved; {_usd(extra)}/yr more "
                                 f"serves {unserved - got['unserved_users']:,.0f} of them ({_usd(price)} per user-year)",
                                 "re-planned"))
                continue
        capex = sum(f["purchase_usd"] or 0.0 for f in plan["fleet"])
        opex = base - plan.get("cost_breakdown_usd_per_year", {}).get("capital", 0.0)
        use = {"usd_per_year": base, "capex_usd_per_year": capex, "opex_usd_per_year": opex}[name]
        if got.get("cost") is not None and got["cost"] < base - tol:
            free_use = got["capex"] if name.startswith("capex") else got["opex"]
            price = (got["cost"] - base) / max(free_use - cap, 1e-9)
            rows.append(_row("budget", constraint, True, price, "USD per year per USD of budget",
                             f"{constraint} binds at {_usd(cap)}: raising it to {_usd(free_use)} lowers the yearly "
                             f"cost by {_least(got)}{_usd(base - got['cost'])} ({_usd(-price, 2)} per dollar, re-planned)",
                             "re-planned"))
        else:
            spare = f": the plan uses {_usd(use)} of {_usd(cap)}/yr ({_usd(cap - use)} headroom)"
            rows.append(_row("budget", constraint, False, 0.0, "USD per year per USD of budget",
                             f"{constraint} does not bind{spare}; more budget would not change the plan",
                             "re-planned"))
    got = _got(outcomes, ("cap", "redundancy"))
    if got is not None:
        if got.get("cost") is not None and got["cost"] < base - tol:
            rows.append(_row("redundancy", "policy.redundancy", True, base - got["cost"], "USD per year",
                             f"N+1 redundancy costs {_least(got)}{_usd(base - got['cost'])}/yr: without it the cheapest fleet is "
                             f"{whynot.fleet_text(got['fleet'])} at {_usd(got['cost'])}/yr", "re-planned"))
        else:
            rows.append(_row("redundancy", "policy.redundancy", False, 0.0, "USD per year",
                             "N+1 redundancy costs nothing extra: the cheapest fleet already survives one "
                             "system down", "re-planned"))
    return rows


def _target_rows(plan, s, outcomes) -> list[dict]:
    base = plan["total_cost_usd_per_year"]
    tol = max(1.0, s.solver.gap * base)
    rows = []
    for j in s.jobs:
        got = _got(outcomes, ("target", j.name))
        if got is None:
            continue
        t = j.min_tokens_per_s_per_user
        t2 = t * (1 + whynot.TARGET_STEP)
        constraint = f"jobs.{j.name}.min_tokens_per_s_per_user"
        unit = "USD per year per tok/s of per-user target"
        if got.get("cost") is None and got.get("cut_short"):
            continue  # the time ran out before its re-plan found a fleet: not evaluated (solver.cut_short)
        if got.get("cost") is None:
            rows.append(_row("target", constraint, True, None, unit,
                             f"no plan reaches {t2:,.1f} tok/s per user on '{j.name}' ({got['status']}): "
                             f"the {t:g} tok/s target is at the edge of what the catalog and policy allow",
                             "re-planned"))
            continue
        delta = got["cost"] - base
        price = delta / (t2 - t)
        if delta > tol:
            most = "" if got["status"] == "optimal" else "at most "  # (the best fleet found, not proven)
            msg = (f"raising '{j.name}' from {t:g} to {t2:,.1f} tok/s per user costs {most}+{_usd(delta)}/yr "
                   f"({_usd(price)} per tok/s, re-planned): {whynot.fleet_text(got['fleet'])}"
                   + (" (cut short by the time limit)" if got.get("cut_short") else ""))
        else:
            msg = (f"raising '{j.name}' from {t:g} to {t2:,.1f} tok/s per user costs nothing (re-planned: "
                   f"{whynot.fleet_text(got['fleet'])} at the same yearly cost)")
        rows.append(_row("target", constraint, delta > tol, price if delta > tol else 0.0, unit, msg, "re-planned"))
    return rows


# --- the whole explanation ------------------------------------------------------------------------

def explain_placements(plan: dict, s, cat) -> None:
    """Per-placement reasons ("why") and the seeds' three checks ("checks") for each job, in place
    (what single-period and multi-year plans share), and the one-paragraph "summary"."""
    jobs = {j.name: j for j in s.jobs}
    for job in plan["jobs"]:
        job["why"] = [runit.placement_reason(p, jobs[job["name"]]) for p in job["placements"]]
        if traffic := runit.traffic_reason(jobs[job["name"]]):
            job["traffic"] = traffic
        job["checks"] = runit.three_checks(job, jobs[job["name"]], cat)
    plan["summary"] = runit.summary(plan, s)


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
    unused = sorted(whynot.accelerators_with_options(fm.options) - {f["accelerator"] for f in plan["fleet"]})
    kept: dict = {}
    before = whynot.variants_for(plan, s, cat, fm, []) if level == "full" else []
    replan.prepare(s, cat, opts, before)  # (their LP relaxations are solved with the why-not bounds)
    bounds = whynot.lp_bounds(s, cat, fm, unused, limit, keep=kept, along=before)
    short = shadow.short_run(fm, fleet, limit)
    if level == "brief":
        outcomes, more, long = {}, {}, shadow.LPPrices(None, "not-solved")
    else:
        base = plan["total_cost_usd_per_year"]
        forced = whynot.forced_to_solve(bounds, base)
        variants = whynot.variants_for(plan, s, cat, fm, forced, kept, before)
        plan_first(before, fm, res)
        with ThreadPoolExecutor(1) as pool:  # the MILP variants run beside the LPs below
            pending = pool.submit(replan.run_variants, s, cat, opts, variants, limit, base, milp_budget(res))
            more = shadow.one_more_system(fm, fleet, short, limit)
            long = shadow.long_run(fm, limit) if _time_left() else shadow.LPPrices(None, "not-solved")
            outcomes = pending.result()
    plan["explanations"] = (_demand_rows(s, fm, res, short, long) + _target_rows(plan, s, outcomes)
                            + _system_rows(plan, fm, res, fleet, more) + _cap_rows(plan, s, outcomes, long))
    plan["alternatives"] = whynot.alternatives(plan, s, cat, fm, outcomes, bounds)
    plan["next_best"] = whynot.next_best(plan, outcomes)
    plan["summary"] = runit.summary(plan, s)


EXPLAIN_SHARE = 1.0
EXPLAIN_FLOOR_S = 5.0
"""The re-planned variants' MILPs (--explain full) may take together EXPLAIN_SHARE of the seconds
the plan's own solve took, and at least EXPLAIN_FLOOR_S (within the command's time limit): the
explanations of a plan never take much longer than the plan. Those the time stops are said cut
short (solver.cut_short, and the rows they explain say so or keep their LP bound)."""


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


def milp_budget(res) -> float:
    return max(EXPLAIN_FLOOR_S, EXPLAIN_SHARE * res.seconds)


def _time_left() -> bool:
    """Whether the command's time limit (data.deadline) leaves time for one more step; a step
    left out is recorded as cut short."""
    if deadline.left() > 0:
        return True
    deadline.cut("explanations")
    return False


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
    unused = sorted(whynot.accelerators_with_options(opts) - {f["accelerator"] for f in plan["fleet"]})
    per_year = sum((1 + s.policy.discount_rate) ** -(t - 1) for t in range(1, s.horizon_years + 1))
    base = plan["total_cost_usd_per_year"]
    bounds = {a: None if b is None else base + (b - plan["npv_usd"]) / per_year
              for a, b in whynot.lp_bounds(s, cat, ym, unused, limit).items()}
    short = shadow.short_run(ym, shadow.decisions(ym, res), limit)
    outcomes, long = {}, shadow.LPPrices(None, "not-solved")
    if level == "full":
        forced = whynot.forced_to_solve(bounds, base)
        outcomes = replan.run_variants(s, cat, opts, whynot.variants_for(plan, s, cat, ym, forced), limit,
                                       None, milp_budget(res))
    plan["explanations"] = (_demand_rows(s, ym, res, short, long) + _target_rows(plan, s, outcomes)
                            + _cap_rows(plan, s, outcomes, long))
    plan["alternatives"] = whynot.alternatives(plan, s, cat, ym, outcomes, bounds)
    plan["next_best"] = whynot.next_best(plan, outcomes)
    plan["summary"] = runit.summary(plan, s)
