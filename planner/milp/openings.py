"""The facility-location linking rows of owned offers without spares (valid inequalities, see
fleet.py; held back in the full model behind a shortlist, define_held_shares): a demand's share
served on an owned offer is at most whether the fleet holds that offer at all.

  held-share   sum_i users_i y[d,i,o,t] <= users[d,t] held(o,t)                    pooled d
               sum_i c_i y[d,i,o,t] <= (users[d,t] + max_i c_i) held(o,t)           d alone, two options or more
  held-use     y[d,i,o,t] <= ceil(users[d,t] / users_i) held(o,t)                   d alone

held(o,t) (model.held) is the systems of offer o bought or reserved and still held in year t, an
integer. Without N+1 nothing else says "the offer is open": the capacity row slots Y <= acc_o held
lets the LP relaxation hold an eighth of an 8-GPU system for a job of one GPU, and price it so.
With these rows the LP holds at least the share of each demand the offer carries. Under N+1 the
spare u of the offer's pool does this (fleet.define_spare_variables' spare-share and spare-use,
pooling.define_pool_spares' pool-share: u <= held, so those rows are the stronger) and these are
not added.

Valid for every minimal plan (the proofs of spare-share and pool-share, with held(o,t) in place of
u): held(o,t) = 0 leaves the offer no capacity, so no replica and no load there; held(o,t) >= 1
makes the right-hand side at least a demand's users (pooled: a minimal plan's loads serve no more
than each demand needs, summed over every offer) or its users and one more replica (alone: a
minimal plan holds no replica it could remove with the demand still met), or the replicas of one
option that serve the demand alone (held-use). Every plan lowers to a minimal one at no higher
cost, so the optimum is unchanged (tests/test_openings.py checks them against enumerated fleets).

benchmarks/milp.py's 60 generated jobs (every acquisition mode, no N+1), the full model's LP with
its held cuts separated (covers.separated) -> with these rows too: seed 5 977,486 -> 997,535 $/yr
(optimum 1,009,718: 3.2% -> 1.2% short), seed 3 2,096,904 -> 2,106,633 (2,131,617), seed 7
1,216,325 -> 1,218,598 (1,235,754). The same rows for hourly rentals (R, r) lifted nothing there:
the rental covers (covers.py) already count whole rented systems.
"""

from __future__ import annotations

import math

from planner.milp.cutpool import Held


def define_held_shares(fm) -> None:
    """held-share and held-use rows (the module docstring) for every demand's replicas or loads on
    an owned offer, held back (cutpool.Held, one per family, offer and year: a row per demand or
    replica variable) in a lazy model without N+1: the full model behind a shortlist, whose LP
    bound the plan is measured against. Written whole into it (60 generated jobs: 1,967 rows), they
    made its LP 3-4x slower to solve (0.5 -> 1.8 s) and its prover's separation had no time left;
    in the shortlist searched, they changed the screened search's pools and made its plans dearer
    (seed 7: 1,248,412 against 1,235,754 $/yr), so it goes without them."""
    if not fm.tight or not fm.lazy or fm.scenario.policy.redundancy == "n+1":
        return
    share: dict[tuple, list] = {}
    rows: dict[tuple, list] = {}  # (family, offer, year) -> [(terms [(c, y)], top)]: sum c y <= top held
    for (dk, i, oid, t), v in sorted(fm.y.items()):
        if (oid, t) not in fm.held_terms:
            continue
        d, users = fm.options.demands[dk], fm.options.serve[dk][i].users_per_replica
        if users <= 0:
            continue  # (a prefill half serves no users itself: options/crossdisagg.py)
        need = fm.demand_at(dk, t)
        if d.pool:
            share.setdefault((dk, oid, t), []).append((users, v))
            continue
        share.setdefault((dk, oid, t), []).append((min(users, need), v))
        rows.setdefault(("held-use", oid, t), []).append(([(1.0, v)], math.ceil(need / users)))
    for (dk, oid, t), terms in sorted(share.items()):
        pooled = fm.options.demands[dk].pool
        if not pooled and len(terms) < 2:
            continue  # (one option alone: held-use is the tighter)
        need = fm.demand_at(dk, t)
        rows.setdefault(("held-share", oid, t), []).append((terms, need if pooled else need + max(c for c, _ in terms)))
    for (family, oid, t), group in sorted(rows.items()):
        _held(fm, family, (oid, t), group, fm.held_terms[(oid, t)])


def _held(fm, family: str, entity: tuple, group: list, held: list) -> None:
    """The rows sum c y <= top held(o,t) of one offer and year as one Held: top held - sum c y >= 0,
    a row each, over the variables they name and the held terms."""
    import numpy as np

    column: dict = {}
    for terms, _ in group:
        for _, v in terms:
            column.setdefault(v.name, (len(column), v))
    variables = [v for _, v in column.values()] + list(held)
    coef = np.zeros((len(group), len(variables)))
    for k, (terms, top) in enumerate(group):
        for c, v in terms:
            coef[k, column[v.name][0]] -= c
        coef[k, len(column):] = top
    fm.held_cuts.append(Held(family, entity, variables, [0.0] * len(group), coef))
