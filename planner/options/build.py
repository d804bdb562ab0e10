"""Every feasible way to run each job on each system the policy allows, as plain numbers.

This is the seam between physics and the solver: a ServeOption says how many users one replica of
a configuration serves within the per-user speed, TTFT and memory limits; a BatchOption says how
long one fine-tuning/pretraining run takes on n accelerators; an EdgeOption (options/edge.py) is one device per unit.
Anything that cannot run records why, per job and accelerator, for the why-not table.
"""

from __future__ import annotations

import gc
import time

from planner.data import deadline
from planner.data.catalog import Catalog, System
from planner.data.errors import SolverError
from planner.data.jobs import (  # noqa: F401
    demands_of,
    edge_workload,
    hours_per_year,
    rollout_workload,
    serve_workload,
)
from planner.data.scenario import Scenario
from planner.options import disagg as disagg_options
from planner.options import forked, measured, probe
from planner.options.batch import BATCH_COUNTS, batch_configs, batch_counts  # noqa: F401
from planner.options.api import api_options
from planner.options.crossdisagg import options as cross_options
from planner.options.edge import device_reasons, edge_config
from planner.options.colocation import colocate
from planner.options.eligibility import (
    allowed_offers,
    batch_offer_exclusion,
    record_eligible,
)
from planner.options.slots import SCALE_OUT_KINDS, replica_slots, scales_out  # noqa: F401
from planner.options.types import Demand, Options, ServeOption
from planner.physics import arch, moe, serving

MAX_TP_DENSE = 16
MAX_TP_MOE = 64
MAX_PP = 16


# --- serving ------------------------------------------------------------------------------------

def layout_note(m, wl: serving.Workload, tp: int) -> str:
    """The basis note of a serving option laid out other than as plain tensor parallelism."""
    if not (wl.attention_dp and moe.applies(m, tp)):
        return ""
    return (f"{LAYOUT_NOTE} EP{tp} with data-parallel attention: each rank holds the KV of its own "
            f"sequences (not a copy of the whole cache) and all weights but the routed experts")


LAYOUT_NOTE = moe.NOTE


def serve_configs(m, acc, system: System, wl: serving.Workload, min_tps: float, max_ttft: float | None,
                  demand: str, cache: dict | None = None,
                  engine: str | None = None, tpot_ms: bool = False) -> tuple[list[ServeOption], str]:
    """Pareto-best (accelerators per replica, users per replica) configurations on one system.
    `max_ttft` is checked against the TTFT under load: the mean first-token time of a closed loop
    of as many concurrent users as the replica serves (physics.ttft), so a TTFT limit caps the
    batch the way the per-user speed does.
    Beyond PP 2, pipeline stages are added (PP doubled) only while memory limits the batch: a
    token still passes every stage in turn, so more stages barely raise per-user speed and leave
    the batch cap where it is (on benchmarks/speed.py's 50 jobs: about 1% of plan cost, option search 2.5x faster).
    Where none fits, the reason is the closest miss's (_best_reason), its speed in ms per token where
    the job's target was written so (`tpot_ms`: max_tpot_ms)."""
    max_tp = MAX_TP_MOE if m.is_moe else MAX_TP_DENSE
    found: list[ServeOption] = []
    reasons: list[tuple[str, object]] = []
    tp = 1
    while tp <= min(system.scaleup_domain, max_tp):
        if not arch.tp_splits(m, tp):  # an engine splits the query and KV heads evenly over the TP ranks
            break
        pp = 1
        while pp <= MAX_PP and pp <= m.layers:
            slots = replica_slots(tp * pp, system)
            if slots is not None and tp * pp > system.accelerators and not scales_out(system):
                reasons.append(("span", (f"a replica of {tp * pp} would span several {system.id} "
                                         f"({system.kind}, no scale-out fabric)")))
                break
            known = None if slots is None else probe.known(m, acc, wl, tp, pp, min_tps, max_ttft, cache, engine)
            if slots is not None and known is None and found and _dominated(found, probe.Split(
                    tp, pp, tp * pp, slots, probe.most_users(m, acc, wl, tp, pp, engine), "", wl)):
                # dominated whatever its batch (lossless to skip); the PP rule below needs only its limit
                if pp >= 2 and not serving.memory_limited(m, acc, wl, tp, pp, min_tps, max_ttft, engine=engine):
                    break
            elif slots is not None:
                batch, limit, used = known or probe.layouts(m, acc, wl, tp, pp, min_tps, max_ttft, cache, engine)
                if batch >= 1:
                    found.append(probe.Split(tp, pp, tp * pp, slots, batch, limit, used))
                else:  # worded only if no split fits (_best_reason)
                    reasons.append((limit if limit in ("memory", "ttft") else "latency",
                                    (m, acc, wl, tp, pp, limit, min_tps, max_ttft, engine, tpot_ms)))
                if limit not in ("memory", "ttft") and pp >= 2:
                    break  # more stages add memory only: per-user speed and the batch cap barely move (a
                    # long prompt's first token does: its chunks pipeline through the stages, physics.ttft)
            pp *= 2
        tp *= 2
    if not found:
        return [], _best_reason(reasons, acc, system)
    out = []
    for o in _pareto(found):  # estimated once kept: the Pareto test reads slots, users and the split only
        est = probe.estimate(m, acc, o.workload, o.tp, o.pp, o.users_per_replica, cache, engine)
        binding = o.limit if o.limit in ("memory", "batch-cap", "ttft") else est.regime
        out.append(ServeOption(
            demand, system.id, acc.id, o.tp, o.pp, o.accelerators_per_replica, o.accelerator_slots,
            o.users_per_replica, est.tokens_per_s_per_user, est.ttft_ms / 1e3, est.memory_gb_per_accelerator,
            est.memory_gb_capacity, est.weights_gb, est.kv_gb, binding, est.regime,
            basis_note=layout_note(m, o.workload, o.tp)))
    return out, ""


