"""Parameter counts, weight bytes, KV-cache bytes and FLOPs from a model's architecture.

Pure functions of a `planner.catalog.Model` row: no solver, no I/O. Every count is in raw
parameters or bytes (not billions, not GiB). Notation in the docstrings: h hidden size, L layers,
n_q / n_kv attention / KV heads, d head dim, E routed experts, k experts per token, S shared
experts, f dense MLP width (ffn_size), f_e expert MLP width (moe_ffn_size), V vocabulary.

Left out on purpose, because each is well under 0.1% of a model: RMSNorm/LayerNorm weights,
q/k norms, rotary tables, gpt-oss attention sinks (one scalar per head and layer), and
DeepSeek's multi-token-prediction module (not part of the 671B the model card counts).
"""

from __future__ import annotations

import math

from planner.data.catalog import Model
from planner.physics.memo import per_row

# Bytes per weight parameter, scales included.
#   int4  : 4-bit integers plus one fp16 scale per group of 128 (GPTQ/AWQ style): 0.5 + 2/128.
#   fp4   : NVFP4, 4-bit E2M1 plus one FP8 scale per 16 values: 4.5 bits = 9/16 byte
#           (aiconfigurator common.py).
#   mxfp4 : OCP MX FP4, 4-bit E2M1 plus one 8-bit power-of-two scale per 32 values: 4.25 bits.
#   nf4   : QLoRA NF4 with double quantisation, about 4.127 bits (QLoRA paper).
BYTES_PER_PARAM: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5 + 2 / 128,
    "fp4": 9 / 16,
    "nvfp4": 9 / 16,
    "mxfp4": 4.25 / 8,
    "nf4": 4.127 / 8,
}

# Bytes per KV-cache element. fp4 KV (NVFP4 layout) is rare, but engines are adding it.
KV_BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5625,
    "nvfp4": 0.5625,
}

# Embedding table and lm head are kept at 16 bits by every quantisation recipe we model.
EMBEDDING_BYTES_PER_PARAM = 2.0

# Families whose attention projections carry biases (q, k, v; and o for gpt-oss), and whose
# expert MLPs and routers carry biases (gpt-oss). Architectural facts of the family, read from
# the Hugging Face modeling code; the bias terms are small (<0.1%) but cost nothing to count.
QKV_BIAS_FAMILIES = frozenset({"qwen2", "qwen2.5", "gpt-oss"})
O_BIAS_FAMILIES = frozenset({"gpt-oss"})
MLP_BIAS_FAMILIES = frozenset({"gpt-oss"})


def bytes_per_param(precision: str) -> float:
    """Bytes per weight parameter in `precision` (see BYTES_PER_PARAM); ValueError if unknown."""
    try:
        return BYTES_PER_PARAM[precision.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown weight precision {precision!r}; "
                         f"known: {', '.join(sorted(BYTES_PER_PARAM))}") from None


def kv_bytes_per_element(kv_precision: str) -> float:
    """Bytes per KV-cache element in `kv_precision`; ValueError if unknown."""
    try:
        return KV_BYTES_PER_ELEMENT[kv_precision.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown KV-cache precision {kv_precision!r}; "
                         f"known: {', '.join(sorted(KV_BYTES_PER_ELEMENT))}") from None


# ----------------------------------------------------------------------------- parameter counts

def mla_dims(m: Model) -> tuple[int, int, int, int, int | None]:
    if None in (m.kv_lora_rank, m.rope_head_dim, m.qk_nope_head_dim, m.v_head_dim):
        raise ValueError(f"model '{m.id}' uses MLA but lacks kv_lora_rank, rope_head_dim, "
                         "qk_nope_head_dim or v_head_dim")
    return m.kv_lora_rank, m.rope_head_dim, m.qk_nope_head_dim, m.v_head_dim, m.q_lora_rank


def attention_params_per_layer(m: Model) -> int:
    """Attention weights of one layer.

    GQA/MHA: h*(n_q*d) [q] + 2*h*(n_kv*d) [k, v] + (n_q*d)*h [o], plus biases where the family
    has them (n_q*d + 2*n_kv*d for q/k/v, h for o).
    MLA:     q path  h*q_lora + q_lora*n_q*(nope+rope)   (or h*n_q*(nope+rope) without q_lora)
             + h*(kv_lora+rope)                            [kv_a: latent + shared rope key]
             + kv_lora*n_q*(nope+v)                        [kv_b: per-head k_nope and v]
             + n_q*v*h                                     [o]
    """
    h, n_q = m.hidden_size, m.attention_heads
    if m.attention == "mla":
        kv_lora, rope, nope, v, q_lora = mla_dims(m)
        q = h * q_lora + q_lora * n_q * (nope + rope) if q_lora else h * n_q * (nope + rope)
        return q + h * (kv_lora + rope) + kv_lora * n_q * (nope + v) + n_q * v * h
    d, n_kv = m.head_dim, m.kv_heads
    params = h * n_q * d + 2 * h * n_kv * d + n_q * d * h
    if m.family in QKV_BIAS_FAMILIES:
        params += n_q * d + 2 * n_kv * d
    if m.family in O_BIAS_FAMILIES:
        params += h
    return params


