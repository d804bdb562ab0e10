"""A valid lower bound on the full fleet model above its LP relaxation: the LP's duals priced into
each demand's own integer problem (Lagrangian relaxation; Geoffrion, "Lagrangean relaxation for
integer programming", Math. Programming Study 2, 1974; Nemhauser and Wolsey II.3.6).

Blocks. Every column of the model belongs to one demand's block (its replicas y, batch shares x and
placements b, rentals r, rented spares u[d,o], edge units e, API shares and unserved share), or to a
pool's (pooling.py: its pooled replicas Y and its members' loads y), or to none (purchases and
reservations p, k, owned and shared-rental spares u, shared rentals R, system types z). A row is the
block's own when all its columns are that block's; every other row couples blocks.

Bound. The model is min c x over the plans x that meet lower <= A x <= upper, x integer where the
model says so. Take y*, the row duals of its LP relaxation at an optimum x* (relaxation.Optimum,
its cuts included: they hold in a cheapest plan, fleet.py), on the coupling rows C only, and
c' = c - A_C' y*. For every plan x,
    c x = c' x + y* A_C x >= c' x + sum_{r in C} y*_r (lower_r if y*_r > 0 else upper_r)
since y*_r > 0 only on a row at its lower bound and y*_r < 0 on one at its upper (weak duality). c' x
splits by block, so a plan costs at least
    L = sum_{r in C} y*_r bound_r + sum_B min {c'_B x_B : x_B meets B's own rows, integer}
        + sum_{j in no block} min(c'_j lower_j, c'_j upper_j).
With the integers relaxed each block's minimum is c'_B x*_B (x* minimises the Lagrangian at y*: LP
duality), and the terms sum to the LP's optimum. So
    L = LP + sum_B (v_B - c'_B x*_B),   v_B = a lower bound on block B's integer minimum,
each term >= 0: a block's replicas and rentals in whole units cost more than the LP's fractions of
them. v_B is HiGHS's dual bound on B's integer problem (proven when HiGHS ends, valid when its time
limit stops it); a block not solved in the time given adds nothing (v_B = c'_B x*_B). What L does
not see is the rounding of columns in no block (whole systems bought and reserved, shared spares):
those the prover's branch and cut (mipbound.py) works on.

Cuts. Each block solved above its LP share gives a valid inequality, c'_B x_B >= v_B (Found.rows):
with them the LP's optimum is at least L. The prover's first child adds them before its branch and
cut (in_child), which then starts from L, and hands them back for its narrowed restarts (load); where
no prover runs beside the search (200 jobs and more on two cores), L runs in a thread beside it
(Beside) and its cuts go to the prover that starts once the search is done (app/planning.py). A
second round (the LP re-solved with the cuts, its new duals priced again) found no block above the
new LP's share on 60 jobs seed 8 (the LP with the cuts is the Lagrangian dual's optimum for these
blocks), and subgradient steps from the LP's duals moved L by less than 0.2% (seed 5: rows of
costs in dollars and of users in thousands give steps no one length suits).

Measured (benchmarks/milp.py's generated jobs, every acquisition mode, this 2-core machine), the LP
-> L, and the time the blocks took:
  60 jobs seed 5    956,729 -> 975,851 (+2.0%), 32 blocks; the optimum is 1,009,718
  60 jobs seed 6    2,148,625 -> 2,192,654 (+2.0%)
  200 jobs seed 3   8,651,782 -> 8,742,778 (+1.05%), 82 blocks in 5.8 s (7 pools stopped at 0.5 s):
                    above HiGHS's own bound after 273 s on the full model (8,724,890)
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time

NONE = -1
"""the block of a column that no demand or pool owns (labels)"""
BLOCK_S = 0.5
"""the most seconds one block's integer problem is given (HiGHS's dual bound at the limit is
still a bound; a large pool's problem can take a minute to prove: 60 jobs seed 6, 45 s)"""
INFINITE = 1e20
"""a row or column bound this large is none (PuLP's solver infinity for a relaxed cut is 1e30)"""
DUAL_TOLERANCE = 1e-9
"""a price below this, either way, on a column in no block is 0 (HiGHS's dual feasibility tolerance is 1e-7)"""
SLACK = 1e-7
"""share of the LP's objective taken off the bound (and off each cut's right-hand side) for the
LP's and the blocks' tolerances"""


