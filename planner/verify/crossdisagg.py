"""Placements that are halves of a replica disaggregated across two system types, re-derived from
the physics (physics.crossdisagg), independently of the options and the MILP: each half's system
and TP match its pair, its prompts per second, speed and TTFT are the physics', and per demand and
pair and network (data.colocation.network_of: one site, never two providers) the prefill halves
admit at least the prompts the decode halves' users send."""

from __future__ import annotations

from planner.data.colocation import network_of
from planner.physics import crossdisagg
from planner.verify.common import Verification, close


def check_half(p: dict, part, job, m, cat, v: Verification, where: str, links: dict) -> tuple[int, float, float]:
    """(users one replica may hold, tokens/s per user, TTFT s) of half placement p; records the
    prompts per second its replicas admit or send in links[(prefill system, decode system, TPs,
    network of its offer)]."""
    h = p["disaggregated"]
    sp, sd = cat.systems.get(h["prefill_system"]), cat.systems.get(h["decode_system"])
    mine = sp if h["role"] == "prefill" else sd
    tp_p, tp_d = h["prefill_tensor_parallel"], h["decode_tensor_parallel"]
    if not v.check("disaggregation", sp is not None and sd is not None and mine.id == p["system"]
                   and p["tensor_parallel"] == (tp_p if h["role"] == "prefill" else tp_d)
                   and p["pipeline_parallel"] == 1,
                   f"{where}: a {h['role']} half that is not the {h['role']} side of its pair "
                   f"({h['prefill_system']} TP{tp_p} -> {h['decode_system']} TP{tp_d})"):
        return 0, 0.0, float("inf")
    ap, ad = cat.accelerators[sp.accelerator], cat.accelerators[sd.accelerator]
    if not v.check("disaggregation", crossdisagg.linked(sp, sd, ap, ad),
                   f"{where}: no KV path from {sp.id} to {sd.id} (a scale-out network on both, one vendor)"):
        return 0, 0.0, float("inf")
    engine = getattr(job, "engine", None)
    wl = part.workload
    kv = crossdisagg.kv_network_s(m, wl, sp, tp_p, sd, tp_d)
    dh = crossdisagg.decode_half(m, ad, wl, tp_d, part.min_tokens_per_s, engine=engine)
    ph = crossdisagg.prefill_half(m, ap, wl, tp_p, part.max_ttft_s, kv, engine=engine)
    if not v.check("disaggregation", dh is not None and ph is not None,
                   f"{where}: the pair {sp.id} TP{tp_p} -> {sd.id} TP{tp_d} cannot meet the targets"):
        return 0, 0.0, float("inf")
    pps = ph.prompts_per_s if h["role"] == "prefill" else dh.prompts_per_s
    v.check("disaggregation", close(h["prompts_per_s_per_replica"], pps, 1e-3, 1e-4),
            f"{where}: reports {h['prompts_per_s_per_replica']} prompts/s a replica, physics gives {pps:.4f}")
    v.check("disaggregation", close(h["kv_transfer_ms"], kv * 1e3, 1e-3, 0.01),
            f"{where}: reports the KV over the network in {h['kv_transfer_ms']} ms, physics gives {kv * 1e3:.2f}")
    offer = cat.offers.get(p["offer"])
    net = network_of(offer) if offer is not None else p["offer"]
    side = links.setdefault((sp.id, sd.id, tp_p, tp_d, net), {"prefill": 0.0, "decode": 0.0, "rounding": 0.0})
    side[h["role"]] += (p["replica_load"] if "pool" in p else p["replicas"]) * pps  # a pooled part: its load
    if "pool" in p:  # the plan states a load to 4 decimals
        side["rounding"] += 5e-5 * pps
    return (0 if h["role"] == "prefill" else dh.users), 1.0 / dh.tpot_s, ph.ttft_s


def check_links(part, links: dict, v: Verification) -> None:
    """Per pair: the prefill halves admit the prompts the decode halves send."""
    for (p_id, d_id, tp_p, tp_d, net), side in sorted(links.items()):
        v.check("disaggregation", side["prefill"] >= side["decode"] * (1 - 1e-6) - side["rounding"],
                f"'{part.key}': prefill on {p_id} TP{tp_p} admits {side['prefill']:.2f} prompts/s at {net}, decode on "
                f"{d_id} TP{tp_d} there sends {side['decode']:.2f} (a KV cache crosses one site's network, not two)")
