"""The fleet MILP: one year-indexed model for single-period (year 1 alone) and multi-year plans
(model.py has the stores, the years and the two objectives). One define_* function per variable
or constraint family, in a fixed order (FAMILIES); the rows are in rows.py.

Sets: demands D (serving users, batch runs, edge units), offers O (system x acquisition x
provider), options I_d (how demand d runs on one system type, from options/), years T.

Variables (t in T)
  p[o,t], k[o,t]  int   systems bought / reserved contracts started in year t (owned.py); held(o,t)
  y[d,i,o,t]      int   replicas of serving option i for demand d on offer o
  r[d,o,t]        int   systems rented by the hour (on-demand, spot) from offer o for demand d
  x[d,i,o,t]      [0,1] share of batch demand d's runs done with option i on offer o
  b[d,i,o,t]      bin   batch option i placed on owned offer o (it must fit there at once)
  e[d,i,o,t]      int   edge units bought (owned.py)
  u[o,t], u[d,o,t] bin  N+1 spare: one idle system held in owned pool o, or in d's rentals of o
  Y, R, a               pooled replicas and shared rentals (pooling.py), API shares (api.py)
  z[s,t]          bin   system type s in year t's fleet, costing policy.cost_per_system_type_usd_year
                        (complexity.py; absent at the default rate 0)
  w[j,p,t]        bin   RL job j's trainer and rollouts at place p (site, stack) in year t (colocation.py)

Objective: the yearly cost (one year) or the NPV of the cash paid (years), see model.py; in
max-coverage mode priority-weighted served demand first, then cost.

Every constraint is registered under (family, entity) in `FleetModel.rows`; nothing parses names.

Valid inequalities (tight models only; registered in `FleetModel.cuts` and relaxed while prices
re-solve with the fleet fixed): rows that no optimal plan violates and that lift the LP relaxation
towards the integer hull, each with its proof in its function's docstring:
  spare-share  sum_i c_i y[d,i,o,t] <= (users[d,t] + max_i c_i) u_pool      (define_spare_variables)
  pool-share   sum_i users_i y[d,i,o,t] <= users[d,t] u_pool, pooled d       (pooling.define_pool_spares)
  pool-cover   users_i y[d,i,o,t] <= users[d,t] Y[p,c,o,t], pooled d, users[d,t] < users_i
                                                                             (pooling.define_pool_constraints)
  batch-share  sum_i ceil(acc_i / acc_o) x[d,i,o,t] <= held(o,t), owned o, and with the serving the
               run must fit beside (batch-share-fit): a run's batch-fit rows averaged by its
               shares (rows.define_batch_shares)
  held-share   sum_i users_i y[d,i,o,t] <= users[d,t] held(o,t), owned o, no N+1 (and held-use for
               a demand alone): the full model behind a shortlist only (openings.py)
  cover-mir    the mixed-integer rounding of each demand row (of each pool's summed rows) over its
               integer replicas, one per replica size as divisor: whole replicas (covers.py)
  weighted-mir a pool's demand rows summed in replica-equivalents of each of its configurations, and
               their MIRs, separated at the LP (covers.py): members of unequal replica sizes
  rental-mir   a demand's row with its replicas on each rented offer o replaced by its rented
               systems (min(b, acc_o max_i users_i / slots_i) r[d,o]), and that row's MIRs: whole
               rented systems (covers.py; left out of a shortlist's search model)
Each holds in every minimal plan (no replica removable, no load lowerable with the demand still
met), and every plan lowers to a minimal one at no higher cost, so the optimum is unchanged.
"""

from __future__ import annotations

import math
import time

import pulp

from planner.data import deadline
from planner.data.catalog import Catalog
from planner.data.errors import SolverError
from planner.data.jobs import hours_per_year
from planner.data.scenario import Scenario
from planner.milp import colocation, complexity, covers, crossdisagg, openings, owned, pooling, rows, turns
from planner.milp.api import define_api_variables
from planner.milp.model import FleetModel
from planner.options import shortlist
from planner.options.eligibility import batch_offer_exclusion, systems_per_run
from planner.options.types import Demand, Options
from planner.physics import costs

