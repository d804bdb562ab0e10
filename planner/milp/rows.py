"""The fleet MILP's rows, per year t (the variables are in fleet.py, owned.py, pooling.py, api.py):

  demand        serve: sum_i,o min(users_i, users[d,t]) y[d,i,o,t] + API share (+ unserved) >= users[d,t]
                (coefficient tightening: one replica that holds every user covers the demand whole);
                batch: shares sum to 1; edge: units held >= units[d,t]
  capacity      owned o at peak: sum slots_i y[d,i,o,t] <= acc_o (held(o,t) - u[o,t]) (every serving
                job may run at once, beside the N+1 spare; TP groups stay inside one system); u is
                its N+1 pool's where the pool is o alone
  spare-pool    an N+1 pool of several owned offers (one system type at one site): sum_o slots_o <=
                acc (sum_o held(o,t) - u_pool), and each o's capacity row without u
  hours         owned o over the year: serving slots x hours + batch accelerators x hours x runs x
                share <= 8760 acc_o held(o,t) (fine-tuning uses hours serving leaves idle)
  batch-fit     a run placed on o fits at once beside the serving jobs it may not take turns with
                (turns.py: every always-on one; a part-day one when pausing for it would break the
                run's deadline): acc_i b + sum slots y <= acc_o held(o,t), x <= b. Part-day serving
                jobs are assumed idle at the same hours (nights, weekends), so a run that may pause
                uses their slots then. Without b (a run on one system, nothing it must fit beside):
                x <= held(o,t).
  batch-pair    two runs of different jobs, neither of which may wait for or pause for the other
                within its deadline (turns.pairs): acc_A b_A + acc_B b_B + the serving both must
                fit beside <= acc_o held(o,t)
  rental        rented o for d: slots <= acc_o (r[d,o,t] - u[d,o,t]); no rented system without a
                replica or the spare: r <= sum_i ceil(slots_i / acc_o) y + u (trim_rentals then
                lowers r to exactly what the replicas fill)
  availability  systems of offer o in a year across demands <= its cap (rentals, pooled rentals,
                edge units; owned holdings over several purchase years)
  budget        per year: 'usd' the year's cost in the budget's basis (model.year_cost: annualised or
                cash, data.years.budget_basis), 'capex' the purchase prices paid, 'opex' the running
                costs, each <= its cap (data.years.year_caps)
  power         bought systems held in year t: sum_o power_kw_o held(o,t) <= site.power_cap_kw
Objective: model.total_cost + a tie-break of TIE_BREAK_USD per system bought, reserved or rented (no
idle system is ever bought, even at a near-zero price) and per replica of a disaggregated option
(prefill and decode split on one system, or a half of a split across two: at equal cost, the
aggregated replica, which is simpler to run) + the coverage and elastic penalties.
"""

from __future__ import annotations

import math

import pulp

from planner.data.constants import HOURS_PER_YEAR
from planner.data.jobs import hours_per_year
from planner.data.years import budget_basis, year_caps
from planner.milp import pooling
from planner.milp.api import api_supply
from planner.milp.owned import edge_held
from planner.milp.registry import COVERAGE_WEIGHT, ELASTIC_PENALTY, TIE_BREAK_USD, affine
from planner.physics import disagg

HOURS = HOURS_PER_YEAR


def y_of(fm, dk: str, t: int) -> list[tuple[int, str, pulp.LpVariable]]:
    """Demand dk's replica variables of year t as (option index, offer, variable), sorted."""
    index = getattr(fm, "_y_index", None)
    if index is None or index[0] != len(fm.y):
        by: dict[tuple, list] = {}
        for (d, i, oid, tt), v in sorted(fm.y.items()):
            by.setdefault((d, tt), []).append((i, oid, v))
        index = (len(fm.y), by)
        fm._y_index = index
    return index[1].get((dk, t), [])


def supply(fm, dk: str, t: int):
    """Users demand dk's replicas and API shares serve in year t, each replica counted at most at
    the demand (a pooled demand's y is a load: its coefficient is not clipped)."""
    opts, need = fm.options.serve[dk], fm.demand_at(dk, t)
    cap = need if fm.tight and not fm.options.demands[dk].pool else float("inf")
    return pulp.lpSum(min(opts[i].users_per_replica, cap) * v for i, oid, v in y_of(fm, dk, t)) + api_supply(fm, dk, t)


