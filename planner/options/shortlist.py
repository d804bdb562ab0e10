"""Which (option, offer) pairs of each demand the MILP sees: every pair for small scenarios, a
documented shortlist for large ones.

Each pair is priced as if it met its whole demand alone (`pair_cost`, USD per year; fixed_o is an
owned system's yearly fixed cost as the MILP's objective charges it, ops and resale at the horizon
included: physics/costs.py owned_fixed_usd_per_year):
  serving, rented by the hour   ceil(ceil(users / users_i) x slots_i / per_o) systems x price_o x hours_d
  serving, owned (buy/reserved) users / users_i x slots_i accelerators x (fixed_o / per_o + busy_o x hours_d)
                                (fractional: an owned box is shared, so its leftover slots are not waste)
  batch, rented                 systems per run x run hours x price_o x runs per year
  batch, owned                  accelerator-hours per year x (fixed_o / (per_o x 8760) + busy_o)

Exact reduction, always: a batch demand's rented runs share nothing with other demands (no
capacity, caps apply per run), so only its cheapest rented pair can be chosen; the rest are dropped
(an RL trainer that colocates: its cheapest at each place, data/colocation.py). The parts of such an
RL job keep every pair through the heuristic below: the other part's place decides theirs.

Heuristic, only above PRUNE_ABOVE candidate pairs (it keeps a 200-job plan solvable in seconds); a
plan built on a shortlist is never called optimal unless the full model's bound proves it
(milp/prune.py adds the pairs the full model's LP relaxation uses, and for the screened search each
demand's pairs nearest to entering that LP by reduced cost, and measures the gap against it):
per serving demand keep, for each half of a replica split across two system types
(options/crossdisagg.py), its cheapest offer of each acquisition mode and its cheapest uncapped
rental (the halves are priced only together), and of the other options the cheapest pair of each
acquisition mode, the cheapest rental with no availability cap (so caps cannot make the shortlist
infeasible), then the cheapest others while they cost at most (1 + MARGIN) x the best, up to KEEP
pairs. Owned offers kept by any serving demand
form the shared pool; batch runs keep every owned pair on the pool (fine-tuning in idle
hours of boxes bought for serving) and, elsewhere, their KEEP_BATCH_OWNED cheapest owned pairs whose
standalone cost (whole systems bought for these runs alone) is within MARGIN of renting. A plan built
on a shortlist reports how many pairs were left out (solver.pairs_pruned); the choice it misses is
one whose standalone cost is more than MARGIN above the best and that only sharing would redeem.
"""

from __future__ import annotations

import math

from planner.data.colocation import colocated
from planner.data.constants import HOURS_PER_YEAR
from planner.data.jobs import hours_per_year
from planner.options.colocation import place
from planner.options.types import Options
from planner.physics import costs

PRUNE_ABOVE = 3000
KEEP = 10
MARGIN = 0.5
KEEP_BATCH_OWNED = 3

Pair = tuple[int, str]  # (option index, offer id)


def pair_cost(s, cat, opts: Options, dk: str, i: int, oid: str) -> float:
    """Yearly cost of meeting demand dk alone with option i on offer oid (module docstring)."""
    d, o = opts.demands[dk], opts.offers[oid]
    system = cat.systems[o.system]
    per = system.accelerators
    owned = costs.is_owned(o)
    if owned:
        fixed = _fixed(s, o, system)
        busy = costs.busy_usd_per_hour(o, system, s.site)
    if d.kind == "serve":
        opt = opts.serve[dk][i]
        hours = hours_per_year(d)
        if owned:
            accs = d.users / max(opt.users_per_replica, 1) * opt.accelerator_slots  # (a prefill half: 0 users)
            return accs * (fixed + busy * hours) / per
        reps = math.ceil(d.users / max(opt.users_per_replica, 1))
        return math.ceil(reps * opt.accelerator_slots / per - 1e-9) * o.price_usd_per_hour * hours
    opt = opts.batch[dk][i]
    run_h = costs.run_hours(opt.hours_per_run, o.acquisition)
    if owned:
        return opt.accelerators * run_h * d.runs_per_year * (fixed / HOURS_PER_YEAR + busy) / per
    systems = max(1, math.ceil(opt.accelerators / per))
    return systems * run_h * o.price_usd_per_hour * d.runs_per_year


def _fixed(s, o, system) -> float:
    """Yearly fixed cost of one owned system as the fleet MILP charges it (milp/fleet.py
    define_owned_variables): capital less the resale at the end of a horizon shorter than the useful
    life, support, ops, hosting and idle power; or the reserved commitment."""
    return sum(costs.owned_fixed_usd_per_year(o, system, s.site, s.policy.discount_rate, s.horizon_years, s.kept).values())


