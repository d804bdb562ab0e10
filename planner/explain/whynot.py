"""Alternatives to a plan, each one a re-solved model ("what if"), never a guess.

- Why not accelerator A, for every catalog accelerator the plan does not use: the reason it cannot
  serve (options.why_not: does not fit, too slow for the target, stack or policy excluded, no offer,
  cooling), or what the cheapest plan costs when every job that can run on A runs only on A (its
  other configurations removed, the rest of the scenario re-optimised). First the LP relaxation of
  that forced plan gives a lower bound for every such A (cheap, and enough to rank them); then, at
  --explain full, the MILP is re-solved for the NEAREST_FORCED accelerators with the smallest bounds
  and for any whose bound is within NEAR of the plan. The others keep their LP bound ("at least").
- The next-best distinct fleet: the MILP over the options that do not use the plan's costliest
  system type.
- Finite differences of the integer plan: a cap lifted (site power, a budget, N+1 redundancy) or the
  per-user speed target of one of the TARGET_JOBS costliest serving jobs raised by TARGET_STEP,
  re-planned.
Every variant is answered by replan.Runner: its LP relaxation where that is exact (the LPs
solved together, batch.py), else its MILP bounded by work (MAX_NODES branch-and-bound nodes), so
the same input gives the same answers on a busy machine; the explanations' share of the time limit
stays as a safety net, and a variant it stopped or left out is reported as such.
"""

from __future__ import annotations

import dataclasses
import math

import pulp

from planner.data import deadline
from planner.data.fleet_words import fleet_item
from planner.data.money import usd as _usd
from planner.data.years import year_caps
from planner.explain import batch
from planner.explain.restricted import (
    accelerators_with_options,
    api_only,
    jobs_on,
    only_on,
    without_acquisition,
    without_new,
)
from planner.explain.replan import (
    MAX_NODES,
    Variant,
    builder,
    coverage_lost,
    coverage_text,
    cut_words,
    proven_within,
)
from planner.milp.fleet import FleetModel
from planner.options.eligibility import site_exclusion

TARGET_STEP = 0.10  # +10% of the per-user speed target
TARGET_JOBS = 3  # raised targets re-planned for the costliest serving jobs only
NEAREST_FORCED = 4  # forced-accelerator MILPs re-solved at --explain full (smallest LP bounds first) ...
NEAR = 0.25  # ... plus any whose LP bound is within 25% of the plan's cost


def force_terms(fm: FleetModel, acc: str) -> list:
    """Variables that put work on `acc` (keys (demand, option, offer[, year])): replicas (a pool's
    whole replicas Y, not its members' loads, which the model's cuts cap at each job's own users)."""
    o = fm.options
    terms = [v for key, v in sorted(fm.y.items()) if o.serve[key[0]][key[1]].accelerator == acc
             and not o.demands[key[0]].pool]
    terms += [v for key, v in sorted(fm.yp.items()) if fm.pool_opt[key][0].accelerator == acc]
    terms += [v for key, v in sorted(fm.e.items()) if o.edge[key[0]][key[1]].accelerator == acc]
    terms += [max(o.demands[key[0]].runs_per_year, 1.0) * v for key, v in sorted(fm.x.items())
              if o.batch[key[0]][key[1]].accelerator == acc]
    return terms


def force_rows(acc: str):
    """The row that puts some work on `acc` (a forced variant's extra row)."""
    return lambda fm: [pulp.lpSum(force_terms(fm, acc)) >= 1]


def leading_row(plan: dict) -> dict | None:
    """The plan's costliest fleet row that it acquires (not a system already owned): the system type
    (or hosted API) the next-best fleet goes without; None where the plan holds only what is owned."""
    return next((f for f in plan["fleet"] if not f.get("owned")), None)


def _forced(acc: str, opts, kept: tuple | None = None) -> Variant:
    moved = jobs_on(opts, acc)
    note = (f"running {', '.join(repr(d) for d in moved)} on it" if len(moved) <= 3
            else f"running the {len(moved)} jobs it can run on it")
    model, lp = kept or (None, None)
    return Variant(("force", acc), options=only_on(opts, acc), extra=force_rows(acc), note=note, model=model, lp=lp)


