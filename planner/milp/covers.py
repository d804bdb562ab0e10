"""Mixed-integer rounding (MIR) cuts of the serving demand rows: valid inequalities that round a
demand's replicas, and its rented systems, up to whole ones in the LP relaxation (tight models
only; two additive families, cover-mir and rental-mir, registered as cuts: FleetModel.cuts).

A serving demand's row (rows.define_demand_constraints) is a knapsack cover over integer replicas,
  sum_j a_j x_j >= b        a_j = users one replica of option j serves (clipped at b), x_j integer >= 0
and its LP relaxation buys a fraction of a replica: 300 users on replicas of 64 cost 4.69 replicas
in the LP, 5 in every plan. For a divisor delta > 0, with beta = b / delta, f = beta - floor(beta) > 0
and f_j the fractional part of a_j / delta, the MIR inequality
  cover-mir   sum_j (floor(a_j / delta) + min(f_j, f) / f) x_j >= ceil(beta)
holds for every nonnegative integer x meeting the row (Nemhauser and Wolsey, Integer and
Combinatorial Optimization, II.1.7; Marchand and Wolsey, 2001): it is the MIR of the row negated
into <= form. With a single option and delta = a it reads x >= ceil(b / a). One cut per distinct
a_j < b as delta.

Rows it is taken from:
  unpooled demand d, year t   the demand row itself, when every term is an integer replica (no API
                              share, no unserved share)
  pool p, year t              the pool's aggregate cover sum_{c,o} A[p,c,o] Y[p,c,o] >= sum_d users[d,t],
                              A[p,c,o] the most users any member's option of configuration c serves per
                              replica: the demand rows summed over p's demands (users_i y <= A y) and
                              the load rows (sum y <= Y) give it, whenever no member has an API or
                              unserved share; Y is integer, so its MIR holds. A coefficient above the
                              pool's need is clipped to it (one such replica meets the cover alone:
                              60 generated jobs, seed 7, the full model's LP bound rose 1.4%)
  unpooled demand d, year t   rental-mir (below): the demand row with each hourly-rented offer's
  (renting)                   replicas replaced by its rented systems r[d,o]
  pool p, year t, per         weighted-mir (below): the pool's cover in replica-equivalents of c
  configuration c
Each is implied by rows every plan meets and the integrality of x, so the optimum is unchanged; the
LP bound rises.

Held back (lazy): the full model behind a shortlist's bound (prune.full_model_bound) holds every
cut of these families back (Held) and adds, round after round, those its LP point violates
(separate, prune.separated): the LP optimum is the one with every cut, on far fewer rows, since most
never bind (60 generated jobs seed 5: 26 of 515 pool cuts added, the same 956,729 $/yr). The
bound's step (the full model built, its LP solved), benchmarks/milp.py's generated jobs, this 2-core
machine: 60 jobs seed 5 2.59 -> 1.11 s, 200 jobs seed 3 8.9 -> 5.3 s; 60 jobs seeds 3-8, limit
10 s, --explain none (one draw each): mean gap 3.02% -> 2.69%, plans cheaper on five of six.

weighted-mir: a pool's members at their own replica sizes. The aggregate cover above counts every
replica of configuration c at the most users it serves of any member: the short chats'. A member
whose prompts are 8x longer fills a replica with far fewer users, so the cover is loose and the LP
holds fractions of replicas. For each configuration c of the pool, the demand rows are weighed by
lambda_d = 1 / (users one replica of c serves of d) before summing:
  sum_{k=(c',o)} A_k Y_k >= sum_d lambda_d users[d,t],   A_k = max_d lambda_d a_{d,k}
(replicas of c count 1, others at the most replicas of c one of them replaces for any member,
clipped at the right side; a member without c gets the largest weight that raises no A_k). Valid
for any weights >= 0, by the same sum as the aggregate cover. Each is held back (Covers) and
separated at an LP point: the cover, and its MIR at each divisor among 1 and the coefficients of
the keys the point loads (the divisors that round what the LP holds), the most violated one per
cover and round. A model written whole separates them at its own LP (add_weighted) and keeps them.
The full model's LP bound, benchmarks/milp.py's 60 generated jobs, without -> with these cuts and
the clipping above (the optimum, from HiGHS, where known):
  seed 3 2,083,840 -> 2,096,904 $/yr; 4 3,429,480 -> 3,455,030; 5 965,662 -> 977,486 (optimum 1,009,718);
  6 2,142,818 -> 2,181,624 (2,230,199); 7 1,183,799 -> 1,216,325 (1,234,752); 8 3,464,181 -> 3,492,927
With integer systems and continuous replicas, seed 5's model was at 987,920: half of its LP's gap
was the pools' whole replicas. What is left is mostly whole systems: with these cuts, integer
systems alone put seed 5 at 1,001,192, integer replicas alone at 982,654. The bound's step: 0.5 -> 1.0 s.

rental-mir: whole rented systems. A demand's hourly rentals of offer o are its own (r[d,o] int) and
hold its replicas there: sum_i slots_i y[d,i,o] <= acc_o (r[d,o] - u) (rows.define_capacity_constraints),
so the users they serve are sum_i a_i y[d,i,o] <= C_o r[d,o] with C_o = acc_o max_i a_i / slots_i
(a_i the row's coefficient). The demand row then implies the rental cover
  sum_{o owned} sum_i a_i y[d,i,o] + sum_{o rented} min(C_o, b) r[d,o] >= b
(clipping at b keeps it: r[d,o] >= 1 with C_o >= b meets it alone), a knapsack cover over integers.
The cover itself is a cut (the clipping: a demand that one rented system serves rents a whole one),
and so are its MIRs (divisors: its distinct coefficients below b); both round rented systems up to
whole ones, which the replicas' cuts do not: 1-accelerator replicas on an 8-accelerator rental cost
5/8 of a system in the LP, 1 in every plan. Measured on this project's 2-core machine (benchmarks/milp.py;
one draw each, and a single fleet's time moves either way with any change to the model):
  22 generated buy-only N+1 fleets, LP bound    +0.3% to +11.5%
  core solves, 10-20 jobs, seeds 3-6            33.8 s -> 31.2 s in all (10 jobs seed 3: 12.5 -> 5.9 s)
  core solves, 15 and 20 jobs, seeds 10-14      98.8 s, 2 of 10 not proven in 30 s -> 38.0 s, all proven
  core solves, 10-20 jobs, seeds 7-9            59.1 s -> 79.4 s: 20 jobs seed 7, proven in 32 s before,
                                                is not in 60 s (its root cuts stop at a lower bound)
  60 / 200 generated jobs, every mode, 60 s     gap 2.35% -> 2.21% / 6.90% -> 5.53% (seed 3; the 200-job
                                                plan 2.2% cheaper), 2.96% -> 1.52% / 2.79% -> 2.47% (seed 4)
rental-mir, full model's LP bound:
  60 generated jobs, every mode, seed 3         2,085,775 -> 2,118,430 $/yr, 45% of its gap to the
                                                optimum (2,158,706; with only r and the pools' shared
                                                rentals integer, the rest relaxed: 2,117,314); seeds 4
                                                and 5 unchanged (their gaps lie in purchases and pools)
  rent-only a100-80gb, 1-8 GPU rentals,         LP = the enumerated optimum (tests/test_covers.py),
  two demands                                   from 35-72% of it without
The same cover over pools' shared rentals (Y -> R[o,h]) left those LPs where they were: not added.
A shortlist's search model (fm.pairs_pruned > 0) leaves rental-mir out: it raises only the bound,
which the full model's gives (prune.py), and in the search its rows moved CBC onto costlier plans
(benchmarks/milp.py --only large, --explain none, one draw each, with -> without in the search):
  200 jobs seed 3, 30 s / 60 s       8.72% -> 8.02% / 7.09% -> 6.00% (9,358,855 -> 9,250,701 $/yr)
  200 jobs seed 4, 30 s / 60 s       1.79% -> 1.77% / 1.87% -> 1.61%
  60 jobs seed 4, 10 s / 60 s        1.95% -> 1.56% / 0.78% -> 0.76%
  60 jobs seed 3, 10 s / 60 s        2.68% -> 2.68% / 1.09% -> 1.23% (2,176,425 -> 2,179,491 $/yr)
"""

