"""The fleet model's base: the problem, the variable stores, and a registry of named constraints
keyed by (family, entity), never parsed back from names; penalty weights."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import pulp

from planner.data.catalog import Catalog, Offer
from planner.data.scenario import Scenario
from planner.options.types import Options

COVERAGE_WEIGHT = 1e9  # $ per unit of weighted unserved share: coverage first, then cost
CUT_OFF = 1e30  # solver infinity (COIN and HiGHS read a bound this large as none)
TIE_BREAK_USD = 0.01  # $ per system in the objective only: never an idle system at a near-zero price


@dataclass
class Registry:
    """The base of the fleet model (model.FleetModel): the problem, the variable stores, named
    constraints kept in a (family, entity) registry and never parsed back from names, and
    variables with generated names."""

    scenario: Scenario
    catalog: Catalog
    options: Options
    prob: pulp.LpProblem
    elastic: bool | str = field(default=False, kw_only=True)
    """a cap's slack variables (rows._elastic): False none, True one a year, "shared" one per field"""
    tight: bool = field(default=True, kw_only=True)
    """Tighten the formulation (replica bounds, covering coefficients clipped at the demand): the
    same integer optimum, a closer LP bound. Off for long-run prices, which read the LP's duals as
    the cost of one more user."""
    y: dict = field(default_factory=dict, kw_only=True)
    r: dict = field(default_factory=dict, kw_only=True)
    x: dict = field(default_factory=dict, kw_only=True)
    b: dict = field(default_factory=dict, kw_only=True)
    e: dict = field(default_factory=dict, kw_only=True)
    u: dict = field(default_factory=dict, kw_only=True)
    """spare binaries (N+1): owned offer (and year) -> u; rented (demand, offer[, year]) -> u"""
    yp: dict = field(default_factory=dict, kw_only=True)
    """pooled replicas (milp/pooling.py): (pool, (system, tp, pp), offer) -> Y"""
    rp: dict = field(default_factory=dict, kw_only=True)
    """systems rented for pools, shared by every pool: (offer, hours per day) -> R"""
    pool_opt: dict = field(default_factory=dict, kw_only=True)
    """pooled replica key -> (a member's option of that configuration, a member demand)"""
    api: dict = field(default_factory=dict, kw_only=True)
    """share of a serving demand's users on a hosted API: (demand, api offer[, year]) -> a in [0, 1]"""
    unserved: dict = field(default_factory=dict, kw_only=True)
    w: dict = field(default_factory=dict, kw_only=True)
    """an RL job's place (milp/colocation.py): (job, (site, stack), year) -> binary"""
    slack: dict = field(default_factory=dict, kw_only=True)
    lazy: bool = field(default=False, kw_only=True)
    """hold the MIR cuts back (covers.py: Held) until an LP point violates one (covers.separate): the
    full model behind a shortlist's bound (prune.py), whose LP most of them never bind"""
    held_cuts: list = field(default_factory=list, kw_only=True)
    """the cuts held back (covers.Held), when lazy"""
    relaxed: object = field(default=None, kw_only=True)
    """the model's LP relaxation (relaxation.Relaxation) as covers.add_weighted left it, rows and
    all, for a search child of the same model (app/planning._second_search) to reuse"""
    rows: dict = field(default_factory=dict, kw_only=True)
    cuts: list = field(default_factory=list, kw_only=True)
    """keys of rows that are valid inequalities (<= rows that tighten the LP relaxation, never
    change the integer optimum, and carry no meaning of their own: see cuts_relaxed)"""

    def add(self, family: str, entity, constraint, cut: bool = False) -> None:
        """Register a constraint under (family, entity); entity is a name or a tuple of names
        (demand, option index, offer, year), never a string to parse back. cut: a valid inequality."""
        key = (family, entity)
        if key in self.rows:
            raise ValueError(f"duplicate constraint {key}")
        name = f"c{len(self.rows)}"
        self.prob.addConstraint(constraint, name)
        self.rows[key] = self.prob.get_constraint_by_name(name)
        if cut:
            self.cuts.append(key)

    @contextmanager
    def cuts_relaxed(self):
        """The model without its valid inequalities for the duration (each cut row's bound moved
        to solver infinity, restored after): a re-solve with the fleet fixed reads duals of the
        model's own rows, not of cuts that bind only because their right-hand side carries the
        demand (a cut like users_i y <= users_d Y would take part of a demand row's price)."""
        saved = [(self.rows[key], self.rows[key].constant) for key in self.cuts]
        try:
            for c, _ in saved:
                c.constant = -CUT_OFF
            yield self
        finally:
            for c, constant in saved:
                c.constant = constant

    def var(self, store: dict, key, cat: str, low: float = 0, up: float | None = None) -> pulp.LpVariable:
        self._n_vars = getattr(self, "_n_vars", 0) + 1
        v = self.prob.add_variable(f"v{self._n_vars}", lowBound=low, upBound=up, cat=cat)
        store[key] = v
        return v

    def offer(self, oid: str) -> Offer:
        return self.options.offers[oid]

    def system_of(self, oid: str):
        return self.catalog.systems[self.options.offers[oid].system]


def affine(terms) -> pulp.LpAffineExpression:
    """sum c x over (c, x) pairs, as pulp.lpSum(c * x ...) builds it (zero coefficients dropped, a
    repeated variable's coefficients added in order) without a temporary expression per term: the
    capacity rows of a 200-job full model took 8 s through lpSum."""
    e = pulp.LpAffineExpression()
    for c, v in terms:
        if isinstance(v, pulp.LpVariable):
            if not (isinstance(c, (int, float)) and c == 0):
                e.addterm(v, c)
        else:
            e.addInPlace(c * v)
    return e


@contextmanager
def bounds_held(bounds: list[tuple[pulp.LpVariable, float, float | None]]):
    """Each variable held within its (low, up) for the duration, its own bounds restored after
    (a fleet fixed for a re-plan, pools opened or closed for a screened search)."""
    saved = [(v, v.lowBound, v.upBound) for v, _, _ in bounds]
    try:
        for v, low, up in bounds:
            v.lowBound, v.upBound = low, up
        yield
    finally:
        for v, low, up in saved:
            v.lowBound, v.upBound = low, up


def row_value(c, values: dict | None = None) -> float:
    """lhs - rhs of a row, at the current variable values or at `values` (by variable name)."""
    if values is None:
        return c.value()
    return sum(coef * values.get(v.name, 0.0) for v, coef in c.expr.items()) + c.constant


def room(c, values: dict | None = None) -> float:
    """How far a row is from binding (>= 0 when satisfied), from its sense, not from .slack."""
    val = row_value(c, values) or 0.0
    if c.sense == pulp.LpConstraintLE:
        return -val
    if c.sense == pulp.LpConstraintGE:
        return val
    return -abs(val)


ELASTIC_PENALTY = {"budget": 1e3, "capex": 1e3, "opex": 1e3, "power": 1e7}