def _no_batch_reason(m, acc, wl, tp, pp, limit, min_tps, max_ttft, engine=None, tpot_ms=False) -> str:
    if limit == "memory":
        return "memory:" + serving.estimate(m, acc, wl, tp, pp, 1, engine=engine).reason
    if limit == "ttft":
        t = serving.ttft_s(m, acc, wl, tp, pp, engine=engine)
        return f"ttft:time to first token {t:.2f} s at TP{tp} PP{pp} (one prompt alone) exceeds {max_ttft:g} s"
    est = serving.estimate(m, acc, wl, tp, pp, 1, engine=engine)
    if tpot_ms:  # (the job's target written as a latency: max_tpot_ms)
        return (f"latency:even one user waits {_beyond(1000 / est.tokens_per_s_per_user, 1000 / min_tps, above=True)} "
                f"ms per token at TP{tp} PP{pp} ({est.regime}-bound), above {1000 / min_tps:g}")
    return (f"latency:even one user gets {_beyond(est.tokens_per_s_per_user, min_tps)} tok/s at TP{tp} PP{pp} "
            f"({est.regime}-bound), below {min_tps:g}")


def _beyond(value: float, target: float, above: bool = False) -> str:
    """`value` with the decimals that show it below `target` (or above it): 19.96 against 20 is
    '19.96', not '20.0'."""
    for digits in (1, 2, 3):
        if (round(value, digits) > target) if above else (round(value, digits) < target):
            return f"{value:.{digits}f}"
    return f"{value:.6g}"


def _best_reason(reasons: list[tuple[str, object]], acc, system: System) -> str:
    """The most informative reason: a speed miss beats a memory miss (it fit somewhere), and among
    speed misses the split that comes closest (the fastest one user gets; the quickest first token),
    which is what a bigger split or a looser target would be measured against. `reasons` holds
    (kind, the span's words or _no_batch_reason's arguments): only the one chosen is worded."""
    for kind in ("latency", "ttft", "memory", "span"):
        hits = [r for k, r in reasons if k == kind]
        if hits:
            text = "span:" + hits[-1] if kind == "span" else _no_batch_reason(*_closest(kind, hits))
            return text.split(":", 1)[1] + f" (on {system.id})"
    return f"no tensor/pipeline split fits {system.id}"