from __future__ import annotations

import math
import time

import pulp

from planner.data import deadline
from planner.milp import pooling
from planner.milp.cutpool import EPS, SEPARATION_ROUNDS, Covers, Held, mir_matrix, stripped, violated
from planner.milp.rows import affine, y_of


def mir(terms: list[tuple[float, pulp.LpVariable]], b: float) -> list[tuple[float, list]]:
    """(right side, [(coefficient, variable)]) of each nontrivial MIR cut of sum a x >= b over
    nonnegative integers x, one per distinct coefficient 0 < a < b as the divisor (in increasing
    order of it), terms of coefficient 0 dropped. Pure Python: the rows of a model written whole
    (a plan's own model) need no numpy, whose import is a tenth of a small plan's time."""
    out = []
    for delta in sorted({a for a, _ in terms if EPS < a < b - EPS}):
        beta = b / delta
        f = beta - math.floor(beta)
        if f < 1e-6 or f > 1 - 1e-6:  # b a multiple of delta: the cut is the row scaled
            continue
        cut = []
        for a, v in terms:
            q = a / delta
            fj = q - math.floor(q)
            coef = math.floor(q) + min(fj, f) / f
            if coef > EPS:
                cut.append((coef, v))
        out.append((math.ceil(beta), cut))
    return out


