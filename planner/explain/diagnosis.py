"""Why there is no plan: a job no option can run (the closest miss, from the physics), or an elastic
copy of the MILP (penalised shortfall per constraint family: budget, capex, opex, site power,
demand) that names what to relax and by how much; suggested values are rounded up so that
re-planning with them finds a plan."""

from __future__ import annotations

import math

from planner.data import deadline
from planner.data.errors import Diagnosis, SolverError
from planner.data.scenario import Scenario
from planner.data.years import budget_basis, year_caps
from planner.explain.closest import closest_miss
from planner.milp import fleet as model
from planner.milp.readout import r2
from planner.milp.solve import solve
from planner.options.edge import EDGE_KINDS, device_reasons
from planner.options.types import Demand, Options


def unplaceable(opts: Options) -> list[Demand]:
    """Demands no option can meet at all (before any solve): no configuration on any system, nor
    a hosted API (policy.acquisition: api) that serves its model."""
    out = []
    for dk, d in opts.demands.items():
        lists = {"serve": opts.serve, "batch": opts.batch, "edge": opts.edge}[d.kind]
        if not lists.get(dk) and not opts.api.get(dk):
            out.append(d)
    return out


def no_option_diagnosis(missing: list[Demand], opts: Options, s: Scenario | None = None, cat=None) -> Diagnosis:
    """Why no accelerator can run a job: the one that comes closest, with its number (from the
    physics), then every accelerator's reason."""
    lines, relax = [], []
    for d in missing:
        reasons = opts.why_not.get(d.key, {})
        closest = closest_miss(d, s, cat, opts) if s is not None and cat is not None else None
        if closest:
            lines.append(f"job '{d.key}': {closest[0]}\n    To fix: {closest[1]['message']}")
            relax.append(closest[1])
        elif d.kind == "edge" and s is not None and cat is not None and not _carriers(d, s, cat):
            device = next(j.device for j in s.jobs if j.name == d.job)
            others = sorted(k for k in EDGE_KINDS if k != device and _carriers(d, s, cat, k))
            fix = (f"add a {device}-class device to the catalog (--catalog), or set the job's device to a class "
                   f"the catalog has ({', '.join(others) or 'none'})")
            lines.append(f"job '{d.key}': the catalog has no {device}-class device (device: {device})\n"
                         f"    To fix: {fix}")
            relax.append({"family": "options", "constraint": d.key, "message": fix})
            continue  # (every accelerator's reason is that one)
        elif _demand_rules(d, opts):
            rules = _demand_rules(d, opts)
            lines.append(f"job '{d.key}': the policy allows offers, but none this job may use: " + "; ".join(rules))
            relax.append({"family": "policy", "constraint": d.key,
                          "message": "allow other offers for it: " + "; ".join(rules)})
        else:
            lines.append(f"job '{d.key}': no accelerator in the catalog and policy can run it")
            relax.append({"family": "options", "constraint": d.key,
                          "message": "relax the job's targets (speed, TTFT, deadline), its precision, "
                                     "or the policy's allowed acquisition modes, providers and stacks"})
        alike: dict[str, list[str]] = {}
        for acc, why in sorted(reasons.items()):
            alike.setdefault(why, []).append(acc)
        for acc, why in sorted(reasons.items())[:40]:  # (GROUP_AT or more for one reason: one line, as the why-not table)
            if len(alike[why]) < GROUP_AT:
                lines.append(f"  {acc}: {why}")
            elif acc == alike[why][0]:
                lines.append(f"  {len(alike[why])} accelerators: {why} [{', '.join(alike[why])}]")
    return Diagnosis("\n".join(lines), relax)


GROUP_AT = 4
"""accelerators ruled out for one and the same reason, listed as one line here and as one row in the
why-not table (cli/render.alternative_rows; the JSON keeps each): a policy naming two accelerators
listed the 30 others one per row, and an edge job's infeasible answer 36 data-centre accelerators"""


