"""Time per training token on one accelerator: matmuls, memory-bound work, tensor-parallel traffic.

Per token, in accelerator-seconds (n accelerators together take tokens x t / n, before the
scale-out efficiency of physics.training):

    t = t_matmul + t_memory + tp x t_tp + t_moe + t_dequant

  t_matmul = k/2 x 2 N_matmul / (train_mfu x achievable(precision) x q(precision))
           + k/2 x attention FLOPs at a mean context of seq/2 / (train_mfu x achievable(attn))
      k = 6 for full training and pretraining (forward 2, backward 4), 4 for LoRA/QLoRA (frozen
      weights get no weight gradient); achievable = dense peak x the chip's measured matmul
      efficiency (physics.flops.achievable). Attention runs in FP8 when the matmuls run in
      FP8 or FP4 (NVFP4 recipes keep attention in FP8: MLPerf Training v5.1 NVIDIA
      config_common_fp4.sh, NVTE_DPA_FP8_RECIPE), otherwise in BF16.
      q(fp4) = calibration train_fp4_efficiency: the share of the FP4 peak an NVFP4 training
      step's matmuls keep relative to FP8 (block-scale quantisation of every operand, the
      higher-precision wgrad/outliers); q = 1 for other precisions and on accelerators without
      an FP4 peak, which run the matmuls in FP8.
  t_memory = layers x train_act_bytes x hidden / tp / (eta_bw x memory bandwidth)
      the memory-bound kernels between the matmuls (norms, SwiGLU, residual adds, RoPE, casts
      to FP8/FP4 and their transposes, dropout, the optimizer's elementwise update): bytes moved
      per token per layer per hidden unit, forward and backward, split over tp by sequence
      parallelism. train_act_bytes is fitted (benchmarks/calibrate.py, MLPerf Training rows).
  t_tp = layers x 4 x 2 (tp - 1)/tp x hidden x 2 B / (link_efficiency x scale-up GB/s)
      tensor parallelism's four collectives per layer (forward and backward of attention and
      MLP; all-reduce, or all-gather + reduce-scatter with sequence parallelism, the same bytes)
      of the bf16 activations, over the scale-up link, times train_tp_exposed: the share not
      hidden behind matmuls (NeMo overlaps TP communication with the GEMMs). Each of the tp
      accelerators of a replica moves these bytes for every token the replica processes, so it
      costs tp x t_tp accelerator-seconds per token.
  t_moe (MoE models) = moe_layers x experts_per_token x train_moe_bytes x hidden / tp / (eta_bw x
      memory bandwidth): the memory-bound work each routed copy of a token adds in an MoE layer,
      forward and backward (the router's top-k, the permute to its experts and back, the expert's
      SwiGLU, its quantisation casts, the grouped GEMMs' small-tile overheads), split over tp as
      t_memory is. train_moe_bytes is fitted, with train_ep_exposed, on Megatron-Bridge's MoE
      pretraining rates (benchmarks/training_ratios.py MOE_ABSOLUTE: DeepSeek-V3, Qwen3-235B-A22B,
      GPT-OSS-120B, Qwen3-30B-A3B): without it the planner was 28% fast on their median and 44-165%
      fast on the finer-grained models on H100 (the training review).
  t_dequant (QLoRA only) = N_layers x qlora_dequant_bytes / (eta_bw x memory bandwidth) / seq
      the frozen NF4 weights dequantised to bf16 before every matmul that reads them (the forward,
      its recompute, the backward's input gradient), once per micro-batch of one `seq`-token
      sequence, so the share it adds falls as sequences grow:
      N_layers = the non-embedding parameters (the embeddings stay in 16 bits); qlora_dequant_bytes
      is fitted on two public profiles of LoRA against QLoRA on one card, the Qwen README's (A100,
      256-8,192 tokens) and torchtune's (RTX 4090, 2 x 2,048 tokens per micro-batch)
      (benchmarks/training_ratios.py QLORA_ROWS: 48 B, about 3x what streaming the bytes once would
      take; the dequantisation kernels do not reach the bandwidth). A micro-batch is one sequence, as
      the memory sizing assumes; a run that packs more sequences into one pays less per token. Each
      of a TP group's accelerators
      dequantises its 1/tp of the weights for the group's micro-batch, so the accelerator-seconds
      per token do not depend on tp.
  tp = the smallest power of two (at most 8, at most the scale-up domain; 1 on PCIe-only cards)
      at which one replica's bf16 weights (NF4 for QLoRA) / tp + one micro-batch's activations +
      the runtime reserve fit the accelerator: what NeMo's recipes choose for Llama 2 70B LoRA
      (MLPerf Training v4.0: TP4 on 80 GB H100, TP2 on 141 GB H200; v5.x: TP1 on 180 GB+ parts)
      and for dense pretraining (Llama 3.1 405B TP8 on H100, TP4 on GB200: Megatron-Bridge
      performance summary). An MoE's routed experts are left out: expert parallelism spreads them
      over the data-parallel ranks (DeepSeek-V3: TP2 with EP64 on H100, no TP on GB200), and its
      all-to-all is priced apart (expert_all_to_all_s).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.data.catalog import Accelerator, Model
from planner.physics import arch, flops
from planner.physics.calibration import Calibration

GIB = 2**30
GB = 1e9
ACT_BYTES = 2.0  # bf16 activations on the tensor-parallel collectives
TP_MAX = 8
PCIE_KINDS = ("pcie", "none")
FLOPS_FACTOR = {"full": 6.0, "lora": 4.0, "qlora": 4.0, "pretrain": 6.0}


EP_MAX = 64
"""the most ranks one expert-parallel group spans (DeepSeek-V3: EP64 on H100; Megatron-Bridge's
recipes EP8-EP64, scaleout-moe.md s1.6)"""
A2A_BYTES = 7.0
"""bytes an expert-parallel step moves per token, per MoE layer, per routed expert the token uses,
per hidden unit: forward dispatch in FP8 (1) and combine in BF16 (2), backward both again in BF16
(2 + 2) (DeepEP's FP8 dispatch and BF16 combine; scaleout-moe.md s2)"""
SCALEOUT_GBPS = 50.0
"""GB/s per accelerator an all-to-all reaches across systems where no system's scale-out network
is given: a 400 Gb/s NIC per GPU; DeepEP's internode EP16-EP64 kernels measured 43-58 GB/s on
H800 + ConnectX-7 (scaleout-moe.md s2, deepseek-ai/DeepEP docs/legacy.md)"""


@dataclass(frozen=True)
class StepTime:
    """Accelerator-seconds per training token, by term."""
    matmul_s: float
    memory_s: float
    tp_comm_s: float
    tp: int
    ep_comm_s: float = 0.0
    """an MoE's expert-parallel all-to-all, the share not hidden (expert_all_to_all_s)"""
    dequant_s: float = 0.0
    """QLoRA's NF4 weights dequantised once per micro-batch (dequant_s)"""
    moe_s: float = 0.0
    """an MoE's memory-bound work per routed copy of a token (moe_s)"""

    @property
    def total_s(self) -> float:
        return self.matmul_s + self.memory_s + self.tp_comm_s + self.ep_comm_s + self.dequant_s + self.moe_s


def moe_s(m: Model, acc: Accelerator, tp: int, cal: Calibration) -> float:
    """Accelerator-seconds per token of an MoE's routed copies' memory-bound work (t_moe in the
    module docstring); 0 for a dense model."""
    if not m.is_moe:
        return 0.0
    copies = arch.param_counts(m)["moe_layers"] * m.experts_per_token
    return copies * cal.train_moe_bytes * m.hidden_size / tp / (cal.eta_bw * acc.mem_bw_tbps * 1e12)


def dequant_s(m: Model, acc: Accelerator, method: str, seq: int, cal: Calibration) -> float:
    """Accelerator-seconds per token QLoRA spends dequantising its frozen NF4 weights (t_dequant in
    the module docstring); 0 for every other method."""
    if method != "qlora":
        return 0.0
    weights = arch.param_counts(m)["non_embedding"]
    return weights * cal.qlora_dequant_bytes / (cal.eta_bw * acc.mem_bw_tbps * 1e12) / max(seq, 1)


def expert_all_to_all_s(m: Model, acc: Accelerator, method: str, count: int | None, cal: Calibration,
                        scaleout_gbps: float | None = None) -> float:
    """Accelerator-seconds per token of an MoE's expert-parallel all-to-all in full training and
    pretraining, the share not hidden behind compute (train_ep_exposed): the routed experts spread
    over EP = min(count, EP_MAX, experts) ranks, each token's A2A_BYTES x hidden x experts_per_token
    per MoE layer go to the ranks holding its experts, those inside the scale-up domain over its link
    (at link_efficiency), those beyond it over the scale-out network (scaleout_gbps, the system's,
    else SCALEOUT_GBPS). A LoRA/QLoRA fine-tune (experts frozen and sharded, not expert-parallel) and
    one accelerator move nothing. Against Megatron-Bridge's DeepSeek-V3 rates the planner was 3-60%
    fast without it, most where EP crosses 8-GPU nodes (benchmarks/training_ratios.py)."""
    if not m.is_moe or method not in ("full", "pretrain") or not count or count <= 1:
        return 0.0
    ep = min(count, EP_MAX, max(m.experts, 1))
    domain = 1 if acc.scaleup_kind in PCIE_KINDS else min(acc.scaleup_domain, ep)
    per_token = A2A_BYTES * m.hidden_size * max(m.experts_per_token, 1) * arch.param_counts(m)["moe_layers"]
    inside = (domain - 1) / ep / (cal.link_efficiency * acc.scaleup_gbps * GB)
    beyond = (ep - domain) / ep / ((scaleout_gbps or SCALEOUT_GBPS) * GB)
    return cal.train_ep_exposed * per_token * (inside + beyond)


def activation_bytes(m: Model, seq: int) -> float:
    """One micro-batch of `seq` tokens with full recompute (Korthikanti et al.): layers x 2 s h
    checkpoints + 34 s h (one layer's working set, flash attention) + fp32 logits and gradient."""
    s, h = seq, m.hidden_size
    return m.layers * 2 * s * h + 34 * s * h + s * m.vocab_size * 4


def tp_domain(acc: Accelerator) -> int:
    """Largest tensor-parallel group the accelerator's scale-up fabric carries."""
    if acc.scaleup_kind in PCIE_KINDS or acc.scaleup_domain <= 2:
        return 1
    return min(TP_MAX, acc.scaleup_domain)


def tensor_parallel(m: Model, acc: Accelerator, method: str, seq: int, cal: Calibration,
                    count: int | None = None) -> int:
    """Tensor-parallel degree of one replica (see the module docstring)."""
    precision = "nf4" if method == "qlora" else "bf16"
    pc = arch.param_counts(m)
    routed = pc["moe_layers"] * m.experts * pc["expert_params"] if m.is_moe else 0
    weights = arch.weight_bytes(m, precision) - routed * arch.bytes_per_param(precision)
    fixed = activation_bytes(m, seq) + cal.reserve_gb * GB
    cap = acc.memory_gb * GIB
    top = min(tp_domain(acc), max(count or TP_MAX, 1))
    tp = 1
    while tp * 2 <= top and weights / tp + fixed > cap:
        tp *= 2
    return tp


def seconds_per_token(m: Model, acc: Accelerator, method: str, seq: int, precision: str,
                      cal: Calibration, count: int | None = None, scaleout_gbps: float | None = None) -> StepTime:
    """Accelerator-seconds per training token (see the module docstring)."""
    k = FLOPS_FACTOR[method] / 2
    # an accelerator without an FP4 peak runs an FP4 job's matmuls in FP8 (Accelerator.peak_tflops)
    quality = cal.train_fp4_efficiency if precision == "fp4" and acc.fp4_tflops else 1.0
    attn_prec = "fp8" if precision in ("fp4", "fp8") else "bf16"
    matmul = (k * flops.flops_per_token(m) / (cal.train_mfu * flops.achievable(acc, precision) * quality)
              + k * flops.attention_flops_per_token(m, seq / 2) / (cal.train_mfu * flops.achievable(acc, attn_prec)))
    tp = tensor_parallel(m, acc, method, seq, cal, count)
    memory = m.layers * cal.train_act_bytes * m.hidden_size / tp / (cal.eta_bw * acc.mem_bw_tbps * 1e12)
    per_collective = 2 * (tp - 1) / tp * m.hidden_size * ACT_BYTES
    link = cal.link_efficiency * acc.scaleup_gbps * GB
    comm = m.layers * 4 * per_collective / link * cal.train_tp_exposed
    return StepTime(matmul, memory, tp * comm, tp, expert_all_to_all_s(m, acc, method, count, cal, scaleout_gbps),
                    dequant_s(m, acc, method, seq, cal), moe_s(m, acc, tp, cal))
