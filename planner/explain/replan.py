"""Re-planned variants of a plan ("what if"): each one a model of its own, answered by its LP
relaxation where that is exact, else by its MILP bounded by work.

For every variant, first its LP relaxation (all of them in one solver run, batch.py); then
  - LP infeasible: the variant has no plan (the MILP's feasible set lies inside the LP's);
  - LP solution integral on every integer variable: it is the MILP's optimum (proven: no integer
    point beats the relaxation), read out as the variant's plan;
  - a lifted cap (Variant.lifted: site power, a budget, N+1) whose LP bound is within half the
    plan's tolerance of the plan's cost (or above it): the cap does not bind, proven, as no plan
    without it is cheaper by more than the tolerance (the tie-break of TIE_BREAK_USD per system
    in the objective is far below half of it); the outcome says so ("not-binding") with the bound;
  - otherwise the MILP, bounded by MAX_NODES branch-and-bound nodes (a work bound: the same input
    gives the same answers on a busy machine), VARIANT_GAP, and the explanations' share of the
    time limit (budget_s); a MILP that the clock stopped is reported as cut short, one never
    started as skipped (data.deadline records both, and the plan lists them in solver.cut_short).
The MILPs run on a few threads (the solver runs apart), each on its own model, so the answers do
not depend on the order; variants may be added while others re-plan (Runner.add), sharing one
budget counted from the runner's start.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from planner.data import deadline
from planner.data.errors import SolverError
from planner.data.years import SPENT_KEY, budget_basis
from planner.data.money import usd
from planner.explain import batch
from planner.milp import fleet as model
from planner.milp import prune, screening
from planner.milp.fleet import FleetModel
from planner.milp.registry import bounds_held
from planner.milp.solve import SolveResult, solve
from planner.options import build as options

MAX_WORKERS = 4
MAX_NODES = 300  # branch-and-bound nodes per explanation MILP: a work bound, so answers are reproducible
VARIANT_GAP = 0.01  # an alternative is priced within 1% (its status says whether that was proven)
VARIANT_TIME_LIMIT_S = 20.0  # a safety net only: a variant it stops is reported as cut short
OWN_TIME = "explanations-share"
"""what data.deadline records when the explanations' own share of time (narrative.milp_budget), not
the command's time limit, stopped a variant: the plan says so apart from what the time limit cut"""


@dataclass
class Variant:
    key: tuple
    scenario: object | None = None  # a modified scenario: a fresh model (and options if asked)
    rebuild_options: bool = False
    rebuild_jobs: tuple = ()
    """the jobs whose options differ from the plan's (rebuild_options: the rest are reused)"""
    options: object | None = None  # modified options: a fresh model
    extra: Callable[[FleetModel], list] | None = None  # extra rows
    note: str = ""
    lifted: bool = False
    """a cap lifted: every plan of the scenario is a plan of the variant (none is dearer)"""
    model: FleetModel | None = None
    """the variant's model, built (prepare(): with its extra rows), and its LP relaxation (lp)"""
    lp: SolveResult | None = None
    empty: bool = False
    """an extra row names no variable: nothing can be forced, no model"""
    fleet: dict | None = None
    """(store, key) -> count: the plan's fleet, tried first with the fleet fixed (a raised target)"""
    floor: float | None = None
    """a proven lower bound on the variant's objective (a raised target: the plan's own bound)"""
    start: tuple | None = None
    """(model, values): a plan the variant's MILP starts from (a lifted cap: the plan itself, a
    plan of the variant too), so that its search, bounded by MAX_NODES, ends no dearer than that"""


def builder(s):
    """The model a scenario is planned with (one year, or years 1..H when it has per-year settings)."""
    return model.build