def select(s, cat, opts: Options, serve: dict[str, list[Pair]], batch: dict[str, list[Pair]],
           keep: dict[str, set[Pair]] | None = None, prune: bool = True
           ) -> tuple[dict[str, list[Pair]], dict[str, list[Pair]], int]:
    """The pairs the MILP instantiates, and how many candidates were left out by the heuristic
    (prune=False: none; keep: pairs the shortlist keeps whatever their rank)."""
    owned = {oid: costs.is_owned(o) for oid, o in opts.offers.items()}
    together = {dk for parts in colocated(s).values() for dk in parts}
    batch = {dk: _cheapest_rental_only(s, cat, opts, dk, pairs, owned, dk in together) for dk, pairs in batch.items()}
    total = sum(map(len, serve.values())) + sum(map(len, batch.values()))
    if total <= PRUNE_ABOVE or not prune:
        return serve, batch, 0
    keep = dict(keep or {})
    for dk in together:  # an RL part that colocates keeps every pair: the other part's place decides
        keep[dk] = set(serve.get(dk, [])) | set(batch.get(dk, []))
    kept_serve = {dk: _with(_shortlist_serve(s, cat, opts, dk, pairs, owned), pairs, keep.get(dk))
                  for dk, pairs in serve.items()}
    pool = {oid for pairs in kept_serve.values() for _, oid in pairs if owned[oid]}
    kept_batch = {dk: _with(_shortlist_batch(s, cat, opts, dk, pairs, owned, pool), pairs, keep.get(dk))
                  for dk, pairs in batch.items()}
    kept = sum(map(len, kept_serve.values())) + sum(map(len, kept_batch.values()))
    return kept_serve, kept_batch, total - kept


def _with(kept: list[Pair], pairs: list[Pair], extra: set[Pair] | None) -> list[Pair]:
    """The shortlist plus the candidate pairs in `extra`, in the candidates' order."""
    if not extra:
        return kept
    mine = set(kept) | (set(pairs) & extra)
    return [p for p in pairs if p in mine]


def _ranked(s, cat, opts, dk, pairs):
    return sorted(pairs, key=lambda p: (pair_cost(s, cat, opts, dk, *p), p[1], p[0]))


def _cheapest_rental_only(s, cat, opts, dk, pairs, owned, placed: bool = False) -> list[Pair]:
    """A batch demand's owned pairs and its cheapest rented one; placed (an RL trainer that
    colocates, options/colocation.py): its cheapest rented one at each place, where the rollouts
    decide which place is used."""
    rented = [p for p in pairs if not owned[p[1]]]
    if len(rented) <= 1:
        return pairs
    best: dict = {}
    for p in _ranked(s, cat, opts, dk, rented):
        best.setdefault(place(opts, cat, p[1]) if placed else None, p)
    return [p for p in pairs if owned[p[1]] or p in best.values()]


def _per_mode(s, cat, opts, dk, pairs, owned) -> list[Pair]:
    """The cheapest pair of each acquisition mode and the cheapest rental with no availability cap."""
    ranked = _ranked(s, cat, opts, dk, pairs)
    keep: list[Pair] = []
    seen_modes = set()
    for p in ranked:
        o = opts.offers[p[1]]
        if o.acquisition not in seen_modes:
            seen_modes.add(o.acquisition)
            keep.append(p)
    uncapped = next((p for p in ranked if not owned[p[1]] and opts.offers[p[1]].max_systems is None), None)
    if uncapped is not None and uncapped not in keep:
        keep.append(uncapped)
    return keep


def _shortlist_serve(s, cat, opts, dk, pairs, owned) -> list[Pair]:
    halves = [p for p in pairs if opts.serve[dk][p[0]].half is not None]
    if halves:  # a half of a pair across two systems: its cheapest offer of each acquisition mode
        rest = [p for p in pairs if opts.serve[dk][p[0]].half is None]
        kept = [p for i in sorted({i for i, _ in halves})
                for p in _per_mode(s, cat, opts, dk, [h for h in halves if h[0] == i], owned)]
        return sorted(_shortlist_serve(s, cat, opts, dk, rest, owned) + kept)
    if len(pairs) <= KEEP:
        return pairs
    ranked = _ranked(s, cat, opts, dk, pairs)
    keep = _per_mode(s, cat, opts, dk, ranked, owned)
    limit = (1 + MARGIN) * pair_cost(s, cat, opts, dk, *ranked[0])
    for p in ranked:
        if len(keep) >= KEEP or pair_cost(s, cat, opts, dk, *p) > limit:
            break
        if p not in keep:
            keep.append(p)
    return sorted(keep, key=lambda p: (p[0], p[1]))


def standalone_owned_batch_cost(s, cat, opts, dk: str, i: int, oid: str) -> float:
    """Yearly cost of owning enough systems of oid for demand dk's runs alone: whole systems for
    one run at once and for the year's accelerator-hours, plus busy power."""
    d, o, opt = opts.demands[dk], opts.offers[oid], opts.batch[dk][i]
    system = cat.systems[o.system]
    per = system.accelerators
    acc_hours = opt.accelerators * opt.hours_per_run * d.runs_per_year
    n = max(math.ceil(opt.accelerators / per), math.ceil(acc_hours / (per * HOURS_PER_YEAR) - 1e-9))
    fixed = _fixed(s, o, system)
    return n * fixed + acc_hours / per * costs.busy_usd_per_hour(o, system, s.site)


def _shortlist_batch(s, cat, opts, dk, pairs, owned, pool) -> list[Pair]:
    rented = [p for p in pairs if not owned[p[1]]]
    bar = min((pair_cost(s, cat, opts, dk, *p) for p in rented), default=math.inf) * (1 + MARGIN)
    own = _ranked(s, cat, opts, dk, [p for p in pairs if owned[p[1]]])
    alone = [p for p in own if standalone_owned_batch_cost(s, cat, opts, dk, *p) <= bar]
    shared = {p for p in own if p[1] in pool}
    keep = shared | set(alone[:KEEP_BATCH_OWNED]) | set(rented)
    if not keep:
        keep = set(own[:KEEP_BATCH_OWNED])
    return sorted(keep, key=lambda p: (p[0], p[1]))