def blocks(fm) -> dict[str, object]:
    """column name -> its block (('demand', d) or ('pool', p)); columns in no block are left out."""
    from planner.milp import pooling

    def of(dk: str):
        pool = pooling.pooled(fm, dk)
        return ("pool", pool) if pool is not None else ("demand", dk)
    out: dict[str, object] = {}
    for store in (fm.y, fm.x, fm.b, fm.e, fm.r, fm.api, fm.unserved):
        for key, v in store.items():
            out[v.name] = of(key[0])
    for key, v in fm.u.items():
        if len(key) == 3 and key[0] in fm.options.demands:  # (demand, offer, year): a demand's rentals' spare
            out[v.name] = of(key[0])
    for key, v in fm.yp.items():
        out[v.name] = ("pool", key[0])
    return out


def labels(fm, lp):
    """Each column of `lp` (relaxation.Relaxation of fm's problem, in its order): its block's number
    (blocks, numbered in sorted order) or NONE, as a numpy array: what the prover's child reads
    (mipbound.py). numpy is imported where it is used in this module: a plan that needs no bound of
    a large model (bank.yaml) does not load it."""
    import numpy as np

    owner = blocks(fm)
    number = {b: k for k, b in enumerate(sorted(set(owner.values()), key=repr))}
    out = np.full(len(lp.column), NONE, dtype=np.int64)
    for name, j in lp.column.items():
        if name in owner:
            out[j] = number[owner[name]]
    return out


@dataclasses.dataclass
class Found:
    """L and the Lagrangian cuts behind it (rows): for each block B solved above its LP share,
    c'_B x_B >= v_B, which every plan's block meets (v_B is at most B's integer minimum at the prices
    c'), as rows of Relaxation.add_array_rows (columns, coefficients, the right-hand side less SLACK,
    no upper bound). With them the LP relaxation is at least L, and branch and cut starts there
    (mipbound.py)."""

    value: float | None
    rows: list = dataclasses.field(default_factory=list)


def bound(fm, lp, optimum, seconds: float | None = None, stopped=lambda: False) -> float | None:
    """L (the module docstring) for the full model `fm`, whose LP relaxation `lp` (relaxation.Relaxation)
    was solved at `optimum` (relaxation.Optimum with row duals); None where L is no bound (a column in
    no block that the duals price below zero has no upper bound). Blocks are solved smallest first
    until `seconds` have passed or `stopped()` is true."""
    return solve(fm, lp, optimum, seconds, stopped).value


def solve(fm, lp, optimum, seconds: float | None = None, stopped=lambda: False) -> Found:
    """bound()'s L with its cuts (Found); objective constant included."""
    return of_arrays(lp.arrays, lp.integer, labels(fm, lp), optimum.rows, optimum.x, optimum.objective,
                     seconds, stopped)


