"""Branch and bound on the LP alone (planner/milp/lpbranch.py), the bound of a prover child: every
bound it reports lies between the LP's and the MILP's optimum, it rises above the LP, given the
time it proves the optimum, and the plans it meets on the way are plans of the model."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

highspy = pytest.importorskip("highspy")


def _covering(seed: int):
    """min c x, A x >= b, 0 <= x <= 6 integer: systems of a few sizes and prices covering demands
    (fractional in the LP). Returns a loaded HiGHS (columns continuous), the costs, and the MILP's
    optimum that HiGHS proves on a copy."""
    rng = np.random.default_rng(seed)
    n, m = 14, 6
    cost = rng.integers(20, 200, n).astype(float)
    a = rng.integers(0, 9, (m, n)).astype(float)
    b = rng.integers(15, 60, m).astype(float)

    def load():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.addCols(n, cost, np.zeros(n), np.full(n, 6.0), 0, np.array([], dtype=np.int32),
                  np.array([], dtype=np.int32), np.array([], dtype=float))
        h.addRows(m, b, np.full(m, highspy.kHighsInf), m * n, np.arange(0, m * n, n, dtype=np.int32),
                  np.tile(np.arange(n, dtype=np.int32), m), a.ravel())
        return h

    exact = load()
    exact.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger))
    exact.setOptionValue("mip_rel_gap", 0.0)
    exact.run()
    lp = load()
    lp.run()
    return lp, cost, a, b, exact.getInfo().objective_function_value, lp.getInfo().objective_function_value


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_bound_rises_from_the_lp_to_the_optimum_and_never_past_it(seed):
    from planner.milp import lpbranch

    h, cost, a, b, optimum, lp_value = _covering(seed)
    reported, plans = [], []
    got = lpbranch.raised(h, np.ones(len(cost), dtype=bool), cost, reported.append, time.monotonic() + 30,
                          found=lambda value, x: plans.append((value, x.copy())))
    assert lp_value < optimum * (1 - 1e-3)  # (the LP leaves a gap to close)
    assert reported == sorted(reported) and all(lp_value - 1e-6 <= r <= optimum + 1e-6 for r in reported)
    assert got == pytest.approx(optimum, rel=1e-9)  # (the tree closed in time: proven)
    for value, x in plans:  # each a plan: whole, meeting every row, at its cost
        assert np.allclose(x, np.round(x), atol=1e-6) and (a @ np.round(x) >= b - 1e-6).all()
        assert value == pytest.approx(cost @ np.round(x)) and value >= optimum - 1e-6
    assert plans and min(v for v, _ in plans) == pytest.approx(optimum)


def test_out_of_time_it_keeps_the_best_bound_so_far():
    from planner.milp import lpbranch

    h, cost, _, _, optimum, lp_value = _covering(1)
    reported = []
    got = lpbranch.raised(h, np.ones(len(cost), dtype=bool), cost, reported.append, time.monotonic())
    assert got is None or lp_value - 1e-6 <= got <= optimum + 1e-6
    assert not reported or reported[-1] == got


def test_columns_priced_below_a_dollar_are_not_branched_on():
    """Costs in cents: no column's rounding is worth BRANCH_MIN_USD, so the root is closed at the LP."""
    from planner.milp import lpbranch

    h, cost, _, _, _, lp_value = _covering(2)
    got = lpbranch.raised(h, np.ones(len(cost), dtype=bool), cost * 1e-3, lambda v: None, time.monotonic() + 5)
    assert math.isclose(got, lp_value, rel_tol=1e-9)
