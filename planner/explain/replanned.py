"""Explanation rows answered by re-planning (replan.py): lifted caps (site power, the budgets, N+1
redundancy), each binding with the saving a plan without it finds, not binding (proven), or open
(its re-plan ended before it could tell), and raised per-user speed targets with their price."""

from __future__ import annotations

from planner.data.money import signed_usd as usd
from planner.data.years import budget_basis
from planner.explain import replan, whynot


def got_of(outcomes: dict, key: tuple) -> dict | None:
    got = outcomes.get(key)
    return None if got is None or got["status"] == "skipped" else got


def row(family, constraint, binding, price, unit, message, basis) -> dict:
    return {"family": family, "constraint": constraint, "binding": bool(binding),
            "shadow_price": None if price is None else round(price, 4), "unit": unit, "message": message,
            "basis": basis}


def _least(got: dict) -> str:
    """'at least ' when a lifted cap's re-plan was not proven optimal (its fleet is the best found
    within its work or time limit: the plan's saving without the cap is at least what it shows)."""
    return "" if got["status"] == "optimal" else "at least "


def _cap_state(got: dict, base: float, tol: float) -> str:
    """What a lifted cap's re-plan settles: "binds" (a fleet cheaper than the plan by more than the
    tolerance exists without the cap), "free" (proven that none does: the variant's optimum within
    its gap, its LP bound, or the solver's bound at least the plan's cost less the tolerance) or
    "open" (neither: the search ended on its work or time bound, or without a fleet, before it could
    tell; the row then says so and claims no price). A bound is on the objective, which adds a
    tie-break far below half the tolerance per system (replan.from_lp compares alike)."""
    if got.get("cost") is not None and got["cost"] < base - tol:
        return "binds"
    if got["status"] in ("optimal", "not-binding"):
        return "free"
    bound = got.get("bound")
    return "free" if bound is not None and bound >= base - tol / 2 else "open"


def _open_row(family: str, constraint: str, unit: str, what: str, got: dict) -> dict:
    """A lifted cap whose re-plan did not settle whether it binds (_cap_state "open")."""
    why = "the time ran out" if got.get("cut_short") else f"its work bound ({replan.MAX_NODES:,} nodes) was reached"
    found = "no cheaper fleet" if got.get("cost") is not None else "no fleet"
    said = row(family, constraint, False, None, unit,
               f"whether {what} is not settled: re-planned without it, {found} was found before {why}", "re-planned")
    return {**said, "settled": False}


def _in_year(year: int | None) -> str:
    """' in year 2, the year nearest its cap' for a multi-year plan (replan.budget_spend); '' for one year."""
    return "" if year is None else f" in year {year}, the year nearest its cap,"


def cap_rows(plan, s, outcomes, long) -> list[dict]:
    base = plan["total_cost_usd_per_year"]
    tol = max(1.0, s.solver.gap * base)
    rows = []
    got = got_of(outcomes, ("cap", "power"))
    if got is not None:
        cap = s.site.power_cap_kw
        used = replan.site_power_kw(plan)
        lp = long.rows.get(("power", ("site", 1))) if long.ok else None
        lp_text = f"; LP relaxation: {usd(-lp)} per kW-year" if lp else ""
        state = _cap_state(got, base, tol)
        if state == "binds" and got["power_kw"] > cap:
            price = (got["cost"] - base) / (got["power_kw"] - cap)
            msg = (f"site power binds: the plan draws {used:,.1f} of {cap:,.1f} kW; with +{got['power_kw'] - cap:,.1f} kW "
                   f"the cheapest fleet ({whynot.fleet_text(got['fleet'])}) costs {_least(got)}{usd(base - got['cost'])}/yr less: "
                   f"{usd(-price)} per extra kW-year (re-planned){lp_text}")
            rows.append(row("power", "site.power_cap_kw", True, price, "USD per year per kW", msg, "re-planned"))
        elif state == "open":
            rows.append(_open_row("power", "site.power_cap_kw", "USD per year per kW",
                                  f"site power binds (the plan draws {used:,.1f} of {cap:,.1f} kW)", got))
        else:
            rows.append(row("power", "site.power_cap_kw", False, 0.0, "USD per year per kW",
                             f"site power does not bind: the plan draws {used:,.1f} of {cap:,.1f} kW and more "
                             "power would not change it", "re-planned"))
    for name in ("usd_per_year", "capex_usd_per_year", "opex_usd_per_year"):
        got = got_of(outcomes, ("cap", name))
        if got is None:
            continue
        cap = getattr(s.budget, name)
        constraint = f"budget.{name}"
        if s.budget.mode == "max-coverage" and name == "usd_per_year":
            unserved = sum((u.get("users") or 0.0) for j in plan["jobs"] for u in j["unserved"].values())
            if got.get("cost") is not None and unserved > got["unserved_users"] + 1e-6:
                extra = got["cost"] - base
                price = extra / (unserved - got["unserved_users"])
                use, free_use = replan.budget_spend(plan, budget_basis(s))[name][0], got["spend"][name][0]
                over = f", {usd(free_use - cap)} over the budget," if free_use > cap else ""  # (in the budget's basis)
                rows.append(row("budget", constraint, True, price, "USD per year per extra user served",
                                 f"the budget binds: {unserved:,.0f} users go unserved (the plan spends {usd(use)} of "
                                 f"{usd(cap)}); a fleet that spends {usd(free_use)}{over} serves "
                                 f"{unserved - got['unserved_users']:,.0f} of them at {usd(got['cost'])}/yr ({usd(extra)}/yr "
                                 f"more than the plan: {usd(price)} per user-year)", "re-planned"))
                continue
        use, year, year_cap = replan.budget_spend(plan, budget_basis(s))[name]
        state = _cap_state(got, base, tol)
        if state == "binds":
            free_use, free_year, free_cap = got["spend"][name]
            over = free_use - (cap if free_cap is None else free_cap)
            price = (got["cost"] - base) / over if over > 0 else None
            when = "" if free_year is None else f" in year {free_year}" + (
                "" if free_cap is None or free_cap == cap else f" (its cap {usd(free_cap)})")
            per = "" if price is None else f"; {usd(-price, 2)} a year per dollar of budget added"
            rows.append(row("budget", constraint, True, price, "USD per year per USD of budget",
                             f"{constraint} binds at {usd(cap)}: the cheapest fleet without it spends "
                             f"{usd(free_use)}{when}, and costs {_least(got)}{usd(base - got['cost'])}/yr less"
                             f" ({'re-planned' + per})", "re-planned"))
        elif state == "open":
            rows.append(_open_row("budget", constraint, "USD per year per USD of budget",
                                  f"{constraint} binds (the plan uses {usd(use)}{_in_year(year)} of "
                                  f"{usd(cap if year_cap is None else year_cap)})", got))
        else:
            mine = cap if year_cap is None else year_cap
            spare = f": the plan uses {usd(use)}{_in_year(year)} of {usd(mine)} ({usd(mine - use)} headroom)"
            rows.append(row("budget", constraint, False, 0.0, "USD per year per USD of budget",
                             f"{constraint} does not bind{spare}; more budget would not change the plan",
                             "re-planned"))
    got = got_of(outcomes, ("cap", "redundancy"))
    if got is not None:
        state = _cap_state(got, base, tol)
        if state == "binds":
            rows.append(row("redundancy", "policy.redundancy", True, base - got["cost"], "USD per year",
                             f"N+1 redundancy costs {_least(got)}{usd(base - got['cost'])}/yr: without it the cheapest fleet is "
                             f"{whynot.fleet_text(got['fleet'])} at {usd(got['cost'])}/yr", "re-planned"))
        elif state == "open":
            rows.append(_open_row("redundancy", "policy.redundancy", "USD per year", "N+1 redundancy costs extra", got))
        else:
            rows.append(row("redundancy", "policy.redundancy", False, 0.0, "USD per year",
                             "N+1 redundancy costs nothing extra: the cheapest fleet already survives one "
                             "system down", "re-planned"))
    return rows