def define_demand_constraints(fm) -> None:
    coverage = fm.scenario.budget.mode == "max-coverage"
    xs: dict[tuple, list] = {}
    for (k, _, _, t), v in fm.x.items():
        xs.setdefault((k, t), []).append(v)
    for dk, d in sorted(fm.options.demands.items()):
        for t in fm.years:
            need = fm.demand_at(dk, t)
            short = fm.var(fm.unserved, (dk, t), "Continuous", 0, 1) if (coverage or fm.elastic) else None
            if d.kind == "serve":
                lhs = supply(fm, dk, t) + (need * short if short is not None else 0)
                fm.add("demand", (dk, t), lhs >= need)
            elif d.kind == "batch":
                lhs = pulp.lpSum(xs.get((dk, t), []))
                fm.add("demand", (dk, t), lhs + (short if short is not None else 0) == 1)
            else:
                lhs = edge_held(fm, dk, t) + (need * short if short is not None else 0)
                fm.add("demand", (dk, t), lhs >= need)


def define_capacity_constraints(fm) -> None:
    serve_on: dict[tuple, list] = {}
    for oid, t, opt, d, v in pooling.serving_terms(fm):  # pooled demands count as their pools' replicas
        serve_on.setdefault((oid, t), []).append((opt, d, v))
    batch_on: dict[tuple, list] = {}
    for (dk, i, oid, t), v in fm.x.items():
        if (oid, t) in fm.held_terms:
            batch_on.setdefault((oid, t), []).append((fm.options.batch[dk][i], dk, v))
    edge = _edge_units(fm)  # an offer with edge units too: its availability row counts both
    for (oid, t) in sorted(fm.held_terms):
        per = fm.system_of(oid).accelerators
        held = fm.held(oid, t)
        serving = serve_on.get((oid, t), [])
        if serving:
            pool = fm.spare_pool(oid, t) if fm.u else None
            alone = pool is None or len(fm.spare_pool_offers(pool)) == 1
            spare = fm.u.get(pool, 0) if alone else 0  # (several offers: the spare-pool row keeps it)
            fm.add("capacity", (oid, t), affine((opt.accelerator_slots, v) for opt, _, v in serving)
                   <= per * (held - spare))
        if batch_on.get((oid, t)):
            hours = [(opt.accelerator_slots * hours_per_year(d), v) for opt, d, v in serving]
            hours += [(opt.accelerators * opt.hours_per_run * fm.demand_at(dk, t), v)
                      for opt, dk, v in batch_on[(oid, t)]]
            fm.add("hours", (oid, t), affine(hours) <= HOURS * per * held)
        if len(fm.held_terms[(oid, t)]) > 1 and (oid, t) not in edge:  # several purchase years: the cap
            fm.add("availability", (oid, t), held <= fm.cap_of(fm.offer(oid)))  # holds for the sum
    _spare_pool_rows(fm, serve_on)
    blocked = fm.turn_beside  # (found once, where the placements' b were made: fleet.define_batch_variables)
    for (dk, i, oid, t), bv in sorted(fm.b.items()):
        per = fm.system_of(oid).accelerators
        need = fm.options.batch[dk][i].accelerators
        beside = [(opt.accelerator_slots, v) for opt, d, v in serve_on.get((oid, t), []) if d.key in blocked[(dk, i, oid)]]
        if beside:
            fm.add("batch-fit", (dk, i, oid, t), affine([(need, bv), *beside]) <= per * fm.held(oid, t))
        else:  # the same row with its integer rounding: ceil(need / per) systems (a tighter LP)
            fm.add("batch-fit", (dk, i, oid, t), math.ceil(need / per) * bv <= fm.held(oid, t))
        fm.add("batch-link", (dk, i, oid, t), fm.x[(dk, i, oid, t)] <= bv)
    for (da, ia), (db, ib), oid, years in fm.turn_pairs:  # runs neither of which may give way to the other
        both = blocked[(da, ia, oid)] & blocked[(db, ib, oid)]
        for t in sorted(years):  # (the years whose runs cannot take turns: turns.pairs)
            if (da, ia, oid, t) in fm.b and (db, ib, oid, t) in fm.b:
                beside = [(opt.accelerator_slots, v) for opt, d, v in serve_on.get((oid, t), []) if d.key in both]
                fm.add("batch-pair", (da, ia, db, ib, oid, t),
                       affine([(fm.options.batch[da][ia].accelerators, fm.b[(da, ia, oid, t)]),
                               (fm.options.batch[db][ib].accelerators, fm.b[(db, ib, oid, t)]), *beside])
                       <= fm.system_of(oid).accelerators * fm.held(oid, t))
    for key, xv in sorted(fm.x.items()):  # without a b: a share of the runs on owned o needs a system held
        if (key[2], key[3]) in fm.held_terms and key not in fm.b:
            fm.add("batch-link", key, xv <= fm.held(key[2], key[3]))
    rented: dict[tuple, list] = {}
    for (dk, i, oid, t), v in fm.y.items():
        if (dk, oid, t) in fm.r:
            rented.setdefault((dk, oid, t), []).append((fm.options.serve[dk][i].accelerator_slots, v))
    for key, rv in sorted(fm.r.items()):
        per = fm.system_of(key[1]).accelerators
        used = rented.get(key, [])
        spare = fm.u.get(key, 0)
        fm.add("rental", key, affine(used) <= per * (rv - spare))
        fm.add("rental-use", key, rv <= affine((math.ceil(c / per - 1e-9), v) for c, v in used) + spare)


