"""Shadow prices of a plan, read from LPs: MILP duals are not reliable, so none is read directly.

Short run, "the fleet you own": the owned systems n[o] and the binary placements b, z, e are fixed
at the plan's values (lowBound = upBound); serving replicas y, hourly rentals r, batch shares x and
and the N+1 spares u stay fixed with the fleet, and the LP is re-solved. The dual of a row is
d(yearly cost) / d(right-hand side):
  - serving demand d: users_d is the right-hand side of its demand row, so the price of one more
    concurrent user is its dual (USD per year per user):
    busy power of a fraction of a replica on owned systems, or rent by the hour;
  - batch demand d: the shares sum to 1, so the dual is the cost of all its runs; one more run
    costs dual / runs_per_year.
Long run, the LP relaxation (every integer relaxed, capital included): the same duals, labelled as
such; a fractional fleet has no N+1 meaning, so these are averages, not quotes.
Value of one more system of owned offer o: LP(n_o + 1) - LP(n_o): its fixed cost less the
running cost it saves.
Room of a row is computed here from its value and sense (the solvers' .slack signs differ), and a
row whose dual CBC moved onto its only variable is read from that variable's reduced cost.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from planner.data import deadline
from planner.data.errors import SolverError
from planner.milp import fleet
from planner.milp.fleet import FleetModel
from planner.milp.registry import TIE_BREAK_USD, room
from planner.milp.solve import SolveResult, solve

FIXED_STORES = ("p", "k", "b", "u", "e", "z", "w")
EPS = 1e-6


def decisions(fm: FleetModel, res: SolveResult) -> dict[tuple, float]:
    """The plan's integer fleet decisions by (store, key): owned systems and binary placements; and
    the unserved shares of max-coverage mode, so that its penalty weight never enters a price."""
    out: dict[tuple, float] = {}
    for store in FIXED_STORES:
        for key, v in getattr(fm, store).items():
            out[(store, key)] = int(round(res.values.get(v.name, 0.0)))
    for key, v in fm.unserved.items():
        out[("unserved", key)] = res.values.get(v.name, 0.0)
    return out


@contextmanager
def fixed(fm: FleetModel, values: dict[tuple, float]):
    """Fix variables (by (store, key)) at values for the duration, the model's valid inequalities
    relaxed (FleetModel.cuts_relaxed: prices are duals of the model's own rows); bounds are restored after."""
    saved = []
    try:
        for (store, key), val in sorted(values.items(), key=lambda kv: repr(kv[0])):
            v = getattr(fm, store).get(key)
            if v is None:
                continue
            saved.append((v, v.lowBound, v.upBound))
            v.lowBound = v.upBound = val
        with fm.cuts_relaxed():
            yield fm
    finally:
        for v, lo, up in saved:
            v.lowBound, v.upBound = lo, up


def is_tight(c, values: dict | None = None) -> bool:
    return room(c, values) <= EPS * max(1.0, abs(c.constant))


def dual(c) -> float:
    """d(objective)/d(rhs) of a row after an LP solve; a one-variable row's dual may sit on the
    variable's reduced cost (CBC presolve turns the row into a bound)."""
    pi = c.pi or 0.0
    if abs(pi) < EPS and len(c.expr) == 1 and is_tight(c):
        (v, coef), = c.expr.items()
        pi = (v.dj or 0.0) / coef if coef else 0.0
    return pi


@dataclass
class LPPrices:
    objective: float | None
    status: str
    demand: dict[str, float] = field(default_factory=dict)  # demand -> USD/yr per user | per run
    tight: dict[str, bool] = field(default_factory=dict)  # demand -> any of its rows tight
    rows: dict[tuple, float] = field(default_factory=dict)  # (family, entity) -> dual
    by_year: dict[str, dict[int, float]] = field(default_factory=dict)  # demand -> year -> price in that year's USD

    @property
    def ok(self) -> bool:
        return self.objective is not None


def _read(fm: FleetModel, res: SolveResult) -> LPPrices:
    if not res.ok:
        return LPPrices(None, res.status)
    out = LPPrices(res.objective, res.status)
    for key, c in sorted(fm.rows.items()):
        out.rows[key] = dual(c)
    for dk, d in sorted(fm.options.demands.items()):
        by_year = {}
        for t in fm.years:
            key = ("demand", (dk, t))
            if key not in fm.rows:
                continue
            price = out.rows[key] / (fm.discount(t) if fm.npv else 1.0)  # NPV dollars back to year t's
            size = fm.demand_at(dk, t)
            if d.kind == "batch" and size:  # the row asks for shares of the year's runs
                price /= size
            by_year[t] = price
            out.tight[dk] = out.tight.get(dk, False) or is_tight(fm.rows[key])
        out.by_year[dk] = by_year
        out.demand[dk] = by_year.get(fm.last, 0.0)
    return out


def _lp(fm: FleetModel, time_limit_s: float | None) -> SolveResult:
    return solve(fm, time_limit_s=time_limit_s, gap=0.0, mip=False)


def short_run(fm: FleetModel, fleet: dict[tuple, int], time_limit_s: float | None = None) -> LPPrices:
    """Prices with the fleet fixed (see the module docstring); `fleet` from decisions()."""
    with fixed(fm, fleet):
        return _read(fm, _lp(fm, time_limit_s))


def long_run(fm: FleetModel, time_limit_s: float | None = None) -> LPPrices:
    """Prices from the LP relaxation of the whole model (capital included), built without the
    tightenings (fleet.build(tight=False)) so that a dual is the cost of one more unit of demand."""
    if fm.unserved:  # max-coverage: the LP would price a user at the coverage weight, not in dollars
        return LPPrices(None, "not-solved")
    left = deadline.left()  # (its build stops at the time limit: 2,000 generated jobs, 12 s of it with 9 s left)
    try:
        plain = fleet.build(fm.scenario, fm.catalog, fm.options, elastic=fm.elastic, tight=False,
                            until=time.monotonic() + left if math.isfinite(left) else None)
    except SolverError:
        deadline.cut("explanations")
        return LPPrices(None, "not-solved")
    return _read(plain, _lp(plain, time_limit_s))


def store_of(fm: FleetModel, oid: str) -> str:
    """The store of owned offer oid's systems: p (bought) or k (reserved)."""
    return "p" if fm.offer(oid).acquisition == "buy" else "k"


def fixed_cost_per_system(fm: FleetModel, oid: str) -> float:
    v = fm.n[oid]
    return sum(c for terms in fm.cost_terms.values() for c, var in terms if var is v)


def one_more_system(fm: FleetModel, fleet: dict[tuple, int], base: LPPrices,
                    time_limit_s: float | None = None) -> dict[str, float | None]:
    """Owned offer in the fleet -> LP(n_o + 1) - LP(n_o), USD per year (None past its cap)."""
    out: dict[str, float | None] = {}
    if not base.ok:
        return out
    for (store, key), count in sorted(fleet.items(), key=lambda kv: repr(kv[0])):
        if store not in ("p", "k") or count <= 0 or fm.npv:
            continue  # (a multi-year plan's systems are bought in a year and held for years)
        oid = key[0]
        up = getattr(fm, store)[key].upBound
        if up is not None and count + 1 > up:
            out[oid] = None
            continue
        with fixed(fm, {**fleet, (store, key): count + 1}):
            res = _lp(fm, time_limit_s)
        out[oid] = res.objective - base.objective - TIE_BREAK_USD if res.ok else None  # the tie-break is no cost
    return out
