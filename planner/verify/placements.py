"""Each placement re-derived from the physics: serving (fit, speed, TTFT, supply with N+1), batch
runs (fit, deadline, shares) and edge units (device kind, speed, power)."""

from __future__ import annotations

import dataclasses
import math

from planner.data.constants import HOURS_PER_YEAR
from planner.data.catalog import Catalog, Offer, is_held
from planner.data.jobs import Demand, edge_workload, hours_per_year
from planner.data.scenario import Scenario
from planner.physics import arch, costs, disagg, moe, serving, training
from planner.physics.calibration import default as calibration
from planner.verify.common import (
    EDGE_KINDS,
    TIGHT,
    Verification,
    close,
    offer_problem,
    owned,
    slots,
)
from planner.verify import crossdisagg as cross
from planner.verify.measured import check_basis


def _offer_of(p: dict, cat: Catalog, v: Verification, kind: str) -> tuple | None:
    o = cat.offers.get(p["offer"])
    if not v.check("catalog", o is not None and o.system == p["system"] and o.system in cat.systems
                   and cat.systems[o.system].accelerator == p["accelerator"],
                   f"placement on '{p['offer']}' ({p['system']}, {p['accelerator']}) does not match the catalog"):
        return None
    v.check("policy", p["acquisition"] == o.acquisition, f"'{o.id}' is {o.acquisition}, reported {p['acquisition']}")
    system = cat.systems[o.system]
    return o, system, cat.accelerators[system.accelerator]


def _site_ok(o: Offer, system, s: Scenario) -> bool:
    return not (o.acquisition == "buy" and s.site.kind == "datacenter" and (
        system.kind == "edge" or system.kind == "workstation" and not is_held(o)))


