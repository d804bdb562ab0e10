"""The performance model (planner.perf.serving / training) against facts a user would notice,
physical properties that must hold for any input, and the public measurements it is fitted on."""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.data.catalog import Model, _read_rows, _validate_rows
from planner.physics import arch, flops, serving, training
from planner.physics.calibration import Calibration

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "catalog"

ACCS = _validate_rows("accelerators", _read_rows(CATALOG / "accelerators.csv"), CATALOG / "accelerators.csv")
MODELS = _validate_rows("models", _read_rows(CATALOG / "models.yaml"), CATALOG / "models.yaml")

# LLaMA-65B (Touvron et al. 2023), defined inline: it is not in the catalog.
LLAMA_65B = Model(
    id="llama-65b", name="LLaMA 65B", family="llama", source="LLaMA paper, table 2 (test fixture)",
    as_of=dt.date(2026, 12, 1), params_b=65.2, active_params_b=65.2, layers=80, hidden_size=8192,
    attention_heads=64, kv_heads=64, head_dim=128, ffn_size=22016, vocab_size=32000, attention="mha",
)

PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def wl(precision="bf16", kv=None, isl=1024, osl=256, ctx=None) -> serving.Workload:
    kv = kv or ("bf16" if precision == "bf16" else "fp8")  # 8-bit KV beside quantised weights
    return serving.Workload(precision=precision, kv_precision=kv, input_tokens=isl,
                            output_tokens=osl, context_tokens=ctx)


# ----------------------------------------------------------------------------- capacity facts

def test_27b_bf16_needs_more_than_48gb_but_fits_80gb():
    gemma = MODELS["gemma-3-27b"]
    for card in ("l40s", "a6000"):
        est = serving.estimate(gemma, ACCS[card], wl("bf16"))
        assert not est.fits and est.regime == "capacity", card
    for card in ("a100-80gb", "h100-sxm"):
        assert serving.max_batch_by_memory(gemma, ACCS[card], wl("bf16"), 1, 1) >= 1, card


@pytest.mark.parametrize("precision", ["fp8", "int8"])
def test_27b_at_8_bits_fits_48gb(precision):
    assert serving.max_batch_by_memory(MODELS["gemma-3-27b"], ACCS["l40s"], wl(precision), 1, 1) >= 1


def test_qlora_8b_needs_10_to_16_gb():
    gb = training.memory_per_acc(MODELS["llama-3.1-8b"], "qlora", 1, seq=2048) / 1e9
    assert 10 <= gb <= 16


@pytest.mark.parametrize("card", ["l40s", "a6000"])
def test_qlora_65b_fits_one_48gb_card(card):
    assert arch.param_counts(LLAMA_65B)["total"] / 1e9 == pytest.approx(65.2, rel=0.01)
    assert training.accelerators_min(LLAMA_65B, ACCS[card], "qlora", seq=2048) == 1


def test_llama70b_fp8_kv_for_200_users_at_8k_is_about_270gb():
    m = MODELS["llama-3.1-70b"]
    assert arch.kv_bytes_per_token(m, "fp8") == 163_840
    per_seq = serving.kv_per_seq_per_acc(m, wl("fp8", ctx=8192), tp=1, pp=1)
    total = 200 * per_seq
    assert total == pytest.approx(163_840 * 8192 * 200, rel=1e-9)
    assert total == pytest.approx(270e9, rel=0.05)


# ----------------------------------------------------------------------------- regimes

def test_batch1_decode_is_bandwidth_bound():
    est = serving.estimate(MODELS["llama-3.1-70b"], ACCS["h200-sxm"], wl("fp8"), batch=1)
    assert est.fits and est.regime == "bandwidth"
    # a 70 GB read at ~4.8 TB/s: tens of ms per token, not 1 or 1000
    assert 10 < est.tpot_ms < 40


def test_long_prefill_is_compute_bound():
    m, acc, cal = MODELS["llama-3.1-70b"], ACCS["h200-sxm"], Calibration.load()
    s = 8192
    work = s * (flops.flops_per_token(m) + flops.attention_flops_per_token(m, s / 2))
    t_flops = work / (cal.prefill_mfu * flops.achievable(acc, "fp8"))
    t_read = arch.weight_bytes(m, "fp8") / (acc.mem_bw_tbps * 1e12 * cal.eta_bw)
    assert t_flops > 20 * t_read
    ttft = serving.ttft_s(m, acc, wl("fp8", isl=s), tp=1, pp=1, cal=cal)
    assert ttft == pytest.approx(t_flops, rel=0.25)  # the rest is overheads


def test_full_finetune_70b_on_48gb_cards_needs_many():
    est = training.estimate(MODELS["llama-3.1-70b"], ACCS["l40s"], "full", tokens=1e8, count=8)
    assert not est.fits and est.regime == "capacity"
    assert est.accelerators_min >= 16


def test_tp_over_pcie_is_slower_than_over_nvlink():
    """Same chip facts but a PCIe link instead of NVLink: TP8 throughput must drop."""
    m, acc = MODELS["llama-3.1-70b"], ACCS["h100-sxm"]
    pcie = serving.Link("pcie", 63.0)
    fast = serving.estimate(m, acc, wl("fp8"), tp=8, batch=256)
    slow = serving.estimate(m, acc, wl("fp8"), tp=8, batch=256, link=pcie)
    assert slow.tokens_per_s < 0.8 * fast.tokens_per_s


