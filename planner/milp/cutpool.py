"""The cuts a lazy model holds back (covers.py writes them) and their separation: which of them an
LP point violates, as rows over the LP's columns. Numpy only (no PuLP), so that a prover's child
(prover_child.py) separates them on the full model's LP in a process of its own (mipbound.py: the
planner's own process goes on to the search; prune.full_model_bound's `defer`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

EPS = 1e-9
SEPARATION_ROUNDS = 20
"""most rounds of separate-and-resolve (covers.separated, separated_lp); each adds every held cut
the last LP violates"""


def mir_matrix(a, b: float):
    """mir's cuts of sum a x >= b vectorised, for the cuts a lazy model holds back: (right sides,
    a numpy matrix of one row of coefficients per cut, over a's columns, zeros kept). A pool's
    aggregate cover has a term per configuration and offer (hundreds), and as many divisors:
    200 generated jobs' full model, 2 s of mir's loops (tests/test_covers.py holds the two equal)."""
    import numpy as np

    a = np.asarray(a, dtype=float)
    _, rhs, coef = mir_rows(a, b, np.unique(a[(a > EPS) & (a < b - EPS)]))
    return rhs, coef


def mir_rows(a, b: float, deltas):
    """(the divisors kept, right sides, coefficient matrix) of the MIRs of sum a x >= b over
    nonnegative integers x (numpy a) for each divisor in `deltas` that leaves a fraction of b
    (b a multiple of delta: the cut is the row scaled)."""
    import numpy as np

    deltas = np.asarray(deltas, dtype=float)
    keep, beta, coef = _mirs(np.asarray(a, dtype=float)[None, :], np.full(len(deltas), float(b)), deltas)
    return deltas[keep], [math.ceil(x) for x in beta], coef


def _mirs(a, b, deltas):
    """The MIR of row k, sum a_k x >= b_k, at divisor deltas[k], for every k (numpy: a one row for
    all or one row each, b and deltas one each): (which k leave a fraction of b_k / delta_k and so
    have a cut, b_k / delta_k at those, their coefficient matrix)."""
    import numpy as np

    beta = b / deltas
    f = beta - np.floor(beta)
    keep = (f >= 1e-6) & (f <= 1 - 1e-6)
    rows = a if len(a) == 1 else a[keep]
    q = rows / deltas[keep][:, None]
    whole = np.floor(q)
    coef = whole + np.minimum(q - whole, f[keep][:, None]) / f[keep][:, None]
    return keep, beta[keep], coef


@dataclass
class Held:
    """One row's cuts held back from a lazy model (fm.lazy): added as rows only once an LP point
    violates them (separate). Cut k is row k of coef over `variables`, >= rhs[k], registered as
    (family, (*entity, k))."""

    family: str
    entity: tuple
    variables: list
    rhs: list
    coef: object  # numpy (cuts x variables)
    columns: object = None  # numpy int: the variables' columns in the LP separated (set on first use)

    def __post_init__(self):
        import numpy as np

        self.left = np.ones(len(self.rhs), dtype=bool)  # the cuts not yet added
        self.bound = np.asarray(self.rhs, dtype=float)  # rhs, for separate's test


@dataclass
class Covers:
    """Knapsack covers a x >= b over integer variables (one per row of a), held back from a lazy
    model with their MIRs: at separation (separate), each cover the LP point violates, and its MIR
    of each divisor among 1 and the coefficients of the variables the point uses (Marchand and
    Wolsey's choice: the divisors that round what the LP holds) that the point violates, added as
    rows (family, (*entity, cover, divisor))."""

    family: str
    entity: tuple
    variables: list
    a: object  # numpy (covers x variables)
    b: object  # numpy (covers)
    columns: object = None

    def __post_init__(self):
        self.added: set = set()

    def violated(self, point) -> list[tuple[tuple, float, object]]:
        """(label, rhs, coefficients) of each cut not yet added that `point` (over self.columns)
        violates: per cover, the most violated of the cover itself and its MIRs (the first such
        where two are equal; the cover first, then the divisors from the smallest). Every cover's
        candidates at once (numpy): one at a time, 200 generated jobs' rounds took 1 s in 27,000 calls."""
        import numpy as np

        x = point[self.columns]
        a, b = np.atleast_2d(np.asarray(self.a, dtype=float)), np.asarray(self.b, dtype=float).ravel()
        tol = 1e-6 * np.maximum(1.0, np.abs(b))
        rows, cols = np.nonzero((x > 1e-6)[None, :] & (a > EPS) & (a < b[:, None] - EPS))
        pairs = np.unique(np.stack([np.concatenate([np.arange(len(b)), rows]).astype(float),
                                    np.concatenate([np.ones(len(b)), a[rows, cols]])], axis=1), axis=0)
        r, delta = pairs[:, 0].astype(np.int64), pairs[:, 1]  # (each cover's divisors, from the smallest)
        keep, beta, coef = _mirs(a[r], b[r], delta)
        r, delta, rhs = r[keep], delta[keep], np.ceil(beta)
        short = coef @ x < rhs - tol[r]
        found: dict[int, list] = {}
        for k in np.flatnonzero(a @ x < b - tol):
            found.setdefault(int(k), []).append(((int(k), 0.0), float(b[k]), a[k]))
        for k in np.flatnonzero(short):
            found.setdefault(int(r[k]), []).append(((int(r[k]), round(float(delta[k]), 9)), float(rhs[k]), coef[k]))
        out = []
        for row in sorted(found):
            fresh = [c for c in found[row] if c[0] not in self.added]
            if fresh:  # the most violated, relative to its right side
                label, right, cut = max(fresh, key=lambda c: (c[1] - c[2] @ x) / max(c[1], 1e-9))
                self.added.add(label)
                out.append((label, right, cut))
        return out


def violated(held: list, point) -> list[tuple]:
    """(cut, label, right side, coefficients over cut.columns) of each held cut the LP point `point`
    (a value per column) violates, each marked added (it is not found again). A cut is violated
    when its left side falls short of its right by more than a millionth of it."""
    import numpy as np

    out = []
    for h in held:
        if isinstance(h, Covers):
            out += [(h, label, rhs, coef) for label, rhs, coef in h.violated(point)]
            continue
        if not h.left.any():
            continue
        short = (h.coef @ point[h.columns] < h.bound - 1e-6 * np.maximum(1.0, np.abs(h.bound))) & h.left
        for k in np.flatnonzero(short):
            out.append((h, (int(k),), h.rhs[k], h.coef[k]))
            h.left[k] = False
    return out


def stripped(held: list) -> list:
    """The held cuts without their variables (their columns kept: set before), for a child process
    (pickled); what each has added so far is kept."""
    out = []
    for h in held:
        copy = dataclasses.replace(h, variables=[])
        if isinstance(h, Covers):
            copy.added = set(h.added)
        else:
            copy.left = h.left.copy()
        out.append(copy)
    return out


def as_rows(found: list):
    """violated's cuts as rows over the LP's columns, terms of coefficient 0 dropped: (starts,
    index, value, right sides), numpy, each row >= its right side."""
    import numpy as np

    index, value, starts = [], [], []
    for h, _, _, coef in found:
        coef = np.asarray(coef, dtype=float)
        keep = np.abs(coef) > EPS  # (an MIR's are >= 0; a held-share's, openings.py, of both signs)
        starts.append(sum(len(i) for i in index))
        index.append(np.asarray(h.columns)[keep])
        value.append(coef[keep])
    return (np.array(starts, dtype=np.int32), np.concatenate(index).astype(np.int32), np.concatenate(value),
            np.array([float(rhs) for _, _, rhs, _ in found]))


def separated_lp(h, held: list, end: float):
    """The LP loaded in HiGHS `h` solved, with every held cut it violates added as a row, round after
    round until none is (SEPARATION_ROUNDS at most) or time.monotonic() would pass `end` before
    another round's LP is solved (one is not started with less than twice the last one's time
    left: its optimum stands, each round's LP a relaxation of the model): (its objective, without
    the model's constant, or None where the first LP did not solve to optimality in time; the rows
    added, as_rows's arrays). HiGHS's time limit is on its clock summed over every run of `h`
    (run_limited): a round given 1.2 s by the limit alone stopped after 0.05 s."""
    import time

    import highspy
    import numpy as np

    added = []
    for round_ in range(SEPARATION_ROUNDS + 1):
        took = time.monotonic()
        run_limited(h, end - time.monotonic())
        took = time.monotonic() - took
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None, added  # (the first LP: no round adds rows it could not solve after)
        if round_ == SEPARATION_ROUNDS or end - time.monotonic() < 2 * took:
            break
        found = violated(held, np.asarray(h.getSolution().col_value))
        if not found:
            break
        starts, index, value, rhs = as_rows(found)
        h.addRows(len(rhs), rhs, np.full(len(rhs), highspy.kHighsInf), len(index), starts, index, value)
        added.append((starts, index, value, rhs))
    return h.getInfo().objective_function_value, added


def run_limited(h, seconds: float) -> None:
    """HiGHS `h` run for at most `seconds` more: its time_limit is read against its clock summed over
    every run of the object (getRunTime), not this run's."""
    h.setOptionValue("time_limit", h.getRunTime() + max(0.01, seconds))
    h.run()
