"""Training and fine-tuning: memory per accelerator, fewest accelerators that fit, wall-clock time.

Memory per accelerator, n accelerators sharding states with ZeRO-3/FSDP:
    full   16 B/param (bf16 weights 2 + bf16 grads 2 + fp32 master 4 + Adam moments 8, ZeRO paper)
           sharded over n
    lora   frozen base at bf16 (sharded over n) + adapters at 16 B/param
    qlora  frozen base at NF4 (4.127 bits, QLoRA paper) + adapters at 16 B/param
  + activations of one micro-batch of `sequence_tokens` with full recompute (Korthikanti et al.):
           layers x 2 s h (checkpoints) + 34 s h (one layer's working set, flash attention)
           + s x vocab x 4 B (fp32 logits and their gradient in bf16),
           split over sequence_shards(n): sequence parallelism in the scale-up domain's TP group and
           context parallelism across up to CP_MAX such groups (a 131k-token sequence of a 405B
           model over TP8 x CP16, as Llama 3.1 trained)
  + the runtime reserve.
The job fits when that is at most the accelerator's physical memory, memory_gb x 2^30 bytes
(vendors' "GB" memory labels are binary sizes; memory figures are stated in GiB, see physics.step).

Time = tokens x t / (n x E(n) x G(n)) with G(n) the goodput (restarts after interruptions, goodput)
and t the accelerator-seconds per token of
planner.physics.train_step: matmuls (k = 6 x N_active for full training, forward 2 + backward 4,
4 x N for LoRA/QLoRA whose frozen weights need no weight gradients, plus attention) at the
achievable FLOP/s of the precision, the memory-bound kernels between them at the memory
bandwidth, and the exposed tensor-parallel traffic of a replica too large for one accelerator over
the scale-up link; E(n) is the scale-out efficiency of n accelerators by interconnect class
(scaleout_efficiency): E = r ^ log2(n / D) beyond D accelerators, r per doubling of the count.
  scale-up fabric (NVLink/NVSwitch, Infinity Fabric, ICI, NeuronLink, Gaudi RoCE; D = its domain):
      r = 0.98 across nodes on InfiniBand/RoCE: the throughput per GPU of a run of fixed tokens,
      Megatron-Core GPT-3 175B strong scaling 96 -> 4,608 H100, MFU 47% -> 42%, 0.980 per doubling
      (torchtitan Llama 3.1 8B 8 -> 128 H100: 97% in all; Trainy 32 -> 64 H200: 98%;
      reference/scaleout-moe.md s1.5). MLPerf Training's time-to-train scales at 0.91-0.95 per
      doubling (Llama 3.1 405B 512 -> 8,192 H100 94.8%, v5.0), but its global batch grows with the
      GPUs and a larger batch needs more samples to converge (s1.1, caveat 1): a plan's run of
      fixed tokens does not pay that (the training review: 405B on 1,024 H100 came out at 219
      tokens/s per GPU against Megatron-Bridge's 326 with 0.95, 272 with 0.98);
      r = 0.985 from domains of 64+ (NVL72, Trn UltraServer, TPU pods), above InfiniBand's as MLPerf
      orders them (GB200 NVL72 95.9% 512 -> 2,496, v5.0; TPU v5p 92.9%, Trillium 92.6%).
  PCIe-only cards (scale-up kind pcie, a 2-card bridge, or none): r = 0.78: MLPerf Training v4.0
      L40S (PCIe Gen4) Llama 2 70B LoRA 64 -> 384, 77.7% per doubling (reference/scaleout-moe.md
      §1.2, all figures there [D] from the MLPerf logs), from D = PCIE_FLAT = 8 cards, not from one:
      compounded from one card, 64 L40S came out at 0.61x the speed of 8 H100 where the same
      round's NVIDIA submissions (l40s_n16 against eos, both NeMo 24.04, batch 8) measured 1.26x;
      from 8 cards, 1.29x (benchmarks/training_ratios.py prints the row).
Parallelism the estimate assumes: ZeRO-3/FSDP data parallelism over all n (memory_per_acc), with
tensor parallelism inside the scale-up domain when one replica's weights and activations do not
fit one accelerator (train_step.tensor_parallel, priced per token there); a model whose states
need more than one scale-up domain is split tensor/pipeline-parallel inside the
domain and data-parallel across domains, which E(n) prices by the fabric it crosses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.data.catalog import Accelerator, Model
from planner.physics import arch
from planner.physics.calibration import Calibration, default
from planner.physics import train_step

GB = 1e9
GIB = 2**30
STATE_BYTES_FULL = 16.0
ADAPTER_STATE_BYTES = 16.0
FLOPS_FACTOR = train_step.FLOPS_FACTOR


@dataclass
class TrainEstimate:
    fits: bool
    reason: str
    method: str
    accelerators: int
    accelerators_min: int
    memory_gb_per_accelerator: float
    memory_gb_capacity: float
    hours: float
    tokens: float
    regime: str
    scaleout_efficiency: float = 1.0
    parallelism: str = ""

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def adapter_params(m: Model, rank: int) -> float:
    """LoRA parameters: rank x (d_in + d_out) for each of q, k, v, o and the MLP's three matrices
    (for MoE the shared/dense MLP only; routed experts are usually left frozen)."""
    h, q, kv = m.hidden_size, m.attention_heads * m.head_dim, m.kv_heads * m.head_dim
    ffn = m.moe_ffn_size if m.is_moe and m.moe_ffn_size else m.ffn_size
    per_layer = rank * ((h + q) + 2 * (h + kv) + (q + h) + 3 * (h + ffn))
    return per_layer * m.layers


activation_bytes = train_step.activation_bytes


def memory_per_acc(m: Model, method: str, n: int, seq: int, rank: int = 16,
                   cal: Calibration | None = None, domain: int = 8) -> float:
    """Bytes per accelerator when n accelerators share the job (states sharded ZeRO-3 style, a
    sequence's activations over sequence_shards(n, domain): `domain`, the scale-up fabric's TP)."""
    cal = cal or default()
    total = arch.param_counts(m)["total"]
    if method in ("full", "pretrain"):
        states = total * STATE_BYTES_FULL / n
    else:
        base = arch.weight_bytes(m, "nf4" if method == "qlora" else "bf16") / n
        states = base + adapter_params(m, rank) * ADAPTER_STATE_BYTES / n
    nccl = 0.35 * GB if n > 1 else 0.0
    return states + activation_bytes(m, seq) / sequence_shards(n, domain) + cal.reserve_gb * GB + nccl


CP_MAX = 16
"""Most context-parallel ranks a sequence is split over, beyond its tensor-parallel group: Llama 3.1
405B trained its 131k-token phase as TP8 x CP16 on H100 (reference/scaleout-moe.md s1.5)."""


def sequence_shards(n: int, domain: int = 8) -> int:
    """Accelerators one sequence's activations are split over when the job runs on n: sequence
    parallelism inside the tensor-parallel group (the scale-up `domain`, Korthikanti et al.; the
    logits too, a vocabulary-parallel loss) times context parallelism across up to CP_MAX groups.
    Ring attention's traffic is not priced: at the lengths that need it, attention's own compute
    hides it (Megatron-LM context parallelism)."""
    return max(1, min(n, max(1, domain) * CP_MAX))


def accelerators_min(m: Model, acc: Accelerator, method: str, seq: int, rank: int = 16,
                     limit: int = 100_000, cal: Calibration | None = None) -> int:
    """Fewest accelerators whose memory holds the job (0 if even `limit` do not)."""
    cap = acc.memory_gb * GIB
    n = 1
    while n <= limit:
        if memory_per_acc(m, method, n, seq, rank, cal, train_step.tp_domain(acc)) <= cap:
            return n
        n *= 2
    return 0


INTERRUPTIONS_PER_ACCELERATOR_HOUR = 419 / (54 * 24 * 16_384)
"""Unexpected interruptions of a training job per accelerator-hour: Llama 3 405B pretraining, 419 in a
54-day snapshot on 16,384 H100 (148 of them GPU faults, 72 HBM3), 1.97e-5 (reference/scaleout-moe.md
s1.5, Meta via DatacenterDynamics)."""
HOURS_LOST_PER_INTERRUPTION = 0.33
"""Hours of the whole job each interruption costs (restart from the last checkpoint and the work
since it): what leaves the same snapshot's '>90% effective training time', 1 - 1 / (1 + 419 x
0.33 h / 1,296 h) = 9.6% lost [derived]."""


def goodput(n: int) -> float:
    """Share of wall-clock time a run of n accelerators trains (the rest: restarts after hardware
    interruptions, whose rate grows with n): 1 / (1 + rate x n x hours lost each). 0.99 at 1,024
    accelerators, 0.90 at 16,384."""
    return 1.0 / (1.0 + INTERRUPTIONS_PER_ACCELERATOR_HOUR * n * HOURS_LOST_PER_INTERRUPTION)


PCIE_KINDS = ("pcie", "none")
PER_DOUBLING_PCIE = 0.78
PCIE_FLAT = 8
"""PCIe cards a run spans at full efficiency (D for PCIe-only cards, module docstring): chosen among
1, 2, 4, 8 and 16 on MLPerf Training v4.0's 64-L40S / 8-H100 speed ratio (1 gave 0.61x against
1.26x measured, 4 gave 1.00x, 8 1.29x); an 8-card PCIe server's data parallelism, LoRA's tiny gradients
or ZeRO-3's gathers, loses little of a fixed-token run"""
PER_DOUBLING_NETWORK = 0.98
PER_DOUBLING_LARGE_DOMAIN = 0.985
LARGE_DOMAIN = 64