def _closest(kind: str, hits: list[tuple]) -> tuple:
    """Of the splits missed for one reason (_no_batch_reason's arguments), the one nearest the
    target: the fastest for one user (latency), the quickest first token (ttft), the largest tried
    (memory, the last); ties to fewer accelerators."""
    if kind == "latency":
        return max(hits, key=lambda h: (serving.estimate(*h[:5], 1, engine=h[8]).tokens_per_s_per_user, -h[3] * h[4]))
    if kind == "ttft":
        return min(hits, key=lambda h: (serving.ttft_s(*h[:5], engine=h[8]), h[3] * h[4]))
    return hits[-1]


def _pareto(found: list[ServeOption]) -> list[ServeOption]:
    """The configurations no other one dominates, a lossless reduction: q dominates o when o's
    accelerator slots are a whole multiple k of q's and k replicas of q serve at least o's users
    (k = 1: as few slots and as many users). Any fleet using o can use k replicas of q instead on
    the same accelerators (slots tile a system), at the same power and rent, serving as many users;
    so the cheapest fleet over the kept configurations is the cheapest over all of them."""
    keep = [o for o in found if not any(_beats(q, o) for q in found)]
    return sorted(keep, key=lambda o: (o.accelerator_slots, o.tp, o.pp))


def _dominated(found: list, o) -> bool:
    return any(_beats(q, o) for q in found)


def _beats(q, o) -> bool:
    """q dominates o (_pareto). A strict order (transitive): dropping an o some kept q beats
    leaves the Pareto set as it was; and q beating o at o's most users beats it at fewer."""
    k = o.accelerator_slots / q.accelerator_slots
    if q is o or k < 1 - 1e-9 or abs(k - round(k)) > 1e-9 or round(k) * q.users_per_replica < o.users_per_replica:
        return False
    if round(k) > 1 or q.users_per_replica > o.users_per_replica:
        return True
    # a tie (same slots, same users) keeps one: the smaller replica, then fewer pipeline stages
    return (q.accelerators_per_replica, q.pp, q.tp) < (o.accelerators_per_replica, o.pp, o.tp)


# --- everything ---------------------------------------------------------------------------------

