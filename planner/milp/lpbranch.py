"""Branch and bound on the LP relaxation alone, for a prover child's bound (prover_child.py): best
first, each node an LP re-solved from the last basis with a few column bounds changed, branching on
the integer column whose rounding the objective prices highest.

The gap of a large shortlisted fleet lies in a few dear integers: on 60 generated jobs of
benchmarks/milp.py (seed 7) the full LP with its cuts is 1.39% below the optimum, 0.66% with the
25 purchase counts fixed at the optimum's, 0.04% with the purchases, reservations and shared
rentals (154 columns). HiGHS's branch and cut spends the seconds a plan has on presolve and its
root's cuts over all 15,000 columns: after the cuts and the Lagrangian rows it raised no bound in
1.3-2 s (seeds 3 and 5). Branching on the dearest fractional column, the LP alone, raised seed 5's
from 997,535 to 1,001,295 $/yr in 0.8 s (optimum 1,009,718), seed 7's from 1,218,598 to 1,224,249
in 0.9 s (1,235,754), seed 3's to 2,111,147 in 2.4 s (2,131,617).

Valid bound: the nodes partition the integer points of the LP (a column x_j at fractional v goes to
x_j <= floor v in one child and x_j >= ceil v in the other), each node's LP value bounds every plan
in it, and a node is closed only when its LP has no solution, is at or above `cutoff` (a plan's
cost: nothing in it is cheaper), or has no fractional integer column the objective prices at
BRANCH_MIN_USD or more (its LP value bounds it). The bound is the least of the open nodes' parents'
LP values, the closed nodes' values and the cutoff.
"""

from __future__ import annotations

import heapq
import math
import time

BRANCH_MIN_USD = 1.0
"""a column is branched on only where |cost| x its distance to the nearer integer is at least this
many dollars (a node with none left is closed at its LP value)"""
FRACTION = 1e-6


def raised(h, integer, cost, report, end: float, cutoff: float = math.inf, found=None) -> float | None:
    """The bound branch and bound on the LP loaded in HiGHS `h` (every column continuous; its
    objective without the model's constant, as HiGHS reports it) reaches by time.monotonic() `end`,
    each higher bound passed to report() as it is found; None where the root LP did not solve. A
    node whose LP point is whole on every integer column is a plan: found(value, point) is called
    with each cheaper one (the planner's fallback where its search finds none, mipbound.Prover),
    and the cutoff falls to it."""
    import highspy
    import numpy as np

    from planner.milp.cutpool import run_limited

    lp = h.getLp()
    lower, upper = np.array(lp.col_lower_, dtype=float), np.array(lp.col_upper_, dtype=float)
    ints = np.asarray(integer, dtype=bool)
    price = np.abs(np.asarray(cost, dtype=float))
    applied: dict = {}

    def solved(changes: dict) -> float | None:
        """the LP with `changes` {column: (lower, upper)} in place of the last node's: its value,
        inf where it has none, None where the time ran out"""
        moved = sorted(set(applied) | set(changes))
        if moved:
            idx = np.array(moved, dtype=np.int32)
            h.changeColsBounds(len(idx), idx, np.array([changes.get(j, (lower[j], upper[j]))[0] for j in moved]),
                               np.array([changes.get(j, (lower[j], upper[j]))[1] for j in moved]))
        applied.clear()
        applied.update(changes)
        run_limited(h, end - time.monotonic())
        status = h.getModelStatus()
        if status == highspy.HighsModelStatus.kOptimal:
            return h.getInfo().objective_function_value
        return math.inf if status == highspy.HighsModelStatus.kInfeasible else None

    root = solved({})
    if root is None:
        return None
    heap, closed, count, best = [(root, 0, {})], [], 1, min(root, cutoff)
    report(best)
    while heap and time.monotonic() < end:
        key, _, changes = heapq.heappop(heap)
        value = solved(changes)
        if value is None:  # (the clock: the node stays open at its parent's value)
            heapq.heappush(heap, (key, count, changes))
            break
        if value < cutoff:
            x = np.asarray(h.getSolution().col_value)
            f = x - np.floor(x)
            fractional = ints & (f > FRACTION) & (f < 1 - FRACTION)
            score = np.where(fractional, price * np.minimum(f, 1 - f), 0.0)
            j = int(np.argmax(score))
            if not fractional.any():  # a plan: nothing in this node is cheaper
                cutoff = value
                if found is not None:
                    found(value, x)
            elif score[j] < BRANCH_MIN_USD:
                closed.append(value)
            else:
                low, up = changes.get(j, (lower[j], upper[j]))
                heapq.heappush(heap, (value, count, {**changes, j: (low, math.floor(x[j]))}))
                heapq.heappush(heap, (value, count + 1, {**changes, j: (math.ceil(x[j]), up)}))
                count += 2
        bound = min(([heap[0][0]] if heap else []) + closed + [cutoff])
        if bound > best:
            best = bound
            report(bound)
    return best
