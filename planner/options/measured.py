"""Serving options from the user's measurements (scenario `measurements`, `--measurements`): for a
(model, system, TP, PP, precision) with rows, the rows replace the physics model's users per
replica, per-user speed and TTFT (physics.measured: monotone interpolation, no far
extrapolation); memory still caps the batch where the physics model says the KV cache is full.
Each option says basis: measured or modelled."""

from __future__ import annotations

import dataclasses

from planner.data.measurements import check_names, load_measurements
from planner.options.types import ServeOption
from planner.physics import measured, serving


def rows_of(s, cat) -> tuple:
    """The scenario's measurement rows (names checked against the catalog: exit 2 at file:line)."""
    if not s.measurements:
        return ()
    rows = load_measurements(tuple(s.measurements))
    check_names(rows, cat)
    return rows


def replace(rows, d, m, acc, system, got: list[ServeOption], why: str, pareto,
            replica_slots) -> tuple[list[ServeOption], str]:
    """Options of demand d on `system` with measured splits replaced (or dropped, if measured too
    slow); `pareto` and `replica_slots` are options.build's."""
    wl = d.workload
    splits = measured.keys(rows, m.id, system.id, wl.precision)
    if not splits:
        return got, why
    out = list(got)
    reasons = []
    for tp, pp in sorted(splits):
        cap, note = measured.capacity(measured.rows_for(rows, m.id, system.id, tp, pp, wl.precision),
                                      wl.input_tokens, wl.output_tokens, d.min_tokens_per_s, d.max_ttft_s)
        same = [o for o in out if (o.tp, o.pp) == (tp, pp)]
        if cap is None:
            out = [dataclasses.replace(o, basis_note=note + "; modelled") if o in same else o for o in out]
            continue
        out = [o for o in out if o not in same]
        slots = replica_slots(tp * pp, system)
        users = cap.users
        memory = serving.max_batch_by_memory(m, acc, wl, tp, pp)
        if memory >= 1:
            users = min(users, memory)
        if slots is None or users < 1:
            reasons.append(f"measured at TP{tp} PP{pp}: even {max(cap.users, 1)} user(s) get "
                           f"{1000 / cap.tpot_ms:.1f} tok/s, below {d.min_tokens_per_s:g} ({cap.sources})")
            continue
        at = measured.at(measured.rows_for(rows, m.id, system.id, tp, pp, wl.precision),
                         wl.input_tokens, wl.output_tokens, users)
        tpot, ttft = at
        est = serving.estimate(m, acc, wl, tp, pp, users)
        if ttft is None:
            ttft = est.ttft_ms
        binding = "memory" if users == memory and users < cap.users else (
            "measured-range" if users == cap.max_measured else "latency")
        out.append(ServeOption(d.key, system.id, acc.id, tp, pp, tp * pp, slots, users, 1000.0 / tpot,
                               ttft / 1e3, est.memory_gb_per_accelerator, est.memory_gb_capacity, est.weights_gb,
                               est.kv_gb, binding, est.regime, "measured", f"measured: {cap.sources}"))
    if not out:
        return [], (reasons[0] + f" (on {system.id})") if reasons else why
    return pareto(out), ""