def _raising(j, t: float, t2: float) -> str:
    """'raising 'chat' from 20 to 22.0 tok/s per user', or where the job gives its target as a latency
    (max_tpot_ms) 'tightening 'chat' from 40 to 36.36 ms per token (25 to 27.5 tok/s per user)' (the
    review: a user who wrote ms read about a field they never set)."""
    if "max_tpot_ms" in j.model_fields_set:
        return (f"tightening '{j.name}' from {1000 / t:,.4g} to {1000 / t2:,.4g} ms per token ({t:g} to {t2:,.1f} "
                "tok/s per user)")
    return f"raising '{j.name}' from {t:g} to {t2:,.1f} tok/s per user"


def target_rows(plan, s, outcomes) -> list[dict]:
    base = plan["total_cost_usd_per_year"]
    tol = max(1.0, s.solver.gap * base)
    rows = []
    for j in s.jobs:
        got = got_of(outcomes, ("target", j.name))
        if got is None:
            continue
        t = j.min_tokens_per_s_per_user
        t2 = t * (1 + whynot.TARGET_STEP)
        constraint = f"jobs.{j.name}.min_tokens_per_s_per_user"
        unit = "USD per year per tok/s of per-user target"
        if got.get("cost") is None and got.get("cut_short"):
            continue  # the time ran out before its re-plan found a fleet: not evaluated (solver.cut_short)
        if got.get("cost") is None and got["status"] != "infeasible":
            rows.append({**row("target", constraint, False, None, unit,
                                f"whether '{j.name}' can reach {t2:,.1f} tok/s per user is not settled: its re-plan "
                                f"found no fleet within its work bound ({replan.MAX_NODES:,} nodes)", "re-planned"),
                         "settled": False})
            continue
        if got.get("cost") is None:
            rows.append(row("target", constraint, True, None, unit,
                             f"no plan reaches {t2:,.1f} tok/s per user on '{j.name}' ({got['status']}): "
                             f"the {t:g} tok/s target is at the edge of what the catalog and policy allow",
                             "re-planned"))
            continue
        delta = got["cost"] - base
        price = delta / (t2 - t)
        if delta > tol:
            most = "" if got["status"] == "optimal" else "at most "  # (the best fleet found, not proven)
            msg = (f"{_raising(j, t, t2)} costs {most}+{usd(delta)}/yr ({usd(price)} per tok/s, re-planned): "
                   f"{whynot.fleet_text(got['fleet'])}" + replan.cut_words(got))
        else:
            msg = (f"{_raising(j, t, t2)} costs nothing (re-planned: {whynot.fleet_text(got['fleet'])} at the same "
                   "yearly cost)")
        rows.append(row("target", constraint, delta > tol, price if delta > tol else 0.0, unit, msg, "re-planned"))
    return rows