def _cuts(fm, family: str, entity: tuple, terms: list, b: float, cover: bool = False) -> None:
    """The MIR cuts of sum a x >= b over terms [(a, x)] (with cover, the row itself first), cut k
    registered as (family, (*entity, k)): rows of the model, or held back in a lazy model (Held)."""
    if not fm.lazy:
        for k, (rhs, cut) in enumerate([(b, terms)] * cover + mir(terms, b)):
            fm.add(family, (*entity, k), affine((-c, v) for c, v in cut) <= -rhs, cut=True)
        return
    import numpy as np

    a = [c for c, _ in terms]
    rhs, coef = mir_matrix(a, b)
    if cover:
        rhs, coef = [b, *rhs], np.vstack([a, coef])
    if rhs:
        fm.held_cuts.append(Held(family, entity, [v for _, v in terms], rhs, coef))


def separate(fm, point, column: dict) -> list:
    """The held-back cuts (Held) that the LP point `point` (a value per column, `column` naming
    them) violates (cutpool.violated), added to the model as rows (_row); returns the same rows for
    the LP (Relaxation.add_array_rows: columns, coefficients, lower, upper), taken from the cuts'
    own arrays: read back from the model's rows by name, 2,527 cuts of 200 generated jobs took 0.3 s."""
    _columns(fm, column)
    added = []
    for h, label, rhs, coef in violated(fm.held_cuts, point):
        kept, lhs = _row(fm, h.family, (*h.entity, *label), rhs, coef, h.variables)
        added.append((h.columns[kept], lhs, -math.inf, -float(rhs)))
    return added


def _row(fm, family: str, entity: tuple, rhs: float, coef, variables: list):
    """The cut row -sum c v <= -rhs added to the model, terms of coefficient 0 dropped; returns the
    positions of the terms kept and their coefficients (numpy)."""
    import numpy as np

    coef = np.asarray(coef, dtype=float)
    kept = np.flatnonzero(np.abs(coef) > EPS)
    lhs = -coef[kept]
    fm.add(family, entity, pulp.LpAffineExpression(list(zip([variables[k] for k in kept], lhs.tolist()))) <= -rhs,
           cut=True)
    return kept, lhs


def _columns(fm, column: dict) -> None:
    """each held cut's variables' columns in the LP (`column` naming them), set once"""
    import numpy as np

    for h in fm.held_cuts:
        if h.columns is None:
            h.columns = np.array([column[v.name] for v in h.variables], dtype=np.int64)