def lp_bounds(s, cat, fm: FleetModel, accelerators: list[str], time_limit_s: float,
              keep: dict | None = None) -> dict[str, float | None]:
    """For each accelerator: the LP relaxation of the plan forced onto it (a lower bound of its
    cost: the model's objective), inf where even that LP is infeasible, None where nothing can be
    forced (no variable puts work on it). The LPs are solved together (batch.py); keep, when given,
    receives acc -> (forced model, its LP result) for the MILPs that follow."""
    out, models = {}, {}
    for acc in accelerators:
        if deadline.left() <= 0:  # the command's time limit: left out of the dict, said cut short
            deadline.cut("explanations")
            break
        forced = builder(s)(s, cat, only_on(fm.options, acc))
        rows = force_rows(acc)(forced)
        if any(len(row.expr) == 0 for row in rows):
            out[acc] = None
            continue
        for i, row in enumerate(rows):
            forced.prob.addConstraint(row, f"variant{i}")
        models[acc] = forced
    got = batch.solve_lps(list(models.values()), time_limit_s)
    for (acc, forced), res in zip(models.items(), got):
        out[acc] = res.objective if res.ok else (math.inf if res.status == "infeasible" else None)
        if keep is not None:
            keep[acc] = (forced, res)
    return {acc: out[acc] for acc in accelerators if acc in out}


NO_PLAN = ("it can run the jobs, but no plan using it meets the scenario's limits "
           "(budget, site power, availability or N+1)")
"""the reason of an accelerator with no forced plan where whynot_limits.py names no limit"""


def without_plan(bounds: dict[str, float | None], outcomes: dict) -> list[str]:
    """The accelerators whose forced plan does not exist: its LP (bound inf) or its MILP infeasible."""
    return sorted({a for a, b in bounds.items() if b == math.inf}
                  | {k[1] for k, got in outcomes.items() if k[0] == "force" and got.get("status") == "infeasible"})


def forced_to_solve(bounds: dict[str, float | None], base: float) -> list[str]:
    """The accelerators whose forced plan is re-solved as a MILP: the NEAREST_FORCED smallest LP
    bounds and any within NEAR of the plan's cost."""
    ranked = sorted((b, a) for a, b in bounds.items() if b is not None and math.isfinite(b))
    return sorted({a for k, (b, a) in enumerate(ranked) if k < NEAREST_FORCED or b <= base * (1 + NEAR)})


def variants_for(plan: dict, s, cat, fm: FleetModel, forced: list[str], kept: dict | None = None,
                 before: list[Variant] | None = None) -> list[Variant]:
    """The next-best, lifted-cap, raised-target and forced-accelerator variants of a plan (kept:
    the forced models lp_bounds built and relaxed; before: the variants other than forced ones,
    made already)."""
    if before is not None:
        return before + [_forced(a, fm.options, (kept or {}).get(a)) for a in forced]
    out = []
    lead = leading_row(plan)
    if lead is not None and lead["acquisition"] == "api":  # the next best hosts it itself
        out.append(Variant(("next",), options=dataclasses.replace(fm.options, api={})))
    elif lead is not None:
        out.append(Variant(("next",), options=without_new(fm.options, lead["system"])))
    mode = leading_mode(plan, s, fm.options)
    if mode:
        out.append(Variant(("mode", mode), options=without_acquisition(fm.options, mode)))
    hosted = _api_jobs(fm)  # (jobs an API may take that the plan runs on systems, in part or whole)
    if any(p.get("users_per_replica") for j in plan["jobs"] if j["name"] in hosted for p in j["placements"]):
        out.append(Variant(("api",), options=api_only(fm.options)))
    if s.site.power_cap_kw is not None:
        out.append(Variant(("cap", "power"), s.model_copy(update={"site": s.site.model_copy(
            update={"power_cap_kw": None})}), lifted=True))
    for name in ("usd_per_year", "capex_usd_per_year", "opex_usd_per_year"):
        if getattr(s.budget, name) is not None:
            out.append(Variant(("cap", name), s.model_copy(update={"budget": s.budget.model_copy(
                update={name: None})}), lifted=True))
    if s.policy.redundancy == "n+1":  # without N+1 a serving part may use marketplace hosts again (eligibility):
        serving = tuple(j.name for j in s.jobs if j.stage in ("serve", "rl"))  # their offers are found again
        out.append(Variant(("cap", "redundancy"), s.model_copy(update={"policy": s.policy.model_copy(
            update={"redundancy": "none"})}), lifted=True, rebuild_options=bool(serving), rebuild_jobs=serving))
    cost = {j["name"]: j["cost_usd_per_year"] or 0.0 for j in plan["jobs"]}
    costliest = sorted((j for j in s.jobs if j.stage == "serve"), key=lambda j: (-cost.get(j.name, 0.0), j.name))
    for j in costliest[:TARGET_JOBS]:
        if j.stage == "serve":
            faster = j.model_copy(update={"min_tokens_per_s_per_user": j.min_tokens_per_s_per_user * (1 + TARGET_STEP)})
            jobs = [faster if k.name == j.name else k for k in s.jobs]
            out.append(Variant(("target", j.name), s.model_copy(update={"jobs": jobs}), rebuild_options=True,
                               rebuild_jobs=(j.name,)))
    return out + [_forced(a, fm.options, (kept or {}).get(a)) for a in forced]