def outcome(fm: FleetModel, res: SolveResult) -> dict:
    """What a variant's plan is: status, yearly cost, fleet, bought power and capex, unserved users."""
    if not res.ok:
        return {"status": res.status, "cut_short": res.cut_short}
    # the solver's bound, where the objective is the yearly cost (not an NPV, nor weighed by coverage)
    bound = {} if res.bound is None or fm.scenario.multi_year or fm.unserved else {"bound": res.bound}
    if fm.scenario.multi_year:  # the final year's fleet; cost = the accounting view's yearly average
        from planner.milp.readout_years import read_multiyear

        plan = read_multiyear(fm.scenario, fm, res)
    else:
        from planner.milp.readout import read_plan

        plan = read_plan(fm.scenario, fm, res)
    unserved = sum((u.get("users") or 0.0) for j in plan["jobs"] for u in j["unserved"].values())
    short = unserved_shares(plan)
    npv = {"npv": plan["npv_usd"]} if fm.scenario.multi_year else {}
    return {"status": res.status, "cost": plan["total_cost_usd_per_year"], "fleet": plan["fleet"], **npv,
            "power_kw": site_power_kw(plan), "spend": budget_spend(plan, budget_basis(fm.scenario)),
            "unserved_users": unserved, "unserved_jobs": short, "cut_short": res.cut_short, **bound}


BUDGETS = {"usd_per_year": ("cost_usd", "budget_usd"), "capex_usd_per_year": ("capex_usd", "budget_capex_usd"),
           "opex_usd_per_year": ("opex_usd", "budget_opex_usd")}
"""each budget cap (scenario budget.*) -> what it caps in a multi-year plan's year, and that year's cap
(plan["years"]: budget.years may set a year's own)"""


def budget_spend(plan: dict, basis: str) -> dict[str, tuple[float, int | None, float | None]]:
    """What each budget cap is measured against in a plan: budget name -> (the amount, the year,
    that year's cap; None, None for a one-year plan). One year: the yearly cost (usd_per_year, in
    the objective's view, or the first year's cash where `basis` is cash: years.budget_basis), the
    purchase prices paid (capex), the running costs (opex). Years: the year with the least headroom
    under its own cap (rows.define_budget_constraints caps each year's cash, or annualised cost where
    the budget_basis says so; a year without a cap is left out), else the highest."""
    if plan.get("years"):
        out = {}
        for name, (key, cap) in BUDGETS.items():
            if name == "usd_per_year":
                key = SPENT_KEY[basis]
            capped = [y for y in plan["years"] if y.get(cap) is not None]
            top = (min(capped, key=lambda y: (y[cap] - y[key], y["year"])) if capped
                   else max(plan["years"], key=lambda y: (y[key], -y["year"])))
            out[name] = (top[key], top["year"], top.get(cap))
        return out
    base = plan["total_cost_usd_per_year"]
    capex = sum(f["purchase_usd"] or 0.0 for f in plan["fleet"] if f["acquisition"] == "buy")
    opex = base - plan.get("cost_breakdown_usd_per_year", {}).get("capital", 0.0)
    if basis == "cash":
        base = plan.get("cash_first_year_usd", base)
    return {"usd_per_year": (base, None, None), "capex_usd_per_year": (capex, None, None),
            "opex_usd_per_year": (opex, None, None)}


def site_power_kw(plan: dict) -> float:
    """kW the plan's bought systems draw at the site (what site.power_cap_kw bounds): edge units
    deployed on devices (robots, desks, phones) are left out, as the model's power row leaves them."""
    edge: dict[str, int] = {}
    for j in plan["jobs"]:
        if j["stage"] == "edge":
            for p in j["placements"]:
                edge[p["offer"]] = edge.get(p["offer"], 0) + p["replicas"]
    return sum((f["power_kw"] or 0.0) * (1 - edge.get(f["offer"], 0) / f["systems"])
               for f in plan["fleet"] if f["acquisition"] == "buy" and f["systems"])


