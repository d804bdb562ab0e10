"""Disaggregated serving across two system types as options: a prefill half on one system type and
a decode half on another, the KV cache sent over the network (physics.crossdisagg has the formulas).

Each half is an ordinary ServeOption on its own system (ServeOption.half says which half of which
pair): the decode half holds users (users_per_replica b, so the demand row counts it like any
replica); the prefill half holds none (users_per_replica 0) and admits P prompts per second; the
MILP's link row (milp/crossdisagg.py) makes a pair's prefill halves admit the prompts its decode
halves ask for. Capacity, rentals, N+1, power and budgets see two ordinary options.

Which pairs are offered (the physics must say the pair can win): for each ordered pair of the
demand's system types whose accelerators differ, share a vendor and have a scale-out network in the
catalog, and each (TP_p, TP_d), the yearly cost per user at each system's cheapest offer the demand
may use on one network, the cheapest network that has offers of both (data.colocation.network_of:
your site or one provider's region; the KV cache never crosses between two, and the MILP links the
halves per network) (c: USD per accelerator-year; rent x hours / accelerators; owned: fixed + busy
power x hours, per accelerator, as the MILP charges it):
    cost/user = c_d slots_d / b + c_p slots_p (L / P) / b     (L / P prefill replicas per decode replica)
A pair is offered when that beats the best single-system option of the demand at the same prices
(aggregated, or disaggregated inside one system), and the whole systems of both types the demand
would need alone (its users, or its pool's under policy.pool_jobs, in decode replicas, and the
prefill replicas they need) cost less than the whole systems of the cheapest single-system option:
a small demand that fills a part of one system of each type is not offered a pair (sharing those
systems with other jobs could redeem it; not searched). At most MAX_PAIRS pairs (systems and TPs),
cheapest per user first. Each half's basis_note names both systems and says by how much the pair
beats the best single-system and the best aggregated option at those prices; the MILP then prices
the whole fleet (whole systems, N+1, capacity shared with other jobs) and picks.
"""

from __future__ import annotations

import math

from planner.data.colocation import network_of
from planner.data.jobs import demands_of, hours_per_year
from planner.options.types import Half, ServeOption
from planner.physics import arch, costs, crossdisagg, serving

POWERS = (1, 2, 4, 8, 16, 32, 64)
MAX_PAIRS = 3
NOTE = "disaggregated across systems:"
"""How a cross-system half's basis_note starts."""


def network_prices(s, opts, d, system) -> dict[str, float]:
    """Network (data.colocation.network_of) -> the cheapest yearly cost there of one accelerator of
    `system` demand d may use."""
    out: dict[str, float] = {}
    hours = hours_per_year(d)
    for oid in opts.offers_for(d.key, system.id, pairs=True):
        o = opts.offers[oid]
        if costs.is_owned(o):
            fixed = sum(costs.owned_fixed_usd_per_year(o, system, s.site, s.policy.discount_rate,
                                                       s.horizon_years, s.kept).values())
            usd = fixed + costs.busy_usd_per_hour(o, system, s.site) * hours
        else:
            usd = o.price_usd_per_hour * hours
        usd /= system.accelerators
        net = network_of(o)
        out[net] = min(usd, out.get(net, usd))
    return out


def pair_per_user(prices_p: dict, prices_d: dict, slots_p: int, slots_d: int, ratio: float,
                  users: int) -> tuple[float, str] | None:
    """(USD per user-year, network) of a pair's cheapest network: both halves on offers of one
    network (network_prices of each system), ratio prefill replicas per decode replica of `users`;
    None where no network has offers of both (the KV cache never crosses between two)."""
    both = sorted(prices_p.keys() & prices_d.keys())
    return min(((prices_d[g] * slots_d + prices_p[g] * slots_p * ratio) / users, g) for g in both) if both else None


