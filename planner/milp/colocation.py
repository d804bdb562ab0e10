"""An RL job's trainer and rollouts at one place (data/colocation.py) in the fleet MILP. The options
already keep each part's offers at places both parts can use (options/colocation.py); where more
than one is left, a binary w[j,p,t] picks the job's place p = (site, stack) in year t:
  colocate-one      sum_p w[j,p,t] <= 1
  colocate-trainer  sum_{i, o at p} x[trainer,i,o,t] <= w[j,p,t]       (the shares of its runs)
  colocate-rollout  y[rollout,i,o,t] <= U_i w[j,p,t], o at p             (a variable upper bound,
                    U_i = ceil(users[t] / users_i), the most replicas of option i any plan needs)
Rented systems follow their replicas (rental-use: r <= the systems the replicas fill, + a spare), so
a part rents nothing away from its place; bought and reserved systems are the fleet's, shared by
every job, and stay unlinked."""

from __future__ import annotations

import math

import pulp

from planner.data.colocation import colocated
from planner.options.colocation import place


def define_colocation(fm) -> None:
    for job, (trainer, rollout) in sorted(colocated(fm.scenario).items()):
        for t in fm.years:
            runs: dict[tuple, list] = {}
            for (dk, i, oid, yr), v in sorted(fm.x.items()):
                if dk == trainer and yr == t:
                    runs.setdefault(place(fm.options, fm.catalog, oid), []).append(v)
            replicas: dict[tuple, list] = {}
            for (dk, i, oid, yr), v in sorted(fm.y.items()):
                if dk == rollout and yr == t:
                    replicas.setdefault(place(fm.options, fm.catalog, oid), []).append((i, oid, v))
            places = sorted(set(runs) | set(replicas))
            if len(places) <= 1:
                continue  # (one place or none: the options' narrowing is the whole rule)
            w = {p: fm.var(fm.w, (job, p, t), "Binary") for p in places}
            fm.add("colocate-one", (job, t), pulp.lpSum(w.values()) <= 1)
            for p, xs in runs.items():
                fm.add("colocate-trainer", (job, *p, t), pulp.lpSum(xs) <= w[p])
            users = fm.demand_at(rollout, t)
            for p, ys in replicas.items():
                for i, oid, v in ys:
                    up = v.upBound if v.upBound is not None else math.ceil(
                        users / max(fm.options.serve[rollout][i].users_per_replica, 1))
                    fm.add("colocate-rollout", (rollout, i, oid, t), v <= up * w[p])


def settle(fm) -> None:
    """Each w of fm at 1 where its job's trainer or rollouts have work at that place in the values
    the other variables hold (varValue: a start copied from another model of the scenario), else 0."""
    if not fm.w:
        return
    used = set()
    for store in (fm.x, fm.y):
        for (dk, i, oid, t), v in store.items():
            if (v.varValue or 0) > 1e-9:
                used.add((dk.rsplit("/", 1)[0], place(fm.options, fm.catalog, oid), t))
    for key, v in fm.w.items():
        v.setInitialValue(1 if key in used else 0)
