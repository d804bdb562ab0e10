"""Disaggregated serving across two system types in the fleet MILP: one additive family.

Each half of a pair (options/crossdisagg.py) is an ordinary serving option with its own replicas
y[d,i,o,t] on its own offers, so the demand, capacity, rental, N+1, power and budget rows hold for
it unchanged: the decode half's users count in the demand row, the prefill half holds none. Per
demand d, pair q = (prefill system, decode system, TP_p, TP_d), network g (data.colocation.network_of:
your site, or one provider's region; each marketplace host its own) and year t, the prefill halves
on g admit the prompts the decode halves on g ask for (the KV cache crosses g's scale-out fabric,
never the internet between two providers):
  link   sum_{i prefill of q, o} P_i y[d,i,o,t] >= sum_{i decode of q, o} L_i y[d,i,o,t]
  most   the same left side <= the right side + P (whole replicas round up by less than one: no idle
         prefill replica; + 0 for a pooled demand, whose y is a continuous load)
with P_i prompts per second one prefill replica admits within the TTFT limit and L_i prompts per
second one decode replica asks (users / (OSL x TPOT)), physics.crossdisagg. A pooled demand's y is
its load on the pool's replicas (pooling.py; config_of keeps halves apart from aggregated replicas),
so the same rows hold for it.
"""

from __future__ import annotations

import pulp

from planner.data.colocation import network_of


def halves(fm) -> dict[tuple, list]:
    """(demand, pair, network, year) -> [(half, y variable)] over the cross-system halves' replicas."""
    out: dict[tuple, list] = {}
    for (dk, i, oid, t), v in sorted(fm.y.items()):
        half = fm.options.serve[dk][i].half
        if half is not None:
            out.setdefault((dk, half.pair, network_of(fm.offer(oid)), t), []).append((half, v))
    return out


def define_cross_links(fm) -> None:
    for (dk, pair, net, t), terms in sorted(halves(fm).items()):
        admit = pulp.lpSum(h.prompts_per_s * v for h, v in terms if h.role == "prefill")
        ask = pulp.lpSum(h.prompts_per_s * v for h, v in terms if h.role == "decode")
        fm.add("disagg-link", (dk, *pair, net, t), admit >= ask)
        # no idle prefill halves: whole replicas round up by less than one (a pooled demand's load is exact)
        one = 0.0 if fm.options.demands[dk].pool else max((h.prompts_per_s for h, _ in terms if h.role == "prefill"),
                                                           default=0.0)
        fm.add("disagg-link-most", (dk, *pair, net, t), admit <= ask + one)


def half_row(half) -> dict:
    """The placement's `disaggregated` object (plan contract: data.plan_parts.DisaggHalf)."""
    return {"role": half.role, "prefill_system": half.prefill_system, "prefill_tensor_parallel": half.prefill_tp,
            "decode_system": half.decode_system, "decode_tensor_parallel": half.decode_tp,
            "prompts_per_s_per_replica": round(half.prompts_per_s, 4),
            "kv_transfer_ms": round(half.kv_transfer_s * 1e3, 2)}