def proven_within(got: dict, base: float) -> tuple[str, dict]:
    """Where a re-plan's cost stands above the bound its search proved (it stops within VARIANT_GAP,
    wider than the plan's own gap): '; within 0.8% of its cheapest, at least +$8,045' and
    {'cost_delta_at_least_usd_per_year': 8045.0}, so that a difference is not read as exact (the UX
    review: +$10,601 printed where the cheapest such fleet is +$9,075); ('', {}) where the bound
    meets the cost (to a dollar), or the re-plan has none (multi-year: its objective is an NPV)."""
    bound = got.get("bound")
    if bound is None or got.get("cost") is None or got["cost"] - bound <= max(1.0, 1e-4 * abs(got["cost"])):
        return "", {}
    least = bound - base
    share = (got["cost"] - bound) / max(abs(got["cost"]), 1.0)
    return (f"; within {share:.1%} of its cheapest, at least {'+' if least >= 0 else '-'}{usd(abs(least))}",
            {"cost_delta_at_least_usd_per_year": round(least, 2)})


def cut_words(got: dict, lead: str = " (", tail: str = ")") -> str:
    """' (cut short by the time limit)' for a re-plan a clock stopped, naming which: the command's
    time limit, or the explanations' own share of time (as long as the plan's search); '' if none."""
    if not got.get("cut_short"):
        return ""
    if got.get("cut_by") == OWN_TIME:
        return f"{lead}cut short when the explanations' time, as long as the plan's own search, ran out{tail}"
    return f"{lead}cut short by the time limit{tail}"


def unserved_shares(plan: dict) -> dict[str, float]:
    """job -> the largest share of any of its parts left unserved (max-coverage, elastic plans)."""
    return {j["name"]: max(u["share"] for u in j["unserved"].values()) for j in plan["jobs"] if j["unserved"]}


def coverage_lost(plan: dict, got: dict) -> dict[str, float]:
    """The jobs a variant leaves more unserved than the plan does: job -> the variant's share."""
    mine = unserved_shares(plan)
    return {k: v for k, v in sorted((got.get("unserved_jobs") or {}).items()) if v > mine.get(k, 0.0) + 1e-6}


def coverage_text(plan: dict, lost: dict[str, float]) -> str:
    """'; it leaves rl-0 unserved and chat 40% unserved, which the plan serves' (or '')."""
    if not lost:
        return ""
    words = [f"{k} unserved" if v >= 1 - 1e-6 else f"{k} {v:.0%} unserved" for k, v in lost.items()]
    whole = not any(k in unserved_shares(plan) for k in lost)
    return f"; it leaves {' and '.join(words)}, {'which the plan serves' if whole else 'where the plan serves more'}"


def prepare(s, cat, opts, variants: list[Variant]) -> None:
    """Build each variant's model with its extra rows, in place (Variant.model; Variant.empty when
    an extra row names no variable: nothing can be forced). A variant left without a model ran out
    of the command's time (said cut short)."""
    for v in variants:
        if v.model is not None or v.empty:
            continue
        if deadline.left() <= 0:
            deadline.cut("explanations")
            return
        vs = v.scenario or s
        try:
            if v.rebuild_options:  # only the changed jobs' configurations are searched again
                vo = options.build(vs, cat, reuse=opts, rebuild=frozenset(v.rebuild_jobs))
            left = deadline.left()  # (its build stops at the time limit: 2,000 generated jobs, 17.6 s of it with 5 s left)
            fm = builder(vs)(vs, cat, v.options or (vo if v.rebuild_options else opts),
                             until=time.monotonic() + left if math.isfinite(left) else None)
        except SolverError:  # the options or the model's build ran out of the command's time: cut short
            deadline.cut("explanations")
            continue
        rows = v.extra(fm) if v.extra else []
        if any(len(row.expr) == 0 for row in rows):
            v.empty = True
            continue
        for i, row in enumerate(rows):
            fm.prob.addConstraint(row, f"variant{i}")
        v.model = fm


def from_lp(fm: FleetModel, v: Variant, lp: SolveResult, base: float | None, tol: float) -> dict | None:
    """The variant's answer when its LP relaxation settles it exactly (see the module docstring)."""
    if lp.status == "infeasible":
        return {"status": "infeasible", "cut_short": False, "basis": "lp"}
    if not lp.ok:
        return None
    if batch.integral(fm, lp):
        return {**outcome(fm, lp), "basis": "lp-integral"}
    if v.lifted and base is not None and not fm.unserved and lp.objective >= base - tol / 2:
        return {"status": "not-binding", "bound": lp.objective, "cut_short": False, "basis": "lp-bound"}
    return None


