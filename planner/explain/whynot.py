"""Alternatives to a plan, each one a re-solved MILP ("what if"), never a guess.

- Why not accelerator A, for every catalog accelerator the plan does not use: the reason it cannot
  serve (options.why_not: does not fit, too slow for the target, stack or policy excluded, no offer,
  cooling), or the extra yearly cost of the cheapest plan forced to use it: the demand d that costs
  least to move onto A (each demand priced alone, shortlist.pair_cost) keeps only its
  configurations on A, the other demands' variables are held at the plan's values (owned systems
  may grow), and the MILP is re-solved with
      sum_{d,i,o on A} y[d,i,o] + sum e[d,i,o] + sum_d max(runs_d, 1) x[d,i,o]  >=  1.
  For a one-job scenario that is "the job on A alone". An accelerator with edge options only is
  forced into the full model by the same row.
- The next-best distinct fleet: the MILP over the options that do not use the plan's costliest
  system type.
- Finite differences of the integer plan: a cap lifted (site power, a budget, N+1 redundancy) or a
  serving job's per-user speed target raised by TARGET_STEP, re-planned.
Variants are independent; they run on a few threads, each with its own copy of the model (CBC is a
separate process), so the answers do not depend on the order. Each solve is time-limited; one that
stops with an incumbent gives an upper bound, one without gives no number.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import pulp

from planner.milp import fleet as model
from planner.milp.fleet import FleetModel
from planner.milp.solve import SolveResult, solve
from planner.options import build as options
from planner.options import shortlist
from planner.options.eligibility import site_exclusion

VARIANT_TIME_LIMIT_S = 5.0
BUDGET_S = 30.0  # all variants together; later ones are skipped (reported as not evaluated)
TARGET_STEP = 0.10  # +10% of the per-user speed target
MAX_WORKERS = 4


@dataclass
class Variant:
    key: tuple
    scenario: object | None = None  # a modified scenario: a fresh model (and options if asked)
    rebuild_options: bool = False
    options: object | None = None  # modified options: a fresh model
    extra: Callable[[FleetModel], list] | None = None  # extra rows
    note: str = ""
    hold: dict | None = None  # plan values: hold every demand but `free` as planned (fresh model)
    free: str = ""


def outcome(fm: FleetModel, res: SolveResult) -> dict:
    """What a variant's plan is: status, yearly cost, fleet, bought power and capex, unserved users."""
    if not res.ok:
        return {"status": res.status}
    from planner.milp.readout import read_plan

    plan = read_plan(fm.scenario, fm, res)
    bought = [f for f in plan["fleet"] if f["acquisition"] == "buy"]
    unserved = sum((u.get("users") or 0.0) for j in plan["jobs"] for u in j["unserved"].values())
    return {"status": res.status, "cost": plan["total_cost_usd_per_year"], "fleet": plan["fleet"],
            "power_kw": sum(f["power_kw"] or 0.0 for f in bought),
            "capex": sum(f["purchase_usd"] or 0.0 for f in bought),
            "opex": plan["total_cost_usd_per_year"] - plan["cost_breakdown_usd_per_year"].get("capital", 0.0),
            "unserved_users": unserved}


def run_variants(s, cat, opts, variants: list[Variant], time_limit_s: float) -> dict[tuple, dict]:
    """Solve every variant (forced-accelerator ones within VARIANT_TIME_LIMIT_S); key -> outcome()."""
    out: dict[tuple, dict] = {}
    todo = list(variants)
    lock = threading.Lock()
    start = time.perf_counter()

    def worker() -> None:
        base = None
        while True:
            with lock:
                if not todo:
                    return
                v = todo.pop(0)
                if time.perf_counter() - start > BUDGET_S:
                    out[v.key] = {"status": "skipped"}
                    continue
            if v.scenario is not None or v.options is not None:
                vs = v.scenario or s
                fm = model.build(vs, cat, v.options or (options.build(vs, cat) if v.rebuild_options else opts))
                prob = fm.prob
            else:
                base = base or model.build(s, cat, opts)
                fm, prob = base, base.prob.copy()
            if v.hold is not None:
                hold(fm, v.hold, v.free)
            rows = v.extra(fm) if v.extra else []
            for i, row in enumerate(rows):
                prob.addConstraint(row, f"variant{i}")
            fm = dataclasses.replace(fm, prob=prob)
            if any(len(row.expr) == 0 for row in rows):
                result = {"status": "no-variables"}
            else:
                limit = min(time_limit_s, VARIANT_TIME_LIMIT_S) if v.key[0] == "force" else time_limit_s
                result = outcome(fm, solve(fm, time_limit_s=limit))
            result["note"], result["held"] = v.note, v.hold is not None
            with lock:
                out[v.key] = result

    workers = max(1, min(MAX_WORKERS, os.cpu_count() or 1, len(variants)))
    with ThreadPoolExecutor(workers) as pool:
        for f in [pool.submit(worker) for _ in range(workers)]:
            f.result()
    return out


