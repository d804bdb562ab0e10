"""Issue 14: `plan estimate --decode-accelerator`: prefill on one node type, decode on another, the KV
cache over the network, against aggregated serving on each accelerator."""

from __future__ import annotations

import json

import pytest

from planner.data.catalog import load_catalog
from planner.data.jobs import Workload
from planner.physics import crossdisagg

LONG = ("--model", "llama-3.3-70b", "--precision", "fp8", "--input-tokens", "8192", "--output-tokens", "256",
        "--min-tokens-per-s-per-user", "40", "--max-ttft-s", "2", "--count", "8")


def est(plan_cli, *args):
    r = plan_cli("estimate", *args, "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_fixed_halves_match_the_physics_by_hand(plan_cli):
    out = est(plan_cli, *LONG, "--accelerator", "h100-sxm", "--decode-accelerator", "h200-sxm",
              "--tp", "2", "--decode-tp", "4")
    cat = load_catalog()
    m = cat.models["llama-3.3-70b"]
    sp, sd = cat.systems["h100-sxm-x8"], cat.systems["h200-sxm-x8"]
    wl = Workload("fp8", "fp8", 8192, 256)
    dh = crossdisagg.decode_half(m, cat.accelerators["h200-sxm"], wl, 4, 40.0)
    kv = crossdisagg.kv_network_s(m, wl, sp, 2, sd, 4)
    ph = crossdisagg.prefill_half(m, cat.accelerators["h100-sxm"], wl, 2, 2.0, kv)
    # 8,192 tokens x 160 KiB of fp8 KV (80 layers x 8 KV heads x 128 x 2) = 1.34 GB over min(2, 4) x 50 GB/s x 0.86
    assert kv * 1e3 == pytest.approx(8192 * 80 * 8 * 128 * 2 / (0.86 * 100e9) * 1e3, rel=1e-9)
    assert out["disaggregated_prefill_system"] == "h100-sxm-x8" and out["disaggregated_decode_system"] == "h200-sxm-x8"
    assert out["disaggregated_prefill_tp"] == 2 and out["disaggregated_decode_tp"] == 4
    assert out["disaggregated_kv_transfer_ms"] == pytest.approx(kv * 1e3, abs=1e-4)
    assert out["disaggregated_prefill_prompts_per_s"] == pytest.approx(ph.prompts_per_s, abs=1e-4)
    assert out["disaggregated_prefill_utilisation"] == pytest.approx(ph.rho, abs=1e-4)
    assert out["disaggregated_ttft_ms"] == pytest.approx(ph.ttft_s * 1e3, abs=1e-4)
    # rho is the most that meets 2 s, at most 70%: at TP2 the cap binds, the first token comes sooner
    assert ph.rho == pytest.approx(0.7) and out["disaggregated_ttft_ms"] < 2000
    assert out["disaggregated_decode_users"] == dh.users
    assert out["disaggregated_tpot_ms"] == pytest.approx(dh.tpot_s * 1e3, abs=1e-4) and dh.tpot_s <= 1 / 40
    ratio = dh.prompts_per_s / ph.prompts_per_s
    assert out["disaggregated_prefill_replicas_per_decode_replica"] == pytest.approx(ratio, abs=1e-4)
    assert out["disaggregated_users_per_accelerator"] == pytest.approx(dh.users / (4 + 2 * ratio), abs=1e-4)
    assert f"{dh.users} users" in out["disaggregated"] and "KV over the network" in out["disaggregated"]


def test_search_picks_the_most_users_per_accelerator_and_beats_aggregated_on_long_prompts(plan_cli):
    """8k-token prompts at 40 tok/s per user, first token within 2 s (scenarios/long-prompts.yaml):
    aggregated serving waits behind other prompts' prefills, the split does not."""
    best = est(plan_cli, *LONG, "--accelerator", "h100-sxm", "--decode-accelerator", "h200-sxm")
    for tp_p in (1, 2, 4, 8):
        for tp_d in (1, 2, 4, 8):
            r = plan_cli("estimate", *LONG, "--accelerator", "h100-sxm", "--decode-accelerator", "h200-sxm",
                         "--tp", str(tp_p), "--decode-tp", str(tp_d), "--format", "json")
            assert r.code == 0, r.err
            fixed = json.loads(r.out)
            assert fixed.get("disaggregated_users_per_accelerator", 0) <= best["disaggregated_users_per_accelerator"]
    per_acc = best["disaggregated_users_per_accelerator"]
    assert best["disaggregated_ttft_ms"] <= 2000 + 1e-3 and best["disaggregated_tpot_ms"] <= 25.0
    assert per_acc > 1.5 * best["aggregated_users_per_accelerator_on_prefill"]
    assert per_acc > 1.5 * best["aggregated_users_per_accelerator_on_decode"]
    assert "aggregated on h100-sxm" in best["disaggregated"] and "aggregated on h200-sxm" in best["disaggregated"]


def test_table_shows_the_split(plan_cli):
    r = plan_cli("estimate", *LONG, "--accelerator", "h100-sxm", "--decode-accelerator", "h200-sxm")
    assert r.code == 0, r.err
    assert "disaggregated_users_per_accelerator" in r.out and "prefill on h100-sxm-x8" in r.out


@pytest.mark.parametrize("args, where, words", [
    (("--accelerator", "h100-sxm", "--decode-accelerator", "mi300x"), "--decode-accelerator", "different vendors"),
    (("--accelerator", "h100-sxm", "--decode-accelerator", "a100-80gb"), "--decode-accelerator",
     "no catalog system of a100-80gb has a scale-out network"),
    (("--accelerator", "h100-pcie", "--decode-accelerator", "h200-sxm"), "--accelerator",
     "no catalog system of h100-pcie has a scale-out network"),
    (("--accelerator", "h100-sxm", "--decode-accelerator", "h100-sxm"), "--decode-accelerator",
     "is the prefill accelerator"),
    (("--accelerator", "h100-sxm", "--decode-accelerator", "h200-sxmm"), "--decode-accelerator",
     "unknown accelerator 'h200-sxmm'"),
    (("--accelerator", "h100-sxm", "--decode-tp", "2"), "--decode-tp", "add --decode-accelerator"),
    (("--accelerator", "h100-sxm", "--decode-accelerator", "h200-sxm", "--count", "8", "--decode-tp", "16"),
     "--decode-tp", "exceeds h200-sxm-x8's scale-up domain of 8"),
    (("--accelerator", "h100-sxm", "--decode-accelerator", "h200-sxm", "--max-throughput"), "--decode-accelerator",
     "drop --batch, --max-throughput and --pp"),
])
def test_bad_combinations_exit_2_with_what_where_and_how(plan_cli, args, where, words):
    r = plan_cli("estimate", "--model", "llama-3.3-70b", "--precision", "fp8", *args)
    assert r.code == 2
    assert f"error: {where}:" in r.err and words in r.err and "To fix:" in r.err
    assert "Traceback" not in r.err


def test_without_decode_accelerator_the_one_system_split_is_unchanged(plan_cli):
    out = est(plan_cli, "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--count", "8", "--precision", "fp8",
              "--input-tokens", "3000", "--output-tokens", "150", "--min-tokens-per-s-per-user", "30",
              "--disaggregated")
    assert "disaggregated_gain" in out and "disaggregated_prefill_system" not in out


def test_max_ttft_alone_sizes_an_aggregated_replicas_batch(plan_cli):
    """--max-ttft-s without --decode-accelerator (it was exit 2 then) sizes the batch of one aggregated
    replica: the most sequences whose loaded TTFT is within it."""
    import json

    args = ("estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp8",
            "--input-tokens", "1200", "--output-tokens", "300", "--min-tokens-per-s-per-user", "30", "--format", "json")
    free, held = (json.loads(plan_cli(*args, *extra).out) for extra in ((), ("--max-ttft-s", "0.3")))
    assert held["ttft_ms"] <= 300 < free["ttft_ms"] and 1 <= held["batch"] < free["batch"]
