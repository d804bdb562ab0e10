"""Serving an MoE with expert parallelism (EP) and data-parallel attention (DP attention).

The layout SGLang, vLLM wide-EP and TensorRT-LLM (`enable_attention_dp`) use for DeepSeek-V3/R1,
Kimi K2, Qwen3 MoE and gpt-oss at high throughput (reference/scaleout-moe.md §2.1): on a group of
N ranks, every rank is a whole attention replica serving its own 1/N of the sequences, and the
routed experts are split N ways (EP = N); tokens go to their experts and back by all-to-all.

    weights per rank = (replicated + routed experts / N) / PP
                       replicated = every weight but the routed experts (arch.replicated_bytes_...)
    KV per rank      = the KV of its own B/N sequences: the cache is split by sequence, so the MLA
                       latent (one KV head) is not copied N times as tensor-parallel attention
                       copies it (SGLang: DP attention "eliminates KV cache duplication"; TRT-LLM:
                       ~4,000 concurrent DeepSeek-R1 requests per 8x B200 with attention DP vs
                       500 with TP8, §2.1)
    step weight read = N x replicated (each rank reads its own copy) + routed experts touched by
                       the whole group's tokens (arch.active_weight_bytes)
    all-to-all       = per MoE layer, dispatch k x h bytes (FP8) and combine k x h x 2 bytes (BF16)
                       per token (§2.6), the (N - 1)/N that leaves the rank, over the scale-up link,
                       plus two collective latencies; dense layers need no collective
    batch cap        = Calibration.max_batch per rank (each attention-DP rank schedules its own
                       sequences: step.batch_cap)
The token overhead already divides by N for an MoE (step.token_seconds_per_layer). Load imbalance
between DP ranks and expert hot spots (EPLB) are not modelled: the figures are for balanced load.
"""

from __future__ import annotations

from planner.data.catalog import Model
from planner.data.jobs import Workload
from planner.physics import arch

DISPATCH_BYTES = 1.0
"""Bytes per hidden element sent to an expert (FP8 dispatch, DeepSeek production and DeepEP)."""
COMBINE_BYTES = 2.0
"""Bytes per hidden element sent back (BF16 combine)."""
LAYOUT = "ep-dp"
"""The name plans and estimates give this layout."""
NOTE = "modelled as expert parallelism"
"""How a serving placement's basis_note starts when it is laid out this way (options.build writes
it; the verifier and the explanations read it)."""


def applies(m: Model, tp: int) -> bool:
    """EP with DP attention is a layout of an MoE over more than one rank."""
    return m.is_moe and tp > 1


def weight_bytes_per_rank(m: Model, precision: str, ranks: int, pp: int) -> float:
    """(replicated + routed experts / ranks) / PP bytes on each accelerator."""
    whole = arch.weight_bytes(m, precision)
    replicated = arch.replicated_bytes_under_attention_dp(m, precision)
    return (replicated + (whole - replicated) / ranks) / pp


def step_weight_read(m: Model, precision: str, batch: int, ranks: int) -> float:
    """Weight bytes the whole group reads in one step: each rank its replicated part, plus the
    routed experts the group's `batch` tokens touch."""
    shared_once = arch.active_weight_bytes(m, precision, batch=batch, tp=1)
    return shared_once + (ranks - 1) * arch.replicated_bytes_under_attention_dp(m, precision)


def all_to_all_s(m: Model, tokens: float, ranks: int, layers_on_stage: int, gbps: float,
                 link_efficiency: float, latency_us: float) -> float:
    """Seconds of dispatch + combine for `tokens` tokens of the group on one pipeline stage."""
    _, n_moe = arch.layer_split(m)
    moe_layers = layers_on_stage * n_moe / m.layers
    per_token = m.experts_per_token * m.hidden_size * (DISPATCH_BYTES + COMBINE_BYTES) * (ranks - 1) / ranks
    wire = tokens / ranks * per_token / (link_efficiency * gbps * 1e9)
    return moe_layers * (2 * latency_us * 1e-6 + wire)


def slowest_rank_prompt(prompt: float, wl: Workload, ranks: int, chunk: float) -> float:
    """Prompt tokens the busiest data-parallel attention rank runs in a step that carries `prompt`
    prompt tokens over the group: a prompt's attention and every weight but the routed experts run
    on the one rank that holds its sequence, and the group waits for it at each MoE layer's
    all-to-all (the iteration time is the slowest rank's: TensorRT-LLM blog10, "ADP Balance
    Strategy", 2025, where round-robin placement left a balance ratio, average over most tokens
    per rank, of 54% on 8 GB200 with DeepSeek-V3). The step's prompts are whole requests of
    input_tokens (chunked at the engine's token budget, `chunk`) on distinct ranks: the busiest
    holds one whole chunk while fewer than `ranks` of them arrive together, an even share after."""
    if prompt <= 0:
        return 0.0
    return min(prompt, max(prompt / ranks, min(float(wl.input_tokens), chunk)))
