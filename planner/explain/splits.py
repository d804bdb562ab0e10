"""When a serving job was offered disaggregated prefill/decode serving (inside one system,
physics.disagg, or across two system types, physics.crossdisagg) and the plan serves it aggregated,
one line on the job ("split_considered") says so and what the best split would have cost.

Both figures are yearly USD per user at each system's cheapest offer the demand may use
(options.crossdisagg.network_prices: rent x hours, or owned fixed + busy power, per accelerator; a
pair's two halves at one network's offers, pair_per_user), as the options compared them:
    aggregated or one-system split   c x accelerator slots / users a replica
    pair across two systems          (c_d slots_d + c_p slots_p L / P) / users a decode replica
                                     (L / P prefill replicas per decode replica)
    the plan's choice                its placements' configurations at the same prices, weighted by
                                     the users each serves
The MILP prices more than that (whole systems, N+1, capacity other jobs share, the offers the fleet
holds), which is why a split cheaper per user at these prices may still lose; the line says so.
Nothing is said when no split was offered, or when the plan chose one."""

from __future__ import annotations

from planner.options.crossdisagg import network_prices, pair_per_user
from planner.physics import disagg


def _is_split(o) -> bool:
    return o.half is not None or o.basis_note.startswith(disagg.NOTE)


def _chose_split(p: dict) -> bool:
    return "disaggregated" in p or str(p.get("basis_note", "")).startswith(disagg.NOTE)


def _best_split(options, price, nets) -> tuple[float, str] | None:
    """(USD per user-year, words) of the cheapest split offered (a pair's halves on one network:
    `nets` gives a system's prices per network, options.crossdisagg.network_prices)."""
    best = None
    prefill = {(o.half.prefill_system, o.half.prefill_tp, o.half.decode_system, o.half.decode_tp): o
               for o in options if o.half is not None and o.half.role == "prefill"}
    for o in options:
        if o.half is not None and o.half.role == "decode":
            h = o.half
            op = prefill.get((h.prefill_system, h.prefill_tp, h.decode_system, h.decode_tp))
            found = None if op is None else pair_per_user(
                nets(h.prefill_system), nets(h.decode_system), op.accelerator_slots, o.accelerator_slots,
                h.prompts_per_s / op.half.prompts_per_s, o.users_per_replica)
            if found is None:
                continue
            usd = found[0]
            words = (f"prefill on {h.prefill_system} TP{h.prefill_tp}, decode on {h.decode_system} TP{h.decode_tp} "
                     f"({o.users_per_replica:,} users a decode replica, {h.prompts_per_s / op.half.prompts_per_s:.2f} "
                     "prefill replicas each)")
        elif o.half is None and o.basis_note.startswith(disagg.NOTE) and price(o.system) is not None:
            usd = price(o.system) * o.accelerator_slots / o.users_per_replica
            pools = disagg.parse_note(o.basis_note)
            words = ((f"{pools[0]}x TP{pools[1]} prefill + {pools[2]}x TP{pools[3]} decode" if pools else
                      "a prefill/decode split") + f" on one {o.system} ({o.users_per_replica:,} users on "
                     f"{o.accelerators_per_replica} accelerators)")
        else:
            continue
        if best is None or usd < best[0] * (1 - 1e-9):
            best = (usd, words)
    return best


def _chosen(options, placements, price) -> float | None:
    """The plan's placements at the cheapest offers, weighted by the users each serves."""
    total = users = 0.0
    for p in placements:
        match = [o for o in options if not _is_split(o) and o.system == p["system"]
                 and o.tp == p["tensor_parallel"] and o.pp == p["pipeline_parallel"]
                 and o.users_per_replica == p["users_per_replica"]]
        if not match or price(p["system"]) is None or not p.get("users_served"):
            return None
        total += price(p["system"]) * match[0].accelerator_slots / match[0].users_per_replica * p["users_served"]
        users += p["users_served"]
    return total / users if users else None


def line(job: dict, s, cat, opts) -> str | None:
    """The job's one line, or None (no split offered, the plan chose one, or nothing to compare)."""
    parts = []
    for dk in sorted({p["part"] for p in job["placements"]}):
        options, d = opts.serve.get(dk, []), opts.demands.get(dk)
        placed = [p for p in job["placements"] if p["part"] == dk]
        if d is None or d.kind != "serve" or not any(_is_split(o) for o in options) or any(map(_chose_split, placed)):
            continue
        cache: dict = {}

        def nets(sid, d=d, cache=cache):
            if sid not in cache:
                cache[sid] = network_prices(s, opts, d, cat.systems[sid])
            return cache[sid]

        def price(sid):
            return min(nets(sid).values(), default=None)

        best, mine = _best_split(options, price, nets), _chosen(options, placed, price)
        if best is None or mine is None:
            continue
        where = f"for '{dk}': " if dk != job["name"] else ""
        tail = ("; cheaper per user, but the solver, pricing the whole fleet (whole systems, N+1, capacity shared "
                "with other jobs), chose otherwise" if best[0] < mine else "")
        parts.append(f"{where}the best split, {best[1]}, costs ${best[0]:,.0f} per user-year at the cheapest offers "
                     f"against ${mine:,.0f} for the plan's choice (its accelerators alone, busy, at the cheapest "
                     f"offers: not the plan's all-in unit cost){tail}")
    if not parts:
        return None
    return "disaggregated prefill/decode was considered: " + "; ".join(parts)


def note_all(plan: dict, s, cat, opts) -> None:
    """Add "split_considered" to each serving job of the plan, in place, where `line` has one."""
    for job in plan["jobs"]:
        if job["stage"] in ("serve",) and (text := line(job, s, cat, opts)):
            job["split_considered"] = text