# --- reading the answers ------------------------------------------------------------------------

def fleet_text(fleet: list[dict]) -> str:
    return " + ".join(fleet_item(f, provider=True) for f in fleet) or "nothing"


def fleet_change(old: list[dict], new: list[dict]) -> str:
    """What a fleet adds and drops against the plan's, by offer."""
    before = {f["offer"]: f for f in old}
    after = {f["offer"]: f for f in new}
    parts = []
    for oid in sorted(set(before) | set(after)):
        d = after.get(oid, {}).get("systems", 0) - before.get(oid, {}).get("systems", 0)
        f = after.get(oid) or before[oid]
        if d:
            parts.append(f"{'adds' if d > 0 else 'drops'} {abs(d)}x {f['system']} ({f['acquisition']}, {f['provider']})")
    return "; ".join(parts) or "the same systems"


def _no_option_reason(acc: str, opts) -> str:
    reasons = {dk: why for dk, per in sorted(opts.why_not.items()) for a, why in per.items() if a == acc}
    if not reasons:
        return "no configuration for these jobs"
    if len(set(reasons.values())) == 1:
        return next(iter(reasons.values()))
    return "; ".join(f"{dk}: {why}" for dk, why in reasons.items())


def _no_variable_reason(acc: str, s, cat, opts) -> str:
    systems = {o.system for lists in (opts.serve, opts.batch, opts.edge) for lst in lists.values() for o in lst
               if o.accelerator == acc}
    whys = sorted({site_exclusion(o, cat.systems[o.system], s) for o in opts.offers.values()
                   if o.system in systems} - {""})
    return whys[0] if whys else "no offer the policy allows can host its configurations here"


def weighted(fm: FleetModel, res) -> float | None:
    """The plan's objective where it weighs more than cost (max-coverage: unserved demand priced at
    registry.COVERAGE_WEIGHT; elastic slack): the LP bounds (lp_bounds) are then on that objective,
    not on any plan's cost. None where the objective is the cost."""
    return res.objective if (fm.unserved or fm.slack) and res.objective is not None else None


def _unplanned(skipped: bool, outcomes: dict, nearer: str) -> str:
    """Why a forced accelerator was not re-planned: the explanations' time ran out (skipped), the
    level re-plans none (--explain brief: no outcomes), or `nearer` ones were (full re-plans the
    NEAREST_FORCED smallest LP bounds)."""
    if skipped:
        return "the explanations' time ran out first"
    return "--explain full re-plans the nearest" if not outcomes else f"as {nearer} alternatives were"