def check_serve(part: Demand, job, placed, short, s, cat, v, ledger) -> None:
    m = cat.models[job.model]
    cap_batch = calibration().max_batch
    supply = 0
    links: dict = {}
    for p in placed:
        got = _offer_of(p, cat, v, "serve")
        if got is None:
            continue
        o, system, acc = got
        where = f"'{part.key}' on {p['replicas']}x {p['offer']} TP{p['tensor_parallel']} PP{p['pipeline_parallel']}"
        v.check("policy", not offer_problem(o, s, cat), f"{where}: {offer_problem(o, s, cat)}")
        v.check("policy", _site_ok(o, system, s), f"{where}: a bought {system.kind} at a datacenter site")
        v.check("policy", o.acquisition != "spot" or (s.policy.spot_for_serving and not part.latency_critical),
                f"{where}: spot capacity serving without policy.spot_for_serving")
        v.check("policy", o.tier != "marketplace" or s.policy.provider_tiers is not None
                or not (part.latency_critical or s.policy.redundancy == "n+1"),
                f"{where}: marketplace capacity serving a latency-critical or n+1 job")
        tp, pp, reps, upr = p["tensor_parallel"], p["pipeline_parallel"], p["replicas"], p["users_per_replica"]
        pools = disagg.parse_note(p.get("basis_note", ""))  # (n_p, TP_p, n_d, TP_d): prefill + decode pools
        replica = pools[0] * pools[1] + pools[2] * pools[3] if pools else tp * pp
        v.check("parallelism", tp <= system.scaleup_domain and replica == p["accelerators_per_replica"],
                f"{where}: TP{tp} exceeds the scale-up domain {system.scaleup_domain} or TPxPP != "
                f"{p['accelerators_per_replica']}")
        ep = str(p.get("basis_note", "")).startswith(moe.NOTE)  # (tensor_parallel holds the EP degree)
        v.check("parallelism", ep or all(arch.tp_splits(m, t) for t in ((pools[1], pools[3]) if pools else (tp,))),
                f"{where}: TP does not split {m.id}'s {m.attention_heads} attention heads and {m.kv_heads} KV heads evenly")
        slot = slots(replica, system.accelerators)
        half = p.get("disaggregated")
        if not v.check("parallelism", slot is not None and reps >= 1 and (upr >= 1 or half is not None),
                       f"{where}: a replica of {replica} does not tile {system.accelerators}-accelerator systems"):
            continue
        wl = part.workload
        if str(p.get("basis_note", "")).startswith(moe.NOTE):  # EP with data-parallel attention
            wl = dataclasses.replace(wl, attention_dp=True)
        fit = serving.max_batch_by_memory(m, acc, wl, tp, pp)
        est = serving.estimate(m, acc, wl, tp, pp, upr, engine=getattr(job, "engine", None))
        if pools:  # disaggregated: the unit's users, speed and TTFT (physics.disagg.unit)
            n_p, tp_p, n_d, tp_d = pools
            u = disagg.unit(m, acc, wl, tp_p, n_p, tp_d, n_d, part.min_tokens_per_s, engine=getattr(job, "engine", None))
            fit = u.users if u is not None and tp == tp_d else 0
            est = dataclasses.replace(est, tokens_per_s_per_user=u.tokens_per_s_per_user if u else 0.0,
                                      ttft_ms=u.ttft_s * 1e3 if u else float("inf"))
        if half is not None:  # one half of a pair across two system types (physics.crossdisagg)
            fit, tps, ttft = cross.check_half(p, part, job, m, cat, v, where, links)
            est = dataclasses.replace(est, tokens_per_s_per_user=tps, ttft_ms=ttft * 1e3)
        basis = None if pools or half is not None else check_basis(p, part, m, system, s, v, where)
        if basis is not None:  # measured: speed and TTFT from the same rows; memory where the physics fits
            v.check("memory", fit < 1 or upr <= fit, f"{where}: {upr} users per replica, memory holds {fit}")
            est = dataclasses.replace(est, tokens_per_s_per_user=1000.0 / basis[0],
                                      ttft_ms=est.ttft_ms if basis[1] is None else basis[1])
        else:
            engine_cap = cap_batch * (tp if wl.attention_dp and m.is_moe and tp > 1 else 1) * (pools[2] if pools else 1)
            v.check("memory", upr <= fit and upr <= engine_cap,
                    f"{where}: {upr} users per replica, memory holds {fit} (engine cap {engine_cap})")
        v.check("latency", est.tokens_per_s_per_user >= part.min_tokens_per_s * (1 - TIGHT),
                f"{where}: {est.tokens_per_s_per_user:.2f} tok/s per user, target {part.min_tokens_per_s:g}")
        v.check("latency", close(est.tokens_per_s_per_user, p["tokens_per_s_per_user"], 0.01, 0.01),
                f"{where}: reports {p['tokens_per_s_per_user']} tok/s per user, physics gives "
                f"{est.tokens_per_s_per_user:.2f}")
        v.check("latency", p["ttft_s"] is not None and close(p["ttft_s"], est.ttft_ms / 1e3, 0.01, 0.0015),
                f"{where}: reports the first token after {p['ttft_s']:.4g} s, physics gives {est.ttft_ms / 1e3:.3f} s")
        if part.max_ttft_s is not None:
            v.check("latency", est.ttft_ms / 1e3 <= part.max_ttft_s * (1 + TIGHT),
                    f"{where}: first token after {est.ttft_ms / 1e3:.3f} s, limit {part.max_ttft_s:g} s")
        if "pool" in p:  # shared replicas: the load it puts on them; the pool row holds them (verify/pools.py)
            supply += p["replica_load"] * upr
            continue
        supply += reps * upr
        hours = hours_per_year(part)
        ledger.usage[o.id][part.key] += reps * slot * hours
        if owned(o):
            ledger.serve_slots[o.id] += reps * slot
            ledger.slot_hours[o.id] += reps * slot * hours
            ledger.serve_parts[o.id].append((part.job, part.hours_per_day, reps * slot))
        else:
            ledger.rent_slots[o.id][part.key] += reps * slot
            ledger.rent_hours[o.id][part.key] = hours
        ledger.uses[o.id].add("serve")
    cross.check_links(part, links, v)
    own = [p for p in placed if "pool" not in p and p.get("users_served") is not None]
    held = sum(p["replicas"] * p["users_per_replica"] for p in own)
    left = min(held, part.users * (1 - short))  # the users its own replicas serve, whole (readout.share_users)
    v.check("demand", not own or abs(sum(p["users_served"] for p in own) - left) <= 1 + 1e-6 * part.users,
            f"'{part.key}': its own replicas report {sum(p['users_served'] for p in own)} users served; they "
            f"hold {held} and the demand left to them is {part.users * (1 - short):.1f}")
    need = part.users * (1 - short)
    v.check("demand", supply >= need - 1e-6 * part.users - sum(5e-5 * p["users_per_replica"] for p in placed if "pool" in p),
            f"'{part.key}' serves {supply} users of {part.users}" + (f" ({short:.1%} unserved)" if short else ""))


