"""FLOPs per token of a model's forward pass (catalog facts only, physics.arch's parameter counts),
and the format attention's matmuls run in.

    matmul     = 2 x active_matmul parameters (arch.param_counts)
                 split for an MoE into the routed experts' share, 2 x n_moe x k x expert, and the
                 rest (attention projections, dense MLPs, shared experts, routers, lm head): the
                 part every data-parallel attention rank runs for its own tokens (moe.py)
    attention  = sum over layers of 2 x n_q x (d_qk + d_v) x ctx_l (QK^T and AV)
                 GQA/MHA d_qk = d_v = head_dim; MLA expanded for a prompt (d_qk = nope + rope,
                 d_v = v_head_dim), absorbed for a decode step (d_qk = kv_lora + rope, d_v = kv_lora)
"""

from __future__ import annotations

from planner.data.catalog import Accelerator, Model
from planner.data.jobs import Workload
from planner.physics import arch
from planner.physics.memo import per_row


DEFAULT_MAMF = 0.75
"""Measured best matmul / dense peak where the catalog has no measurement (median of C6)."""


def achievable(acc: Accelerator, precision: str) -> float:
    """Dense peak FLOP/s for the format `precision` computes in on this chip, times the chip's
    measured matmul efficiency (catalog mamf_bf16_fraction): what a perfect kernel reaches."""
    return acc.peak_tflops(precision) * 1e12 * (acc.mamf_bf16_fraction or DEFAULT_MAMF)


@per_row
def flops_per_token(m: Model) -> float:
    """Forward matmul FLOPs per token without the attention-score term: 2 * active_matmul
    (a multiply and an add per weight touched; the input-embedding lookup does no matmul).
    Training is about 3x this (forward + backward)."""
    return 2.0 * arch.param_counts(m)["active_matmul"]


@per_row
def routed_expert_flops_per_token(m: Model) -> float:
    """The routed experts' share of flops_per_token: 2 x MoE layers x experts per token x one
    expert's parameters (0 for a dense model). Under expert parallelism this work goes to the
    experts' ranks, wherever the token's attention ran."""
    if not m.is_moe:
        return 0.0
    _, n_moe = arch.layer_split(m)
    return 2.0 * n_moe * m.experts_per_token * arch.expert_params(m)


def _context_tokens(m: Model, context: float) -> float:
    full, sliding = arch.layer_counts(m)
    return full * context + sliding * min(context, m.sliding_window or context)


def attention_flops_per_token(m: Model, context: float) -> float:
    """Forward FLOPs of the attention scores and weighted values for one new token attending to
    `context` tokens: sum over layers of 2 * n_q * (d_qk + d_v) * ctx_l, where ctx_l =
    min(context, window) on sliding-window layers and context elsewhere.
    GQA/MHA d_qk = d_v = d, so this is 2 * 2 * L * context * n_q * d (QK^T and AV).
    MLA in its plain (non-absorbed) form: d_qk = nope + rope, d_v = v_head_dim.
    For a whole causal prefill of s tokens, sum over positions (about s/2 average context)."""
    if context < 0:
        raise ValueError("context must be non-negative")
    if m.attention == "mla":
        _, rope, nope, v, _ = arch.mla_dims(m)
        d_qk, d_v = nope + rope, v
    else:
        d_qk = d_v = m.head_dim
    return 2.0 * m.attention_heads * (d_qk + d_v) * _context_tokens(m, context)


def decode_attention_flops_per_token(m: Model, context: float) -> float:
    """attention_flops_per_token for one decode step. MLA decodes in its absorbed form, as the
    engines run it (DeepSeek-V2, arXiv 2405.04434 section 2.1.2: W_UK folds into the query and W_UV
    into the output projection, so the cache is never expanded; FlashMLA and vLLM's and TRT-LLM's
    MLA decode kernels): every head attends over the latent itself, d_qk = kv_lora_rank +
    rope_head_dim and d_v = kv_lora_rank (DeepSeek-V3: 576 + 512 against 192 + 128 expanded, 3.4x
    the FLOPs). A prompt keeps the expanded form, which is cheaper over many tokens."""
    if m.attention != "mla":
        return attention_flops_per_token(m, context)
    kv_lora, rope, _, _, _ = arch.mla_dims(m)
    return 2.0 * m.attention_heads * (kv_lora + rope + kv_lora) * _context_tokens(m, context)


def attention_precision(wl: Workload) -> str:
    """The format attention's matmuls run in: FP8 over an FP8 KV cache (TRT-LLM's FP8 context FMHA
    and XQA generation kernels, FlashMLA's FP8 path), else BF16, whatever the weights' format (an
    FP4 or FP8 model's attention does not run at its weights' peak)."""
    return "fp8" if wl.kv_precision == "fp8" else "bf16"
