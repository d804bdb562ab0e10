"""The performance model's few global factors, fitted by benchmarks/calibrate.py.

No per-model, per-accelerator or per-row factor exists: every accelerator shares these, and only
its catalog facts (bandwidth, dense peak, measured matmul efficiency, interconnect) differ.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache
from pathlib import Path

PATH = Path(__file__).with_name("calibration.json")


@dataclass(frozen=True)
class Calibration:
    eta_bw: float = 0.80
    """Fraction of peak memory bandwidth that decode reaches (aiconfigurator uses 0.8)."""
    layer_overhead_us: float = 40.0
    """Fixed cost per layer per decode step: kernel launches and synchronisation (modeling.md)."""
    token_overhead_us: float = 0.0
    """Non-matmul work per token per layer that tensor parallelism does not split (norms, residual
    adds, activation quantisation, MoE routing, sampling): scales with tokens processed, not weights."""
    allreduce_latency_us: float = 12.0
    """Latency of one tensor-parallel all-reduce, on top of its bytes over the link."""
    link_efficiency: float = 0.8
    """Fraction of the scale-up link's bandwidth an all-reduce reaches (88% measured on NVLink4)."""
    decode_mfu: float = 0.70
    """Fraction of achievable matmul throughput (peak x measured MAMF) batched decode reaches."""
    prefill_mfu: float = 0.70
    """Same for prefill (aiconfigurator Llama-70B prefill: 0.42-0.70 of peak at bf16)."""
    train_mfu: float = 0.50
    """Same for a training step's matmuls (planner.physics.train_step). Default: MFU 0.40 on an
    H100 (MAMF 0.80) is 0.50 of achievable (Megatron 41-56% of peak, Llama 3.1 pretraining 38-43%);
    benchmarks/calibrate.py sets it so that Llama3-8B on 8x H100 in FP8 trains at the 14,451
    tokens/s per GPU of NVIDIA's Megatron-Bridge performance summary, with the memory-bound and
    tensor-parallel terms beside it."""
    train_act_bytes: float = 400.0
    """Bytes the memory-bound kernels of a training step move per token per layer per hidden unit
    (norms, SwiGLU, residuals, RoPE, FP8/FP4 casts and transposes, dropout, forward and backward;
    planner.physics.train_step). Fitted on the MLPerf Training rows (benchmarks/training_ratios.py)."""
    train_tp_exposed: float = 0.5
    """Share of a training step's tensor-parallel traffic not hidden behind the matmuls (NeMo
    overlaps TP communication with GEMMs). Fitted on the MLPerf Training rows."""
    train_ep_exposed: float = 0.3
    """Share of an MoE's expert-parallel all-to-all in training not hidden behind compute
    (planner.physics.train_step.expert_all_to_all_s; NeMo and DeepSeek overlap most of it). Fitted
    on Megatron-Bridge's DeepSeek-V3 pretraining rates on H100, B200, B300, GB200 and GB300
    (benchmarks/training_ratios.py MOE_ABSOLUTE; benchmarks/calibrate.py --training)."""
    train_fp4_efficiency: float = 0.6
    """Share of the FP4 dense peak an NVFP4 training step's matmuls reach relative to the
    accelerator's measured matmul efficiency (block-scale quantisation of the operands, the
    higher-precision parts of the recipe). Fitted on the MLPerf Training v5.1 NVFP4 rows."""
    train_moe_bytes: float = 0.0
    """Bytes of memory-bound work per token per MoE layer per routed expert it uses per hidden unit
    in a training step (routing, permutation, the expert's SwiGLU and casts; planner.physics.
    train_step.moe_s). Fitted with train_ep_exposed on Megatron-Bridge's MoE pretraining rates
    (benchmarks/training_ratios.py MOE_ABSOLUTE)."""
    qlora_dequant_bytes: float = 48.0
    """Bytes per non-embedding parameter a QLoRA step's dequantisation of its NF4 weights costs per
    micro-batch, at the decode bandwidth (eta_bw x peak) (planner.physics.train_step.dequant_s).
    Fitted on the Qwen and torchtune READMEs' profiles of LoRA against QLoRA on one card
    (benchmarks/training_ratios.py QLORA_ROWS, TORCHTUNE_QLORA): the median over their rows of the
    bytes the extra time per micro-batch implies."""
    mem_util: float = 0.90
    """Fraction of the memory left after weights and the runtime reserve that a serving engine gives
    the KV cache (TRT-LLM kv_cache_free_gpu_mem_fraction 0.9; trtllm-bench uses 0.95)."""
    reserve_gb: float = 3.5
    """Runtime reserve per accelerator: CUDA context, workspace (aiconfigurator other_mem 3.5 GB)."""
    max_batch: int = 1024
    """Largest batch a serving engine schedules (vLLM max_num_seqs, TRT-LLM max batch)."""
    admission_us_per_prompt_token: float = 6.0
    """Microseconds a request's first token waits per prompt token of each *other* client in a
    closed loop (planner.physics.ttft): clients that finished together send together, and their
    prompts are admitted one after another ahead of this one. Fitted on the NIM TTFT-vs-concurrency
    rows: at low concurrency the wait per other client's prompt token is alike on Llama 8B TP1 and
    Llama 70B TP2 (5-15 us) although their GPU prefill rates differ five-fold, so the queue is the
    serving front end's admission (tokenisation, request set-up), not the GPU's prefill. It reads
    high where the wave of clients no longer stays whole: 70B at 50+ clients waits about 2 us per
    token, and 5,000-token prompts at 25-150 clients are 1.6-4.2x over (a square-root cap on long
    waves was tried and broke the 8B 1,000-token rows this fits; three_checks.LONG_PROMPT says so
    on the plan)."""
    prefill_queue_fraction: float = 0.25
    """Share of the other clients' prompts that share a mixed step with a request's own prompt in
    the steady state of a closed loop of B clients (planner.physics.step.clump_tokens, the chunk
    size behind TPOT): 0 = one prompt per chunk, 1/2 = half the loop's prompts together. Fitted
    on the TPOT and throughput rows (the loaded-TTFT rows fit admission_us_per_prompt_token)."""
    ep_efficiency: float = 1.0
    """Share of its modelled step (roofline, all-to-all, overheads: physics.step, physics.moe) that an
    MoE served with expert parallelism and data-parallel attention reaches: the slowest rank sets
    every step (attention and experts unevenly loaded), and grouped expert GEMMs of a few dozen
    tokens each run below the roofline. Fitted alone (benchmarks/calibrate.py fit_ep_efficiency) on
    the ep-dp rows of benchmarks/calibration_data.csv, TensorRT-LLM's DeepSeek-R1 max-throughput
    runs on 8 B200 and 8 H200, with every other factor as the other rows fit it."""
    overhead_vllm: float = 1.0
    """vLLM's fixed step cost over the base (TensorRT-LLM) layer_overhead_us; fitted on the vLLM rows."""
    overhead_sglang: float = 1.0
    """SGLang's: no public SGLang row with hardware named (serving-benchmarks.md §B), so 1.0."""
    overhead_llamacpp: float = 1.0
    """llama.cpp's (no CUDA graphs in the C5 single-stream rows); fitted on calibration.md C5."""
    fitted_on: str = "defaults"
    """Date of the fit and the data it used."""

    @classmethod
    def load(cls, path: Path = PATH) -> "Calibration":
        if not path.exists():
            return cls()
        data = json.loads(path.read_text())
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, path: Path = PATH) -> None:
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")

    def with_(self, **changes) -> "Calibration":
        return replace(self, **changes)


@lru_cache(maxsize=1)
def default() -> Calibration:
    return Calibration.load()