def of_arrays(a: dict, integer, label, duals, x, objective: float, seconds: float | None = None,
              stopped=lambda: False) -> Found:
    """Found for the LP in arrays `a` (relaxation.Relaxation.arrays: columns, then rows in compressed
    form) with integer columns `integer`, each column's block number `label` (labels), at its optimum
    x of value `objective`, the row duals `duals` (the rows past len(duals) are priced at 0)."""
    import highspy
    import numpy as np

    end = None if seconds is None else time.monotonic() + seconds
    label = np.asarray(label)
    ends = np.append(a["starts"], len(a["index"]))
    duals, x = np.asarray(duals, dtype=float), np.asarray(x, dtype=float)
    reduced = np.asarray(a["cost"], dtype=float).copy()
    own: dict = {}
    for r in range(len(a["row_lower"])):
        columns = a["index"][ends[r]:ends[r + 1]]
        seen = np.unique(label[columns])
        if len(seen) == 1 and seen[0] != NONE:
            own.setdefault(int(seen[0]), []).append(r)
            continue
        y = duals[r] if r < len(duals) else 0.0
        if (y > 0 and not abs(a["row_lower"][r]) < INFINITE) or (y < 0 and not abs(a["row_upper"][r]) < INFINITE):
            y = 0.0  # (a dual of the wrong sign for the row's finite bound: a tolerance; priced at 0)
        if y:
            np.subtract.at(reduced, columns, y * a["value"][ends[r]:ends[r + 1]])
    loose = np.flatnonzero(label == NONE)
    low, up = a["lower"][loose], a["upper"][loose]
    c = np.where(np.abs(reduced[loose]) <= DUAL_TOLERANCE, 0.0, reduced[loose])
    if np.any((c < 0) & (up >= INFINITE)) or np.any((c > 0) & (low <= -INFINITE)):
        return Found(None)
    with np.errstate(invalid="ignore"):
        least = np.where(c > 0, c * low, np.where(c < 0, c * up, 0.0))
    gain = -float(np.sum(c * x[loose] - least))  # (0 at an exact optimum: its tolerances)
    found = Found(None)
    tolerance = SLACK * max(1.0, abs(objective))
    members = {int(k): np.flatnonzero(label == k) for k in np.unique(label) if k != NONE}
    for block, columns in sorted(members.items(), key=lambda kv: (len(kv[1]), kv[0])):
        left = None if end is None else end - time.monotonic()
        if (left is not None and left <= 0) or stopped():
            break
        if not any(integer[j] for j in columns):
            continue  # (its LP is its integer problem)
        v = _minimum(highspy, a, ends, reduced, columns, own.get(block, []), integer,
                     BLOCK_S if left is None else min(BLOCK_S, left))
        at_lp = float(reduced[columns] @ x[columns])
        if v is not None and v > at_lp:
            gain += v - at_lp
            found.rows.append((columns.astype(np.int32), reduced[columns].copy(), v - tolerance, math.inf))
    found.value = objective + gain - tolerance
    return found


class Beside:
    """solve() in a thread of its own while the search runs (app/planning.py): result() waits for it
    (it ends by its own time limit) and stop() ends it at the next block. Its blocks are HiGHS
    solves, which run outside Python's lock; the model, LP arrays and optimum it reads are not
    changed by anything else meanwhile (the search works on a shortlisted model of its own)."""

    def __init__(self, fm, lp, optimum, seconds: float):
        self._stop = threading.Event()
        self._found = Found(None)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fm, lp, optimum, seconds), daemon=True)
        self._thread.start()

    def _run(self, fm, lp, optimum, seconds: float) -> None:
        try:
            self._found = solve(fm, lp, optimum, seconds, self._stop.is_set)
        except BaseException as e:  # (raised again where the result is read)
            self._error = e

    def result(self) -> Found:
        """L and its cuts (value None: no bound); an error in the thread is raised here"""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._found

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def in_child(h, m, path: str, report, solved: dict | None = None) -> None:
    """A prover child's Lagrangian cuts (mipbound.py: of_arrays on the model `m` it loaded, for
    m["lagrange_s"] seconds, at the duals of the planner's LP, or of the LP the child `solved` with
    the held cuts: prover_child._separated): its bound reported, its rows added to HiGHS's model `h`
    and saved to `path` for the planner (load)."""
    import highspy
    import numpy as np

    if solved is None:
        a = {k: m[k] for k in ("cost", "lower", "upper", "row_lower", "row_upper", "starts", "index", "value")}
        solved = {"a": a, "duals": m["duals"], "point": m["point"], "objective": float(m["objective"])}
    found = of_arrays(solved["a"], m["integer"], m["block"], solved["duals"], solved["point"],
                      float(solved["objective"]), float(m["lagrange_s"]))
    if found.value is not None:
        report(found.value)
    if not found.rows:
        return
    columns, coefficients, rhs, _ = zip(*found.rows)
    starts = np.cumsum([0] + [len(c) for c in columns[:-1]]).astype(np.int32)
    index, value, rhs = np.concatenate(columns).astype(np.int32), np.concatenate(coefficients), np.array(rhs)
    h.addRows(len(rhs), rhs, np.full(len(rhs), highspy.kHighsInf), len(index), starts, index, value)
    save(path, starts=starts, index=index, value=value, rhs=rhs)