SMALL_VARIABLES = 50
"""forced-accelerator MILPs of at most this many variables (a job or two on one accelerator) are
solved together as one block-diagonal MILP at gap 0 (batch.joint): one solver start for all of
them, each answer proven optimal; when the joint search does not finish within MAX_NODES they are
solved one at a time as before"""


FLEET_STORES = ("p", "k", "r", "rp")
"""the stores of a fleet: systems bought, reserved, rented (per demand, and shared by pools)"""


def fleet_of(fm: FleetModel, res: SolveResult) -> dict[tuple, int]:
    return {(store, key): round(res.values.get(v.name, 0.0))
            for store in FLEET_STORES for key, v in getattr(fm, store).items()}


@contextmanager
def fleet_fixed(fm: FleetModel, fleet: dict[tuple, int]):
    """fm with its fleet variables fixed at `fleet` (by (store, key); one the plan lacks at 0),
    bounds restored after."""
    held = [(v, fleet.get((store, key), 0), fleet.get((store, key), 0)) for store in FLEET_STORES
            for key, v in sorted(getattr(fm, store).items(), key=lambda kv: repr(kv[0]))]
    with bounds_held(held):
        yield fm


def _in(todo: list) -> list[Variant]:
    """The variants of a task list (a variant, a group solved together, or ("fixed", variant))."""
    return [v for item in todo for v in (item if isinstance(item, list) else [item[1]] if isinstance(item, tuple)
                                         else [item])]


