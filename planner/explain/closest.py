"""closest_miss: when no accelerator can run a job, the one that comes closest, with its number and
the scenario key to relax (the diagnosis's To fix line, explain/diagnosis.py): the fastest speed or
first token a serving job reaches, the shortest run a training job reaches within the offers' caps."""

from __future__ import annotations

import math

from planner.data import jobs
from planner.options import build as options
from planner.physics import costs, serving, training


def _serve_closest(job, d, m, s, cat, opts) -> tuple[str, dict] | None:
    """The fastest single-user speed (or quickest first token) any allowed system reaches."""
    rl = job.stage == "rl"
    wl = jobs.rollout_workload(job) if rl else jobs.serve_workload(job)
    target = job.min_tokens_per_s_per_rollout if rl else job.min_tokens_per_s_per_user
    max_ttft = None if rl else job.max_ttft_s
    fast = quick = None
    mine = opts.eligible.get(d.key)  # (the demand's own offers: the site and the export rules rule some out)
    for sid in sorted({opts.offers[oid].system for oid in mine} if mine is not None else
                      {o.system for o in opts.offers.values()}):
        system = cat.systems[sid]
        acc = cat.accelerators[system.accelerator]
        max_tp = options.MAX_TP_MOE if m.is_moe else options.MAX_TP_DENSE
        for tp in (2 ** k for k in range(12)):
            if tp > min(system.scaleup_domain, max_tp):
                break
            for pp in (2 ** k for k in range(5)):
                if pp > min(options.MAX_PP, m.layers) or options.replica_slots(tp * pp, system) is None:
                    continue
                est = serving.estimate(m, acc, wl, tp, pp, 1)
                if not est.fits:
                    continue
                cand = (est.tokens_per_s_per_user, -tp * pp, acc.id, sid, tp, pp, est.ttft_ms / 1e3)
                fast = max(fast, cand) if fast else cand
                if est.tokens_per_s_per_user >= target:
                    q = (-est.ttft_ms, -tp * pp, acc.id, sid, tp, pp, est.ttft_ms / 1e3)
                    quick = max(quick, q) if quick else q
    field = f"jobs.{job.name}." + ("min_tokens_per_s_per_rollout" if rl else "min_tokens_per_s_per_user")
    if fast is None:
        return None
    tps, _, acc, sid, tp, pp, _ = fast
    if tps < target:
        new = math.floor(tps * 10) / 10
        if not rl and "max_tpot_ms" in job.model_fields_set:  # (the user wrote the target as a latency: say it so)
            ms = math.ceil(1000 / tps * 100) / 100
            return (f"no accelerator reaches {job.max_tpot_ms:g} ms per token (TPOT) on {m.id} at {job.precision}: "
                    f"the fastest is {acc} ({sid}, TP{tp} PP{pp}) at {1000 / tps:,.2f} ms per token",
                    {"family": "target", "constraint": f"jobs.{job.name}.max_tpot_ms", "current": job.max_tpot_ms,
                     "suggested": ms, "message": f"raise jobs.{job.name}.max_tpot_ms to at least {ms:,.2f}, or use "
                                                 "a lower precision"})
        return (f"no accelerator reaches {target:,g} tok/s per user on {m.id} at {job.precision}: the fastest is "
                f"{acc} ({sid}, TP{tp} PP{pp}) at {tps:,.1f} tok/s per user",
                {"family": "target", "constraint": field, "current": target, "suggested": new,
                 "message": f"lower {field} to at most {new:,.1f}, or use a lower precision"})
    if quick is not None and max_ttft is not None and quick[-1] > max_ttft:  # (within it: not what rules it out)
        *_, acc, sid, tp, pp, t = quick
        new = math.ceil(t * 100) / 100
        return (f"no configuration that reaches {target:g} tok/s per user gives a first token within "
                f"{max_ttft:g} s on {m.id}: the quickest is {acc} ({sid}, TP{tp} PP{pp}) at {t:.2f} s",
                {"family": "target", "constraint": f"jobs.{job.name}.max_ttft_s", "current": max_ttft,
                 "suggested": new, "message": f"raise jobs.{job.name}.max_ttft_s to at least {new:.2f}, "
                                              "or shorten input_tokens"})
    return None