def _spare_pool_rows(fm, serve_on: dict) -> None:
    """spare-pool: an N+1 pool of several owned offers (model.spare_pool) keeps one of its systems
    free: sum_o slots_o <= acc (sum_o held(o,t) - u), over the offers' serving replicas."""
    for pool, u in sorted(fm.u.items()):
        if len(pool) != 2 or len(offers := fm.spare_pool_offers(pool)) < 2:
            continue
        per = fm.system_of(pool[0]).accelerators
        slots = [(opt.accelerator_slots, v) for oid in offers for opt, _, v in serve_on.get((oid, pool[1]), [])]
        fm.add("spare-pool", pool, affine(slots) <= per * (pulp.lpSum(fm.held(oid, pool[1]) for oid in offers) - u))


def trim_rentals(fm, values: dict[str, float]) -> tuple[dict[str, float], float]:
    """A solution with every hourly rental r[d,o,t] lowered to ceil(sum_i slots_i y / acc_o) (+ the
    spare), and the objective's cost that saves. Within the solver's gap the MILP may keep rented
    systems that hold no replica; lowering r keeps every row satisfied (the rental row still holds,
    the availability caps and budgets only loosen), so the trimmed solution is feasible and no costlier."""
    out, saved = dict(values), 0.0
    price = fm.rental_prices()
    for (dk, oid, t), rv in sorted(fm.r.items()):
        per = fm.system_of(oid).accelerators
        slots = sum(fm.options.serve[dk][i].accelerator_slots * round(values.get(v.name, 0.0))
                    for i, o, v in y_of(fm, dk, t) if o == oid)
        need = math.ceil(slots / per - 1e-6)
        if need and (dk, oid, t) in fm.u:
            need += 1  # the pool's N+1 spare
        held = round(values.get(rv.name, 0.0))
        if held > need:
            out[rv.name] = float(need)
            saved += price.get(rv.name, 0.0) * (held - need)
    return out, saved


def _edge_units(fm) -> dict[tuple, list]:
    """(offer, year) -> the edge-unit variables held then (units bought in earlier years still held)."""
    out: dict[tuple, list] = {}
    for (dk, i, oid, tau), ev in fm.e.items():
        for t in fm.years:
            if fm.active(oid, tau, t):
                out.setdefault((oid, t), []).append(ev)
    return out


def define_batch_shares(fm) -> None:
    """batch-share (cuts; tight models): a batch demand's runs on owned offer o, over its two or more
    options i there (x[d,i,o,t], shares of its runs), one of which spans several systems,
    rows.define_capacity_constraints' batch-fit averaged by the shares:
      sum_i ceil(acc_i / acc_o) x[d,i,o,t] <= held(o,t)
      sum_i acc_i x[d,i,o,t] + sum slots y <= acc_o held(o,t), over the serving every option of d
                                            on o must fit beside (turns.py), where there is some
    Every plan meets both: each option a run uses on o fits there at once (its batch-fit row, or
    x <= held for a run on one system with nothing beside), so held(o,t) covers the largest option
    used with the serving beside it, and the shares summing to at most 1 (the demand row), their
    average is no larger. The LP relaxation otherwise meets batch-fit with b = x: choose-go.yaml's
    pretraining held 0.53 of a 28-rack option and 0.46 of a 32-rack one on 16.1 GB200 NVL72 racks
    (LP bound $26.5M/yr, optimum $47.0M: CBC's root gap 43%, closed only by its tree in 4.8 s)."""
    if not fm.tight:
        return
    shares: dict[tuple, list] = {}
    for (dk, i, oid, t), xv in sorted(fm.x.items()):
        if (oid, t) in fm.held_terms:
            shares.setdefault((dk, oid, t), []).append((i, xv))
    shares = {(dk, oid, t): terms for (dk, oid, t), terms in shares.items() if len(terms) > 1
              and max(fm.options.batch[dk][i].accelerators for i, _ in terms) > fm.system_of(oid).accelerators}
    # (runs on one system each left out: 20 generated N+1 jobs had 120 such rows, none binding in the LP)
    serving: dict[tuple, list] = {}
    if shares:
        for oid, t, opt, d, v in pooling.serving_terms(fm):
            serving.setdefault((oid, t), []).append((opt.accelerator_slots, d.key, v))
    for (dk, oid, t), terms in sorted(shares.items()):
        per = fm.system_of(oid).accelerators
        runs = [fm.options.batch[dk][i].accelerators for i, _ in terms]
        fm.add("batch-share", (dk, oid, t), affine((math.ceil(a / per), xv) for a, (_, xv) in zip(runs, terms))
               <= fm.held(oid, t), cut=True)
        common = set.intersection(*(fm.turn_beside.get((dk, i, oid), set()) for i, _ in terms))
        beside = [(slots, v) for slots, key, v in serving.get((oid, t), []) if key in common]
        if beside:
            fm.add("batch-share-fit", (dk, oid, t),
                   affine([*((a, xv) for a, (_, xv) in zip(runs, terms)), *beside]) <= per * fm.held(oid, t), cut=True)