def build(s: Scenario, cat: Catalog, reuse: Options | None = None, rebuild: frozenset[str] = frozenset()) -> Options:
    """All options for each demand over the systems with at least one offer that demand may use (allowed by
    the policy, then demand_offer_exclusion); batch configurations no such offer can host (batch_offer_exclusion)
    are dropped with their reason; jobs not in `rebuild` are taken from `reuse` (Options.take), when given.
    The cyclic garbage collector is paused meanwhile: the search keeps hundreds of thousands of small
    answers (physics.step.Replica) that form no cycles, which its passes would only rescan (a third of
    the build's time on 60 generated jobs); reference counting frees all else as usual."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build(s, cat, reuse, rebuild)
    finally:
        if paused:
            gc.enable()


def _build(s: Scenario, cat: Catalog, reuse: Options | None, rebuild: frozenset[str]) -> Options:
    opts = Options()
    opts.offers, opts.excluded_offers, opts.pair_only = allowed_offers(s, cat)
    jobs = {j.name: j for j in s.jobs}
    cache: dict = {}
    rows = measured.rows_of(s, cat)
    demands = demands_of(s)
    by_acc: dict[str, list[str]] = {}  # accelerator -> the allowed offers on it (once, not per demand)
    for oid, o in opts.offers.items():
        by_acc.setdefault(cat.systems[o.system].accelerator, []).append(oid)
    policy_reasons: dict[str, str] = {}
    eligibility: dict = {}

    def policy_reason(acc_id: str) -> str:
        if acc_id not in policy_reasons:
            policy_reasons[acc_id] = _policy_reason(acc_id, cat, opts)
        return policy_reasons[acc_id]

    if reuse is None and forked.possible():  # (the searches listed only where a child could share them)
        _searched_beside(s, cat, opts, demands, cache, eligibility)
    budget = deadline.current()
    for done, d in enumerate(demands):
        if deadline.left() <= 0:
            raise SolverError(_out_of_time(done, len(demands)))
        if budget is not None and budget.step.startswith("options"):  # progress: the plan's own build
            budget.step = f"options, {done:,} of {len(demands):,} job parts"
        opts.demands[d.key] = d
        if reuse is not None and d.job not in rebuild and d.key in reuse.demands and opts.take(reuse, d.key):
            continue
        job = jobs[d.job]
        m = cat.models[job.model]
        record_eligible(opts, d, s, cat, eligibility)
        if d.kind == "edge":  # (first: an accelerator no device of the job's class carries needs no other reason)
            for acc_id, why in device_reasons(job.device, cat).items():
                opts.note(d.key, acc_id, why)
        lists = {"serve": opts.serve, "batch": opts.batch, "edge": opts.edge}[d.kind]
        found = lists.setdefault(d.key, [])
        missed: dict[str, list] = {}  # accelerator -> (system, why none of its options fits) of each system tried
        for sid in sorted({opts.offers[oid].system for oid in opts.eligible[d.key]}):
            system = cat.systems[sid]
            acc = cat.accelerators[system.accelerator]
            got, why = _options_for(d, job, m, acc, system, cache)
            if d.kind == "serve" and rows:  # the user's measurements replace the physics where they exist
                got, why = measured.replace(rows, d, m, acc, system, got, why, _pareto, replica_slots)
            if d.kind == "batch":
                got, why = _hostable(opts, d, got, system, why)
            found.extend(got)
            if not got and why:
                missed.setdefault(acc.id, []).append((system, why))
        found.extend(cross_options(s, cat, opts, d, job, m, found, replica_slots, cache, measured=bool(rows)))
        have = {o.accelerator for o in found}
        for acc_id, whys in missed.items():  # (none on any of its systems) the reason of its largest system:
            if acc_id not in have:  # every split of a smaller one is tried there too, and more
                opts.note(d.key, acc_id, max(whys, key=lambda sw: (sw[0].scaleup_domain, sw[0].accelerators))[1])
        eligible = set(opts.eligible[d.key])
        for acc_id in sorted(cat.accelerators):
            if acc_id not in have:
                opts.note(d.key, acc_id, _demand_reason(acc_id, d.key, by_acc.get(acc_id, ()), eligible, opts)
                          or policy_reason(acc_id))
    colocate(s, cat, opts)
    opts.api, opts.excluded_api = api_options(s, cat, opts.demands.values())
    return opts


def _out_of_time(done: int, total: int) -> str:
    b = deadline.current()
    return (f"no plan within the time limit of {b.seconds:g} s: building the options (every way to run each job on "
            f"each allowed system) used it all, {done:,} of {total:,} job parts done in {b.elapsed():.1f} s.\n    To fix: "
            "raise --time-limit (or solver.time_limit_s in the scenario), or split the scenario, or narrow policy.accelerators")


def _hostable(opts: Options, d: Demand, got: list, system: System, why: str) -> tuple[list, str]:
    """Batch configurations some offer of this system may host, or the reason none can."""
    kept, reasons = [], []
    offers = [opts.offers[oid] for oid in opts.offers_for(d.key, system.id)]
    for opt in got:
        misses = [batch_offer_exclusion(d, opt, o, system) for o in offers]
        if any(not r for r in misses):
            kept.append(opt)
        else:
            reasons += misses
    if got and not kept:
        return [], sorted(set(reasons))[0]
    return kept, why


def _demand_reason(acc_id: str, dk: str, mine, eligible: set[str], opts: Options) -> str:
    """Why demand dk may use none of the allowed offers of an accelerator (`mine`; '' if it may
    use some of them: `eligible` holds the offers dk may use)."""
    if not mine or any(oid in eligible for oid in mine):
        return ""
    reasons = sorted({opts.ineligible[dk][oid] for oid in mine})
    return "; ".join(reasons[:2])


def _options_for(d: Demand, job, m, acc, system: System, cache: dict | None = None):
    if d.kind == "serve":
        engine = getattr(job, "engine", None)
        # jobs alike in model, workload and targets get the same configurations on a system: searched
        # once per build, then labelled with each demand (2,000 jobs: 82,000 searches -> about 6,000)
        key, args = _search_of(d, job, m, acc, system)
        found = cache.get(key) if cache is not None else None
        if found is None:
            found = _search(args, cache)
            if cache is not None:
                cache[key] = found
        got, why = [_labelled(o, d.key) for o in found[0]], found[1]
        if d.pool is not None:  # a pool shares replicas of one split
            return got, why
        split = disagg_options.configs(m, acc, system, d.workload, d.min_tokens_per_s, d.max_ttft_s, d.key,
                                       got, replica_slots, engine)
        return (_pareto(got + split), "") if split else (got, why)
    if d.kind == "batch":
        r = d.train
        key = ("batch", m.id, system.id, r, d.max_hours_per_run)
        if cache is None or key not in cache:
            got = batch_configs(m, acc, system, r.method, r.tokens, r.sequence_tokens, r.lora_rank, r.precision,
                                d.max_hours_per_run, "", r.forward_passes)
            if cache is None:
                return [_labelled(o, d.key) for o in got[0]], got[1]
            cache[key] = got
        found, why = cache[key]
        return [_labelled(o, d.key) for o in found], why
    opt, why = edge_config(job, m, acc, system, d.key)
    return ([opt] if opt else []), why


def _search_of(d: Demand, job, m, acc, system: System) -> tuple[tuple, tuple]:
    """(key, arguments) of serving demand d's configuration search on a system (_search): demands
    alike share the key."""
    engine = getattr(job, "engine", None)
    tpot_ms = "max_tpot_ms" in getattr(job, "model_fields_set", ())  # (its reasons in ms per token)
    key = ("configs", m.id, system.id, d.workload, d.min_tokens_per_s, d.max_ttft_s, engine, tpot_ms)
    return key, (m, acc, system, d.workload, d.min_tokens_per_s, d.max_ttft_s, engine, tpot_ms)


def _search(args: tuple, cache: dict | None):
    """serve_configs of _search_of's arguments, unlabelled (demand ''), with the build's cache."""
    m, acc, system, wl, min_tps, max_ttft, engine, tpot_ms = args
    return serve_configs(m, acc, system, wl, min_tps, max_ttft, "", cache, engine, tpot_ms)


def _searched_beside(s: Scenario, cat: Catalog, opts: Options, demands: list, cache: dict, eligibility: dict) -> None:
    """The distinct serving searches the build will ask (each serving demand on each system it may
    use), shared with a second process where that pays (options/forked.py), their answers put in
    `cache` under _options_for's keys; nothing where it does not."""
    jobs, scratch, tasks = {j.name: j for j in s.jobs}, Options(), {}
    scratch.offers, scratch.pair_only = opts.offers, opts.pair_only
    for d in demands:
        if d.kind != "serve":
            continue
        job = jobs[d.job]
        record_eligible(scratch, d, s, cat, eligibility)  # (shared with the build's: same offers, same answer)
        for sid in sorted({opts.offers[oid].system for oid in scratch.eligible[d.key]}):
            system = cat.systems[sid]
            key, args = _search_of(d, job, cat.models[job.model], cat.accelerators[system.accelerator], system)
            tasks.setdefault(key, args)
    if len(tasks) < forked.MIN_SEARCHES:
        return
    b = deadline.current()
    end = None if b is None else time.monotonic() + b.left()
    cache.update(forked.shared(list(tasks.items()), lambda *args: _search(args, cache),
                               lambda key: (key[1], cat.systems[key[2]].accelerator), end))


def _labelled(o, demand: str):
    """A copy of option o for `demand`: dataclasses.replace(o, demand=demand) without re-running
    the dataclass's __init__ (the options carry no __post_init__), as a large build asks it for
    every option of every demand."""
    new = object.__new__(type(o))
    new.__dict__.update(o.__dict__)
    new.__dict__["demand"] = demand
    return new


def _policy_reason(acc_id: str, cat: Catalog, opts: Options) -> str:
    """Why an accelerator has no option at all: its offers' exclusions, or no offers."""
    reasons = sorted({why for oid, why in opts.excluded_offers.items()
                      if cat.systems[cat.offers[oid].system].accelerator == acc_id})
    if not reasons:
        return "no offer in the catalog"
    return "; ".join(reasons[:2])