# --- which variants -----------------------------------------------------------------------------

def force_terms(fm: FleetModel, acc: str) -> list:
    o = fm.options
    terms = [v for (dk, i, _), v in sorted(fm.y.items()) if o.serve[dk][i].accelerator == acc]
    terms += [v for (dk, i, _), v in sorted(fm.e.items()) if o.edge[dk][i].accelerator == acc]
    terms += [max(o.demands[dk].runs_per_year, 1.0) * v for (dk, i, _), v in sorted(fm.x.items())
              if o.batch[dk][i].accelerator == acc]
    return terms


def _force(acc: str):
    return lambda fm: [pulp.lpSum(force_terms(fm, acc)) >= 1]


def without_systems(opts, systems: set[str]):
    """Options with every configuration on the given system types removed."""
    def drop(lists: dict) -> dict:
        return {dk: [o for o in lst if o.system not in systems] for dk, lst in lists.items()}
    return dataclasses.replace(opts, serve=drop(opts.serve), batch=drop(opts.batch), edge=drop(opts.edge))


def accelerators_with_options(opts) -> set[str]:
    return {o.accelerator for lists in (opts.serve, opts.batch, opts.edge) for lst in lists.values() for o in lst}


def only_on(opts, acc: str, demand: str):
    """Options where `demand` keeps only its configurations on accelerator `acc`."""
    lists = {"serve": opts.serve, "batch": opts.batch, "edge": opts.edge}
    kind = next(k for k, v in lists.items() if demand in v)
    kept = {**lists[kind], demand: [o for o in lists[kind][demand] if o.accelerator == acc]}
    return dataclasses.replace(opts, **{kind: kept})


def _standalone(s, cat, opts, dk: str, by_system: dict, acc: str | None = None) -> float | None:
    """The cheapest yearly cost of meeting demand dk alone (shortlist.pair_cost), optionally on acc."""
    lst = opts.serve.get(dk) or opts.batch.get(dk) or []
    costs = [shortlist.pair_cost(s, cat, opts, dk, i, oid) for i, o in enumerate(lst)
             if acc is None or o.accelerator == acc for oid in by_system.get(o.system, [])
             if not site_exclusion(opts.offers[oid], cat.systems[o.system], s)]
    return min(costs) if costs else None


def cheapest_demand_for(acc: str, s, cat, opts) -> str | None:
    """The serving or batch demand whose standalone cost rises least when moved onto acc."""
    by_system: dict[str, list[str]] = {}
    for oid, o in sorted(opts.offers.items()):
        by_system.setdefault(o.system, []).append(oid)
    best = None
    for dk in sorted(set(opts.serve) | set(opts.batch)):
        on = _standalone(s, cat, opts, dk, by_system, acc)
        if on is None:
            continue
        extra = on - (_standalone(s, cat, opts, dk, by_system) or 0.0)
        best = min(best, (extra, dk)) if best else (extra, dk)
    return best[1] if best else None


STORES = ("n", "y", "r", "x", "b", "e", "u")


def plan_values(fm: FleetModel, res: SolveResult) -> dict:
    """(store, key) -> the plan's value, for every variable of the model."""
    return {(store, key): round(res.values.get(v.name, 0.0), 9)
            for store in STORES for key, v in getattr(fm, store).items()}


def hold(fm: FleetModel, values: dict, free: str) -> None:
    """Hold the plan as it is except demand `free`: other demands' variables fixed at the plan's
    values (0 where the plan has none), owned systems at least as many as held (more may be added)."""
    for store in STORES:
        for key, v in getattr(fm, store).items():
            val = values.get((store, key), 0.0)
            if store == "n" or (store == "u" and isinstance(key, str)):  # owned systems and their spares
                v.lowBound = val
            elif key[0] != free:
                v.lowBound = v.upBound = val


def _forced(a: str, s, cat, fm: FleetModel, values: dict) -> Variant:
    """The demand that costs least to move onto a (priced alone) runs only on a; with several
    demands the rest of the plan is held as it is. Small MILPs, so no time limit decides the
    answer. Edge-only accelerators: at least one unit on a, everything re-optimised."""
    dk = cheapest_demand_for(a, s, cat, fm.options)
    if dk is None:
        return Variant(("force", a), extra=_force(a))
    several = len(fm.options.demands) > 1
    note = f"moving '{dk}' onto it, the rest of the plan as it is" if several else f"running '{dk}' on it"
    return Variant(("force", a), options=only_on(fm.options, a, dk), extra=_force(a),
                   hold=values if several else None, free=dk, note=note)


