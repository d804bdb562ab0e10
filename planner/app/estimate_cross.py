"""`plan estimate --disaggregated --decode-accelerator B`: prompts prefilled on --accelerator's node,
tokens decoded on B's node, each prompt's KV cache sent over the nodes' scale-out network
(physics/crossdisagg.py has the formulas), against aggregated serving on each accelerator alone.

Each accelerator is read as its catalog system with a scale-out network (systems.scaleout_gbps; the
most accelerators first when several have one). Every pair of power-of-two tensor-parallel sizes
within each system's scale-up domain is sized (--tp fixes the prefill half's, --decode-tp the decode
half's); the pair reported serves the most users per accelerator:
    users per accelerator = b / (TP_d + TP_p x L / P)
(b users a decode replica, L prompts/s it asks, P prompts/s a prefill replica admits within the
TTFT limit: L / P prefill replicas per decode replica). Aggregated serving on one accelerator: the
(TP, PP) split within its system whose largest batch meets the same per-user speed and TTFT limit
(serving.largest_batch) serves the most users per accelerator, batch / (TP x PP)."""

from __future__ import annotations

from planner.data.errors import InputError, Problem, suggest
from planner.physics import crossdisagg, serving

POWERS = (1, 2, 4, 8, 16, 32, 64)


def network_system(cat, acc_id: str, flag: str):
    """The catalog system of acc_id with a scale-out network; exit 2 if none has one."""
    found = sorted((s for s in cat.systems.values() if s.accelerator == acc_id and s.scaleout_gbps),
                   key=lambda s: (-s.accelerators, s.id))
    if found:
        return found[0]
    have = sorted({s.accelerator for s in cat.systems.values() if s.scaleout_gbps})
    raise InputError([Problem(f"no catalog system of {acc_id} has a scale-out network (systems.scaleout_gbps), "
                              "so its KV cache cannot be sent between nodes", flag,
                              "use one of: " + ", ".join(have) + "; or give a system row with scaleout_gbps "
                              "through --catalog")])


def check(req, cat) -> list[Problem]:
    """What is wrong with --decode-accelerator / --decode-tp before anything is sized."""
    dec = req.decode_accelerator
    if dec not in cat.accelerators:
        return [Problem(f"unknown accelerator '{dec}'", "--decode-accelerator",
                        suggest(dec, cat.accelerators, "accelerators"))]
    if req.accelerator not in cat.accelerators:
        return []  # reported against --accelerator
    problems = []
    ap, ad = cat.accelerators[req.accelerator], cat.accelerators[dec]
    if dec == req.accelerator:
        problems.append(Problem(f"--decode-accelerator {dec} is the prefill accelerator", "--decode-accelerator",
                                "drop --decode-accelerator for prefill and decode pools inside one system, or "
                                "name another accelerator"))
    elif ap.vendor != ad.vendor:
        problems.append(Problem(f"{ap.id} ({ap.vendor}) and {dec} ({ad.vendor}) are of different vendors: a KV "
                                "cache is not moved between two vendors' engines", "--decode-accelerator",
                                f"use a {ap.vendor} accelerator to decode on"))
    if req.stage != "serve":
        problems.append(Problem("--decode-accelerator sizes a serving split", "--stage", "use --stage serve"))
    if req.max_throughput or req.batch is not None or req.pp is not None:
        problems.append(Problem("the cross-system split sizes its own batches and uses no pipeline parallelism",
                                "--decode-accelerator", "drop --batch, --max-throughput and --pp"))
    return problems


def _tps(system, fixed: int | None) -> list[int]:
    limit = min(system.scaleup_domain, system.accelerators)
    if fixed is not None:
        return [fixed] if fixed <= limit else []
    return [t for t in POWERS if t <= limit]


def _aggregated(m, acc, system, wl, min_tps, max_ttft, engine) -> dict | None:
    best = None
    for tp, pp in serving.parallel_splits(system.accelerators, system.scaleup_domain, m.layers):
        b, _ = serving.largest_batch(m, acc, wl, tp, pp, min_tps, max_ttft, engine=engine)
        if b >= 1 and (best is None or b / (tp * pp) > best["users_per_accelerator"] * (1 + 1e-9)):
            best = {"tp": tp, "pp": pp, "users": b, "users_per_accelerator": b / (tp * pp)}
    return best