def alternatives(plan: dict, s, cat, fm: FleetModel, outcomes: dict, bounds: dict[str, float | None],
                 limits: dict[str, str] | None = None, objective: float | None = None) -> list[dict]:
    """One row per catalog accelerator the plan does not use: why it cannot serve, or what the
    cheapest plan running every job it can on it costs more per year (re-planned, or its LP bound);
    limits: acc -> the limit its forced plan breaks (whynot_limits.py), where it has no plan.
    objective: the plan's own where it weighs coverage first (weighted): the LP bounds are on that
    objective, so a bound tells whether every plan on the accelerator is worse, never what it costs."""
    opts = fm.options
    used = {f["accelerator"] for f in plan["fleet"]}
    base = plan["total_cost_usd_per_year"]
    tol = max(0.01, s.solver.gap * base)
    with_options = accelerators_with_options(opts)
    rows = []
    for acc in sorted(set(cat.accelerators) - used):
        row = {"accelerator": acc, "status": "infeasible", "cost_delta_usd_per_year": None, "fleet": None,
               "basis": "reason"}
        got = outcomes.get(("force", acc))
        skipped = got is not None and got["status"] == "skipped"  # the explanations' time ran out first
        got = None if skipped else got
        note = _forced(acc, opts).note if acc in with_options else ""
        if acc not in with_options:
            row["reason"] = _no_option_reason(acc, opts)
        elif got is None and acc not in bounds:
            row.update(status="not-evaluated", reason="not evaluated: the command's time limit ran out first "
                                                 "(raise --time-limit to see it)")
        elif got is None and bounds.get(acc) == math.inf:
            row["reason"] = (limits or {}).get(acc) or NO_PLAN
        elif got is None and bounds.get(acc) is not None and objective is not None:
            why = _unplanned(skipped, outcomes, "nearer")
            worse = bounds[acc] > objective + tol
            row.update(status="costlier" if worse else "not-evaluated", basis="lp-bound", reason=(
                f"every plan {note} serves less of the demand, by priority, within the scenario's limits, or as "
                f"much at a higher cost (the LP relaxation's bound on the plan's coverage-first objective; not "
                f"re-planned, {why})" if worse else
                f"not re-planned ({why}); the LP relaxation of a plan {note} does not rule out one as good as the plan"))
        elif got is None and bounds.get(acc) is not None and bounds[acc] <= base + tol:
            why = _unplanned(skipped, outcomes, "nearer")
            row.update(status="not-evaluated", basis="lp-bound",
                       reason=f"not re-planned ({why}); the LP relaxation of the cheapest plan {note}, "
                              f"{_usd(bounds[acc])}/yr, does not rule out one as cheap as the plan")
        elif got is None and bounds.get(acc) is not None:
            delta = bounds[acc] - base
            why = _unplanned(skipped, outcomes, "cheaper")
            row.update(status="costlier", cost_delta_usd_per_year=float(math.floor(delta)), basis="lp-bound",
                       reason=f"the cheapest plan {note} costs at least {_usd(math.floor(bounds[acc]))}/yr "
                              f"(+{_usd(math.floor(delta))} "  # (a bound shown rounded down: never above a plan)
                              f"or more: the LP relaxation's bound; not re-planned, {why}{_caps_unchecked(s)})")
        elif got is None or got["status"] == "no-variables":
            row["reason"] = _no_variable_reason(acc, s, cat, opts)
        elif got["status"] == "infeasible":
            row["reason"] = (limits or {}).get(acc) or NO_PLAN
        elif got["status"] not in ("optimal", "feasible"):
            row.update(status="not-evaluated", basis="milp",
                       reason="not evaluated: the re-plan found no fleet within its work limit "
                              f"({MAX_NODES:,} nodes){cut_words(got, ' and was ', '')}")
        else:
            delta = got["cost"] - base
            delta = 0.0 if abs(delta) <= tol else delta
            bound = "" if got["status"] == "optimal" else "at most "
            lost = coverage_lost(plan, got)
            within, least = proven_within(got, base)
            sign = (f"+{_usd(delta)}" if delta > 0 else "the plan's cost, within the solver's gap" if delta == 0 else
                    f"{_usd(-delta)} less than the plan" + ("" if lost else ", within the solver's gap or the plan's candidate pairs"))
            said = (f"the cheapest plan {note} costs {bound}{_usd(got['cost'])}/yr ({sign}{within if delta > 0 else ''}): "
                    if not lost else  # (the expert review: "running ... on it" read as serving them, a minus as a saving)
                    f"the best plan {_only(note)} serves less{coverage_text(plan, lost).replace('; it', ': it', 1)}; it "
                    f"costs {bound}{_usd(got['cost'])}/yr ({sign}): ")
            row.update(status="serves-less" if lost else "costlier", cost_delta_usd_per_year=round(delta, 2),
                       fleet=got["fleet"], basis="milp", reason=said + fleet_text(got["fleet"]) + cut_words(got),
                       **({"unserved_jobs": lost} if lost else {}), **(least if delta > 0 else {}))
        rows.append(row)
    order = {"costlier": 0, "serves-less": 1, "not-evaluated": 2, "infeasible": 3}
    rows.sort(key=lambda r: (order[r["status"]], r["cost_delta_usd_per_year"] is None,
                             r["cost_delta_usd_per_year"] or 0.0, r["accelerator"]))
    return rows


def _only(note: str) -> str:
    """"running 'a', 'b' on it" (or "the 5 jobs it can run") as a coverage plan's restriction, which may leave them unserved."""
    jobs = note.removeprefix("running ").removesuffix(" on it").removesuffix(" it can run")
    return f"with {jobs} allowed only on it"


def _caps_unchecked(s) -> str:
    """'; whether whole systems fit site.power_cap_kw was not checked' where the scenario caps power or
    cost: an LP bound's fractions of systems may fit a cap no plan of whole systems fits (the second
    review: an office's 3 kW cap, h200-sxm shown '+$3,936 or more', and no plan on it exists)."""
    budget = any(year_caps(s, t) for t in range(1, s.horizon_years + 1))
    caps = [name for name, on in (("site.power_cap_kw", s.site.power_cap_kw), ("the budget", budget)) if on]
    return f"; whether whole systems fit {' and '.join(caps)} was not checked" if caps else ""