__all__ = ["FleetModel", "build", "trim_rentals"]
trim_rentals = rows.trim_rentals


def _batch_offers(fm: FleetModel, d: Demand, opt) -> list[str]:
    """Offers a batch option may use: those its demand may use (options.offers_for) that can host
    the run (options.batch_offer_exclusion: a rental's cap holds one run, spot meets the deadline)."""
    system = fm.catalog.systems[opt.system]
    return [oid for oid in fm.options.offers_for(d.key, opt.system)
            if not batch_offer_exclusion(d, opt, fm.offer(oid), system)]


def define_pairs(fm: FleetModel) -> None:
    """Candidate (option, offer) pairs per demand, reduced by shortlist.select (exact for small
    scenarios; above shortlist.PRUNE_ABOVE pairs a heuristic whose plan is measured against the
    full model's bound, prune.py)."""
    serve = {dk: [(i, oid) for i, opt in enumerate(opts)
                  for oid in fm.options.offers_for(dk, opt.system, pairs=opt.half is not None)]
             for dk, opts in sorted(fm.options.serve.items())}
    batch = {dk: [(i, oid) for i, opt in enumerate(opts)
                  for oid in _batch_offers(fm, fm.options.demands[dk], opt)]
             for dk, opts in sorted(fm.options.batch.items())}
    fm.serve_pairs, fm.batch_pairs, fm.pairs_pruned = shortlist.select(
        fm.scenario, fm.catalog, fm.options, serve, batch, fm.keep_pairs, fm.prune)


def _years_of(fm: FleetModel, oid: str) -> list[int]:
    """Years offer oid may carry work: an owned offer's years with systems held, else acquirable ones."""
    if costs.is_owned(fm.offer(oid)):
        return [t for t in fm.years if (oid, t) in fm.held_terms]
    return fm.acquirable(oid)


def define_serving_variables(fm: FleetModel) -> None:
    """y[d,i,o,t] replicas, at most ceil(users[d,t] / users_i) (no fleet needs more of one option: N+1
    is a spare system, not extra replicas); r[d,o,t] hourly-rented systems. Busy power on owned
    systems and rentals are charged for the demand's hours: slots x busy $/accelerator-hour x hours,
    price x f(t) x hours. A pooled demand's y is its load (continuous); its replicas, power and
    rentals are its pool's (pooling.py)."""
    site = fm.scenario.site
    for dk, pairs in sorted(fm.serve_pairs.items()):
        d = fm.options.demands[dk]
        hours = hours_per_year(d)
        for i, oid in pairs:
            opt, o = fm.options.serve[dk][i], fm.offer(oid)
            for t in _years_of(fm, oid):
                up = math.ceil(fm.demand_at(dk, t) / max(opt.users_per_replica, 1)) if fm.tight else None
                v = fm.var(fm.y, (dk, i, oid, t), "Continuous" if d.pool else "Integer", 0, up)
                if d.pool:
                    continue
                if costs.is_owned(o):
                    system = fm.system_of(oid)
                    busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
                    fm.cost(t, "power", busy * opt.accelerator_slots * hours, v, oid)
                elif (dk, oid, t) not in fm.r:
                    rv = fm.var(fm.r, (dk, oid, t), "Integer", 0, fm.cap_of(o))
                    fm.cost(t, "rental", o.price_usd_per_hour * fm.factor(oid, t) * hours, rv, oid)


