"""Fleet complexity (policy.cost_per_system_type_usd_year, default 0): every distinct system type a
plan uses in a year costs that rate (images, drivers, spares, runbooks per type), an opex component
'complexity' of the year.

  z[s,t] bin   system type s is in year t's fleet
  held(o,t)                <= cap_o z[s,t]   owned offer o of type s (bought or reserved, all purchase years)
  r[d,o,t], R[o,h,t]       <= cap_o z[s,t]   hourly rentals, per demand or shared by a pool
  x[d,i,o,t]               <= z[s,t]         batch shares on rented offers (a run rents its systems)
  edge units of o in use   <= cap_o z[s,t]   devices bought for edge jobs
  cost[t, complexity]      += rate z[s,t]

cap_o is the variable's own upper bound (the offer's max_systems, else policy.max_systems_per_offer),
so no row is looser than the variables already are. With the rate at 0 the family adds nothing: the
model, and the plans, are those without it.

The readout spreads each type's cost over that type's offers in the year's fleet by their systems
(spread), so the fleet rows, and the jobs' accelerator-hour shares of them, still add up to the total.
"""

from __future__ import annotations

import pulp

COMPONENT = "complexity"


def rate(fm) -> float:
    return fm.scenario.policy.cost_per_system_type_usd_year


def _links(fm) -> list[tuple[str, tuple, object, float]]:
    """(system type, row entity, expression, its upper bound) for every variable that puts systems
    of a type into a year's fleet."""
    out = []
    for (oid, t) in sorted(fm.held_terms):
        out.append((fm.system_of(oid).id, ("held", oid, t), fm.held(oid, t), fm.cap_of(fm.offer(oid))))
    for (dk, oid, t), v in sorted(fm.r.items()):
        out.append((fm.system_of(oid).id, ("rent", dk, oid, t), v, v.upBound or fm.cap_of(fm.offer(oid))))
    for (oid, h, t), v in sorted(fm.rp.items()):
        out.append((fm.system_of(oid).id, ("pool-rent", oid, h, t), v, v.upBound or fm.cap_of(fm.offer(oid))))
    for (dk, i, oid, t), v in sorted(fm.x.items()):
        if (oid, t) not in fm.held_terms:
            out.append((fm.system_of(oid).id, ("batch", dk, i, oid, t), v, 1))
    edge: dict[tuple, list] = {}
    for (dk, i, oid, tau), v in sorted(fm.e.items()):
        for t in fm.years:
            if fm.active(oid, tau, t):
                edge.setdefault((oid, t), []).append(v)
    for (oid, t), vs in sorted(edge.items()):
        out.append((fm.system_of(oid).id, ("edge", oid, t), pulp.lpSum(vs), fm.cap_of(fm.offer(oid))))
    return out


def define_complexity(fm) -> None:
    """z[s,t] per system type and year, linked to the variables that hold systems of that type, each
    costing the rate in year t (see the module docstring). Nothing when the rate is 0."""
    usd = rate(fm)
    if not usd:
        return
    for sid, entity, expr, cap in _links(fm):
        t = entity[-1]
        z = fm.z.get((sid, t))
        if z is None:
            z = fm.var(fm.z, (sid, t), "Binary")
            fm.cost(t, COMPONENT, usd, z, None)
        fm.add("system-type", entity, expr <= cap * z)


def trim_types(fm, values: dict[str, float], held: dict[int, dict[str, int]]) -> tuple[dict[str, float], float]:
    """A solution with z[s,t] = 0 where year t's fleet (held: year -> offer -> systems) holds no system
    of type s (within the solver's gap a z may stay at 1 over nothing), and the objective's cost that
    saves."""
    out, saved = dict(values), 0.0
    for (sid, t), z in sorted(fm.z.items()):
        used = any(n > 0 and fm.system_of(oid).id == sid for oid, n in held.get(t, {}).items())
        if not used and round(values.get(z.name, 0.0)) > 0:
            out[z.name] = 0.0
            saved += rate(fm) * (fm.discount(t) if fm.npv else 1.0)
    return out, saved


def spread(fm, values: dict[str, float], t: int, held: dict[str, int]) -> dict[str, float]:
    """Year t's complexity cost by offer: each type in the fleet (z[s,t] = 1) costs the rate, shared
    by that type's offers in proportion to the systems they hold (held: offer -> systems)."""
    out: dict[str, float] = {}
    for (sid, tt), z in sorted(fm.z.items()):
        if tt != t or round(values.get(z.name, 0.0)) <= 0:
            continue
        mine = {oid: n for oid, n in held.items() if n > 0 and fm.system_of(oid).id == sid}
        total = sum(mine.values())
        for oid, n in mine.items():
            out[oid] = out.get(oid, 0.0) + rate(fm) * n / total
    return out


def types_in(fm, values: dict[str, float], t: int) -> int:
    """System types in year t's fleet (z[s,t] = 1)."""
    return sum(1 for (_, tt), z in fm.z.items() if tt == t and round(values.get(z.name, 0.0)) > 0)