MODE_WORDS = {"buy": "buying", "on-demand": "renting on demand", "spot": "spot rentals",
              "reserved-1y": "1-year reservations", "reserved-3y": "3-year reservations"}
"""an acquisition mode as the fleet without it is named ("the cheapest fleet without buying")"""


def leading_mode(plan: dict, s, opts) -> str | None:
    """The acquisition mode of the plan's costliest fleet row it acquires (leading_row), where some job
    may use an offer of another mode (not a hosted API's: the next best hosts it itself)."""
    top = leading_row(plan)
    if top is None:
        return None
    o = opts.offers.get(top["offer"])
    if top["acquisition"] not in MODE_WORDS or o is None:
        return None
    other = any(opts.offers[oid].acquisition not in (top["acquisition"], "api")
                for lst in opts.eligible.values() for oid in lst)
    return top["acquisition"] if other else None  # (no other mode any job may use: nothing to re-plan)


def next_best(plan: dict, outcomes: dict) -> dict | None:
    """The cheapest fleet without the plan's costliest system type it acquires (leading_row; its hosted
    API), the systems of that type already owned kept."""
    got = outcomes.get(("next",))
    if got is None:
        return None
    lead = leading_row(plan)
    systems = [lead["system"]]
    if lead["acquisition"] == "api":
        api = f"{lead['provider']}'s hosted API"
        return _next(plan, got, api, {"excluded_systems": [api]}, "next-best fleet")
    held = sum(f["systems"] for f in plan["fleet"] if f.get("owned") and f["system"] == lead["system"])
    without = f"more {lead['system']} than the {held} you own" if held else lead["system"]
    return _next(plan, got, without, {"excluded_systems": systems, **({"kept_owned": held} if held else {})},
                 "next-best fleet")


def _api_jobs(fm) -> set[str]:
    """The jobs some part of which a hosted API may take."""
    return {fm.options.demands[dk].job for dk, offers in fm.options.api.items() if offers}


def api_fleet(plan: dict, outcomes: dict) -> dict | None:
    """The cheapest fleet with every serving job an API may take on hosted APIs (the ("api",) variant,
    where the plan self-hosts some of it): the API-or-self-host answer beside the plan."""
    got = outcomes.get(("api",))
    if got is None:
        return None
    return _next(plan, got, "self-hosting what an API serves", {"excluded_systems": []}, "cheapest fleet")


def next_mode(plan: dict, outcomes: dict) -> dict | None:
    """The cheapest fleet without the plan's leading acquisition mode (leading_mode): the rent-or-buy
    answer beside the plan, which next_best (another system type) does not give."""
    key = next((k for k in outcomes if k[0] == "mode"), None)
    if key is None:
        return None
    return _next(plan, outcomes[key], MODE_WORDS[key[1]], {"excluded_systems": [], "excluded_acquisition": key[1]},
                 "cheapest fleet")


def _next(plan: dict, got: dict, without: str, keys: dict, what: str) -> dict:
    if got["status"] == "skipped" or (got["status"] not in ("optimal", "feasible", "infeasible") and got.get("cut_short")):
        ran = "first" if got["status"] == "skipped" else "before its re-plan found a fleet"
        return {"fleet": None, "cost_usd_per_year": None, "cost_delta_usd_per_year": None, **keys,
                "message": f"the {what} without {without} was not re-planned: the "
                           f"explanations' time ran out {ran}"}
    if got["status"] not in ("optimal", "feasible"):
        return {"fleet": None, "cost_usd_per_year": None, "cost_delta_usd_per_year": None, **keys,
                "message": f"no other fleet meets the scenario without {without} ({got['status']})"}
    delta = got["cost"] - plan["total_cost_usd_per_year"]
    lost = coverage_lost(plan, got)
    within, least = proven_within(got, plan["total_cost_usd_per_year"])
    return {"fleet": got["fleet"], "cost_usd_per_year": got["cost"], "cost_delta_usd_per_year": round(delta, 2),
            **keys, **({"unserved_jobs": lost} if lost else {}), **least,
            **({"cost_is_upper_bound": True} if got["status"] != "optimal" else {}),
            "message": f"{what} without {without}: {fleet_text(got['fleet'])}, "
                       f"{'at most ' if got['status'] != 'optimal' else ''}{_usd(got['cost'])}/yr "
                       f"({'+' if delta >= 0 else '-'}{_usd(abs(delta))} per year{within}"
                       f"{'; the best found within ' + format(MAX_NODES, ',') + ' nodes' if got['status'] != 'optimal' else ''}"
                       f"{cut_words(got, '; ', '')}{coverage_text(plan, lost)})"}