class Runner:
    """Variants answered as they are added (add: built in the caller's thread, then on worker
    threads their LP relaxations and, where those do not settle them, their MILPs); the solver runs
    apart, so a variant added early is re-planned while the caller works on (the explanations'
    LP bounds and prices). budget_s: wall seconds the MILPs may take together, counted from the
    runner's start (the explanations' first step: the variants' models are built in that time). A context manager: on exit every variant added has its outcome in `out`."""

    def __init__(self, s, cat, opts, time_limit_s: float, base: float | None = None, budget_s: float | None = None):
        self.s, self.cat, self.opts, self.time_limit_s, self.base = s, cat, opts, time_limit_s, base
        self.tol = max(1.0, s.solver.gap * (base or 0.0))
        self.budget_s = budget_s
        self.stop = None if budget_s is None else time.monotonic() + budget_s
        self.out: dict[tuple, dict] = {}
        self.models: dict[tuple, FleetModel] = {}
        self.todo: list = []
        self.lock = threading.Lock()
        self.threads = max(1, min(MAX_WORKERS, os.cpu_count() or 1))
        self.pool = ThreadPoolExecutor(self.threads)
        self.pending: list = []

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc) -> None:
        try:
            while True:
                with self.lock:
                    if not self.pending:
                        break
                    f = self.pending.pop(0)
                f.result()
        finally:
            self.pool.shutdown(wait=True)

    def add(self, variants: list[Variant], workers: int | None = None) -> None:
        """Build the variants' models here, then answer them on up to `workers` threads (default:
        as many as the machine has cores, MAX_WORKERS at most)."""
        prepare(self.s, self.cat, self.opts, variants)
        with self.lock:
            self.out.update({v.key: {"status": "no-variables", "note": v.note} for v in variants if v.empty})
            self.pending.append(self.pool.submit(self._answer, [v for v in variants if v.model is not None],
                                                 max(1, min(workers or self.threads, self.threads))))

    def _answer(self, todo: list[Variant], workers: int) -> None:
        """LPs first (one solver run), then the MILPs of those their LP does not settle."""
        for v in todo:
            self.models[v.key] = v.model
        need = [v for v in todo if v.lp is None]
        for v, lp in zip(need, batch.solve_lps([v.model for v in need], self.time_limit_s)):
            v.lp = lp
        milps = []
        for v in todo:
            got = from_lp(v.model, v, v.lp, self.base, self.tol)
            if got is None:
                milps.append(v)
            else:
                with self.lock:
                    self.out[v.key] = {**got, "note": v.note}
        self._queue(milps)
        with self.lock:
            self.pending.extend(self.pool.submit(self._worker) for _ in range(min(workers, len(milps)) - 1))
        self._worker()

    def _queue(self, variants: list[Variant]) -> None:
        s, models = self.s, self.models
        small = [v for v in variants if v.key[0] == "force" and len(models[v.key].prob.variables()) <= SMALL_VARIABLES]
        small = small if len(small) > 1 and s.solver.name == "cbc" else []  # (HiGHS runs in process: no start to save)
        first = [("fixed", v) for v in variants if v.fleet is not None and v.floor is not None and s.solver.name == "cbc"]
        with self.lock:
            self.todo.extend(([small] if small else []) + first + [v for v in variants if v not in small
                                                                  and not any(v is w for _, w in first)])

    def _together(self, group: list[Variant], left: float) -> None:
        got = batch.joint([self.models[v.key] for v in group], left, mip=True, max_nodes=MAX_NODES)
        with self.lock:
            if got is None:  # not proven within the work bound: one at a time
                self.todo.extend(group)
                return
            for v, res in zip(group, got):
                self.out[v.key] = {**outcome(self.models[v.key], res), "basis": "milp", "note": v.note}

    def _fixed_first(self, v: Variant, left: float) -> None:
        """The plan's fleet under the variant (fleet_fixed): kept when it is provably within
        VARIANT_GAP of the variant's optimum, else the variant's own MILP is queued."""
        fm, s = self.models[v.key], self.s
        with fleet_fixed(fm, v.fleet):
            res = solve(fm, time_limit_s=left, gap=max(s.solver.gap, VARIANT_GAP), max_nodes=MAX_NODES)
            got = outcome(fm, res) if res.ok and res.objective - v.floor <= VARIANT_GAP * abs(res.objective) else None
        with self.lock:
            if got is None:
                self.todo.append(v)
            else:
                self.out[v.key] = {**got, "status": "optimal", "basis": "plan-fleet", "note": v.note}

    def _worker(self) -> None:
        s, stop, limit = self.s, self.stop, self.time_limit_s
        while True:
            with self.lock:
                if not self.todo:
                    return
                left = min(deadline.left(), VARIANT_TIME_LIMIT_S, limit,
                           stop - time.monotonic() if stop is not None else VARIANT_TIME_LIMIT_S)
                if left <= 0:  # the command's or the explanations' time: the rest are left out, said cut short
                    deadline.cut("explanations" if deadline.left() <= 0 else OWN_TIME)
                    if deadline.left() > 0:  # (the command's own limit leaves them out, as every step it cuts)
                        for v in _in(self.todo):
                            self.out[v.key] = {"status": "skipped", "cut_short": True, "note": v.note}
                    self.todo.clear()
                    return
                v = self.todo.pop(0)
            if isinstance(v, list):
                self._together(v, left)
                continue
            if isinstance(v, tuple):
                self._fixed_first(v[1], left)
                continue
            fm = self.models[v.key]
            if v.start is not None:
                prune.warm_start(fm, *v.start)
            res = screening.search(fm, time_limit_s=left, gap=max(s.solver.gap, VARIANT_GAP), max_nodes=MAX_NODES,
                                   warm=v.start is not None, spares_only=True)
            own = stop is not None and left < min(VARIANT_TIME_LIMIT_S, limit) and res.seconds >= left - 0.5 \
                and res.status != "optimal" and deadline.left() > 0.5
            if own:
                deadline.cut(OWN_TIME)  # the explanations' share of the time, not the search, ended it
            result = {**outcome(fm, res), "basis": "milp", "note": v.note, **({"cut_by": OWN_TIME} if own else {})}
            with self.lock:
                self.out[v.key] = result