def check_batch(part: Demand, job, placed, short, s, cat, v, ledger) -> None:
    m = cat.models[job.model]
    r = part.train
    method, tokens, seq, rank, precision = r.method, r.tokens, r.sequence_tokens, r.lora_rank, r.precision
    share_sum = 0.0
    for p in placed:
        got = _offer_of(p, cat, v, "batch")
        if got is None:
            continue
        o, system, acc = got
        n = p["accelerators_per_replica"]
        where = f"'{part.key}' on {n}x {acc.id} ({p['offer']})"
        v.check("policy", not offer_problem(o, s, cat), f"{where}: {offer_problem(o, s, cat)}")
        v.check("policy", _site_ok(o, system, s), f"{where}: a bought {system.kind} at a datacenter site")
        if not v.check("parallelism", slots(n, system.accelerators) is not None,
                       f"{where}: {n} accelerators do not tile {system.accelerators}-accelerator systems"):
            continue
        est = training.estimate(m, acc, method, tokens, n, seq, rank, precision,
                                scaleout_gbps=system.scaleout_gbps, forward_passes=r.forward_passes)
        hours = costs.run_hours(est.hours, o.acquisition)  # spot: restarts after reclaims
        v.check("memory", est.fits, f"{where}: {est.reason}")
        v.check("deadline", hours <= part.max_hours_per_run * (1 + TIGHT),
                f"{where}: {hours:,.1f} h per run, deadline {part.max_hours_per_run:g} h")
        v.check("deadline", close(hours, p["hours_per_run"], 0.01, 0.001),
                f"{where}: reports {p['hours_per_run']} h per run, physics gives {hours:.3f}")
        share = p["share_of_runs"]
        share_sum += share
        # the share is stated to 4 places, the runs to 3 (checked against each other in numbers.py):
        # re-derive from the more precise of the two, and allow what its rounding hides
        hidden = min(5e-5 * part.runs_per_year, 5e-4)
        stated = p.get("runs_per_year")
        runs = stated if isinstance(stated, (int, float)) and hidden == 5e-4 else share * part.runs_per_year
        ledger.usage[o.id][part.key] += n * hours * runs  # spot: restart hours hold the accelerators too
        per_run = max(1, math.ceil(n / system.accelerators))
        if owned(o):
            ledger.batch_fit[o.id].append(n)
            ledger.batch_runs[o.id].append((part.job, n, hours, part.max_hours_per_run, part.runs_per_year))
            ledger.slot_hours[o.id] += n * hours * runs
            ledger.hours_slack[o.id] += n * hours * part.runs_per_year * 5e-5  # share rounded to 4 places
        else:
            ledger.batch_fit[o.id].append(per_run * system.accelerators)
            ledger.rent_usd[o.id] += per_run * hours * o.price_usd_per_hour * runs
            ledger.rent_batch[o.id][part.key] += per_run * system.accelerators * hours * runs
            ledger.rent_slack[o.id] += per_run * hours * o.price_usd_per_hour * hidden
        ledger.uses[o.id].add("batch")
    v.check("demand", close(share_sum + short, 1.0, 0.0, 2e-3),
            f"'{part.key}': placements cover {share_sum:.4f} of its runs" + (f" (+{short:.1%} unserved)" if short else ""))


def check_edge(part: Demand, job, placed, short, s, cat, v, ledger) -> None:
    m = cat.models[job.model]
    wl = edge_workload(job)
    units = 0
    for p in placed:
        got = _offer_of(p, cat, v, "edge")
        if got is None:
            continue
        o, system, acc = got
        where = f"'{part.key}' on {p['offer']}"
        v.check("policy", not offer_problem(o, s, cat) and o.acquisition == "buy",
                f"{where}: {offer_problem(o, s, cat) or 'edge units are bought'}")
        v.check("edge", system.accelerators == 1 and system.kind in EDGE_KINDS[job.device],
                f"{where}: a {system.kind} with {system.accelerators} accelerators is not a '{job.device}' device")
        est = serving.estimate(m, acc, wl, 1, 1, 1)
        v.check("memory", est.fits, f"{where}: {est.reason}")
        v.check("latency", est.tokens_per_s_per_user >= job.min_tokens_per_s * (1 - TIGHT),
                f"{where}: {est.tokens_per_s_per_user:.1f} tok/s, target {job.min_tokens_per_s:g}")
        power_w = acc.tdp_w or system.power_kw * 1000
        v.check("power", job.max_power_w is None or power_w <= job.max_power_w * (1 + TIGHT),
                f"{where}: draws {power_w:.0f} W, limit {job.max_power_w} W")
        units += p["replicas"]
        # a deployed unit is its job's all year: the fleet row's cost splits by accelerator-hours, edge included
        ledger.usage[o.id][part.key] += p["replicas"] * system.accelerators * HOURS_PER_YEAR
        ledger.edge_units[o.id] += p["replicas"]
        rate = s.policy.discount_rate
        ledger.edge_usd[o.id] += p["replicas"] * (costs.capital_usd_per_year(o, rate, s.horizon_years, s.kept)
                                                  + o.purchase_usd * s.site.support_fraction_per_year)
        ledger.uses[o.id].add("edge")
    # (the unserved share is stated to 4 places: allow what that rounding hides)
    v.check("demand", units >= part.units * (1 - short) - part.units * 5e-5 - 1e-9 or (short and units == 0),
            f"'{part.key}': {units} of {part.units} devices placed")