def _carriers(d: Demand, s: Scenario, cat, device: str | None = None) -> set[str]:
    """The accelerators a device of edge demand d's class (or `device`) carries in the catalog."""
    device = device or next(j.device for j in s.jobs if j.name == d.job)
    return set(cat.accelerators) - set(device_reasons(device, cat))


def _demand_rules(d: Demand, opts: Options) -> list[str]:
    """The per-job offer rules (options.demand_offer_exclusion) that left some accelerator with no
    option for d: spot not for serving, no workstation bought for a data center, edge units bought."""
    ruled = set(opts.ineligible.get(d.key, {}).values())
    return sorted({r for why in opts.why_not.get(d.key, {}).values() for r in why.split("; ") if r in ruled})


def _unsolved(res) -> str:
    b = deadline.current()
    if b is not None and "diagnosis" in b.cuts:
        return (f"the scenario is infeasible, and the time limit of {b.seconds:g} s ran out before its diagnosis "
                "(what to relax) was solved.\n    To fix: raise --time-limit (or solver.time_limit_s in the "
                "scenario) to see what to relax")
    return f"the scenario is infeasible and its diagnosis could not be solved ({res.status})"


DIAGNOSIS_GAP = 1e-5  # the elastic optimum is the smallest relaxation; keep it tight
FAMILY_WORDS = {"usd": "total (capex + opex)", "capex": "capex", "opex": "opex"}
BASIS_SHORT = {"annualised": "annualised cost", "cash": "cash (purchases in full plus running costs)"}
"""budget.usd_per_year's basis (years.budget_basis) as a diagnosis names it where it is not the plan's own
view (a multi-year plan's cash, a one-period plan's yearly cost)"""


def _tightest(s, fm, res, family: str, t: int) -> int:
    """The year a budget's slack is for: its own (t), or, for the one slack every year of a shared
    cap has (t = 0, rows._elastic), the year that spends the most against it."""
    if t or not fm.npv:
        return t or fm.first
    spent = (lambda y: fm.year_cost(y, budget_basis(s))) if family == "usd" else (lambda y: fm.spend(y, family))
    return max(fm.years, key=lambda y: (res.value_of(spent(y)) - year_caps(s, y)[family][0], -y))


def _budget_relaxation(s, fm, family: str, t: int, amount: float, tight: int) -> dict:
    cap, where = year_caps(s, t)[family]
    new = float(math.ceil(cap + amount - 1e-6))
    basis = budget_basis(s)
    if fm.npv:
        words = BASIS_SHORT["annualised"] if family == "usd" and basis == "annualised" else FAMILY_WORDS[family]
        when = f"year {t}: " if t else ""  # (year 0: one cap every year shares; its tightest year named)
        return {"family": "budget", "year": tight, "constraint": where, "shortfall": r2(amount), "unit": "USD",
                "current": cap, "suggested": new,
                "message": f"{when}{words} budget short by ${amount:,.0f}{'' if t else f' in year {tight}, its tightest'} (raise {where} from "
                           f"${cap:,.0f} to ${new:,.0f}, or set budget.mode: max-coverage to serve what the "
                           "budget allows)"}
    short = (f"budget short by ${amount:,.0f} of the first year's {BASIS_SHORT['cash']}"
             if family == "usd" and basis == "cash" else f"budget short by ${amount:,.0f}/yr")
    return {"family": "budget", "constraint": where, "shortfall": round(amount, 2), "unit": "USD per year",
            "current": cap, "suggested": new,
            "message": f"{short} (raise {where} from ${cap:,.0f} to ${new:,.0f})"}


DIAGNOSIS_CUT = ("the diagnosis (the time limit stopped it before it proved its amounts the least: relaxing by "
                 "them admits a plan, smaller ones may too)")
"""what a diagnosis the time limit cut short says in its JSON (cut_short)"""


