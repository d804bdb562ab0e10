"""Which limit rules an accelerator out: for an accelerator whose forced plan (whynot.py: every job
that can run on it runs only there) does not exist, the elastic copy of that forced model
(fleet.build(elastic=True): penalised slack on the site power and the budgets, an unserved share per
demand) names the limit and how far a plan must overrun it.

The elastic objective weighs an unserved share (COVERAGE_WEIGHT x 1e3 per share) far above a kW of
power slack (ELASTIC_PENALTY 1e7), and that far above a dollar of budget slack (1e3), so its optimum
serves as much as the offers' availability allows, then asks the least extra power, then the least
extra budget (summed over the years of a multi-year plan).

The LPs are solved first (together, batch.py); for the EXACT accelerators whose LP overruns the
least, and for those whose LP overruns nothing, the MILP is then solved, bounded by
replan.MAX_NODES nodes (a work bound: the same answer on a busy machine), the models on a few
threads. Proven optimal, its slack is what the plan of whole systems that overruns the least needs
(an N+1 pool of two whole systems, where an LP holds a fraction of one: bank.yaml capped at 8 kW,
b200: 28.6 kW, against 11 kW from the LP). Where it is not proven in that work, or not solved, the
LP relaxation's slack is said, as a lower bound ("at least").
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

from planner.data import deadline
from planner.data.money import listed
from planner.data.years import budget_basis, year_caps
from planner.explain import batch
from planner.explain.replan import MAX_NODES, MAX_WORKERS, builder
from planner.explain.restricted import jobs_on, only_on
from planner.explain.whynot import force_rows
from planner.milp.solve import solve

SMALL = 1e-6
EXACT = 4
"""elastic MILPs solved per plan for the accelerators whose LP overruns its limits the least (the
near misses, where the LP's fraction of a system matters most), besides those whose LP overruns
nothing (a fractional fleet fits, whole systems do not: only the MILP names the limit); at most
MOST_EXACT in all; the others keep the LP's figure. 12: a robots-and-one-box office scenario has 9
accelerators whose LP fits the 10 kW cap with a fraction of a system (tests/test_whynot_limits.py);
with 8 the ninth said only "budget, site power, availability or N+1"."""
MOST_EXACT = 12


def _overrun(s, em, lp) -> float:
    """How far the elastic LP's answer overruns the limits, relative to each (for ranking): the
    unserved shares, then power and budget slack over their caps; 0 when it relaxes none."""
    if not lp.ok:
        return math.inf
    out = sum(1e3 * lp.values.get(v.name, 0.0) for v in em.unserved.values())
    for (family, t), v in em.slack.items():
        cap = s.site.power_cap_kw if family == "power" else year_caps(s, t)[family][0]
        out += lp.values.get(v.name, 0.0) / max(cap, 1.0)
    return out


def limits_of(s, cat, fm, accelerators: list[str], time_limit_s: float) -> dict[str, str]:
    """acc -> the limit its forced plan breaks and by how much, for each of `accelerators` (those
    whose forced plan does not exist) whose elastic model names one; the others are left out (the
    caller keeps its general reason)."""
    models = {}
    for acc in accelerators:
        if deadline.left() <= 0:
            deadline.cut("explanations")
            break
        em = builder(s)(s, cat, only_on(fm.options, acc), elastic=True)
        rows = force_rows(acc)(em)
        if any(len(row.expr) == 0 for row in rows):
            continue
        for i, row in enumerate(rows):
            em.prob.addConstraint(row, f"variant{i}")
        models[acc] = em

    lps = dict(zip(models, batch.solve_lps(list(models.values()), time_limit_s)))
    overrun = {a: _overrun(s, em, lps[a]) for a, em in models.items()}
    ranked = sorted(models, key=lambda a: (overrun[a], a))
    silent = [a for a in ranked if overrun[a] == 0]  # the LP names no limit: only the MILP can
    exact = set((silent + [a for a in ranked if a not in silent][:EXACT])[:MOST_EXACT])

    def answer(acc: str, em) -> str:
        moved = jobs_on(fm.options, acc)
        if acc in exact and deadline.left() <= 0:
            deadline.cut("explanations")
        elif acc in exact:
            res = solve(em, time_limit_s=time_limit_s, max_nodes=MAX_NODES)
            if res.status == "optimal" and (said := _limits_text(s, em, res.values, moved, "milp")):
                return said
        lp = lps[acc]  # not re-solved, or not proven within its work: the LP's lower bound
        return _limits_text(s, em, lp.values, moved, "lp") if lp.ok else ""

    workers = max(1, min(MAX_WORKERS, os.cpu_count() or 1, len(exact)))
    with ThreadPoolExecutor(workers) as pool:  # (each MILP is a solver process of its own)
        said = list(pool.map(lambda item: answer(*item), models.items()))
    return {acc: text for acc, text in zip(models, said) if text}


BASIS = {"lp": "at least ", "milp": ""}
TAIL = {"lp": " (the LP relaxation's least shortfall; a plan of whole systems may need more)",
        "milp": " (the plan of whole systems that overruns the least)"}
SERVED_TAIL = {"lp": " (the LP relaxation's most; a plan of whole systems may hold less)",
               "milp": " (the most a plan of whole systems holds)"}
"""the tail when the only limit is the offers' availability (no power or budget overrun)"""
UNIT = {"serve": "the users of", "batch": "the runs of", "edge": "the units of"}


def _limits_text(s, em, values: dict, moved: list[str], basis: str) -> str:
    """'it needs 4,310 kW of site power, above site.power_cap_kw (2,000 kW)' and the like: one
    clause per limit the elastic model had to relax, its years together ('' when it relaxed none)."""
    when = (lambda t: f" in year {t}") if em.npv else (lambda t: "")
    held, spare = [], ""
    for (dk, t), v in sorted(em.unserved.items()):
        share = values.get(v.name, 0.0)
        if share > SMALL and dk in moved:
            kind = em.options.demands[dk].kind
            most = math.floor((1 - share) * 100 + 1e-9)
            held.append(f"{f'at most {most}%' if most > 0 else 'none'} of {UNIT.get(kind, 'the demand of')} '{dk}'{when(t)}")
            spare = ", one of them an N+1 spare per pool" if em.u and kind == "serve" else spare
    parts = [f"the systems its offers can supply (their availability{spare}) hold {' and '.join(held)}"] if held else []
    over: dict[tuple, list[tuple]] = {}  # (family, the field, its cap) -> (year, amount over it)
    for (family, t), v in sorted(em.slack.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if (amount := values.get(v.name, 0.0)) > SMALL:
            cap, where = (s.site.power_cap_kw, "site.power_cap_kw") if family == "power" else year_caps(s, t)[family]
            over.setdefault((family, where, cap), []).append((t, amount))
    for (family, where, cap), amounts in over.items():
        power = family == "power"
        first_cash = not em.npv and not power and family == "usd" and budget_basis(s) == "cash"
        # (a one-period plan's cash budget caps its first year's payments, not a yearly cost)
        unit = (lambda x: f"{x:,.1f} kW") if power else (lambda x: f"${x:,.0f}{'' if em.npv or first_cash else '/yr'}")
        if basis == "lp" and em.npv:  # the LP bounds the sum over the years, not each year
            parts.append(f"it overruns {where} ({unit(cap)}) by at least {unit(sum(x for _, x in amounts))} "
                         "summed over the years")
            continue
        needs = [unit(cap + x) + when(t) for t, x in amounts]
        needs = listed(needs)
        parts.append(f"it needs {BASIS[basis]}{needs} of site power, above {where} ({unit(cap)})" if power else
                     f"its first year's cash is {BASIS[basis]}{needs}, above {where} ({unit(cap)}, a cash budget)"
                     if first_cash else
                     f"it {'spends' if em.npv else 'costs'} {BASIS[basis]}{needs}, above {where} ({unit(cap)})")
    if not parts:
        return ""
    tail = TAIL[basis] if over else SERVED_TAIL[basis]
    return "it can run the jobs, but no plan using it meets the scenario's limits: " + "; ".join(parts) + tail