def held_for_child(fm, column: dict) -> list:
    """The model's held cuts for a prover's child to separate on the LP whose columns `column` names
    (cutpool.stripped: their columns, not their variables)."""
    _columns(fm, column)
    return stripped(fm.held_cuts)


def _integer_cover(row) -> list[tuple[float, pulp.LpVariable]] | None:
    """A demand row's terms when each is a positive coefficient on an integer variable."""
    terms = [(a, v) for v, a in row.expr.items()]
    if any(a <= 0 or v.cat != pulp.LpInteger for a, v in terms):
        return None
    return terms


def _rental_cover(fm, dk: str, t: int, terms: list) -> list[tuple[float, pulp.LpVariable]] | None:
    """The rental cover of demand dk's row in year t (module docstring: each rented offer's replicas
    replaced by min(C_o, b) r[d,o]), or None when the demand rents nothing."""
    b = -fm.rows[("demand", (dk, t))].constant
    where = {v.name: (i, oid) for i, oid, v in y_of(fm, dk, t)}
    kept, rented = [], {}
    for a, v in terms:
        i, oid = where[v.name]
        if (dk, oid, t) not in fm.r:
            kept.append((a, v))
            continue
        c = fm.system_of(oid).accelerators * a / fm.options.serve[dk][i].accelerator_slots
        rented[oid] = max(rented.get(oid, 0.0), min(c, b))
    if not rented:
        return None
    return kept + [(c, fm.r[(dk, oid, t)]) for oid, c in sorted(rented.items())]


def define_cover_cuts(fm) -> None:
    """cover-mir cuts of unpooled demands' rows and of pools' aggregate covers, and rental-mir cuts
    of unpooled demands' rental covers (module docstring)."""
    if not fm.tight:
        return
    for dk, d in sorted(fm.options.demands.items()):
        if d.kind != "serve" or d.pool:
            continue
        for t in fm.years:
            row = fm.rows.get(("demand", (dk, t)))
            terms = _integer_cover(row) if row is not None else None
            if terms:
                _cuts(fm, "cover-mir", (dk, t), terms, -row.constant)
                rental = None if fm.pairs_pruned else _rental_cover(fm, dk, t, terms)
                if rental:  # the cover itself (its clipping: one rented system may serve everyone), and its MIRs
                    _cuts(fm, "rental-mir", (dk, t), rental, -row.constant, cover=True)
    pools: dict[tuple, list] = {}
    for key, ms in sorted(pooling.members(fm).items()):
        pools.setdefault((key[0], key[3]), []).append((key, ms))
    for (p, t), keys in sorted(pools.items()):
        loads = {v.name for _, ms in keys for _, _, v in ms}
        demands = sorted({dk for _, ms in keys for dk, _, _ in ms})
        rows = [fm.rows.get(("demand", (dk, t))) for dk in demands]
        if any(r is None or any(v.name not in loads for v in r.expr) for r in rows):
            continue  # an API or unserved share: the aggregate cover does not hold
        users = {v.name: a for r in rows for v, a in r.expr.items()}
        need = sum(-r.constant for r in rows)  # (a coefficient above it clipped: one such replica serves the pool)
        terms = [(min(max(users.get(v.name, 0.0) for _, _, v in ms), need), fm.yp[key]) for key, ms in keys]
        _cuts(fm, "cover-mir", (p, t), terms, need)
        if len(demands) > 1:
            _weighted_covers(fm, (p, t), keys, users, rows, demands)