def _most_systems(sid: str, s, opts) -> float:
    """The most systems of `sid` one run may hold under the allowed offers' caps (an owned offer's
    policy.max_systems_per_offer where it has none; a rental without a cap: no limit)."""
    caps = [o.max_systems if o.max_systems is not None else
            (s.policy.max_systems_per_offer if costs.is_owned(o) else math.inf)
            for o in opts.offers.values() if o.system == sid]
    return max(caps, default=0)


def _batch_closest(job, d, m, s, cat, opts) -> tuple[str, dict] | None:
    """The shortest run any allowed system reaches at any accelerator count."""
    method = "pretrain" if job.stage == "pretrain" else ("lora" if job.stage == "rl" and job.method != "full"
                                                        else job.method)
    tokens = {"finetune": lambda: job.dataset_tokens * job.epochs, "pretrain": lambda: job.training_tokens,
              "rl": lambda: job.train_tokens_per_day}[job.stage]()
    seq = getattr(job, "sequence_tokens", 8192)
    rank = getattr(job, "lora_rank", 16)
    precision = jobs.train_precision(job)
    best = None
    for sid in sorted({o.system for o in opts.offers.values()}):
        system = cat.systems[sid]
        acc = cat.accelerators[system.accelerator]
        need = training.accelerators_min(m, acc, method, seq, rank)
        most = _most_systems(sid, s, opts) * system.accelerators  # (the offers' availability caps)
        for n in options.batch_counts(system):  # (one system only where it does not scale out)
            if n > system.accelerators and not options.scales_out(system) or n > most:
                break
            if need and n >= need and options.replica_slots(n, system) is not None:
                est = training.estimate(m, acc, method, tokens, n, seq, rank, precision,
                                        scaleout_gbps=system.scaleout_gbps, forward_passes=getattr(job, "logprob_passes", 0))
                cand = (-est.hours, -n, acc.id, sid, n, est.hours)
                best = max(best, cand) if best else cand
    if best is None:
        return None
    *_, acc, sid, n, hours = best
    if hours <= d.max_hours_per_run:
        return None
    said = (f"no accelerator finishes a run of '{job.name}' ({m.id}, {method}) within {d.max_hours_per_run:,g} h: "
            f"the fastest is {n:,}x {acc} ({sid}) at {hours:,.1f} h per run")
    if job.stage == "rl":  # (its run is a day's training, within hours_per_day: no more than 24 h)
        if hours <= 24:
            key, new = "hours_per_day", math.ceil(hours * 10) / 10
        else:
            key, new = "train_tokens_per_day", math.floor(tokens * d.max_hours_per_run / hours)
        field = f"jobs.{job.name}.{key}"
        message = (f"raise {field} to at least {new:,g}" if key == "hours_per_day" else
                   f"lower {field} to at most {new:,.0f} (a day's training within hours_per_day, "
                   f"{d.max_hours_per_run:g} h)")
        return said, {"family": "target", "constraint": field, "current": getattr(job, key), "suggested": new,
                      "message": message}
    field = f"jobs.{job.name}." + ("max_days" if job.stage == "pretrain" else "max_hours_per_run")
    new = math.ceil(hours / 24 * 10) / 10 if job.stage == "pretrain" else math.ceil(hours * 10) / 10
    return (said, {"family": "target", "constraint": field, "current": getattr(job, field.rsplit('.', 1)[1]),
                   "suggested": new, "message": f"raise {field} to at least {new:,g}"})


def closest_miss(d, s, cat, opts) -> tuple[str, dict] | None:
    """(message, relaxation) for a demand no option can meet, naming the accelerator that comes
    closest with its number; None when the reasons are policy or stack (listed per accelerator)."""
    job = next(j for j in s.jobs if j.name == d.job)
    m = cat.models[job.model]
    if d.kind == "serve":
        return _serve_closest(job, d, m, s, cat, opts)
    if d.kind == "batch":
        return _batch_closest(job, d, m, s, cat, opts)
    return None