def expert_params(m: Model) -> int:
    """One expert's gated MLP (gate, up, down): 3*h*f_e, plus biases 2*f_e + h where the family
    has them. 0 for a dense model."""
    if not m.is_moe:
        return 0
    f_e = m.moe_ffn_size or m.ffn_size
    params = 3 * m.hidden_size * f_e
    if m.family in MLP_BIAS_FAMILIES:
        params += 2 * f_e + m.hidden_size
    return params


def router_params_per_layer(m: Model) -> int:
    """Router (gate) of one MoE layer: h*E, plus E biases where the family has them."""
    if not m.is_moe:
        return 0
    return m.hidden_size * m.experts + (m.experts if m.family in MLP_BIAS_FAMILIES else 0)


def layer_split(m: Model) -> tuple[int, int]:
    """(dense-MLP layers, MoE layers). A dense model has all L layers dense; an MoE has
    `dense_layers` leading dense layers and L - dense_layers MoE layers."""
    if not m.is_moe:
        return m.layers, 0
    return m.dense_layers, m.layers - m.dense_layers


@per_row
def param_counts(m: Model) -> dict:
    """Parameter counts by part, in raw parameters.

    embedding           = V*h, doubled when the lm head is not tied to the input embedding.
    attention_per_layer = see attention_params_per_layer.
    mlp_dense_per_layer = 3*h*f (gated MLP: gate, up, down).
    mlp_moe_per_layer   = E*expert + S*expert + h*E (all routed experts, shared experts, router).
    expert_params       = one expert, 3*h*f_e.
    total  = embedding + L*attention + n_dense*mlp_dense + n_moe*mlp_moe,
             n_dense = dense_layers (all L for a dense model), n_moe = L - n_dense.
    active = embedding + L*attention + n_dense*mlp_dense + n_moe*((k + S)*expert + router):
             parameters touched by one token, counting both embedding matrices as `total` does
             (the convention of Qwen and Mistral model cards).
    active_matmul = active less the untied input-embedding table, which a token reads one row
             of and multiplies by nothing (the convention of the DeepSeek-V3 and gpt-oss cards:
             "36.6B active including 0.9B output head"). Use it for FLOPs.
    Also: router_per_layer, dense_layers, moe_layers, non_embedding (= total - embedding).
    """
    h, V = m.hidden_size, m.vocab_size
    embedding = V * h * (1 if m.tied_embeddings else 2)
    attn = attention_params_per_layer(m)
    mlp_dense = 3 * h * m.ffn_size
    expert = expert_params(m)
    router = router_params_per_layer(m)
    n_dense, n_moe = layer_split(m)
    mlp_moe = (m.experts + m.shared_experts) * expert + router if m.is_moe else 0
    total = embedding + m.layers * attn + n_dense * mlp_dense + n_moe * mlp_moe
    active_moe = (m.experts_per_token + m.shared_experts) * expert + router if m.is_moe else 0
    active = embedding + m.layers * attn + n_dense * mlp_dense + n_moe * active_moe
    active_matmul = active - (0 if m.tied_embeddings else V * h)
    return {
        "embedding": embedding,
        "attention_per_layer": attn,
        "mlp_dense_per_layer": mlp_dense,
        "mlp_moe_per_layer": mlp_moe,
        "expert_params": expert,
        "router_per_layer": router,
        "dense_layers": n_dense,
        "moe_layers": n_moe,
        "total": total,
        "non_embedding": total - embedding,
        "active": active,
        "active_matmul": active_matmul,
    }


# ----------------------------------------------------------------------------- weight bytes

def _non_expert_bpp(m: Model, precision: str, non_expert_precision: str | None) -> float:
    """Bytes per parameter for linear weights outside the routed experts. MXFP4 checkpoints of
    MoE models (gpt-oss) quantise only the routed experts and keep attention, routers and dense
    parts in bf16, so an MoE at mxfp4 defaults to bf16 there; anything else defaults to
    `precision`."""
    if non_expert_precision is not None:
        return bytes_per_param(non_expert_precision)
    if m.is_moe and precision.lower() == "mxfp4":
        return bytes_per_param("bf16")
    return bytes_per_param(precision)


def _routed_expert_params(m: Model) -> int:
    _, n_moe = layer_split(m)
    return n_moe * m.experts * expert_params(m)