def variants_for(plan: dict, s, cat, fm: FleetModel, res: SolveResult) -> list[Variant]:
    """The forced-accelerator, next-best, lifted-cap and raised-target variants of a plan."""
    used = {f["accelerator"] for f in plan["fleet"]}
    values = plan_values(fm, res)
    forced = [_forced(a, s, cat, fm, values) for a in sorted(accelerators_with_options(fm.options) - used)]
    out = []
    if plan["fleet"]:
        out.append(Variant(("next",), options=without_systems(fm.options, {plan["fleet"][0]["system"]})))
    if s.site.power_cap_kw is not None:
        out.append(Variant(("cap", "power"), s.model_copy(update={"site": s.site.model_copy(
            update={"power_cap_kw": None})})))
    for name in ("usd_per_year", "capex_usd_per_year", "opex_usd_per_year"):
        if getattr(s.budget, name) is not None:
            out.append(Variant(("cap", name), s.model_copy(update={"budget": s.budget.model_copy(
                update={name: None})})))
    if s.policy.redundancy == "n+1":
        out.append(Variant(("cap", "redundancy"), s.model_copy(update={"policy": s.policy.model_copy(
            update={"redundancy": "none"})})))
    for j in s.jobs:
        if j.stage == "serve":
            faster = j.model_copy(update={"min_tokens_per_s_per_user": j.min_tokens_per_s_per_user * (1 + TARGET_STEP)})
            jobs = [faster if k.name == j.name else k for k in s.jobs]
            out.append(Variant(("target", j.name), s.model_copy(update={"jobs": jobs}), rebuild_options=True))
    return out + forced


# --- reading the answers ------------------------------------------------------------------------

def fleet_text(fleet: list[dict]) -> str:
    return " + ".join(f"{f['systems']}x {f['system']} ({f['acquisition']}, {f['provider']})" for f in fleet) or "nothing"


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


def _usd(x: float) -> str:
    return f"${x:,.0f}"


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


def alternatives(plan: dict, s, cat, fm: FleetModel, outcomes: dict) -> list[dict]:
    """One row per catalog accelerator the plan does not use: why it cannot serve, or what the
    cheapest plan forced to use it costs more per year."""
    opts = fm.options
    used = {f["accelerator"] for f in plan["fleet"]}
    base = plan["total_cost_usd_per_year"]
    tol = max(0.01, s.solver.gap * base)
    with_options = accelerators_with_options(opts)
    rows = []
    for acc in sorted(set(cat.accelerators) - used):
        row = {"accelerator": acc, "status": "infeasible", "cost_delta_usd_per_year": None, "fleet": None}
        got = outcomes.get(("force", acc))
        if acc not in with_options:
            row["reason"] = _no_option_reason(acc, opts)
        elif got is None or got["status"] == "no-variables":
            row["reason"] = _no_variable_reason(acc, s, cat, opts)
        elif got["status"] == "infeasible":
            row["reason"] = ("it can run the jobs, but no plan using it meets the scenario's limits "
                             "(budget, site power, availability or N+1)")
        elif got["status"] == "skipped":
            row.update(status="costlier", reason="not evaluated: the explanation's time budget "
                                                 f"({BUDGET_S:g} s for all alternatives) ran out")
        elif got["status"] not in ("optimal", "feasible"):
            row.update(status="costlier", reason="not evaluated: the solver's time limit ran out "
                                                 f"({got['status']})")
        else:
            delta = got["cost"] - base  # the rest held as planned: exact; else within the solver's gap
            delta = 0.0 if abs(delta) <= (0.01 if got["held"] else tol) else delta
            bound = "" if got["status"] == "optimal" else "at most "
            sign = f"+{_usd(delta)}" if delta >= 0 else (
                f"{_usd(-delta)} less than the plan: the plan's shortlist of pairs missed it")
            row.update(status="costlier", cost_delta_usd_per_year=round(delta, 2), fleet=got["fleet"],
                       reason=f"the cheapest plan {got['note'] or 'using it'} costs {bound}{_usd(got['cost'])}/yr "
                              f"({sign}): " + (fleet_change(plan["fleet"], got["fleet"]) if got["held"]
                                               else fleet_text(got["fleet"])))
        rows.append(row)
    order = {"costlier": 0, "infeasible": 1}
    rows.sort(key=lambda r: (order[r["status"]], r["cost_delta_usd_per_year"] is None,
                             r["cost_delta_usd_per_year"] or 0.0, r["accelerator"]))
    return rows


def next_best(plan: dict, outcomes: dict) -> dict | None:
    got = outcomes.get(("next",))
    if got is None or got["status"] == "skipped":
        return None
    systems = [plan["fleet"][0]["system"]]
    if got["status"] not in ("optimal", "feasible"):
        return {"fleet": None, "cost_usd_per_year": None, "cost_delta_usd_per_year": None,
                "excluded_systems": systems,
                "message": f"no other fleet meets the scenario without {', '.join(systems)} ({got['status']})"}
    delta = got["cost"] - plan["total_cost_usd_per_year"]
    return {"fleet": got["fleet"], "cost_usd_per_year": got["cost"], "cost_delta_usd_per_year": round(delta, 2),
            "excluded_systems": systems,
            "message": f"next-best fleet without {', '.join(systems)}: {fleet_text(got['fleet'])}, "
                       f"{_usd(got['cost'])}/yr ({'+' if delta >= 0 else '-'}{_usd(abs(delta))} per year)"}
