"""An independent check that a plan is feasible, re-derived from the scenario, the catalog and the
physics, never from the optimizer's internals (this module imports neither the MILP nor the
options it was built from).

For every placement it recomputes what the optimizer was told, from the shared physics:
  serving    the offer exists and the policy allows it; TP <= the system's scale-up domain;
             a replica of TP x PP accelerators fits one system or whole systems; the KV cache
             holds users_per_replica beside the weights (serving.max_batch_by_memory); at that
             batch each user gets >= the target tokens/s and the first token within max TTFT
             (serving.estimate); sum replicas x users_per_replica >= concurrent users; with
             redundancy n+1, for each offer o: supply - sum_i min(replicas_i, R_i) x users_i >= users,
             R_i = replicas one system of o holds (the lost system held as many as it can)
  batch      the run fits its accelerators (training.estimate) and hours per run <= the deadline;
             shares of runs sum to 1
  edge       one single-accelerator device of the right kind per unit, fast enough, within power
Then for the fleet as a whole:
  capacity   owned offer o: sum replicas x slots <= accelerators held (all serving at once), a batch
             run fits at once, and serve + batch accelerator-hours <= 8760 x accelerators;
             rented offer o: sum_d ceil(slots_d / per system) <= systems held
  caps       systems <= offer.max_systems (or policy.max_systems_per_offer for owned offers)
  budget     total <= usd_per_year; purchases <= capex cap; total - capital <= opex cap
  power      bought site systems' power_kw <= site.power_cap_kw
  costs      each offer's cost re-derived from costs.py; fleet, breakdown and job costs add up to
             the total within 0.5% (+ $1 of rounding)
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from planner import costs
from planner.catalog import Catalog, Offer
from planner.perf import serving, training
from planner.perf.calibration import default as calibration
from planner.scenario import EdgeJob, FinetuneJob, PretrainJob, RLJob, Scenario, ServeJob

REL = 0.005  # cost sums, rounding of reported numbers
USD = 1.0  # absolute slack on dollar sums (values are rounded to cents)
TIGHT = 1e-6  # physics inequalities (the optimizer used the same functions)
HOURS_PER_YEAR = costs.HOURS_PER_YEAR
EDGE_KINDS = {"robot": ("edge",), "desk": ("workstation",), "phone": (), "any": ("edge", "workstation")}


@dataclass
class Verification:
    """What was checked: the number of checks passed, and each failure as one line."""

    passed: int = 0
    failures: list[str] = field(default_factory=list)
    families: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def check(self, family: str, ok: bool, message: str) -> bool:
        self.families[family] = self.families.get(family, 0) + 1
        if ok:
            self.passed += 1
        else:
            self.failures.append(f"[{family}] {message}")
        return ok

    def summary(self) -> str:
        if self.ok:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.families.items()))
            return f"verified: {self.passed} checks passed ({kinds})"
        lines = [f"plan failed verification: {len(self.failures)} of "
                 f"{self.passed + len(self.failures)} checks failed"]
        return "\n".join(lines + ["  - " + f for f in self.failures])


@dataclass(frozen=True)
class Part:
    """One thing a job asks of the fleet, re-derived from the scenario."""

    key: str
    kind: str  # serve | batch | edge
    users: int = 0
    hours_per_day: float = 24.0
    target_tps: float = 0.0
    max_ttft_s: float | None = None
    workload: serving.Workload | None = None
    latency_critical: bool = False
    runs_per_year: float = 0.0
    deadline_h: float = 0.0
    train: tuple = ()  # (method, tokens, seq, rank, precision)


def demand_factor(job, year: int) -> float:
    """Year `year`'s demand over year 1's: demand_multipliers if given, else compound growth."""
    if job.demand_multipliers:
        return job.demand_multipliers[min(year, len(job.demand_multipliers)) - 1]
    return (1.0 + job.growth_per_year) ** (year - 1)


def _scaled(count: int, g: float) -> int:
    return count if g == 1 else math.ceil(count * g - 1e-9)


def parts_of(job, year: int = 1) -> list[Part]:
    """The demands a job makes in `year`: serving users, batch runs, or edge units (RL: rollouts +
    trainer), year 1's scaled by its growth."""
    g = demand_factor(job, year)
    if isinstance(job, ServeJob):
        wl = serving.Workload(job.precision, job.kv_precision, job.input_tokens, job.output_tokens,
                              job.context_tokens)
        return [Part(job.name, "serve", _scaled(job.concurrent_users, g), job.hours_per_day,
                     job.min_tokens_per_s_per_user, job.max_ttft_s, wl, job.latency_critical)]
    if isinstance(job, FinetuneJob):
        return [Part(job.name, "batch", runs_per_year=job.runs_per_year * g, deadline_h=job.max_hours_per_run,
                     train=(job.method, job.dataset_tokens * job.epochs, job.sequence_tokens, job.lora_rank, "bf16"))]
    if isinstance(job, PretrainJob):
        return [Part(job.name, "batch", runs_per_year=job.runs_per_year * g, deadline_h=job.max_days * 24,
                     train=("pretrain", job.training_tokens, job.sequence_tokens, 16, job.precision))]
    if isinstance(job, RLJob):
        ctx = job.rollout_context_tokens
        prompt = max(1, min(2048, ctx // 4))
        wl = serving.Workload(job.precision, "fp8" if job.precision in ("fp8", "fp4") else "bf16", prompt,
                              max(1, ctx - prompt), ctx)
        users = math.ceil(job.rollout_tokens_per_s / job.min_tokens_per_s_per_rollout)
        return [Part(f"{job.name}/rollout", "serve", _scaled(users, g), job.hours_per_day,
                     job.min_tokens_per_s_per_rollout, None, wl),
                Part(f"{job.name}/trainer", "batch", runs_per_year=365 * g, deadline_h=job.hours_per_day,
                     train=("full" if job.method == "full" else "lora", job.train_tokens_per_day, 8192, 16, "bf16"))]
    assert isinstance(job, EdgeJob)
    return [Part(job.name, "edge", users=_scaled(job.devices, g))]


def offer_problem(o: Offer, s: Scenario, cat: Catalog) -> str:
    """Why the scenario's policy or site forbids holding this offer ('' if it may)."""
    system = cat.systems.get(o.system)
    if system is None or system.accelerator not in cat.accelerators:
        return f"offer '{o.id}' names a system or accelerator the catalog lacks"
    acc = cat.accelerators[system.accelerator]
    p = s.policy
    rules = [
        (o.acquisition in p.acquisition, f"acquisition '{o.acquisition}' is not in policy.acquisition"),
        (p.providers is None or o.provider in p.providers, f"provider '{o.provider}' is not in policy.providers"),
        (o.provider not in p.exclude_providers, f"provider '{o.provider}' is excluded"),
        (p.accelerators is None or acc.id in p.accelerators, f"accelerator '{acc.id}' not in policy.accelerators"),
        (acc.id not in p.exclude_accelerators, f"accelerator '{acc.id}' is excluded"),
        (p.stacks is None or acc.stack in p.stacks, f"stack '{acc.stack}' is not in policy.stacks"),
        (not (o.acquisition == "buy" and system.cooling == "liquid" and s.site.cooling == "air"),
         f"bought liquid-cooled '{system.id}' at an air-cooled site"),
        (o.max_systems != 0, f"offer '{o.id}' has no availability (max_systems 0)"),
    ]
    return next((why for ok, why in rules if not ok), "")


def slots(replica: int, per_system: int) -> float | None:
    """Accelerators of a system a replica occupies (the remainder it cannot use included);
    None if a replica larger than one system is not a whole number of systems."""
    if replica <= per_system:
        return per_system / (per_system // replica)
    return float(replica) if replica % per_system == 0 else None


def _owned(o: Offer) -> bool:
    return o.acquisition in ("buy", "reserved-1y", "reserved-3y")


def _close(a: float, b: float, rel: float = REL, absolute: float = USD) -> bool:
    return abs(a - b) <= absolute + rel * max(abs(a), abs(b))


class _Ledger:
    """Per offer: what the placements use of it, and what they should cost."""

    def __init__(self):
        self.serve_slots = defaultdict(float)  # offer -> accelerators at peak (owned)
        self.rent_slots = defaultdict(lambda: defaultdict(float))  # offer -> part -> accelerators
        self.slot_hours = defaultdict(float)  # offer -> accelerator-hours per year
        self.hours_slack = defaultdict(float)  # offer -> accelerator-hours the plan's rounding hides
        self.batch_fit = defaultdict(list)  # offer -> accelerators per run
        self.edge_units = defaultdict(int)
        self.rent_usd = defaultdict(float)  # offer -> rentals other than serving (batch)
        self.rent_hours = defaultdict(lambda: defaultdict(float))  # offer -> part -> hours per year
        self.edge_usd = defaultdict(float)
        self.uses = defaultdict(set)  # offer -> kinds using it


def verify(plan: dict, s: Scenario, cat: Catalog) -> Verification:
    """Check `plan` (the JSON contract) against scenario `s` and resolved catalog `cat`."""
    v = Verification()
    if not v.check("plan", isinstance(plan, dict) and plan.get("status") in ("optimal", "feasible"),
                   f"status is {plan.get('status') if isinstance(plan, dict) else plan!r}, not a plan"):
        return v
    try:
        _verify(plan, s, cat, v)
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        v.check("plan", False, f"plan is malformed: {type(exc).__name__}: {exc}")
    return v


def _verify(plan: dict, s: Scenario, cat: Catalog, v: Verification) -> None:
    jobs = {j.name: j for j in s.jobs}
    listed = [j["name"] for j in plan["jobs"]]
    v.check("plan", sorted(listed) == sorted(jobs) and len(set(listed)) == len(listed),
            f"plan lists jobs {sorted(listed)}, the scenario {sorted(jobs)}")
    fleet = {}
    for f in plan["fleet"]:
        v.check("plan", f["offer"] not in fleet, f"offer '{f['offer']}' appears twice in the fleet")
        fleet[f["offer"]] = f
    ledger = _Ledger()
    multi = "years" in plan  # fleet and jobs describe the final year; prices there follow trends
    last = s.horizon_years if multi else 1
    for pj in plan["jobs"]:
        job = jobs.get(pj["name"])
        if job is None:
            continue
        v.check("plan", pj["stage"] == job.stage and pj["model"] == job.model,
                f"job '{job.name}' is reported as {pj['stage']} {pj['model']}")
        unserved = pj.get("unserved") or {}
        for part in parts_of(job, last):
            placed = [p for p in pj["placements"] if p["part"] == part.key]
            gap = unserved.get(part.key) or {}
            short = gap.get("share", 0.0) or 0.0
            if part.kind == "serve" and gap.get("users") is not None:  # exact to 0.05 user; the share is rounded
                short = min(1.0, (gap["users"] + 0.05) / part.users)
            v.check("policy", short <= 1e-6 or s.budget.mode == "max-coverage",
                    f"'{part.key}' leaves {short:.1%} unserved outside max-coverage mode")
            {"serve": _serve, "batch": _batch, "edge": _edge}[part.kind](part, job, placed, short, s, cat, v, ledger)
    from planner.verify_fleet import check_fleet, check_totals

    check_fleet(fleet, s, cat, v, ledger, costed=not multi)
    if multi:
        from planner.verify_years import verify_years

        verify_years(plan, s, cat, v)
    else:
        check_totals(plan, fleet, s, v)


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
    return not (o.acquisition == "buy" and s.site.kind == "datacenter" and system.kind in ("workstation", "edge"))


def _serve(part: Part, job, placed, short, s, cat, v, ledger) -> None:
    m = cat.models[job.model]
    cap_batch = calibration().max_batch
    supply = 0
    by_offer: dict[str, list[tuple[int, int, int]]] = defaultdict(list)  # offer -> (replicas, R_i, users)
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
        tp, pp, reps, upr = p["tensor_parallel"], p["pipeline_parallel"], p["replicas"], p["users_per_replica"]
        replica = tp * pp
        v.check("parallelism", tp <= system.scaleup_domain and replica == p["accelerators_per_replica"],
                f"{where}: TP{tp} exceeds the scale-up domain {system.scaleup_domain} or TPxPP != "
                f"{p['accelerators_per_replica']}")
        slot = slots(replica, system.accelerators)
        if not v.check("parallelism", slot is not None and reps >= 1 and upr >= 1,
                       f"{where}: a replica of {replica} does not tile {system.accelerators}-accelerator systems"):
            continue
        fit = serving.max_batch_by_memory(m, acc, part.workload, tp, pp)
        v.check("memory", upr <= fit and upr <= cap_batch,
                f"{where}: {upr} users per replica, memory holds {fit} (engine cap {cap_batch})")
        est = serving.estimate(m, acc, part.workload, tp, pp, upr)
        v.check("latency", est.tokens_per_s_per_user >= part.target_tps * (1 - TIGHT),
                f"{where}: {est.tokens_per_s_per_user:.2f} tok/s per user, target {part.target_tps:g}")
        v.check("latency", _close(est.tokens_per_s_per_user, p["tokens_per_s_per_user"], 0.01, 0.01),
                f"{where}: reports {p['tokens_per_s_per_user']} tok/s per user, physics gives "
                f"{est.tokens_per_s_per_user:.2f}")
        if part.max_ttft_s is not None:
            v.check("latency", est.ttft_ms / 1e3 <= part.max_ttft_s * (1 + TIGHT),
                    f"{where}: first token after {est.ttft_ms / 1e3:.3f} s, limit {part.max_ttft_s:g} s")
        supply += reps * upr
        per_system = system.accelerators // replica if replica <= system.accelerators else 1
        by_offer[o.id].append((reps, per_system, upr))
        hours = part.hours_per_day * 365
        if _owned(o):
            ledger.serve_slots[o.id] += reps * slot
            ledger.slot_hours[o.id] += reps * slot * hours
        else:
            ledger.rent_slots[o.id][part.key] += reps * slot
            ledger.rent_hours[o.id][part.key] = hours
        ledger.uses[o.id].add("serve")
    need = part.users * (1 - short)
    v.check("demand", supply >= need - 1e-6 * part.users,
            f"'{part.key}' serves {supply} users of {part.users}" + (f" ({short:.1%} unserved)" if short else ""))
    if s.policy.redundancy == "n+1":
        for oid, rows in sorted(by_offer.items()):
            lost = sum(min(reps, r) * u for reps, r, u in rows)
            v.check("redundancy", supply - lost >= need - 1e-6 * part.users,
                    f"'{part.key}': with one system of {oid} down, {supply - lost} of {part.users} users remain")


def _batch(part: Part, job, placed, short, s, cat, v, ledger) -> None:
    m = cat.models[job.model]
    method, tokens, seq, rank, precision = part.train
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
        est = training.estimate(m, acc, method, tokens, n, seq, rank, precision)
        hours = costs.run_hours(est.hours, o.acquisition)  # spot: restarts after reclaims
        v.check("memory", est.fits, f"{where}: {est.reason}")
        v.check("deadline", hours <= part.deadline_h * (1 + TIGHT),
                f"{where}: {hours:,.1f} h per run, deadline {part.deadline_h:g} h")
        v.check("deadline", _close(hours, p["hours_per_run"], 0.01, 0.001),
                f"{where}: reports {p['hours_per_run']} h per run, physics gives {hours:.3f}")
        share = p["share_of_runs"]
        share_sum += share
        runs = share * part.runs_per_year
        per_run = max(1, math.ceil(n / system.accelerators))
        if _owned(o):
            ledger.batch_fit[o.id].append(n)
            ledger.slot_hours[o.id] += n * hours * runs
            ledger.hours_slack[o.id] += n * hours * part.runs_per_year * 5e-5  # share rounded to 4 places
        else:
            ledger.batch_fit[o.id].append(per_run * system.accelerators)
            ledger.rent_usd[o.id] += per_run * hours * o.price_usd_per_hour * runs
        ledger.uses[o.id].add("batch")
    v.check("demand", _close(share_sum + short, 1.0, 0.0, 2e-3),
            f"'{part.key}': placements cover {share_sum:.4f} of its runs" + (f" (+{short:.1%} unserved)" if short else ""))


def _edge(part: Part, job, placed, short, s, cat, v, ledger) -> None:
    m = cat.models[job.model]
    prec = job.precision
    wl = serving.Workload(prec, "fp8" if prec in ("fp8", "fp4") else "bf16", max(1, job.context_tokens // 2),
                          max(1, job.context_tokens // 4), job.context_tokens)
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
        ledger.edge_units[o.id] += p["replicas"]
        rate = s.policy.discount_rate
        ledger.edge_usd[o.id] += p["replicas"] * o.purchase_usd * (
            costs.annuity(rate, o.useful_life_years) + s.site.support_fraction_per_year)
        ledger.uses[o.id].add("edge")
    v.check("demand", units >= part.users * (1 - short) - 1e-9 or (short and units == 0),
            f"'{part.key}': {units} of {part.users} devices placed")


def read_plan_file(path) -> dict:
    """A plan JSON file written by `plan --format json`; bad files are InputError (exit 2)."""
    import json
    from pathlib import Path

    from planner.errors import InputError, Problem
    from planner.yamlio import read_text

    path = Path(path)
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(Problem(f"not JSON: {exc.msg}", f"{path}:{exc.lineno}",
                                 "pass the file written by `plan SCENARIO --format json --output FILE`"))
    except RecursionError:
        raise InputError(Problem("JSON nested too deeply", str(path), "pass a plan written by `plan`"))
    if not isinstance(data, dict) or "fleet" not in data or "jobs" not in data:
        status = data.get("status") if isinstance(data, dict) else None
        raise InputError(Problem(f"not a plan (status {status})" if status else "not a plan: it lacks "
                                 "'fleet' and 'jobs'", str(path),
                                 "pass the file written by `plan SCENARIO --format json --output FILE`"))
    return data
