"""A replica's tensor parallelism splits the query heads evenly and the KV heads evenly (or each KV
head over a whole number of ranks), as vLLM's QKV layer asserts: phi-4's 10 KV heads allow TP1 and
TP2, never TP4 or TP8 (the serving review found TP4 planned and TP8 estimated)."""

from __future__ import annotations

from planner.data.catalog import load_catalog
from planner.options import build
from planner.physics import arch, serving

CAT = load_catalog()


def test_the_rule_follows_the_kv_heads():
    phi, llama, ds = CAT.models["phi-4"], CAT.models["llama-3.1-70b"], CAT.models["deepseek-v3"]
    assert (phi.attention_heads, phi.kv_heads) == (40, 10)
    assert [t for t in (1, 2, 4, 8) if arch.tp_splits(phi, t)] == [1, 2]
    assert all(arch.tp_splits(llama, t) for t in (1, 2, 4, 8))  # 8 KV heads
    assert arch.tp_splits(ds, 8)  # MLA: the latent is whole on every rank


def test_no_option_and_no_estimate_splits_the_kv_heads_unevenly(plan_cli):
    m, system = CAT.models["phi-4"], CAT.systems["l40s-x8"]
    wl = serving.Workload("bf16", "bf16", 512, 512, 4096)
    found, _ = build.serve_configs(m, CAT.accelerators[system.accelerator], system, wl, 10.0, None, "d")
    assert found and {o.tp for o in found} <= {1, 2}
    res = plan_cli("estimate", "--model", "phi-4", "--accelerator", "l40s", "--count", "4", "--tp", "4")
    assert res.code == 2 and "10 KV heads" in res.err and "use one of: 1, 2" in res.err, res.err