def scaleout_efficiency(acc: Accelerator, n: int) -> float:
    """Fraction of n x one accelerator's rate a training run keeps (see the module docstring)."""
    pcie = acc.scaleup_kind in PCIE_KINDS or acc.scaleup_domain <= 2
    domain = PCIE_FLAT if pcie else max(acc.scaleup_domain, 1)
    if n <= domain:
        return 1.0
    r = PER_DOUBLING_PCIE if pcie else (PER_DOUBLING_LARGE_DOMAIN if domain >= LARGE_DOMAIN else PER_DOUBLING_NETWORK)
    return r ** math.log2(n / domain)


def parallelism_of(acc: Accelerator, n: int, need: int, tp: int = 1) -> str:
    """How the run is laid out, in words (tp: train_step.tensor_parallel's degree)."""
    domain = max(acc.scaleup_domain, 1)
    if n <= 1:
        return "one accelerator"
    if acc.scaleup_kind in PCIE_KINDS or acc.scaleup_domain <= 2:  # (no scale-up fabric to speak of)
        split = ("FSDP/ZeRO-3 data parallel" if need <= 1 else
                 f"pipeline parallel in groups of {need} over PCIe, data parallel across")
        return f"{split} on {n} PCIe cards ({PCIE_FLAT} at full speed, {PER_DOUBLING_PCIE:g} per doubling past them)"
    inside = f"inside one {acc.scaleup_kind} domain" if n <= domain else f"across {math.ceil(n / domain)} scale-up domains"
    split = "FSDP/ZeRO-3 data parallel" if need <= domain else "tensor/pipeline parallel inside each domain, data parallel across"
    if tp > 1 and need <= domain:
        split = f"tensor parallel {tp} x FSDP/ZeRO-3 data parallel {n // tp}"
    return f"{split} on {n} accelerators {inside}"