def save(path: str, **arrays) -> None:
    """Arrays saved whole to `path` (npz: the planner never reads half of it); rows >= rhs as
    starts, index, value (compressed by row) and rhs are what load reads."""
    import numpy as np

    np.savez(path + ".new.npz", **arrays)
    os.replace(path + ".new.npz", path)


def joined(parts: list):
    """Several (starts, index, value, rhs) row sets as one."""
    import numpy as np

    offsets = np.cumsum([0] + [len(p[1]) for p in parts[:-1]])
    return (np.concatenate([p[0] + o for p, o in zip(parts, offsets)]).astype(np.int32),
            np.concatenate([p[1] for p in parts]).astype(np.int32), np.concatenate([p[2] for p in parts]),
            np.concatenate([p[3] for p in parts]))


def with_rows(a: dict, starts, index, value, rhs) -> dict:
    """The model arrays `a` (relaxation.Relaxation.arrays' keys) with rows >= rhs appended."""
    import numpy as np

    return dict(a, row_lower=np.concatenate([a["row_lower"], rhs]),
                row_upper=np.concatenate([a["row_upper"], np.full(len(rhs), np.inf)]),
                starts=np.concatenate([a["starts"], starts + len(a["index"])]).astype(a["starts"].dtype),
                index=np.concatenate([a["index"], index]).astype(a["index"].dtype),
                value=np.concatenate([a["value"], value]))


def load(path: str) -> list | None:
    """The cuts in_child saved, as rows (columns, coefficients, lower, upper); None: none saved."""
    import numpy as np

    try:
        with np.load(path) as f:
            starts, index, value, rhs = f["starts"], f["index"], f["value"], f["rhs"]
    except (OSError, ValueError, KeyError, EOFError):
        return None
    ends = np.append(starts, len(index))
    return [(index[ends[k]:ends[k + 1]], value[ends[k]:ends[k + 1]], float(rhs[k]), math.inf) for k in range(len(rhs))]


def _minimum(highspy, a: dict, ends, cost, columns, rows: list[int], integer,
             seconds: float) -> float | None:
    """HiGHS's dual bound on min cost x over the block's columns and own rows, integers kept; None
    when it has none (unbounded, or not solved)."""
    import numpy as np

    from planner.milp.relaxation import stdout_silenced

    position = {j: k for k, j in enumerate(columns)}
    with stdout_silenced(True):
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("mip_rel_gap", 1e-6)
    h.setOptionValue("time_limit", max(0.01, seconds))
    empty_i, empty_f = np.array([], dtype=np.int32), np.array([], dtype=float)
    h.addCols(len(columns), cost[columns], a["lower"][columns], a["upper"][columns], 0, empty_i, empty_i, empty_f)
    if rows:
        starts, index, value = [], [], []
        for r in rows:
            starts.append(len(index))
            index.extend(position[j] for j in a["index"][ends[r]:ends[r + 1]])
            value.extend(a["value"][ends[r]:ends[r + 1]])
        h.addRows(len(rows), a["row_lower"][rows], a["row_upper"][rows], len(index), np.array(starts, dtype=np.int32),
                  np.array(index, dtype=np.int32), np.array(value, dtype=float))
    kinds = [highspy.HighsVarType.kInteger if integer[j] else highspy.HighsVarType.kContinuous for j in columns]
    h.changeColsIntegrality(len(columns), np.arange(len(columns), dtype=np.int32), np.array(kinds))
    h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kOptimal:
        return float(h.getInfo().mip_dual_bound)
    if status == highspy.HighsModelStatus.kTimeLimit:
        found = float(h.getInfo().mip_dual_bound)
        return found if math.isfinite(found) else None
    return None