def weight_bytes(m: Model, precision: str, non_expert_precision: str | None = None) -> float:
    """Bytes of all weights, before any sharding.

    = routed-expert params * b(precision)
      + other linear params (attention, dense MLPs, shared experts, routers) * b(non-expert)
      + embedding and lm head * 2 bytes.
    b(non-expert) is b(precision) unless given, except an MoE at mxfp4 (see _non_expert_bpp).
    For a dense model this is simply linear params * b(precision) + embeddings * 2.
    """
    pc = param_counts(m)
    routed = _routed_expert_params(m)
    other_linear = pc["non_embedding"] - routed
    return (routed * bytes_per_param(precision)
            + other_linear * _non_expert_bpp(m, precision, non_expert_precision)
            + pc["embedding"] * EMBEDDING_BYTES_PER_PARAM)


def replicated_bytes_under_attention_dp(m: Model, precision: str,
                                        non_expert_precision: str | None = None) -> float:
    """Bytes every rank holds whole when an MoE runs data-parallel attention with expert-parallel
    routed experts: all weights but the routed experts (attention, dense MLPs, shared experts,
    routers, embedding and lm head)."""
    routed = _routed_expert_params(m) * bytes_per_param(precision)
    return weight_bytes(m, precision, non_expert_precision) - routed


def _tp_extra_copies(m: Model, tp: int) -> int:
    """Parameters held more than once across a tensor-parallel group of `tp` ranks (the extra
    copies, beyond the first): routers (replicated on every rank); for GQA the k/v projections
    when tp does not split the KV heads evenly (each rank holds ceil(n_kv/tp) heads, so
    tp*ceil(n_kv/tp) - n_kv heads are copies); for MLA the q_a and kv_a down-projections, which
    vLLM and SGLang keep replicated."""
    if tp <= 1:
        return 0
    h = m.hidden_size
    if m.attention == "mla":
        kv_lora, rope, _, _, q_lora = mla_dims(m)
        per_layer = h * (kv_lora + rope) + (h * q_lora if q_lora else 0)
        attn_extra = m.layers * per_layer * (tp - 1)
    else:
        extra_heads = tp * math.ceil(m.kv_heads / tp) - m.kv_heads
        attn_extra = m.layers * 2 * h * m.head_dim * extra_heads
    _, n_moe = layer_split(m)
    return attn_extra + n_moe * router_params_per_layer(m) * (tp - 1)


@per_row
def weight_bytes_per_rank(m: Model, precision: str, tp: int = 1, pp: int = 1,
                          non_expert_precision: str | None = None) -> float:
    """Weight bytes on one accelerator of a TP x PP replica, assuming an even split:
    (weight_bytes + replicated extra copies * b(non-expert)) / (tp * pp)."""
    if tp < 1 or pp < 1:
        raise ValueError("tp and pp must be at least 1")
    extra = _tp_extra_copies(m, tp) * _non_expert_bpp(m, precision, non_expert_precision)
    return (weight_bytes(m, precision, non_expert_precision) + extra) / (tp * pp)


def expected_experts_touched(experts: int, per_token: int, batch: int) -> float:
    """Expected distinct routed experts a layer reads for `batch` tokens under uniform,
    independent routing: E * (1 - (1 - k/E)^B). Equals k at B = 1 and tends to E."""
    if experts <= 0 or batch <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - per_token / experts) ** batch)


def active_weight_bytes(m: Model, precision: str, batch: int = 1, tp: int = 1,
                        non_expert_precision: str | None = None, terms: tuple | None = None) -> float:
    """Weight bytes read in one decode step of `batch` sequences, summed over the whole replica.

    = lm head (V*h*2; the shared matrix when tied)
      + input-embedding rows actually gathered, min(B, V)*h*2 when untied (the table itself is
        not streamed)
      + non-expert linear weights (attention, dense MLPs, shared experts, routers) * b(non-expert),
        plus the copies tensor parallelism replicates (see _tp_extra_copies)
      + n_moe * E*(1 - (1 - k/E)^B) * expert params * b(precision)   (routed experts touched).
    A dense model reads all its linear weights every step. `terms`: active_weight_terms(m,
    precision, tp, non_expert_precision), when the caller keeps it.
    """
    if batch < 1 or tp < 1:
        raise ValueError("batch and tp must be at least 1")
    non_expert, n_moe, expert, bpp = terms or active_weight_terms(m, precision, tp, non_expert_precision)
    V, h = m.vocab_size, m.hidden_size
    embed = V * h + (0 if m.tied_embeddings else min(batch, V) * h)
    touched = n_moe * expected_experts_touched(m.experts, m.experts_per_token, batch) * expert
    return embed * EMBEDDING_BYTES_PER_PARAM + non_expert + touched * bpp