def estimate(m: Model, acc: Accelerator, method: str, tokens: float, count: int, seq: int = 2048,
             rank: int = 16, precision: str = "bf16", cal: Calibration | None = None,
             scaleout_gbps: float | None = None, forward_passes: int = 0) -> TrainEstimate:
    """Fit and wall-clock hours for `tokens` training tokens on `count` accelerators; scaleout_gbps:
    the systems' scale-out network per accelerator (catalog systems.scaleout_gbps), which an MoE's
    expert all-to-all crosses beyond the scale-up domain (train_step.expert_all_to_all_s);
    forward_passes: forward passes over the same tokens besides the update (an RL trainer's old-policy
    and reference log-probs), each 2 of the update's k x N FLOPs per token (train_step.FLOPS_FACTOR:
    a third of a full step, half of a LoRA one), its time that share of the step's."""
    cal = cal or default()
    need = accelerators_min(m, acc, method, seq, rank, cal=cal)
    mem = memory_per_acc(m, method, max(count, 1), seq, rank, cal, train_step.tp_domain(acc))
    reason = ""
    if need == 0:
        reason = f"does not fit on any number of {acc.name} ({acc.memory_gb:g} GiB)"
    elif count < need:
        reason = (f"{method} needs {mem / GIB:.1f} GiB per accelerator on {count}x {acc.name} "
                  f"({acc.memory_gb:g} GiB); at least {need} are needed")
    eff = scaleout_efficiency(acc, max(count, 1))
    per_token = train_step.seconds_per_token(m, acc, method, seq, precision, cal, max(count, 1), scaleout_gbps)
    passes = 1 + forward_passes * 2 / train_step.FLOPS_FACTOR[method]
    hours = tokens * per_token.total_s * passes / (max(count, 1) * eff) / 3600 / goodput(max(count, 1))
    regime = "capacity" if need > 1 or reason else ("interconnect" if eff < 0.8 else "compute")
    return TrainEstimate(fits=not reason, reason=reason, method=method, accelerators=count,
                         accelerators_min=need, memory_gb_per_accelerator=mem / GIB,
                         memory_gb_capacity=acc.memory_gb, hours=hours, tokens=tokens, regime=regime,
                         scaleout_efficiency=eff, parallelism=parallelism_of(acc, count, need, per_token.tp))