def _weighted_covers(fm, entity: tuple, keys, users: dict, rows, demands: list) -> None:
    """A pool's covers in replica-equivalents of each of its configurations c, held back (Covers:
    they and their MIRs are added where an LP breaks them): the demand rows weighed by lambda_d = 1 /
    (users one replica of c serves of d) before summing, so that members of unequal replica sizes
    (long and short prompts) each count at their own; a member without c gets the largest weight
    that raises no key's coefficient."""
    import numpy as np

    need = np.array([-r.constant for r in rows])
    col = {dk: j for j, dk in enumerate(demands)}
    per = np.zeros((len(keys), len(demands)))  # users one replica of each key serves of each member
    for k, (_, ms) in enumerate(keys):
        for dk, _, v in ms:
            per[k, col[dk]] = max(per[k, col[dk]], users.get(v.name, 0.0))
    configs = {c: n for n, c in enumerate(sorted({key[1] for key, _ in keys}, key=repr))}
    of = np.array([configs[key[1]] for key, _ in keys])
    ref = np.zeros((len(configs), len(demands)))
    np.maximum.at(ref, of, per)
    has = ref > EPS
    weights = np.where(has, 1.0 / np.where(has, ref, 1.0), 0.0)  # configs x members
    for c in np.nonzero(has.any(axis=1))[0]:
        top = (per * weights[c]).max(axis=1)  # each key's coefficient (kept as members are weighed)
        for j in np.nonzero(~has[c])[0]:
            fits = (top > EPS) & (per[:, j] > EPS)
            weights[c, j] = (top[fits] / per[fits, j]).min() if fits.any() else 1.0 / per[:, j].max()
            top = np.maximum(top, per[:, j] * weights[c, j])
    keep = has.any(axis=1)
    b = weights[keep] @ need
    a = np.minimum((per[None, :, :] * weights[keep][:, None, :]).max(axis=2), b[:, None])  # covers x keys
    fm.held_cuts.append(Covers("weighted-mir", entity, [fm.yp[key] for key, _ in keys], a, b))


def separated(fm, lp, end: float | None = None) -> float:
    """The LP `lp` of model fm (relaxation.relaxation) with every held cut it violates added to both
    (separate), round after round until none is (SEPARATION_ROUNDS at most) or `end` (time.monotonic())
    would pass before another round's LP is solved: a round is not started with less than twice the
    last LP's time left (as cutpool.separated_lp), and the last LP solved, a relaxation of the model
    like each before it, stands with its point and duals. Returns its objective, inf when the first
    LP did not solve in time (or a later one, which would leave no optimum to read). 200 generated
    jobs on a machine 1.5x slower than the one app/planning.py's shares were set on: the rounds ran
    7.5 s to `end`, the last LP was cut, and the plan went without any bound of the full model."""
    took = time.monotonic()
    objective = lp.solve(None if end is None else end - time.monotonic())
    took = time.monotonic() - took
    for _ in range(SEPARATION_ROUNDS):
        if not math.isfinite(objective) or (end is not None and end - time.monotonic() < 2 * took):
            break
        added = separate(fm, lp.point(), lp.column)
        if not added:
            break
        lp.add_array_rows(added)
        took = time.monotonic()
        objective = lp.solve(None if end is None else end - time.monotonic())
        took = time.monotonic() - took
    return objective


WEIGHTED_SHARE = 0.1
"""the share of the plan's time left that add_weighted's LPs may take (the rows found by then kept)"""


def add_weighted(fm) -> None:
    """A model written whole (not lazy): the pools' weighted covers (Covers) its LP relaxation violates,
    separated as in a lazy model (separated) and kept as rows; none without HiGHS (they are valid,
    not needed). In a shortlist's search, benchmarks/milp.py's jobs, --explain none, seeds 3-8: 60
    jobs in 10 s (before the pools' covers were clipped), seeds 3, 4 and 8 proven within 1% in two
    draws, 3 and 4 in one of two with these rows in the bound only; 200 jobs in 30 s (clipped), gap
    2.72 -> 2.39%, 1.73 -> 1.16%, 1.97 -> 1.53%, 1.65 -> 1.36%, 3.51 -> 3.20%, 1.77 -> 2.64%."""
    if fm.lazy or not fm.held_cuts:
        return
    from planner.milp.relaxation import relaxation

    b = deadline.current()
    end = None if b is None else time.monotonic() + WEIGHTED_SHARE * b.left()
    lp = fm.relaxed = relaxation(fm.prob)
    if lp is not None:
        separated(fm, lp, end)
