"""An independent check that a plan is feasible, re-derived from the scenario, the catalog and the
physics, never from the optimizer's internals (this module imports neither the MILP nor the
options it was built from).

For every placement it recomputes what the optimizer was told, from the shared physics:
  serving    the offer exists and the policy allows it; TP <= the system's scale-up domain;
             a replica of TP x PP accelerators fits one system or whole systems; the KV cache
             holds users_per_replica beside the weights (serving.max_batch_by_memory); at that
             batch each user gets >= the target tokens/s and the first token within max TTFT
             (serving.estimate); sum replicas x users_per_replica >= concurrent users
  batch      the run fits its accelerators (training.estimate) and hours per run <= the deadline;
             shares of runs sum to 1
  edge       one single-accelerator device of the right kind per unit, fast enough, within power
Then for the fleet as a whole:
  capacity   owned offer o: sum replicas x slots <= accelerators held (all serving at once), a batch
             run fits at once, and serve + batch accelerator-hours <= 8760 x accelerators;
             rented offer o: sum_d ceil(slots_d / per system) <= systems held
  redundancy n+1: every serving pool keeps one spare system free (any one system may fail and its
             replicas restart there): owned offer o: serving slots <= accelerators of (systems - 1);
             rented offer o: each demand's rentals hold ceil(slots_d / per system) + 1 systems
  caps       systems <= offer.max_systems (or policy.max_systems_per_offer for owned offers)
  budget     total <= usd_per_year; purchases <= capex cap; total - capital <= opex cap
  power      bought site systems' power_kw <= site.power_cap_kw
  costs      each offer's cost re-derived from costs.py; fleet, breakdown and job costs add up to
             the total within 0.5% (+ $1 of rounding)
"""

from __future__ import annotations

from planner.data.catalog import Catalog
from planner.data.jobs import demands_of_job
from planner.data.scenario import Scenario
from planner.verify.common import Ledger, Verification
from planner.verify.colocation import check_colocation
from planner.verify.fleet import check_breakdown, check_fleet, check_totals
from planner.verify.numbers import check_fleet_rows, check_job_costs, check_placement, check_utilisation
from planner.verify.api import check_api, check_api_fleet
from planner.verify.placements import check_batch, check_edge, check_serve
from planner.verify.pools import check_pools
from planner.verify.years import verify_years


def verify(plan: dict, s: Scenario, cat: Catalog) -> Verification:
    """Check `plan` (the JSON contract) against scenario `s` and resolved catalog `cat`."""
    v = Verification()
    if not v.check("plan", isinstance(plan, dict) and plan.get("status") in ("optimal", "feasible"),
                   f"status is {plan.get('status') if isinstance(plan, dict) else plan!r}, not a plan"):
        return v
    try:
        _verify(plan, s, cat, v)
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        v.check("plan", False, f"plan is malformed: {type(exc).__name__}: {exc}")
    return v


def _verify(plan: dict, s: Scenario, cat: Catalog, v: Verification) -> None:
    jobs = {j.name: j for j in s.jobs}
    listed = [j["name"] for j in plan["jobs"]]
    v.check("plan", sorted(listed) == sorted(jobs) and len(set(listed)) == len(listed),
            f"plan lists jobs {sorted(listed)}, the scenario {sorted(jobs)}")
    fleet = {}
    for f in plan["fleet"]:
        v.check("plan", f["offer"] not in fleet, f"offer '{f['offer']}' appears twice in the fleet")
        fleet[f["offer"]] = f
    multi = "years" in plan  # fleet and jobs describe the final year; prices there follow trends
    ledger = Ledger()
    last = s.horizon_years if multi else 1
    parts = {j.name: demands_of_job(j, last) for j in s.jobs}
    for pj in plan["jobs"]:
        job = jobs.get(pj["name"])
        if job is None:
            continue
        v.check("plan", pj["stage"] == job.stage and pj["model"] == job.model,
                f"job '{job.name}' is reported as {pj['stage']} {pj['model']}")
        unserved = pj.get("unserved") or {}
        v.check("plan", all(p["part"] in {d.key for d in parts[job.name]} for p in pj["placements"]),
                f"job '{job.name}' has placements of parts {sorted({p['part'] for p in pj['placements']})}")
        for part in parts[job.name]:
            placed = [p for p in pj["placements"] if p["part"] == part.key]
            for p in placed:
                check_placement(p, part, v)
            gap = unserved.get(part.key) or {}
            short = gap.get("share", 0.0) or 0.0
            if part.kind == "serve" and gap.get("users") is not None:  # exact to 0.05 user; the share is rounded
                short = min(1.0, (gap["users"] + 0.05) / part.users)
            v.check("policy", short <= 1e-6 or s.budget.mode == "max-coverage",
                    f"'{part.key}' leaves {short:.1%} unserved outside max-coverage mode")
            on_api = check_api([r for r in pj.get("api") or [] if r["part"] == part.key], part, job, s, cat, v, ledger)
            if on_api:  # users on a hosted API need no replicas
                short = min(1.0, short + on_api / part.users + 1e-6)
            {"serve": check_serve, "batch": check_batch, "edge": check_edge}[part.kind](part, job, placed, short, s, cat, v, ledger)
    if "demand_met" in plan:  # the top-level flag a script reads instead of every job's unserved
        unmet = any(j.get("unserved") for j in plan["jobs"]) or any(y.get("unserved") for y in plan.get("years") or [])
        v.check("plan", plan["demand_met"] is not unmet,
                f"demand_met is {plan['demand_met']} while {'some' if unmet else 'no'} demand is left unserved")
    check_pools(plan, s, cat, v, ledger)
    check_colocation(plan, s, cat, v)
    hardware = {oid: f for oid, f in fleet.items() if f["acquisition"] != "api"}
    check_api_fleet([f for f in plan["fleet"] if f["acquisition"] == "api"], plan["jobs"], v, cat)
    check_fleet(hardware, s, cat, v, ledger, costed=not multi)
    check_fleet_rows([f for f in plan["fleet"] if f["acquisition"] != "api"], cat, v, purchase=not multi,
                     horizon_years=s.horizon_years, kept=s.kept)
    check_job_costs(plan, fleet, s, cat, v, ledger, parts)
    check_utilisation(plan["utilisation"], fleet, cat, v, ledger)
    if multi:
        verify_years(plan, s, cat, v)
    else:
        check_totals(plan, fleet, s, v, cat)
        check_breakdown(plan, fleet, s, v, ledger)


def read_plan_file(path) -> dict:
    """A plan JSON file written by `plan --format json`; bad files are InputError (exit 2)."""
    import json
    from pathlib import Path

    from planner.data.errors import InputError, Problem
    from planner.data.yamlio import read_text

    path = Path(path)
    text = read_text(path, "plan JSON")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(Problem(f"not JSON: {exc.msg}", f"{path}:{exc.lineno}",
                                 "pass the file written by `plan SCENARIO --format json --output FILE`"))
    except RecursionError:
        raise InputError(Problem("JSON nested too deeply", str(path), "pass a plan written by `plan`"))
    if not isinstance(data, dict) or "fleet" not in data or "jobs" not in data:
        status = data.get("status") if isinstance(data, dict) else None
        raise InputError(Problem(f"not a plan (status {status})" if status else "not a plan: it lacks "
                                 "'fleet' and 'jobs'", str(path),
                                 "pass the file written by `plan SCENARIO --format json --output FILE`"))
    return data