@per_row
def active_weight_terms(m: Model, precision: str, tp: int = 1, non_expert_precision: str | None = None) -> tuple:
    """The terms of active_weight_bytes the batch does not change: (non-expert bytes with the TP
    copies, MoE layers, params of one expert, b(precision))."""
    pc = param_counts(m)
    non_expert = pc["non_embedding"] - _routed_expert_params(m) + _tp_extra_copies(m, tp)
    return (non_expert * _non_expert_bpp(m, precision, non_expert_precision), layer_split(m)[1],
            pc["expert_params"], bytes_per_param(precision))


# ----------------------------------------------------------------------------- KV cache

def kv_elements_per_token_per_layer(m: Model) -> int:
    """KV-cache elements one token stores in one layer: GQA/MHA 2*n_kv*d (a key and a value per
    KV head); MLA kv_lora_rank + rope_head_dim (the compressed latent plus the shared rope key)."""
    if m.attention == "mla":
        kv_lora, rope, _, _, _ = mla_dims(m)
        return kv_lora + rope
    return 2 * m.kv_heads * m.head_dim


def layer_counts(m: Model) -> tuple[int, int]:
    """(full-attention layers, sliding-window layers); no window means every layer is full."""
    sliding = min(m.sliding_window_layers, m.layers) if m.sliding_window else 0
    return m.layers - sliding, sliding


@per_row
def kv_bytes_for_sequence(m: Model, kv_precision: str, tokens: int) -> float:
    """KV-cache bytes one sequence of `tokens` tokens holds, all layers, before sharding:
    e * b * (full_layers * tokens + sliding_layers * min(tokens, window)),
    e = kv_elements_per_token_per_layer."""
    if tokens < 0:
        raise ValueError("tokens must be non-negative")
    full, sliding = layer_counts(m)
    stored = full * tokens + sliding * min(tokens, m.sliding_window or tokens)
    return kv_elements_per_token_per_layer(m) * kv_bytes_per_element(kv_precision) * stored


def kv_bytes_per_token(m: Model, kv_precision: str, context_tokens: int | None = None) -> float:
    """KV-cache bytes per token, whole model (all layers), before sharding.

    GQA/MHA: 2 * L * n_kv * d * b.   MLA: L * (kv_lora_rank + rope_head_dim) * b.
    Without `context_tokens` every layer counts (the full-attention upper bound). With it, a
    model with sliding-window layers gets the average over a sequence of that length,
    kv_bytes_for_sequence(m, p, context_tokens) / context_tokens.
    Llama-3.1-70B at fp8: 2*80*8*128*1 = 163,840. DeepSeek-V3 at bf16: 61*576*2 = 70,272.
    """
    if context_tokens:
        return kv_bytes_for_sequence(m, kv_precision, context_tokens) / context_tokens
    return m.layers * kv_elements_per_token_per_layer(m) * kv_bytes_per_element(kv_precision)


def tp_splits(m: Model, tp: int) -> bool:
    """Whether an engine splits the model's attention over `tp` tensor-parallel ranks: the query
    heads evenly, and (GQA/MHA) the KV heads evenly or each KV head over a whole number of ranks
    (vLLM: num_kv_heads % tp == 0, or tp % num_kv_heads == 0 with the KV heads replicated); MLA's
    latent is whole on every rank."""
    if m.attention_heads % tp:
        return False
    return m.attention == "mla" or m.kv_heads % tp == 0 or tp % m.kv_heads == 0


def kv_shards(m: Model, tp: int) -> int:
    """Ways the KV cache is split across `tp` tensor-parallel ranks.

    GQA/MHA: min(tp, n_kv): heads are split across ranks, and beyond n_kv ranks each KV head is
    replicated, so the per-rank cache stops shrinking.
    MLA: 1: the compressed latent is shared by all heads and every rank holds all of it.
    """
    if tp < 1:
        raise ValueError("tp must be at least 1")
    if m.attention == "mla":
        return 1
    return min(tp, m.kv_heads)


def kv_bytes_per_token_per_rank(m: Model, kv_precision: str, tp: int = 1,
                                context_tokens: int | None = None) -> float:
    """KV bytes per token on one TP rank. GQA/MHA: 2 * L * ceil(n_kv/tp) * d * b (equals
    kv_bytes_per_token / kv_shards when tp divides n_kv or exceeds it); MLA: not split."""
    whole = kv_bytes_per_token(m, kv_precision, context_tokens)
    if m.attention == "mla":
        return whole
    if tp < 1:
        raise ValueError("tp must be at least 1")
    return whole * math.ceil(m.kv_heads / tp) / m.kv_heads
