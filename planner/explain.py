"""Explanations: why a plan is what it is, and what to relax when there is none.

diagnose(): an elastic copy of the MILP (penalised shortfall per constraint family: budget, capex,
opex, site power, demand) names what to relax and by how much.
"""

from __future__ import annotations

from planner import model
from planner.errors import Diagnosis, SolverError
from planner.solve import solve


def diagnose(s, cat, opts, time_limit_s=None) -> Diagnosis:
    """Solve the elastic model; each non-zero slack is one relaxation with its size."""
    fm = model.build(s, cat, opts, elastic=True)
    res = solve(fm, time_limit_s=time_limit_s)
    if not res.ok:
        raise SolverError(f"the scenario is infeasible and its diagnosis could not be solved ({res.status})")
    relax = []
    for family, v in sorted(fm.slack.items()):
        amount = res.values.get(v.name, 0.0)
        if amount <= 1e-6:
            continue
        if family == "power":
            cap = s.site.power_cap_kw
            relax.append({"family": "power", "constraint": "site.power_cap_kw", "shortfall": round(amount, 3),
                          "unit": "kW", "suggested": round(cap + amount, 3),
                          "message": f"power cap needs +{amount:,.1f} kW (raise site.power_cap_kw from "
                                     f"{cap:,.1f} to {cap + amount:,.1f})"})
        else:
            field = {"budget": "usd_per_year", "capex": "capex_usd_per_year", "opex": "opex_usd_per_year"}[family]
            cap = getattr(s.budget, field)
            relax.append({"family": "budget", "constraint": f"budget.{field}", "shortfall": round(amount, 2),
                          "unit": "USD per year", "suggested": round(cap + amount, 2),
                          "message": f"budget short by ${amount:,.0f}/yr (raise budget.{field} from "
                                     f"${cap:,.0f} to ${cap + amount:,.0f})"})
    for dk, v in sorted(fm.unserved.items()):
        share = res.values.get(v.name, 0.0)
        if share <= 1e-6:
            continue
        d = opts.demands[dk]
        what = f"{share * d.users:,.0f} of {d.users:,} users" if d.kind == "serve" else f"{share:.0%} of its runs"
        relax.append({"family": "demand", "constraint": dk, "shortfall": round(share, 6), "unit": "share",
                      "message": f"job '{dk}' cannot be fully met: {what} unserved even with the "
                                 "budget and power relaxed (availability caps or redundancy bind)"})
    if not relax:
        relax.append({"family": "unknown", "constraint": "", "message":
                      "the elastic model found a plan without relaxing anything; rerun with a longer "
                      "solver.time_limit_s"})
    summary = "no plan meets every constraint. What to relax:\n" + "\n".join("  - " + r["message"] for r in relax)
    return Diagnosis(summary, relax)


# --- the chain of "because" for a plan ------------------------------------------------------------

def placement_reason(p: dict, job) -> str:
    """The physical reason for one placement, with its numbers."""
    where = f"{p['replicas']}x {p['accelerators_per_replica']}x {p['accelerator']}"
    if p.get("users_per_replica") is not None and job.stage in ("serve", "rl"):
        mem = (f"{p['weights_gb']:.1f} GB weights + {p['kv_gb']:.1f} GB KV per accelerator "
               f"({p['memory_gb_per_accelerator']:.1f} of {p['memory_gb_capacity']:.1f} usable GB)")
        target = getattr(job, "min_tokens_per_s_per_user", None) or getattr(job, "min_tokens_per_s_per_rollout", None)
        speed = (f"{p['tokens_per_s_per_user']:.1f} tok/s per user against {target:g}" if target else "")
        binds = {"memory": "memory binds (the KV cache fills it)",
                 "batch-cap": "the engine's batch limit binds"}.get(p["binding"], f"{p['binding']} binds")
        return (f"{where} (TP{p['tensor_parallel']} PP{p['pipeline_parallel']}): {mem}; {binds} at "
                f"{p['users_per_replica']} users per replica: {speed}")
    if p.get("hours_per_run") is not None:
        deadline = getattr(job, "max_hours_per_run", None) or (getattr(job, "max_days", 0) * 24) or None
        limit = f" against a {deadline:g} h limit" if deadline else ""
        return (f"{p['accelerators_per_replica']}x {p['accelerator']} ({p['acquisition']}): "
                f"{p['memory_gb_per_accelerator']:.1f} of {p['memory_gb_capacity']:.0f} GB per accelerator, "
                f"{p['hours_per_run']:.1f} h per run{limit}; {p['binding']} binds")
    return f"{where}: {p['memory_gb_per_accelerator']:.1f} of {p['memory_gb_capacity']:.0f} GB, " \
           f"{p['tokens_per_s_per_user']:.1f} tok/s; {p['binding']} binds"


def explain_plan(plan: dict, s, cat, opts, fm, res, time_limit_s=None) -> None:
    """Add the per-placement reasons ("why") to each job of the plan, in place."""
    jobs = {j.name: j for j in s.jobs}
    for job in plan["jobs"]:
        job["why"] = [placement_reason(p, jobs[job["name"]]) for p in job["placements"]]