def define_availability_constraints(fm) -> None:
    """Systems of an offer in a year <= its cap: rentals across demands, pooled rentals, edge units,
    and an owned offer's held systems beside edge units of the same offer."""
    by_offer: dict[tuple, list] = {}
    for (dk, oid, t), rv in fm.r.items():
        by_offer.setdefault((oid, t), []).append(rv)
    for (oid, _, t), rv in fm.rp.items():
        by_offer.setdefault((oid, t), []).append(rv)
    edge = _edge_units(fm)
    for key, evs in edge.items():
        by_offer.setdefault(key, []).extend(evs)
        if key in fm.held_terms:
            by_offer[key].append(fm.held(*key))
    for (oid, t), vs in sorted(by_offer.items()):
        o = fm.offer(oid)
        cap = fm.edge_cap_of(o) if (oid, t) in edge else o.max_systems
        if cap is not None and len(vs) > 1:
            fm.add("availability", (oid, t), pulp.lpSum(vs) <= cap)


def define_budget_constraints(fm) -> None:
    for t in fm.years:
        for key, (cap, where) in sorted(year_caps(fm.scenario, t).items()):
            spent = fm.year_cost(t, budget_basis(fm.scenario)) if key == "usd" else fm.spend(t, key)
            shared = all(year_caps(fm.scenario, y).get(key, (None, None))[1] == where for y in fm.years)
            fm.add("budget", (key, t), spent - _elastic(fm, key, t, shared) <= cap)


def define_power_constraints(fm) -> None:
    cap = fm.scenario.site.power_cap_kw
    if cap is None:
        return
    for t in fm.years:
        load = pulp.lpSum(fm.system_of(oid).power_kw * fm.held(oid, t) for (oid, tt) in sorted(fm.held_terms)
                          if tt == t and fm.offer(oid).acquisition == "buy")
        fm.add("power", ("site", t), load - _elastic(fm, "power", t, True) <= cap)


def _elastic(fm, family: str, year: int, shared: bool = False):
    """A cap's slack in an elastic model: one a year, or, in a model built elastic="shared" (the
    diagnosis), one for every year a single field caps (`shared`: budget.usd_per_year, the site's
    power), keyed year 0, so the least relaxation is the smallest raise of that one field, not the
    least sum over the years."""
    if not fm.elastic:
        return 0
    key = (family, 0 if shared and fm.elastic == "shared" else year)
    return fm.slack[key] if key in fm.slack else fm.var(fm.slack, key, "Continuous", 0, None)


def _disaggregated_replicas(fm) -> list:
    """The integer replicas of disaggregated options (one-system splits and cross-system halves)."""
    return [v for _, _, opt, _, v in pooling.serving_terms(fm)
            if opt.half is not None or opt.basis_note.startswith(disagg.NOTE)]


def define_objective(fm) -> None:
    obj = fm.total_cost() + TIE_BREAK_USD * pulp.lpSum([*fm.p.values(), *fm.k.values(), *fm.r.values(),
                                                         *fm.rp.values(), *_disaggregated_replicas(fm)])
    if fm.unserved:
        weight = COVERAGE_WEIGHT * (1e3 if fm.elastic else 1)
        obj += pulp.lpSum(weight * fm.options.demands[dk].priority * v for (dk, _), v in fm.unserved.items())
    if fm.slack:
        obj += pulp.lpSum(ELASTIC_PENALTY["budget" if fam == "usd" else fam] * v for (fam, _), v in fm.slack.items())
    fm.prob.setObjective(obj)