def _halves(m, cat, wl, sp, sd, min_tps, max_ttft, slots_of, cache, engine):
    """[(TP_p, slots_p, prefill half, TP_d, slots_d, decode half)] of one pair, every TP that fits."""
    ap, ad = cat.accelerators[sp.accelerator], cat.accelerators[sd.accelerator]
    slots_p = {t: slots_of(t, sp) for t in POWERS if t <= sp.scaleup_domain and arch.tp_splits(m, t)}
    slots_d = {t: slots_of(t, sd) for t in POWERS if t <= sd.scaleup_domain and arch.tp_splits(m, t)}
    out = []
    for tp_d in (t for t, slots in slots_d.items() if slots is not None):
        key = ("xdecode", m.id, ad.id, wl, tp_d, min_tps, engine)
        if key not in cache:
            cache[key] = crossdisagg.decode_half(m, ad, wl, tp_d, min_tps, engine=engine)
        dh = cache[key]
        if dh is None:
            continue
        for tp_p in (t for t, slots in slots_p.items() if slots is not None):
            kv = crossdisagg.kv_network_s(m, wl, sp, tp_p, sd, tp_d)
            key = ("xprefill", m.id, ap.id, wl, tp_p, max_ttft, kv, engine)
            if key not in cache:
                cache[key] = crossdisagg.prefill_half(m, ap, wl, tp_p, max_ttft, kv, engine=engine)
            ph = cache[key]
            if ph is not None:
                out.append((tp_p, slots_p[tp_p], ph, tp_d, slots_d[tp_d], dh))
    return out


def _linked(cat, systems: list[str], cache: dict) -> list[tuple[str, str]]:
    """The ordered pairs of these system types whose halves may be linked (crossdisagg.linked)."""
    key = ("xlinked", tuple(systems))
    if key not in cache:
        cache[key] = [(p_id, d_id) for p_id in systems for d_id in systems if crossdisagg.linked(
            cat.systems[p_id], cat.systems[d_id], cat.accelerators[cat.systems[p_id].accelerator],
            cat.accelerators[cat.systems[d_id].accelerator])]
    return cache[key]


def _pool_users(s, d, cache: dict) -> int:
    """The users the whole-system test sizes for: the demand's, or its pool's (policy.pool_jobs:
    the pool's parts share the halves' replicas)."""
    if d.pool is None:
        return d.users
    key = ("pool-users", d.pool)
    if key not in cache:
        cache[key] = sum(x.users for x in demands_of(s) if x.pool == d.pool)
    return cache[key]


def _whole(usd_per_accelerator: float, accelerators: float, system) -> float:
    """Yearly cost of the whole systems that hold `accelerators` (at the cheapest offer)."""
    return usd_per_accelerator * system.accelerators * math.ceil(accelerators / system.accelerators - 1e-9)


def _describe(o: ServeOption) -> str:
    if o.basis_note.startswith("disaggregated:"):
        return f"the best single-system option, {o.basis_note.split(' on one ')[0]} on one {o.system}"
    return f"the best aggregated option, TP{o.tp} PP{o.pp} on {o.system} with {o.users_per_replica} users a replica"


