"""Which jobs a training run on an owned offer must fit beside, not take turns with (data/sharing.py
says when a run may give way to another job and still meet its deadline).

  beside    (demand, option, offer) -> the serving demands on that offer the run cannot give way
            to: every always-on one (24 h a day), and a part-day one when pausing for it would break
            the run's deadline (rows.py's batch-fit row counts their replicas beside the run's)
  pairs     runs of two different jobs on one offer, neither of which may give way to the other:
            acc_A b_A + acc_B b_B (+ the serving both must fit beside) <= acc_o held(o, t)
Parts of one job (an RL job's rollouts and trainer) take turns by design and never block each other.
A run that needs neither keeps the hours row alone (owned capacity as accelerator-hours).
"""

from __future__ import annotations

from planner.data import sharing


def _run(fm, dk: str, i: int, t: int) -> tuple[float, float, float]:
    """(hours per run, deadline, runs per year) of run (dk, i) in year t (a multi-year plan's demand
    grows: 12 runs a year may take turns where 48 cannot)."""
    d = fm.options.demands[dk]
    return fm.options.batch[dk][i].hours_per_run, d.max_hours_per_run, fm.demand_at(dk, t)


def serving_on(fm) -> dict[str, list[str]]:
    """offer -> the serving demands with a candidate pair on it."""
    out: dict[str, list[str]] = {}
    for dk, pairs in sorted(fm.serve_pairs.items()):
        for oid in sorted({oid for _, oid in pairs}):
            out.setdefault(oid, []).append(dk)
    return out


def beside(fm, dk: str, i: int, oid: str, on: dict[str, list[str]]) -> set[str]:
    """The serving demands on oid that run (dk, i) must fit beside (the module docstring) in some year
    of the plan (its row holds in every year: a run that must fit beside serving once its runs have
    grown is sized for it from the first)."""
    demands = fm.options.demands
    job = demands[dk].job
    out = set()
    for t in fm.years:
        hours, deadline, runs = _run(fm, dk, i, t)
        verdict: dict[float, bool] = {}  # hours_per_day -> must fit beside (a few values among many demands)
        for sk in on.get(oid, ()):
            d = demands[sk]
            if d.job == job:
                continue
            must = verdict.get(d.hours_per_day)
            if must is None:
                must = verdict[d.hours_per_day] = sharing.beside_serving(hours, deadline, runs, d.hours_per_day)
            if must:
                out.add(sk)
    return out


def pairs(fm) -> list[tuple[tuple[str, int], tuple[str, int], str, frozenset]]:
    """((demand, option), (demand, option), offer, years) of runs that must fit side by side on an
    owned offer in those years (the module docstring; each year with its own runs: fuzz seed 6262
    case 344, a fine-tune growing from 12 to 48 runs a year, was paired with a pretraining run in
    year 1 only and planned beside it in year 3 on 1,488 accelerators where the two needed 1,492),
    in a stable order."""
    by_offer: dict[str, list[tuple[str, int]]] = {}
    for dk, ps in sorted(fm.batch_pairs.items()):
        for i, oid in sorted(ps):
            if any((oid, t) in fm.held_terms for t in fm.years):
                by_offer.setdefault(oid, []).append((dk, i))
    found: dict[tuple, set] = {}
    for oid, all_runs in sorted(by_offer.items()):
        for t in fm.years:
            shape = {r: _run(fm, *r, t) for r in all_runs}
            cycles = [sharing.run_cycle(h, n) for h, _, n in shape.values()]
            busy, free = max(b for b, _ in cycles), min(p - b for b, p in cycles)
            # a run that may give way to the longest stretch with the shortest gap, waiting it out first,
            # may give way to any run here: it is in no pair
            runs = [r for r in all_runs
                    if not (free > 0 and sharing.can_give_way(shape[r][0], shape[r][1], 0.0, busy, busy + free))]
            for n, (da, ia) in enumerate(runs):
                for db, ib in runs[n + 1:]:
                    if fm.options.demands[da].job != fm.options.demands[db].job and \
                            sharing.side_by_side(shape[(da, ia)], shape[(db, ib)]):
                        found.setdefault(((da, ia), (db, ib), oid), set()).add(t)
    return [(a, b, oid, frozenset(years)) for (a, b, oid), years in sorted(found.items())]
