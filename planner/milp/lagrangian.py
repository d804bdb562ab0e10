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

Measured (benchmarks/milp.py's generated jobs, every acquisition mode, this 2-core machine), the LP
-> L, and the time the blocks took:
  60 jobs seed 5    956,729 -> 975,851 (+2.0%), 32 blocks; the optimum is 1,009,718
  60 jobs seed 6    2,148,625 -> 2,192,654 (+2.0%)
  200 jobs seed 3   8,651,782 -> 8,742,778 (+1.05%), 82 blocks in 5.8 s (7 pools stopped at 0.5 s):
                    above HiGHS's own bound after 273 s on the full model (8,724,890)
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from planner.milp import pooling

GLOBAL = None
"""the block of a column that no demand or pool owns"""
BLOCK_S = 0.5
"""the most seconds one block's integer problem is given (HiGHS's dual bound at the limit is
still a bound; a large pool's problem can take a minute to prove: 60 jobs seed 6, 45 s)"""
SLACK = 1e-7
"""share of the LP's objective taken off the bound for the LP's and the blocks' tolerances"""


def blocks(fm) -> dict[str, object]:
    """column name -> its block (('demand', d) or ('pool', p)); columns in no block are left out."""
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


class Beside:
    """bound() in a thread of its own while the search runs (app/planning.py): result() waits for it
    (it ends by its own time limit) and stop() ends it at the next block. Its blocks are HiGHS
    solves, which run outside Python's lock; the model, LP arrays and optimum it reads are not
    changed by anything else meanwhile (the search works on a shortlisted model of its own)."""

    def __init__(self, fm, lp, optimum, seconds: float):
        self._stop = threading.Event()
        self._value: float | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fm, lp, optimum, seconds), daemon=True)
        self._thread.start()

    def _run(self, fm, lp, optimum, seconds: float) -> None:
        try:
            self._value = bound(fm, lp, optimum, seconds, self._stop.is_set)
        except BaseException as e:  # (raised again where the result is read)
            self._error = e

    def result(self) -> float | None:
        """the bound (None: none found); an error in the thread is raised here"""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def bound(fm, lp, optimum, seconds: float | None = None, stopped=lambda: False) -> float | None:
    """L (the module docstring) for the full model `fm`, whose LP relaxation `lp` (relaxation.Relaxation)
    was solved at `optimum` (relaxation.Optimum with row duals); None where L is no bound (a column in
    no block that the duals price below zero has no upper bound). Blocks are solved smallest first
    until `seconds` have passed or `stopped()` is true."""
    import highspy

    end = None if seconds is None else time.monotonic() + seconds
    a = lp.arrays
    names = sorted(lp.column, key=lp.column.get)
    owner = blocks(fm)
    label = [owner.get(n, GLOBAL) for n in names]
    ends = np.append(a["starts"], len(a["index"]))
    duals = np.asarray(optimum.rows, dtype=float)
    reduced = a["cost"].astype(float).copy()
    own: dict = {}
    for r in range(len(a["row_lower"])):
        columns = a["index"][ends[r]:ends[r + 1]]
        seen = {label[j] for j in columns}
        block = next(iter(seen)) if len(seen) == 1 else GLOBAL
        if block is not GLOBAL:
            own.setdefault(block, []).append(r)
            continue
        y = duals[r]
        if (y > 0 and not math.isfinite(a["row_lower"][r])) or (y < 0 and not math.isfinite(a["row_upper"][r])):
            y = 0.0  # (a dual of the wrong sign for the row's finite bound: a tolerance; priced at 0)
        if y:
            np.subtract.at(reduced, columns, y * a["value"][ends[r]:ends[r + 1]])
    members: dict = {}
    for j, block in enumerate(label):
        if block is not GLOBAL:
            members.setdefault(block, []).append(j)
    loose = [j for j, block in enumerate(label) if block is GLOBAL]
    if any(reduced[j] < 0 and not math.isfinite(a["upper"][j]) for j in loose):
        return None
    gain = 0.0
    order = sorted(members.items(), key=lambda kv: (len(kv[1]), repr(kv[0])))
    for block, columns in order:
        left = None if end is None else end - time.monotonic()
        if (left is not None and left <= 0) or stopped():
            break
        if not any(lp.integer[j] for j in columns):
            continue  # (its LP is its integer problem)
        v = _minimum(highspy, a, ends, reduced, columns, own.get(block, []), lp.integer,
                     BLOCK_S if left is None else min(BLOCK_S, left))
        if v is not None:
            gain += max(0.0, v - float(reduced[columns] @ optimum.x[columns]))
    return optimum.objective + gain - SLACK * max(1.0, abs(optimum.objective))


def _minimum(highspy, a: dict, ends, cost, columns: list[int], rows: list[int], integer: list[bool],
             seconds: float) -> float | None:
    """HiGHS's dual bound on min cost x over the block's columns and own rows, integers kept; None
    when it has none (unbounded, or not solved)."""
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
