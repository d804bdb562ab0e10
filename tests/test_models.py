"""The model catalog (catalog/models.yaml) against the architecture formulas in planner.perf.arch."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.data.catalog import _read_rows, _validate_rows
from planner.physics import arch, flops

MODELS_YAML = Path(__file__).resolve().parent.parent / "catalog" / "models.yaml"

REQUIRED = [
    "llama-2-7b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "llama-3.1-405b",
    "mixtral-8x7b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "gemma-3-27b", "deepseek-v3",
    "deepseek-r1", "gpt-oss-20b", "gpt-oss-120b", "kimi-k2",
]


@pytest.fixture(scope="module")
def models():
    return _validate_rows("models", _read_rows(MODELS_YAML), MODELS_YAML)


def test_required_models_present_and_sourced(models):
    missing = [i for i in REQUIRED if i not in models]
    assert not missing, f"missing model rows: {missing}"
    for m in models.values():
        assert "config.json" in m.source, f"{m.id}: source should name the config it was read from"
        assert m.active_params_b <= m.params_b


def test_rows_are_internally_consistent(models):
    for m in models.values():
        if m.is_moe:
            assert m.moe_ffn_size and 0 < m.experts_per_token <= m.experts, m.id
            assert m.dense_layers < m.layers, m.id
        else:
            assert m.experts_per_token == 0 and m.shared_experts == 0, m.id
        if m.attention == "mla":
            assert m.kv_heads == m.attention_heads, m.id
            assert m.head_dim == m.qk_nope_head_dim + m.rope_head_dim, m.id
        else:
            assert m.attention_heads % m.kv_heads == 0, m.id
            assert (m.kv_heads == m.attention_heads) == (m.attention == "mha"), m.id
        if m.sliding_window_layers:
            assert m.sliding_window and m.sliding_window_layers < m.layers, m.id


def test_total_params_match_published(models):
    errors = {}
    for m in models.values():
        total = arch.param_counts(m)["total"] / 1e9
        errors[m.id] = (total / m.params_b - 1, total, m.params_b)
    worst = max(errors, key=lambda k: abs(errors[k][0]))
    err, total, published = errors[worst]
    assert abs(err) <= 0.03, (f"worst total-parameter error: {worst} computes {total:.2f}B against "
                              f"published {published}B ({100 * err:+.1f}%)")


def test_active_params_match_published(models):
    """Publishers count "active" three ways: with both embedding matrices (Qwen, Mistral, Meta),
    with the output head only (DeepSeek, OpenAI), or with neither (Z.ai's GLM-4.5: 106B-A12B). The
    published figure must match one of them."""
    errors = {}
    for m in models.values():
        pc = arch.param_counts(m)
        head = m.vocab_size * m.hidden_size
        candidates = [pc["active"] / 1e9, pc["active_matmul"] / 1e9, (pc["active_matmul"] - head) / 1e9]
        best = min(candidates, key=lambda a: abs(a / m.active_params_b - 1))
        errors[m.id] = (best / m.active_params_b - 1, best, m.active_params_b)
    worst = max(errors, key=lambda k: abs(errors[k][0]))
    err, active, published = errors[worst]
    assert abs(err) <= 0.05, (f"worst active-parameter error: {worst} computes {active:.2f}B against "
                              f"published {published}B ({100 * err:+.1f}%)")


def test_dense_models_are_fully_active(models):
    for m in models.values():
        if not m.is_moe:
            pc = arch.param_counts(m)
            assert pc["active"] == pc["total"], m.id


def test_kv_bytes_per_token_anchors(models):
    assert arch.kv_bytes_per_token(models["llama-3.1-70b"], "fp8") == 163_840
    assert arch.kv_bytes_per_token(models["llama-3.1-70b"], "bf16") == 327_680
    assert arch.kv_bytes_per_token(models["deepseek-v3"], "bf16") == 70_272
    assert arch.kv_bytes_per_token(models["deepseek-r1"], "fp8") == 35_136


def test_weight_bytes_anchors(models):
    w70 = arch.weight_bytes(models["llama-3.1-70b"], "fp8")
    assert 67e9 < w70 < 74e9, w70                      # ~70 GB, embeddings kept at 2 bytes
    w8 = arch.weight_bytes(models["llama-3.1-8b"], "bf16")
    assert 15.5e9 < w8 < 16.5e9, w8                    # ~16 GB
    # gpt-oss-120b ships about 65 GB: MXFP4 experts, bf16 attention and embeddings.
    assert 60e9 < arch.weight_bytes(models["gpt-oss-120b"], "mxfp4") < 68e9
    # Lower precision, fewer bytes; the same ordering for every model.
    for m in models.values():
        sizes = [arch.weight_bytes(m, p) for p in ("bf16", "fp8", "fp4", "int4")]
        assert sizes == sorted(sizes, reverse=True), m.id


def test_bytes_per_param():
    assert arch.bytes_per_param("bf16") == 2
    assert arch.bytes_per_param("fp8") == arch.bytes_per_param("int8") == 1
    assert arch.bytes_per_param("int4") == pytest.approx(0.515625)
    assert arch.bytes_per_param("fp4") == pytest.approx(0.5625)
    assert arch.bytes_per_param("mxfp4") == pytest.approx(0.53125)
    assert arch.bytes_per_param("nf4") == pytest.approx(4.127 / 8)
    with pytest.raises(ValueError):
        arch.bytes_per_param("fp3")
    with pytest.raises(ValueError):
        arch.kv_bytes_per_element("int3")


def test_moe_touched_expert_bytes_grow_with_batch_and_saturate(models):
    for m in models.values():
        if not m.is_moe:
            continue
        p = m.native_precision
        readings = [arch.active_weight_bytes(m, p, batch=b) for b in (1, 2, 4, 8, 32, 128, 1024, 65536)]
        assert readings == sorted(readings), m.id
        assert readings[-1] > readings[0], m.id
        # Never more than every weight (plus the few embedding rows gathered for the batch).
        ceiling = arch.weight_bytes(m, p) + 65536 * m.hidden_size * 2
        assert readings[-1] <= ceiling, m.id
        assert arch.expected_experts_touched(m.experts, m.experts_per_token, 1) == pytest.approx(
            m.experts_per_token)
        assert arch.expected_experts_touched(m.experts, m.experts_per_token, 10**6) <= m.experts


def test_dense_models_read_all_weights_each_step(models):
    m = models["llama-3.1-70b"]
    pc = arch.param_counts(m)
    step = arch.active_weight_bytes(m, "bf16", batch=1)
    # Everything but the untied input-embedding table, of which one row is read.
    expected = arch.weight_bytes(m, "bf16") - (m.vocab_size - 1) * m.hidden_size * 2
    assert step == pytest.approx(expected)
    assert arch.active_weight_bytes(m, "bf16", batch=64) == pytest.approx(step + 63 * m.hidden_size * 2)
    assert pc["total"] > pc["active_matmul"]


def test_tensor_parallel_replication_only_adds(models):
    for m in models.values():
        p = m.native_precision
        one = arch.active_weight_bytes(m, p, batch=8, tp=1)
        assert arch.active_weight_bytes(m, p, batch=8, tp=8) >= one, m.id
        assert arch.weight_bytes_per_rank(m, p, tp=1) == pytest.approx(arch.weight_bytes(m, p))
        assert arch.weight_bytes_per_rank(m, p, tp=8) >= arch.weight_bytes(m, p) / 8, m.id


def test_kv_shards(models):
    gqa = models["llama-3.1-70b"]               # 8 KV heads
    assert [arch.kv_shards(gqa, tp) for tp in (1, 2, 4, 8, 16, 32)] == [1, 2, 4, 8, 8, 8]
    q = models["qwen3-235b-a22b"]               # 4 KV heads
    assert arch.kv_shards(q, 8) == 4
    assert arch.kv_shards(models["llama-2-7b"], 8) == 8   # MHA, 32 heads
    assert arch.kv_shards(models["deepseek-v3"], 8) == 1  # MLA latent is not split
    per_rank = arch.kv_bytes_per_token_per_rank(gqa, "fp8", tp=16)
    assert per_rank == arch.kv_bytes_per_token(gqa, "fp8") / 8
    assert arch.kv_bytes_per_token_per_rank(models["deepseek-v3"], "bf16", tp=8) == 70_272


def test_sliding_window_kv(models):
    m = models["gpt-oss-120b"]
    tokens = 65_536
    full = arch.kv_bytes_per_token(m, "bf16") * tokens
    windowed = arch.kv_bytes_for_sequence(m, "bf16", tokens)
    # Half the layers keep 128 tokens: a little over half the full-attention cache.
    assert windowed < 0.51 * full
    assert windowed == pytest.approx(full / 2 + full / 2 * 128 / tokens)
    assert arch.kv_bytes_per_token(m, "bf16", context_tokens=tokens) == pytest.approx(windowed / tokens)
    # Short sequences fit in the window: no saving.
    assert arch.kv_bytes_for_sequence(m, "bf16", 100) == pytest.approx(arch.kv_bytes_per_token(m, "bf16") * 100)
    g = models["gemma-3-27b"]
    assert arch.kv_bytes_for_sequence(g, "bf16", 131_072) < 0.2 * arch.kv_bytes_per_token(g, "bf16") * 131_072
    # A model without a window: per-sequence KV is per-token KV times tokens.
    ll = models["llama-3.1-8b"]
    assert arch.kv_bytes_for_sequence(ll, "fp8", 1000) == arch.kv_bytes_per_token(ll, "fp8") * 1000


def test_flops(models):
    m = models["llama-3.1-70b"]
    assert flops.flops_per_token(m) == 2 * arch.param_counts(m)["active_matmul"]
    # 2 * 2 * L * context * n_q * d_head for GQA.
    assert flops.attention_flops_per_token(m, 1000) == 2 * 2 * 80 * 1000 * 64 * 128
    ds = models["deepseek-v3"]
    assert flops.flops_per_token(ds) == pytest.approx(2 * 36.6e9, rel=0.02)
    oss = models["gpt-oss-120b"]
    assert flops.attention_flops_per_token(oss, 100_000) < 0.51 * 2 * 2 * 36 * 100_000 * 64 * 64