def define_spare_variables(fm: FleetModel) -> None:
    """N+1 (policy.redundancy: n+1): every pool of serving systems holds one spare in each year, so
    any one system can fail and its replicas restart on the spare. A pool is one system type's owned
    systems at one site (model.spare_pool: the offers bought, already held or reserved there, shared
    by every job) or one demand's hourly rentals of offer o. u = 1 when the pool serves:
      spare-use    y[d,i,o,t] <= ceil(users[d,t] / users_i) u_pool   (a variable upper bound: no
                   big-M; no demand needs more replicas than its users)
      spare-share  sum_i c_i y[d,i,o,t] <= (users[d,t] + max_i c_i) u_pool, c_i = min(users_i,
                   users[d,t]) as in the demand row, over d's options on the pool's offers (two or more)
    and the capacity rows (rows.define_capacity_constraints) keep one system free:
    slots <= acc_o (held(o,t) - u) for a pool of one offer; for several, slots_o <= acc_o held(o,t)
    on each and spare-pool  sum_o slots_o <= acc (sum_o held(o,t) - u) over them. The review's
    hospital (one h100-sxm-x8 owned, 350 users of a 70B model) kept a spare for the owned node and
    another for the nodes bought beside it: it bought 3 and left the owned one idle at $332,178 a
    year; with one spare between them it keeps the owned node and buys 2, $266,923 (the enumeration
    in tests/test_milp_core.py checks a case of it). The spare is a whole system of the pool, so the
    summed slots suffice: with any one system down, the replicas it ran fit in the slots left free.
    spare-share is the facility-location linking row (a client's share served by a facility is at
    most its opening): in the LP relaxation u_pool is then at least the share of demand d the pool
    carries, summed over d's options, where spare-use alone gives only the largest single option's
    share (on the 10-job N+1 benchmark, seed 3, the LP bound rises 640,557 -> 753,943 $/yr, optimum
    869,896). It is valid for every minimal plan, one from which no replica can be removed with the
    demand still met (removing one never costs more: busy power falls, rentals trim with it, every
    other row holding y is a <= row with non-negative coefficients), so it keeps an optimal plan:
    in a minimal plan the users served short of the last replica added are below users[d,t], so
    the supply on any pool is below users[d,t] + the largest c_i."""
    if fm.scenario.policy.redundancy != "n+1":
        return
    share: dict[tuple, list] = {}
    for (dk, i, oid, t), yv in sorted(fm.y.items()):
        d, opt = fm.options.demands[dk], fm.options.serve[dk][i]
        if d.pool:
            continue  # pooling.define_pool_spares
        pool = fm.spare_pool(oid, t) if (oid, t) in fm.held_terms else (dk, oid, t)
        u = fm.u[pool] if pool in fm.u else fm.var(fm.u, pool, "Binary")  # (an LpVariable is falsy)
        need = math.ceil(fm.demand_at(dk, t) / max(opt.users_per_replica, 1))
        fm.add("spare-use", (dk, i, oid, t), yv <= need * u)
        if fm.tight:
            share.setdefault((dk, *pool[-2:]), []).append((min(opt.users_per_replica, fm.demand_at(dk, t)), yv, u))
    for (dk, oid, t), terms in sorted(share.items()):
        if len(terms) > 1:
            top = fm.demand_at(dk, t) + max(c for c, _, _ in terms)
            fm.add("spare-share", (dk, oid, t), pulp.LpAffineExpression([(v, c) for c, v, _ in terms])
                   <= top * terms[0][2], cut=True)


def define_batch_variables(fm: FleetModel) -> None:
    """x[d,i,o,t] share of year t's runs; on owned offers a binary b places the run there (it must
    fit at once); on rentals each run pays systems x run hours x price x f(t) (spot: hours x
    SPOT_RESTART_OVERHEAD). b exists only where fitting at once is not implied: a run on one system
    with no job it must fit beside (turns.py) needs held >= 1, which x <= held(o,t) forces (rows.py; the
    hours row alone forces it only above the solver's tolerance: a run of minutes on one offer left
    held(o,t) >= 1e-7, which CBC read as 0 systems: a plan placing work on an offer it held none of)."""
    site = fm.scenario.site
    on = turns.serving_on(fm)
    fm.turn_pairs = turns.pairs(fm)
    paired = {(*run, oid) for a, b, oid, _ in fm.turn_pairs for run in (a, b)}
    for dk, pairs in sorted(fm.batch_pairs.items()):
        for i, oid in pairs:
            opt, o = fm.options.batch[dk][i], fm.offer(oid)
            system = fm.system_of(oid)
            beside = turns.beside(fm, dk, i, oid, on) if costs.is_owned(o) else set()
            placed = costs.is_owned(o) and (opt.accelerators > system.accelerators or (dk, i, oid) in paired
                                            or bool(beside))
            if placed:
                fm.turn_beside[(dk, i, oid)] = beside
            for t in _years_of(fm, oid):
                runs = fm.demand_at(dk, t)
                v = fm.var(fm.x, (dk, i, oid, t), "Continuous", 0, 1)
                if costs.is_owned(o):
                    if placed:
                        fm.var(fm.b, (dk, i, oid, t), "Binary")
                    busy = costs.busy_usd_per_hour(o, system, site) / system.accelerators
                    fm.cost(t, "power", busy * opt.accelerators * opt.hours_per_run * runs, v, oid)
                else:
                    per_run = systems_per_run(opt.accelerators, system.accelerators)
                    hours = costs.run_hours(opt.hours_per_run, o.acquisition)
                    fm.cost(t, "rental", per_run * hours * o.price_usd_per_hour * fm.factor(oid, t) * runs, v, oid)