def options(s, cat, opts, d, job, m, found: list[ServeOption], slots_of, cache: dict,
            measured: bool = False) -> list[ServeOption]:
    """The halves of the pairs offered to demand d (see the module docstring); `found` is the
    demand's single-system options. None for batch and edge demands or where the user's
    measurements replace the physics (`measured`)."""
    if d.kind != "serve" or measured:
        return []
    engine = getattr(job, "engine", None)
    users = _pool_users(s, d, cache)
    systems = sorted({opts.offers[oid].system for oid in opts.eligible[d.key]})
    nets = {sid: network_prices(s, opts, d, cat.systems[sid]) for sid in systems}
    price = {sid: min(nets[sid].values(), default=None) for sid in systems}
    base = [(price[o.system] * o.accelerator_slots / o.users_per_replica, _describe(o),
             _whole(price[o.system], o.accelerator_slots * math.ceil(users / o.users_per_replica), cat.systems[o.system]))
            for o in found if o.half is None and o.users_per_replica >= 1 and price.get(o.system) is not None]
    best_single = min(base, default=None)
    best_aggregated = min((b for b in base if "aggregated option" in b[1]), default=None)
    alone = min((b[2] for b in base), default=math.inf)
    wl = d.workload
    pairs = []
    for p_id, d_id in _linked(cat, systems, cache):
        if price[p_id] is None or price[d_id] is None:
            continue
        sp, sd = cat.systems[p_id], cat.systems[d_id]
        key = ("xhalves", m.id, p_id, d_id, wl, d.min_tokens_per_s, d.max_ttft_s, engine)
        if key not in cache:  # alike for every demand of this model, workload and targets
            cache[key] = _halves(m, cat, wl, sp, sd, d.min_tokens_per_s, d.max_ttft_s, slots_of, cache, engine)
        for tp_p, slots_p, ph, tp_d, slots_d, dh in cache[key]:
            found_at = pair_per_user(nets[p_id], nets[d_id], slots_p, slots_d, dh.prompts_per_s / ph.prompts_per_s,
                                     dh.users)
            if found_at is None:
                break  # (no network holds both systems: no TP pair of them links)
            per_user, net = found_at
            if best_single is not None and not per_user < best_single[0] * (1 - 1e-9):
                continue  # the whole-system test below cannot change that
            n_d = math.ceil(users / dh.users)
            fleet = (_whole(nets[d_id][net], n_d * slots_d, sd)
                     + _whole(nets[p_id][net], math.ceil(n_d * dh.prompts_per_s / ph.prompts_per_s) * slots_p, sp))
            if best_single is None or fleet < alone * (1 - 1e-9):
                pairs.append((per_user, p_id, d_id, tp_p, tp_d, ph, dh, net))
    pairs.sort(key=lambda x: x[:5])
    out = []
    for per_user, p_id, d_id, tp_p, tp_d, ph, dh, net in pairs[:MAX_PAIRS]:
        out += _pair_options(m, cat, d, wl, p_id, d_id, tp_p, tp_d, ph, dh, per_user,
                             _than(per_user, best_single, best_aggregated), slots_of, engine, net)
    return out


def _than(per_user: float, best_single, best_aggregated) -> str:
    """How the pair compares with the best single-system and the best aggregated option, in words."""
    if best_single is None:
        return "no single-system option meets the targets"
    out = [f"{1 - per_user / b[0]:.0%} less than {b[1]} (${b[0]:,.0f})"
           for b in dict.fromkeys((best_single, best_aggregated)) if b is not None]
    return "; ".join(out)


def _pair_options(m, cat, d, wl, p_id, d_id, tp_p, tp_d, ph, dh, per_user, than, slots_of, engine, net: str):
    sp, sd = cat.systems[p_id], cat.systems[d_id]
    ratio = dh.prompts_per_s / ph.prompts_per_s
    note = (f"{NOTE} prefill on {p_id} TP{tp_p} ({ph.prompts_per_s:.3g} prompts/s a replica, utilisation "
            f"{ph.rho:.0%}), decode on {d_id} TP{tp_d} ({dh.users} users a replica), {ratio:.2f} prefill "
            f"replicas per decode replica, KV over the network {ph.kv_transfer_s * 1e3:.1f} ms a prompt, "
            f"both halves at one site; ${per_user:,.0f} per user-year at the cheapest offers there ({net}), {than}")
    out = []
    for role, system, tp, users, pps in (("prefill", sp, tp_p, 0, ph.prompts_per_s),
                                         ("decode", sd, tp_d, dh.users, dh.prompts_per_s)):
        acc = cat.accelerators[system.accelerator]
        est = serving.estimate(m, acc, wl, tp, 1, max(users, 1), engine=engine)
        half = Half(role, p_id, tp_p, d_id, tp_d, pps, ph.kv_transfer_s)
        out.append(ServeOption(d.key, system.id, acc.id, tp, 1, tp, slots_of(tp, system), users,
                               1.0 / dh.tpot_s, ph.ttft_s, est.memory_gb_per_accelerator, est.memory_gb_capacity,
                               est.weights_gb, est.kv_gb, f"{role}-half",
                               "compute" if role == "prefill" else est.regime,  # a prompt's prefill is matmuls
                               basis_note=note, half=half))
    return out
