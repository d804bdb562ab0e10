"""Disaggregated serving as an option: one replica is a prefill pool plus a decode pool inside one
system (physics.disagg), the KV cache sent over the system's scale-up link.

For each system the best unit (most users per accelerator) over prefill and decode TP and pool
sizes that fit one system is offered beside the aggregated splits, when it serves more users per
accelerator than the best of them and meets the TTFT limit; the MILP chooses among them like any
option. Its basis_note says what it is and by how much it beats aggregated serving on the system
(physics.disagg.NOTE). Pooled demands (policy.pool_jobs) are not offered it: a pool shares
replicas of one split. Pools on two system types (prefill on one, decode on another, the KV over
the network) are options/crossdisagg.py.
"""

from __future__ import annotations

from planner.options.types import ServeOption
from planner.physics import arch, disagg, serving

POWERS = (1, 2, 4, 8, 16, 32, 64)


def _users_per_acc(o: ServeOption) -> float:
    return o.users_per_replica / o.accelerator_slots


def configs(m, acc, system, wl: serving.Workload, min_tps: float, max_ttft: float | None, demand: str,
            aggregated: list[ServeOption], slots_of, engine: str | None = None) -> list[ServeOption]:
    """The disaggregated option of one system, or none (see the module docstring)."""
    n = min(system.accelerators, system.scaleup_domain)
    if n < 2 or wl.attention_dp:
        return []
    best = None
    for tp_d in (t for t in POWERS if t < n and arch.tp_splits(m, t)):
        decode = disagg.decode_pool(m, acc, wl, tp_d, min_tps, engine=engine)
        if decode[0] < 1:
            continue
        for tp_p in (t for t in POWERS if t + tp_d <= n and arch.tp_splits(m, t)):
            for n_d in range(1, (n - tp_p) // tp_d + 1):
                n_p = (n - n_d * tp_d) // tp_p
                if best is not None and n_d * decode[0] / (n_p * tp_p + n_d * tp_d) <= \
                        best.users / best.accelerators * (1 + 1e-9):
                    continue  # at most n_d x the decode batch users (unit): it cannot beat the best
                u = disagg.unit(m, acc, wl, tp_p, n_p, tp_d, n_d, min_tps, engine=engine, decode=decode)
                if u is None or (max_ttft is not None and u.ttft_s > max_ttft):
                    continue
                if best is None or u.users / u.accelerators > best.users / best.accelerators * (1 + 1e-9):
                    best = u
    if best is None:
        return []
    slots = slots_of(best.accelerators, system)
    if slots is None:
        return []
    base = max(aggregated, key=_users_per_acc, default=None)
    gain = (best.users / slots) / _users_per_acc(base) if base is not None else float("inf")
    if gain <= 1.0 + 1e-9:
        return []
    est = serving.estimate(m, acc, wl, best.decode_tp, 1, best.decode_batch, engine=engine)
    than = (f"{gain:.2f}x the users per accelerator of the best aggregated split here "
            f"(TP{base.tp} PP{base.pp}, {base.users_per_replica} users on {base.accelerators_per_replica})"
            if base is not None else "no aggregated split meets the targets here")
    note = (f"{best.note()} on one {system.id}, the KV over its {acc.scaleup_kind} "
            f"({best.kv_transfer_s * 1e3:.1f} ms a prompt); {best.users} users, {than}")
    return [ServeOption(demand, system.id, acc.id, best.decode_tp, 1, best.accelerators, slots, best.users,
                        best.tokens_per_s_per_user, best.ttft_s, est.memory_gb_per_accelerator,
                        est.memory_gb_capacity, est.weights_gb, est.kv_gb, best.binding, est.regime,
                        basis_note=note)]