FAMILIES = (
    define_pairs,
    owned.define_owned_variables,
    define_serving_variables,
    pooling.define_pool_variables,
    define_spare_variables,
    pooling.define_pool_spares,
    define_batch_variables,
    owned.define_edge_variables,
    define_api_variables,
    complexity.define_complexity,
    rows.define_demand_constraints,
    rows.define_capacity_constraints,
    rows.define_batch_shares,
    pooling.define_pool_constraints,
    openings.define_held_shares,
    covers.define_cover_cuts,
    crossdisagg.define_cross_links,
    colocation.define_colocation,
    rows.define_availability_constraints,
    rows.define_budget_constraints,
    rows.define_power_constraints,
    rows.define_objective,
)


def build(scenario: Scenario, catalog: Catalog, options: Options, elastic: bool = False,
          tight: bool = True, prune: bool = True, keep_pairs: dict | None = None,
          years: bool | None = None, until: float | None = None, lazy: bool = False,
          weighted: bool = True) -> FleetModel:
    """The fleet MILP for a scenario, its catalog and its options (see the module docstring):
    years 1..horizon_years with the NPV objective when the scenario is multi-year (or years=True),
    else year 1 with the yearly cost. prune=False instantiates every pair (no shortlist),
    keep_pairs adds pairs to a shortlist; lazy holds the MIR cuts back until an LP violates them
    (registry.Registry.lazy, covers.separate). until (time.monotonic()): SolverError when the build is
    still under way then (checked between constraint families, as the command's budget is).
    weighted=False leaves the pools' weighted covers held (covers.add_weighted adds them later)."""
    multi = scenario.multi_year if years is None else years
    fm = FleetModel(scenario, catalog, options, pulp.LpProblem("fleet_years" if multi else "fleet", pulp.LpMinimize),
                    elastic=elastic, tight=tight, prune=prune, keep_pairs=keep_pairs, npv=multi, lazy=lazy,
                    years=list(range(1, scenario.horizon_years + 1)) if multi else [1])
    for done, define in enumerate(FAMILIES):
        if done and deadline.left() <= 0 and (deadline.current().step or "").startswith(("solve", "bound")):
            raise SolverError(_out_of_time(done))
        if done and until is not None and time.monotonic() > until:
            raise SolverError(f"the model's build passed its time ({done} of {len(FAMILIES)} parts built)")
        define(fm)
    if weighted:
        covers.add_weighted(fm)
    return fm


def _out_of_time(done: int) -> str:
    """The budget ran out while the plan's own model (or the full model behind a shortlist's bound)
    was being built: between constraint families, before anything was solved (exit 4)."""
    b = deadline.current()
    return (f"no plan within the time limit of {b.seconds:g} s: building the options and the MILP used it all "
            f"({done} of {len(FAMILIES)} parts of the model built in {b.elapsed():.1f} s).\n    To fix: raise "
            "--time-limit (or solver.time_limit_s in the scenario), or split the scenario, or narrow policy.accelerators")
