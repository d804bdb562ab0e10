"""Serving: memory, decode step time, time to first token and throughput for one replica.

A replica is TP x PP accelerators holding one copy of the model. Its `batch` is the number of
sequences it decodes concurrently (users being served at once). All functions are pure.

Memory per accelerator. Vendors' "GB" memory labels are binary sizes (an "80 GB" H100 shows
81,559 MiB, a "141 GB" H200 143,771 MiB), so capacity = memory_gb x 2^30 bytes. Engines load the
weights, keep a runtime reserve, and give a fraction of what is left to the KV cache
(TRT-LLM kv_cache_free_gpu_mem_fraction):
    KV room   = mem_util x (capacity - reserve - weights)
    max batch = KV room // KV bytes of one sequence (its share on this accelerator)

Decode step (one new token for each of the batch's sequences), per pipeline stage:

    b         = batch / PP        (one micro-batch; PP micro-batches are in flight)
    p         = b x s_in / s_out  (prompt tokens mixed into each step at steady state: aggregated
                                   serving admits a new request as one finishes)
    t_mem     = (weights read at b + b x KV bytes at the average context) / (TP x PP x eta_bw x BW)
                (with PP > 1 the slowest stage, the last, reads its share plus the whole lm head)
    t_compute = (2 x N_active + attention) x b / (TP x PP x decode_mfu x peak)
    t_prefill = p x prefill FLOPs per token / (TP x PP x prefill_mfu x peak)
                + p x all-reduce bytes per token / link + p x layers/PP x token overhead
    t_comm    = 2 x layers/PP x (all-reduce latency + 2 (TP-1)/TP x b x hidden x 2 B / link)
    t_fixed   = layers/PP x (per-layer overhead + b x token overhead)
    t_stage   = max(t_mem, t_compute) + t_prefill + t_comm + t_fixed
    TPOT      = PP x t_stage      (a token passes every stage in turn)
    tokens/s  = batch / TPOT      (PP micro-batches keep every stage busy)

The token overhead is the non-matmul work per token per layer (norms, residual adds, activation
quantisation, MoE routing, sampling). Tensor parallelism replicates it on every rank instead of
splitting it, which is why measured max-load throughput grows less than linearly with TP. An MoE
at TP > 1 is served expert-parallel with data-parallel attention, so there it divides by TP
(token_seconds_per_layer).

Time to first token: the prompt's FLOPs over TP x prefill_mfu x peak (or one weight read, if
longer), plus the all-reduces of its activations and its per-token overhead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.data.catalog import Accelerator, Model
from planner.data.jobs import Workload  # noqa: F401  (the request shape the physics reads)
from planner.physics import arch
from planner.physics.calibration import Calibration, default

GB = 1e9
GIB = 2**30
ACTIVATION_BYTES = 2  # bf16 activations on the wire for all-reduces


@dataclass(frozen=True)
class Link:
    """The scale-up link a tensor-parallel group uses: GB/s per accelerator per direction."""

    kind: str
    gbps: float

    @classmethod
    def of(cls, acc: Accelerator) -> "Link":
        return cls(acc.scaleup_kind, acc.scaleup_gbps)


@dataclass
class ServeEstimate:
    fits: bool
    reason: str
    tensor_parallel: int
    pipeline_parallel: int
    batch: int
    memory_gb_per_accelerator: float
    memory_gb_capacity: float
    weights_gb: float
    kv_gb: float
    tpot_ms: float
    ttft_ms: float
    tokens_per_s_per_user: float
    tokens_per_s: float
    regime: str
    max_batch_memory: int
    parts_ms: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def _mem_bytes_per_acc(acc: Accelerator, cal: Calibration) -> float:
    """Physical memory of one accelerator in bytes: its "GB" label is a binary size (GiB)."""
    return acc.memory_gb * GIB


DEFAULT_MAMF = 0.75
"""Measured best matmul / dense peak where the catalog has no measurement (median of C6)."""


def achievable_flops(acc: Accelerator, precision: str) -> float:
    """Dense peak FLOP/s for the format `precision` computes in on this chip, times the chip's
    measured matmul efficiency (catalog mamf_bf16_fraction): what a perfect kernel reaches."""
    return acc.peak_tflops(precision) * 1e12 * (acc.mamf_bf16_fraction or DEFAULT_MAMF)


def weights_per_acc(m: Model, precision: str, tp: int, pp: int) -> float:
    return arch.weight_bytes_per_rank(m, precision, tp, pp)


def kv_per_seq_per_acc(m: Model, wl: Workload, tp: int, pp: int) -> float:
    return arch.kv_bytes_for_sequence(m, wl.kv_precision, wl.kv_tokens) / (arch.kv_shards(m, tp) * pp)


def reserve_per_acc(tp: int, pp: int, cal: Calibration) -> float:
    nccl = 0.35 * GB if tp * pp > 1 else 0.0
    return cal.reserve_gb * GB + nccl


def _kv_room(m: Model, acc: Accelerator, precision: str, tp: int, pp: int, cal: Calibration) -> float:
    """Bytes per accelerator the engine gives the KV cache (<= 0: the weights do not fit)."""
    free = _mem_bytes_per_acc(acc, cal) - reserve_per_acc(tp, pp, cal) - weights_per_acc(m, precision, tp, pp)
    return free * cal.mem_util if free > 0 else free


def max_batch_by_memory(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int,
                        cal: Calibration | None = None) -> int:
    """Most sequences whose KV fits beside the weights (0: the weights alone do not fit):
    mem_util x (capacity - reserve - weights) // KV bytes per sequence on this accelerator."""
    cal = cal or default()
    room = _kv_room(m, acc, wl.precision, tp, pp, cal)
    if room <= 0:
        return 0
    # PP stages each hold KV for their layers of every sequence in the replica.
    return int(room // kv_per_seq_per_acc(m, wl, tp, pp))


def token_seconds_per_layer(m: Model, tp: int, cal: Calibration) -> float:
    """Seconds of non-matmul work per token per layer on one accelerator: token_overhead_us.
    A dense model's TP ranks each repeat it for every token; an MoE at TP > 1 is served with
    expert parallelism and data-parallel attention (TRT-LLM, SGLang and vLLM's throughput
    setting), so each rank handles 1/TP of the tokens and the cost divides by TP."""
    t = cal.token_overhead_us * 1e-6
    return t / tp if m.is_moe else t


def _lm_head_bytes(m: Model) -> float:
    return m.vocab_size * m.hidden_size * arch.EMBEDDING_BYTES_PER_PARAM


def step_parts(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int, batch: int,
               link: Link | None = None, cal: Calibration | None = None) -> dict[str, float]:
    """Seconds per decode stage, by component (see module docstring)."""
    cal = cal or default()
    link = link or Link.of(acc)
    group = tp * pp
    bw = acc.mem_bw_tbps * 1e12 * cal.eta_bw
    micro = batch / pp  # sequences in one pipeline micro-batch
    weight_read = arch.active_weight_bytes(m, wl.precision, batch=max(1, round(micro)), tp=tp)
    if pp > 1:  # the last stage also holds the lm head, and the pipeline runs at its pace
        weight_read += (pp - 1) * _lm_head_bytes(m)
    # each TP rank reads its KV shard; ranks beyond the KV heads hold replicas
    kv_read = micro * arch.kv_bytes_for_sequence(m, wl.kv_precision, int(wl.avg_context)) * tp / arch.kv_shards(m, tp)
    t_mem = (weight_read + kv_read) / (group * bw)
    peak = achievable_flops(acc, wl.precision)
    flops_tok = arch.flops_per_token(m) + arch.attention_flops_per_token(m, wl.avg_context)
    t_compute = flops_tok * micro / (group * cal.decode_mfu * peak)
    prefill_tok = arch.flops_per_token(m) + arch.attention_flops_per_token(m, wl.input_tokens / 2)
    prompt = micro * wl.input_tokens / wl.output_tokens  # prompt tokens mixed into one step
    layers = m.layers / pp
    per_token_ar = (2 * layers * 2 * (tp - 1) / tp * m.hidden_size * ACTIVATION_BYTES
                    / (cal.link_efficiency * link.gbps * GB)) if tp > 1 else 0.0
    token_cost = layers * token_seconds_per_layer(m, tp, cal)  # per token per stage
    t_prefill = prompt * (prefill_tok / (group * cal.prefill_mfu * peak) + per_token_ar + token_cost)
    t_comm = 2 * layers * cal.allreduce_latency_us * 1e-6 + micro * per_token_ar if tp > 1 else 0.0
    t_fixed = layers * cal.layer_overhead_us * 1e-6 + micro * token_cost
    return {"memory": t_mem, "compute": t_compute, "prefill": t_prefill, "comm": t_comm, "fixed": t_fixed}


def tpot_s(parts: dict[str, float], pp: int) -> float:
    return pp * (max(parts["memory"], parts["compute"]) + parts["prefill"] + parts["comm"] + parts["fixed"])


def ttft_s(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int,
           link: Link | None = None, cal: Calibration | None = None) -> float:
    """Prefill of one prompt: max(FLOPs over the group's prefill rate, one weight read) + its
    all-reduces + s x layers x token overhead (spread over PP stages) + layers x layer overhead."""
    cal = cal or default()
    link = link or Link.of(acc)
    s = wl.input_tokens
    flops = s * (arch.flops_per_token(m) + arch.attention_flops_per_token(m, s / 2))
    t_compute = flops / (tp * pp * cal.prefill_mfu * achievable_flops(acc, wl.precision))
    t_read = arch.weight_bytes(m, wl.precision) / (tp * pp * acc.mem_bw_tbps * 1e12 * cal.eta_bw)
    t_comm = 0.0
    if tp > 1:
        t_comm = 2 * m.layers * (cal.allreduce_latency_us * 1e-6 + 2 * (tp - 1) / tp * s * m.hidden_size
                                 * ACTIVATION_BYTES / (cal.link_efficiency * link.gbps * GB))
    t_tokens = s * m.layers * token_seconds_per_layer(m, tp, cal) / pp
    return max(t_compute, t_read) + t_comm + t_tokens + m.layers * cal.layer_overhead_us * 1e-6


def regime_of(parts: dict[str, float]) -> str:
    """The resource that dominates a decode step."""
    core = {"bandwidth": parts["memory"], "compute": parts["compute"] + parts["prefill"],
            "interconnect": parts["comm"], "overhead": parts["fixed"]}
    return max(core, key=core.get)


def estimate(m: Model, acc: Accelerator, wl: Workload, tp: int = 1, pp: int = 1, batch: int = 1,
             link: Link | None = None, cal: Calibration | None = None) -> ServeEstimate:
    """Everything about one replica at a fixed configuration and batch."""
    cal = cal or default()
    weights = weights_per_acc(m, wl.precision, tp, pp)
    kv_seq = kv_per_seq_per_acc(m, wl, tp, pp)
    reserve = reserve_per_acc(tp, pp, cal)
    capacity = _mem_bytes_per_acc(acc, cal)
    max_b = max_batch_by_memory(m, acc, wl, tp, pp, cal)
    used = weights + reserve + batch * kv_seq
    reason = ""
    if max_b < 1:
        reason = (f"weights need {weights / GB:.1f} GB per accelerator at TP{tp} PP{pp}, more than the "
                  f"{(capacity - reserve) / GB:.1f} GB free beside the runtime reserve on {acc.name}")
    elif batch > max_b:
        reason = (f"{batch} sequences need {used / GB:.1f} GB per accelerator; the KV cache of {acc.name} "
                  f"({capacity / GB:.1f} GB) holds at most {max_b}")
    parts = step_parts(m, acc, wl, tp, pp, max(batch, 1), link, cal)
    tpot = tpot_s(parts, pp)
    ttft = ttft_s(m, acc, wl, tp, pp, link, cal)
    return ServeEstimate(
        fits=not reason, reason=reason, tensor_parallel=tp, pipeline_parallel=pp, batch=batch,
        memory_gb_per_accelerator=used / GB, memory_gb_capacity=capacity / GB, weights_gb=weights / GB,
        kv_gb=batch * kv_seq / GB, tpot_ms=tpot * 1e3, ttft_ms=ttft * 1e3,
        tokens_per_s_per_user=1.0 / tpot, tokens_per_s=batch / tpot,
        regime="capacity" if max_b < 1 else regime_of(parts), max_batch_memory=max_b,
        parts_ms={k: v * 1e3 for k, v in parts.items()})


def largest_batch(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int,
                  min_tokens_per_s_per_user: float | None = None, max_ttft_s: float | None = None,
                  link: Link | None = None, cal: Calibration | None = None) -> tuple[int, str]:
    """The most sequences one replica serves within memory, the engine's batch cap and the
    per-user speed target; returns (batch, what limits it). Batch 0 means not even one fits or
    meets the targets. Step time grows with batch, so a binary search finds the edge."""
    cal = cal or default()
    cap = min(max_batch_by_memory(m, acc, wl, tp, pp, cal), cal.max_batch)
    if cap < 1:
        return 0, "memory"
    if max_ttft_s is not None and ttft_s(m, acc, wl, tp, pp, link, cal) > max_ttft_s:
        return 0, "ttft"
    if min_tokens_per_s_per_user is None:
        return cap, "memory" if cap < cal.max_batch else "batch-cap"

    def ok(b: int) -> bool:
        return 1.0 / tpot_s(step_parts(m, acc, wl, tp, pp, b, link, cal), pp) >= min_tokens_per_s_per_user

    if not ok(1):
        return 0, "latency"
    if ok(cap):
        return cap, "memory" if cap < cal.max_batch else "batch-cap"
    lo, hi = 1, cap  # ok(lo), not ok(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo, "latency"


def parallel_splits(count: int, domain: int, layers: int) -> list[tuple[int, int]]:
    """(TP, PP) pairs for replicas of up to `count` accelerators: TP a power of two inside one
    scale-up domain, PP any divisor-friendly depth up to the layer count."""
    out = []
    tp = 1
    while tp <= min(count, domain):
        pp = 1
        while tp * pp <= count and pp <= layers:
            out.append((tp, pp))
            pp *= 2
        tp *= 2
    return out


def max_throughput(m: Model, acc: Accelerator, wl: Workload, count: int, domain: int | None = None,
                   min_tokens_per_s_per_user: float | None = None, link: Link | None = None,
                   cal: Calibration | None = None) -> ServeEstimate | None:
    """The split of `count` accelerators into replicas x TP x PP, and the batch, that maximise
    total output tokens/s (as a throughput-tuned engine would). None if nothing fits."""
    cal = cal or default()
    domain = domain or acc.scaleup_domain
    best: tuple[float, ServeEstimate] | None = None
    for tp, pp in parallel_splits(count, max(domain, 1), m.layers):
        replicas = count // (tp * pp)
        batch, _ = largest_batch(m, acc, wl, tp, pp, min_tokens_per_s_per_user, None, link, cal)
        if batch < 1:
            continue
        est = estimate(m, acc, wl, tp, pp, batch, link, cal)
        total = est.tokens_per_s * replicas
        if best is None or total > best[0] * (1 + 1e-9):
            best = (total, est)
    if best is None:
        return None
    est = best[1]
    replicas = count // (est.tensor_parallel * est.pipeline_parallel)
    est.tokens_per_s *= replicas
    return est


def smallest_fit(m: Model, acc: Accelerator, wl: Workload, domain: int, max_count: int | None = None,
                 cal: Calibration | None = None) -> tuple[int, int] | None:
    """The smallest (TP, PP) whose replica holds the weights and at least one sequence."""
    cal = cal or default()
    for tp, pp in sorted(parallel_splits(max_count or 4096, domain, m.layers), key=lambda s: (s[0] * s[1], s[1])):
        if max_batch_by_memory(m, acc, wl, tp, pp, cal) >= 1:
            return tp, pp
    return None