def run(req, cat, m, wl) -> dict:
    """The cross-system estimate's keys (all prefixed disaggregated_ or aggregated_)."""
    sp = network_system(cat, req.accelerator, "--accelerator")
    sd = network_system(cat, req.decode_accelerator, "--decode-accelerator")
    ap, ad = cat.accelerators[sp.accelerator], cat.accelerators[sd.accelerator]
    for flag, tp, system in (("--tp", req.tp, sp), ("--decode-tp", req.decode_tp, sd)):
        if tp is not None and not _tps(system, tp):
            raise InputError([Problem(f"{flag} {tp} exceeds {system.id}'s scale-up domain of "
                                      f"{min(system.scaleup_domain, system.accelerators)}", flag,
                                      f"use at most {min(system.scaleup_domain, system.accelerators)}")])
    min_tps, max_ttft, engine = req.min_tokens_per_s_per_user, req.max_ttft_s, req.engine
    best = None
    for tp_d in _tps(sd, req.decode_tp):
        dh = crossdisagg.decode_half(m, ad, wl, tp_d, min_tps, engine=engine)
        if dh is None:
            continue
        for tp_p in _tps(sp, req.tp):
            kv = crossdisagg.kv_network_s(m, wl, sp, tp_p, sd, tp_d)
            ph = crossdisagg.prefill_half(m, ap, wl, tp_p, max_ttft, kv, engine=engine)
            if ph is None:
                continue
            ratio = dh.prompts_per_s / ph.prompts_per_s
            per_acc = dh.users / (tp_d + tp_p * ratio)
            if best is None or per_acc > best[0] * (1 + 1e-9):
                best = (per_acc, ph, dh, ratio)
    agg = {"prefill": _aggregated(m, ap, sp, wl, min_tps, max_ttft, engine),
           "decode": _aggregated(m, ad, sd, wl, min_tps, max_ttft, engine)}
    out = {"disaggregated_prefill_system": sp.id, "disaggregated_decode_system": sd.id}
    for side, a in agg.items():
        out[f"aggregated_users_per_accelerator_on_{side}"] = round(a["users_per_accelerator"], 4) if a else None
    if best is None:
        out["disaggregated"] = (f"no split fits: no prefill half on {sp.id} meets the first-token limit with "
                                f"the KV transfer, or no decode half on {sd.id} meets the per-user speed")
        return out
    per_acc, ph, dh, ratio = best
    versus = "; ".join(f"{a['users_per_accelerator']:.2f} aggregated on {acc.id} (TP{a['tp']} PP{a['pp']}, "
                       f"{a['users']} users a replica)" if a else f"none aggregated on {acc.id}"
                       for acc, a in ((ap, agg["prefill"]), (ad, agg["decode"])))
    out.update({
        "disaggregated": (f"prefill on {sp.id} TP{ph.tp} ({ph.prompts_per_s:.3g} prompts/s a replica, utilisation "
                          f"{ph.rho:.0%}, first token {ph.ttft_s * 1e3:,.0f} ms incl. queue wait and "
                          f"{ph.kv_transfer_s * 1e3:.1f} ms of KV over the network), decode on {sd.id} TP{dh.tp} "
                          f"({dh.users} users, {dh.tpot_s * 1e3:.1f} ms a token), {ratio:.2f} prefill replicas per "
                          f"decode replica: {per_acc:.2f} users per accelerator against {versus}"),
        "disaggregated_prefill_tp": ph.tp,
        "disaggregated_prefill_prompts_per_s": round(ph.prompts_per_s, 4),
        "disaggregated_prefill_utilisation": round(ph.rho, 4),
        "disaggregated_ttft_ms": round(ph.ttft_s * 1e3, 4),
        "disaggregated_kv_transfer_ms": round(ph.kv_transfer_s * 1e3, 4),
        "disaggregated_decode_tp": dh.tp,
        "disaggregated_decode_users": dh.users,
        "disaggregated_tpot_ms": round(dh.tpot_s * 1e3, 4),
        "disaggregated_prefill_replicas_per_decode_replica": round(ratio, 4),
        "disaggregated_users_per_accelerator": round(per_acc, 4),
    })
    return out