def _api_limits(fm, cat, dk: str, t: int, res) -> str:
    """'; fireworks's published rate limit (36,000 output tokens a minute) admits 30 users' for each
    hosted API of demand dk whose rate limit the plan fills ('' if none)."""
    out = []
    for c in fm.options.api.get(dk, []):
        v = fm.api.get((dk, c.offer, t))
        if c.max_users is None or v is None or res.values.get(v.name, 0.0) * fm.demand_at(dk, t) < c.max_users - 0.5:
            continue
        a = cat.api_offers[c.offer]
        what, limit = min(a.limits(), key=lambda wl: wl[1] / c.tokens.per_minute(wl[0]))
        out.append(f"{a.provider}'s published rate limit ({limit:,.0f} {what} a minute) admits {c.max_users:,.0f} users")
    return "; " + "; ".join(out) if out else ""


def diagnose(s, cat, opts, time_limit_s=None) -> Diagnosis:
    """Solve the elastic model (one year or the horizon); each non-zero slack is one relaxation
    with its size, rounded up so that re-planning with the suggested value finds a plan."""
    fm = model.build(s, cat, opts, elastic="shared")
    res = solve(fm, time_limit_s=time_limit_s, gap=min(s.solver.gap, DIAGNOSIS_GAP))
    if not res.ok:
        raise SolverError(_unsolved(res))
    relax = []
    for (family, t), v in sorted(fm.slack.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        amount = res.values.get(v.name, 0.0)
        if amount <= 1e-6:
            continue
        if family != "power":
            relax.append(_budget_relaxation(s, fm, family, t, amount, _tightest(s, fm, res, family, t)))
            continue
        cap = s.site.power_cap_kw
        new = math.ceil((cap + amount) * 100 - 1e-6) / 100
        when, year = (f"year {t}: ", {"year": t}) if fm.npv and t else ("", {})
        now = f"{cap:,.1f}" if cap >= 0.1 else f"{cap:g}"  # (0.01 kW is not "0.0")
        relax.append({"family": "power", **year, "constraint": "site.power_cap_kw", "shortfall": round(amount, 3),
                      "unit": "kW", "current": cap, "suggested": new,
                      "message": f"{when}power cap needs +{amount:,.1f} kW (raise site.power_cap_kw from "
                                 f"{now} to {new:,.2f})"})
    caps = ("availability caps bind (each offer's max_systems, else policy.max_systems_per_offer, "
            f"{s.policy.max_systems_per_offer:,})" + (", or N+1 redundancy" if s.policy.redundancy == "n+1" else ""))
    for (dk, t), v in sorted(fm.unserved.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        share = res.values.get(v.name, 0.0)
        if share <= 1e-6:
            continue
        d, need = opts.demands[dk], fm.demand_at(dk, t)
        when, year = (f"year {t}: ", {"year": t}) if fm.npv else ("", {})
        what = (f"{share * need:,.0f} of {need:,} users" if d.kind == "serve" else
                f"{share * need:,.0f} of {need:,} devices" if d.kind == "edge" else f"{share:.0%} of its runs")
        limits = _api_limits(fm, cat, dk, t, res)
        relax.append({"family": "demand", **year, "constraint": dk, "shortfall": round(share, 6), "unit": "share",
                      "message": f"{when}job '{dk}' cannot be fully met: {what} unserved even with the "
                                 f"budget and power relaxed ({caps}{limits})"})
    if not relax:
        relax.append({"family": "unknown", "constraint": "", "message":
                      "the elastic model found a plan without relaxing anything; rerun with a longer "
                      "solver.time_limit_s"})
    cut = res.status != "optimal"
    head = ("no plan meets every constraint. What to relax" + (
        ", all together (one plan's needs: relaxing one of them alone may admit no plan)" if len(relax) > 1 else "") + (
        " (the time limit stopped the diagnosis before it proved these amounts the least: relaxing by them "
        "admits a plan, smaller ones may too; raise --time-limit for the least)" if cut else "") + ":\n")
    return Diagnosis(head + "\n".join("  - " + r["message"] for r in relax), relax, cut_short=cut)
