"""Shared replicas (the plan's `pools`, policy.pool_jobs): each pool row re-derived from the
scenario: its parts may share (data.jobs.pools_of), their placements report the same replicas
and loads, the loads fit the replicas (sum of replica_load <= replicas), and the replicas enter
the capacity, rental, cost and usage ledgers once (a rented pool's systems are shared by every
pool of that offer running the same hours a day)."""

from __future__ import annotations

from planner.data.catalog import Catalog
from planner.data.jobs import demands_of_job, hours_per_year, pools_of
from planner.data.scenario import Scenario
from planner.verify.common import Ledger, Verification, owned, slots

SHARED = "(pooled)"


def _half(row: dict) -> tuple | None:
    """Which half of which pair across two system types a placement or pool row is (None: aggregated)."""
    h = row.get("disaggregated")
    return None if not h else (h["role"], h["prefill_system"], h["prefill_tensor_parallel"],
                               h["decode_system"], h["decode_tensor_parallel"])


def check_pools(plan: dict, s: Scenario, cat: Catalog, v: Verification, ledger: Ledger) -> None:
    rows = plan.get("pools") or []
    pools = pools_of(s)
    parts = {d.key: d for j in s.jobs for d in demands_of_job(j)}
    placed = {}
    for pj in plan["jobs"]:
        for p in pj["placements"]:
            if "pool" in p:
                key = (p["pool"], p["offer"], p["tensor_parallel"], p["pipeline_parallel"], _half(p))
                placed.setdefault(key, {})[p["part"]] = p
    seen = set()
    for row in rows:
        key = (row["pool"], row["offer"], row["tensor_parallel"], row["pipeline_parallel"], _half(row))
        where = f"pool '{row['pool']}' on {row['replicas']}x {row['offer']} TP{key[2]} PP{key[3]}"
        if not v.check("plan", key not in seen, f"{where} is listed twice"):
            continue
        seen.add(key)
        o = cat.offers.get(row["offer"])
        if not v.check("catalog", o is not None and o.system == row["system"] and o.system in cat.systems,
                       f"{where}: the offer does not match the catalog"):
            continue
        system = cat.systems[o.system]
        members = placed.get(key, {})
        v.check("plan", set(members) == set(row["load"]),
                f"{where}: shared by {sorted(row['load'])}, placements name {sorted(members)}")
        v.check("policy", all(pools.get(dk) == row["pool"] for dk in row["load"]),
                f"{where}: {sorted(dk for dk in row['load'] if pools.get(dk) != row['pool'])} may not share "
                "these replicas (another model, precision, engine or hours a day, or policy.pool_jobs false)")
        v.check("plan", all(members[dk]["replicas"] == row["replicas"] and
                            abs(members[dk]["replica_load"] - row["load"][dk]) <= 1e-4
                            for dk in members if dk in row["load"]),
                f"{where}: placements report other replica counts or loads than the pool")
        load = sum(row["load"].values())
        v.check("capacity", load <= row["replicas"] * (1 + 1e-6) + 1e-4 * len(row["load"]),
                f"{where}: its parts' load is {load:.4f} replicas, more than the {row['replicas']} held")
        slot = slots(row["tensor_parallel"] * row["pipeline_parallel"], system.accelerators)
        if not v.check("parallelism", slot is not None, f"{where}: a replica does not tile {system.id}"):
            continue
        some = parts.get(next(iter(row["load"]), ""))
        if some is None:
            continue
        hours = hours_per_year(some)
        reps = row["replicas"]
        for dk, x in row["load"].items():
            if load > 0:
                ledger.usage[o.id][dk] += reps * slot * hours * x / load
        if owned(o):
            ledger.serve_slots[o.id] += reps * slot
            ledger.slot_hours[o.id] += reps * slot * hours
            ledger.serve_parts[o.id].append((some.job, some.hours_per_day, reps * slot))
        else:
            ledger.rent_slots[o.id][(SHARED, some.hours_per_day)] += reps * slot
            ledger.rent_hours[o.id][(SHARED, some.hours_per_day)] = hours
        ledger.uses[o.id].add("serve")
    v.check("plan", set(placed) <= seen, f"placements name pools missing from the plan's pools: "
                                         f"{sorted(set(placed) - seen)}")