# ----------------------------------------------------------------------------- properties

PROP_MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen3-30b-a3b", "gemma-3-27b", "gpt-oss-20b"]
PROP_ACCS = ["h100-sxm", "l40s", "b200", "mi300x", "rtx-4090", "a100-80gb"]
models_st = st.sampled_from(PROP_MODELS).map(MODELS.__getitem__)
accs_st = st.sampled_from(PROP_ACCS).map(ACCS.__getitem__)
prec_st = st.sampled_from(["bf16", "fp8", "int4"])
tp_st = st.sampled_from([1, 2, 4, 8])
pp_st = st.sampled_from([1, 2, 4])


@PROPS
@given(m=models_st, acc=accs_st, p=prec_st, tp=tp_st, pp=pp_st, batch=st.integers(1, 512),
       isl=st.integers(1, 16384), osl=st.integers(1, 4096), scale=st.floats(1.0, 4.0))
def test_more_bandwidth_is_never_slower(m, acc, p, tp, pp, batch, isl, osl, scale):
    faster = acc.model_copy(update={"mem_bw_tbps": acc.mem_bw_tbps * scale})
    w = wl(p, isl=isl, osl=osl)
    base = serving.estimate(m, acc, w, tp, pp, batch)
    more = serving.estimate(m, faster, w, tp, pp, batch)
    assert more.tpot_ms <= base.tpot_ms * (1 + 1e-9)
    assert more.ttft_ms <= base.ttft_ms * (1 + 1e-9)


@PROPS
@given(m=models_st, acc=accs_st, p=prec_st, tp=tp_st, pp=pp_st, batch=st.integers(1, 256),
       ctx=st.integers(1, 131072), extra=st.integers(1, 65536))
def test_more_context_never_needs_less_memory(m, acc, p, tp, pp, batch, ctx, extra):
    short, long_ = wl(p, ctx=ctx), wl(p, ctx=ctx + extra)
    assert serving.kv_per_seq_per_acc(m, long_, tp, pp) >= serving.kv_per_seq_per_acc(m, short, tp, pp)
    a = serving.estimate(m, acc, short, tp, pp, batch)
    b = serving.estimate(m, acc, long_, tp, pp, batch)
    assert b.memory_gb_per_accelerator >= a.memory_gb_per_accelerator
    assert serving.max_batch_by_memory(m, acc, long_, tp, pp) <= serving.max_batch_by_memory(m, acc, short, tp, pp)


@PROPS
@given(m=models_st, acc=accs_st, p=prec_st, tp=tp_st, pp=pp_st, b1=st.integers(1, 1024),
       more=st.integers(0, 1024), isl=st.integers(1, 8192), osl=st.integers(1, 2048))
def test_larger_batch_never_raises_per_user_speed(m, acc, p, tp, pp, b1, more, isl, osl):
    w = wl(p, isl=isl, osl=osl)
    small = serving.estimate(m, acc, w, tp, pp, b1)
    large = serving.estimate(m, acc, w, tp, pp, b1 + more)
    assert large.tokens_per_s_per_user <= small.tokens_per_s_per_user * (1 + 1e-9)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=models_st, acc=accs_st, p=st.sampled_from(["bf16", "fp8"]), n=st.integers(1, 12),
       extra=st.integers(1, 12), isl=st.integers(16, 8192), osl=st.integers(16, 2048))
def test_more_accelerators_never_lower_best_throughput(m, acc, p, n, extra, isl, osl):
    w = wl(p, isl=isl, osl=osl)
    few = serving.max_throughput(m, acc, w, count=n, domain=8)
    many = serving.max_throughput(m, acc, w, count=n + extra, domain=8)
    if few is not None:
        assert many is not None
        assert many.tokens_per_s >= few.tokens_per_s * (1 - 1e-9)


# ----------------------------------------------------------------------------- calibration

def _fidelity():
    spec = importlib.util.spec_from_file_location("bench_fidelity", ROOT / "benchmarks" / "fidelity.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_calibration_data_covers_every_section_with_sources():
    fid = _fidelity()
    rows = fid.load_rows()
    assert len(rows) >= 150
    assert {"C3a", "C3b", "C4", "C5"} <= {r["section"] for r in rows}
    for r in rows:
        assert r["model"] in MODELS and r["accelerator"] in ACCS, r["id"]
        assert r["source"] and r["measured"] > 0, r["id"]
        assert r["count"] % (r["tp"] * r["pp"]) == 0, r["id"]


def test_fidelity_targets_hold():
    fid = _fidelity()
    cal = Calibration.load()
    assert "calibration_data.csv" in cal.fitted_on
    results = fid.evaluate(fid.load_rows(), ACCS, MODELS, cal)
    summary = fid.summary(results)
    n, median, worst = summary["overall"]
    assert n >= 150
    assert median <= fid.TARGET_MEDIAN, summary
    assert worst <= fid.TARGET_WORST, summary
    for section, (_, med, _) in summary.items():
        assert med <= 20, (section, summary)
