"""One replica's memory and the time of one engine step (decodes plus prompt chunks).

A replica is TP x PP accelerators holding one copy of the model. All functions are pure.

Memory per accelerator. Vendors' "GB" memory labels are binary sizes (an "80 GB" H100 shows
81,559 MiB, a "96 GB" RTX PRO 6000 97,887 MiB), so capacity = memory_gb x 2^30 bytes, and every
memory figure the planner states (plans, explanations, estimates, why-not) is in that unit, GiB,
so that an accelerator's capacity reads as its catalog label (an H200: 141). Engines load the weights, keep a runtime
reserve, and give a fraction of what is left to the KV cache (TRT-LLM kv_cache_free_gpu_mem_fraction):
    KV room   = mem_util x (capacity - reserve - weights)
    max batch = KV room // KV bytes of one sequence (its share on this accelerator)

One step of one pipeline stage, for d decode tokens and p prompt tokens in its micro-batch:
    t_mem     = (weights read at d + d x KV bytes at the average context) / (TP x PP x eta_bw x BW)
                (the last stage also reads the whole lm head)
    t_decode  = (2 N_active / achievable peak + attention / achievable attention peak) x d
                / (TP x PP x decode_mfu)
                (attention: at the average context, MLA in its absorbed form; its peak is the KV
                cache's format's, FP8 or BF16: attention_precision)
    t_prompt  = p x (2 N_active / peak + attention at half the prompt / attention peak)
                / (TP x PP x prefill_mfu)
    t_comm    = 2 x layers/PP x (all-reduce latency + 2 (TP-1)/TP x (d + p) x hidden x 2 B / link)
    t_fixed   = layers/PP x (per-layer overhead x engine factor + (d + p) x token overhead)
    t_stage   = max(t_mem, t_decode + t_prompt) + t_comm + t_fixed
A prompt chunk shares the step's weight read (a roofline: small chunks hide under the read, big
ones make the step compute-bound), except on a prefill-first engine (SGLang), where the chunk
runs as its own pass: t_stage = max(t_mem, t_decode) + t_prompt + t_comm + t_fixed.
Pipeline bubbles: the slowest stage holds ceil(L/PP) layers, and each hop between stages costs a
point-to-point send (P2P_LATENCY_US + activations over the link).

The token overhead is the non-matmul work per token per layer (norms, residual adds, activation
quantisation, MoE routing, sampling). Tensor parallelism replicates it on every rank instead of
splitting it; an MoE at TP > 1 is served expert-parallel with data-parallel attention, so there it
divides by TP (token_seconds_per_layer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.data.catalog import Accelerator, Model
from planner.data.jobs import Workload  # noqa: F401  (the request shape the physics reads)
from planner.physics import arch, engines, flops, moe
from planner.physics.calibration import Calibration, default

GB = 1e9
GIB = 2**30
ACTIVATION_BYTES = 2  # bf16 activations on the wire for all-reduces
P2P_LATENCY_US = 10.0
"""Latency of one point-to-point send between pipeline stages (aiconfigurator p2p latency 10 us,
reference/hardware.md)."""


@dataclass(frozen=True)
class Link:
    """The scale-up link a tensor-parallel group uses: GB/s per accelerator per direction."""

    kind: str
    gbps: float

    @classmethod
    def of(cls, acc: Accelerator) -> "Link":
        return cls(acc.scaleup_kind, acc.scaleup_gbps)


def dp_layout(m: Model, wl: Workload, tp: int) -> bool:
    """The replica runs expert parallelism with data-parallel attention (physics.moe)."""
    return wl.attention_dp and moe.applies(m, tp)


def weights_per_acc(m: Model, precision: str, tp: int, pp: int, attention_dp: bool = False) -> float:
    if attention_dp and moe.applies(m, tp):
        return moe.weight_bytes_per_rank(m, precision, tp, pp)
    return arch.weight_bytes_per_rank(m, precision, tp, pp)


def kv_per_seq_per_acc(m: Model, wl: Workload, tp: int, pp: int) -> float:
    """KV bytes of one sequence per accelerator: split over the KV heads tensor parallelism
    shards (arch.kv_shards), or, with data-parallel attention, over all ranks by sequence."""
    shards = tp if dp_layout(m, wl, tp) else arch.kv_shards(m, tp)
    return arch.kv_bytes_for_sequence(m, wl.kv_precision, wl.kv_tokens) / (shards * pp)


def reserve_per_acc(tp: int, pp: int, cal: Calibration) -> float:
    nccl = 0.35 * GB if tp * pp > 1 else 0.0
    return cal.reserve_gb * GB + nccl


def gib(nbytes: float) -> float:
    """Bytes in GiB: the unit of every memory figure the planner states (the catalog's memory_gb)."""
    return nbytes / GIB


def mem_bytes_per_acc(acc: Accelerator) -> float:
    """Physical memory of one accelerator in bytes: its "GB" label is a binary size (GiB)."""
    return acc.memory_gb * GIB


def _kv_room(m: Model, acc: Accelerator, precision: str, tp: int, pp: int, cal: Calibration,
             attention_dp: bool = False) -> float:
    """Bytes per accelerator the engine gives the KV cache (<= 0: the weights do not fit)."""
    free = (mem_bytes_per_acc(acc) - reserve_per_acc(tp, pp, cal)
            - weights_per_acc(m, precision, tp, pp, attention_dp))
    return free * cal.mem_util if free > 0 else free


def max_batch_by_memory(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int,
                        cal: Calibration | None = None) -> int:
    """Most sequences whose KV fits beside the weights (0: the weights alone do not fit):
    mem_util x (capacity - reserve - weights) // KV bytes per sequence on this accelerator."""
    cal = cal or default()
    room = _kv_room(m, acc, wl.precision, tp, pp, cal, wl.attention_dp)
    if room <= 0:
        return 0
    return int(room // kv_per_seq_per_acc(m, wl, tp, pp))


def batch_cap(m: Model, wl: Workload, tp: int, cal: Calibration) -> int:
    """Largest batch the engine schedules on one replica: Calibration.max_batch per scheduler, and
    with data-parallel attention every rank schedules its own sequences (TRT-LLM max_batch_size
    and SGLang's running requests are per attention-DP rank)."""
    return cal.max_batch * (tp if dp_layout(m, wl, tp) else 1)


def token_seconds_per_layer(m: Model, tp: int, cal: Calibration) -> float:
    """Seconds of non-matmul work per token per layer on one accelerator: token_overhead_us.
    A dense model's TP ranks each repeat it for every token; an MoE at TP > 1 is served with
    expert parallelism and data-parallel attention (TRT-LLM, SGLang and vLLM's throughput
    setting), so each rank handles 1/TP of the tokens and the cost divides by TP."""
    t = cal.token_overhead_us * 1e-6
    return t / tp if m.is_moe else t


def _lm_head_bytes(m: Model) -> float:
    return m.vocab_size * m.hidden_size * arch.EMBEDDING_BYTES_PER_PARAM


def stage_layers(m: Model, pp: int) -> int:
    """Layers on the slowest pipeline stage: ceil(L / PP)."""
    return math.ceil(m.layers / pp)


def parts(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int, decodes: float, prompt: float,
          link: Link | None = None, cal: Calibration | None = None,
          engine: str | None = None) -> dict[str, float]:
    """Seconds of one step of the slowest stage, by component, for `decodes` decode tokens and
    `prompt` prompt tokens in its micro-batch (see the module docstring); Replica.parts. The
    returned dict is shared, so callers must not change it."""
    return replica(m, acc, wl, tp, pp, link, cal, engine).parts(decodes, prompt)


REPLICAS_MAX = 20_000
_REPLICAS: dict[tuple, tuple] = {}


def replica(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int, link: Link | None = None,
            cal: Calibration | None = None, engine: str | None = None) -> Replica:
    """The step model of one replica, kept per (m, acc, cal) by identity (each held beside it, so
    that an id is never reused for another row) and the other arguments by value: the options
    search asks the same replica hundreds of times (the batch search, the estimate at the batch
    found, jobs sharing a workload at other speed targets, systems sharing an accelerator)."""
    cal = cal or default()
    key = (id(m), id(acc), id(cal), wl, tp, pp, link, engine)
    hit = _REPLICAS.get(key)
    if hit is not None and hit[0] is m and hit[1] is acc and hit[2] is cal:
        return hit[3]
    if len(_REPLICAS) >= REPLICAS_MAX:
        _REPLICAS.clear()
    r = Replica(m, acc, wl, tp, pp, link, cal, engine)
    _REPLICAS[key] = (m, acc, cal, r)
    return r


class Replica:
    """One replica's step at a fixed model, accelerator, workload, TP x PP, link, calibration and
    engine. The terms of the module docstring's t_stage that do not depend on the tokens in the
    step are computed once here; each figure is the docstring's formula, evaluated in the same
    order whatever the caller. Answers are kept per (decodes, prompt) and per batch (physics.ttft
    keeps its TTFT per batch here too); kept dicts are shared, read-only."""

    def __init__(self, m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int, link: Link | None,
                 cal: Calibration, engine: str | None):
        self.m, self.acc, self.wl, self.tp, self.pp, self.cal, self.engine = m, acc, wl, tp, pp, cal, engine
        self.link = link or Link.of(acc)
        self.eng = engines.get(engine)
        self.chunk_total = self.eng.chunk_tokens(acc)
        self.ready = False  # the step's terms, on the first step asked (a memory question needs none)
        # answers kept in dicts of numbers only, which the cyclic garbage collector never tracks
        self.reads: dict[int, float] = {}
        self.times: dict[float, dict[float, float]] = {}  # decodes -> prompt -> stage time
        self.steps: tuple[dict[int, float], dict[int, float]] = ({}, {})  # steady step, others_only
        self.tpots: dict[int, float] = {}
        self.ttfts: dict[int, float] = {}  # kept by physics.ttft
        self.kept: dict[tuple, dict[str, float]] = {}  # parts, asked for estimates only
        self.memo: dict[str, int] = {}

    def _setup(self) -> None:
        """The terms of a stage step that do not depend on its tokens (module docstring)."""
        m, acc, wl, tp, pp, cal = self.m, self.acc, self.wl, self.tp, self.pp, self.cal
        link, engine = self.link, self.engine
        group = tp * pp
        self.uneven = uneven = stage_layers(m, pp) * pp / m.layers  # the slowest stage's share over 1/PP
        bw = acc.mem_bw_tbps * 1e12 * cal.eta_bw
        self.dp = dp = dp_layout(m, wl, tp)
        self.head_reads = (pp - 1) * _lm_head_bytes(m) if pp > 1 else 0.0
        # each TP rank reads its KV shard; ranks beyond the KV heads hold replicas (none under DP attention)
        self.kv_seq = arch.kv_bytes_for_sequence(m, wl.kv_precision, int(wl.avg_context))
        self.kv_copies = 1.0 if dp else tp / arch.kv_shards(m, tp)
        self.mem_den = group * bw
        peak, attn_peak = flops.achievable(acc, wl.precision), flops.achievable(acc, flops.attention_precision(wl))
        self.decode_s_per_token = uneven * (flops.flops_per_token(m) / peak + flops.decode_attention_flops_per_token(
            m, wl.avg_context) / attn_peak) / (group * cal.decode_mfu)
        routed = flops.routed_expert_flops_per_token(m) if dp else 0.0
        self.prompt_s_per_token = ((flops.flops_per_token(m) - routed) / peak + flops.attention_flops_per_token(
            m, wl.input_tokens / 2) / attn_peak) / (group * cal.prefill_mfu)
        self.prompt_expert_s_per_token = routed / peak / (group * cal.prefill_mfu)
        self.layers = layers = stage_layers(m, pp)
        self.wire_den = cal.link_efficiency * link.gbps * GB
        if not dp and tp > 1:
            self.tp_latency = 2 * layers * cal.allreduce_latency_us * 1e-6
            self.tp_per_token = 2 * layers * 2 * (tp - 1) / tp * m.hidden_size * ACTIVATION_BYTES / self.wire_den
        self.overhead = cal.layer_overhead_us * 1e-6 * engines.overhead_factor(engine, cal)
        self.token_s = token_seconds_per_layer(m, tp, cal)
        self.terms = None if dp else arch.active_weight_terms(m, wl.precision, tp)
        self.ready = True

    def weight_read(self, tokens_in: int) -> float:
        """Weight bytes the slowest stage's step reads for `tokens_in` tokens, the lm head at each hop."""
        got = self.reads.get(tokens_in)
        if got is None:
            m, wl, tp = self.m, self.wl, self.tp
            got = (moe.step_weight_read(m, wl.precision, tokens_in, tp) if self.dp
                   else arch.active_weight_bytes(m, wl.precision, tokens_in, tp, None, self.terms))
            got = self.reads[tokens_in] = got * self.uneven + self.head_reads
        return got

    def _compute(self, decodes: float, prompt: float) -> tuple[float, float, float, float, float, float]:
        """(t_mem, t_decode, t_prompt, t_comm, t_fixed, t_stage) of one step (module docstring)."""
        if not self.ready:
            self._setup()
        d = max(decodes, 0.0)
        tokens_in = max(1, round(d + prompt))
        read = self.reads.get(tokens_in)
        if read is None:
            read = self.weight_read(tokens_in)
        t_mem = (read + d * self.kv_seq * self.kv_copies * self.uneven) / self.mem_den
        t_decode = self.decode_s_per_token * d
        busiest = moe.slowest_rank_prompt(prompt, self.wl, self.tp, self.chunk_total) * self.tp if self.dp else prompt
        t_prompt = self.uneven * (busiest * self.prompt_s_per_token + prompt * self.prompt_expert_s_per_token)
        tokens = d + prompt
        t_comm = 0.0
        if self.dp:
            cal = self.cal
            t_comm = moe.all_to_all_s(self.m, tokens, self.tp, self.layers, self.link.gbps, cal.link_efficiency,
                                      cal.allreduce_latency_us)
        elif self.tp > 1:
            t_comm = self.tp_latency + tokens * self.tp_per_token
        if self.pp > 1:  # the send to the next stage
            t_comm += P2P_LATENCY_US * 1e-6 + tokens * self.m.hidden_size * ACTIVATION_BYTES / self.wire_den
        t_fixed = self.layers * (self.overhead + tokens * self.token_s)
        if self.dp:  # an expert-parallel group reaches ep_efficiency of this (Calibration.ep_efficiency)
            t_mem, t_decode, t_prompt, t_comm, t_fixed = (t / self.cal.ep_efficiency
                                                          for t in (t_mem, t_decode, t_prompt, t_comm, t_fixed))
        if self.eng.prefill_first and t_decode > 0 and t_prompt > 0:
            return t_mem, t_decode, t_prompt, t_comm, t_fixed, max(t_mem, t_decode) + t_prompt + t_comm + t_fixed
        return t_mem, t_decode, t_prompt, t_comm, t_fixed, max(t_mem, t_decode + t_prompt) + t_comm + t_fixed

    def parts(self, decodes: float, prompt: float) -> dict[str, float]:
        """Seconds of one step of the slowest stage by component (module docstring)."""
        hit = self.kept.get((decodes, prompt))
        if hit is None:
            t_mem, t_decode, t_prompt, t_comm, t_fixed, _ = self._compute(decodes, prompt)
            hit = self.kept[(decodes, prompt)] = {
                "memory": t_mem, "compute": t_decode, "prefill": t_prompt, "comm": t_comm, "fixed": t_fixed}
        return hit

    def time(self, decodes: float, prompt: float) -> float:
        """stage_time of parts(decodes, prompt)."""
        row = self.times.get(decodes)
        if row is None:
            row = self.times[decodes] = {}
        got = row.get(prompt)
        if got is None:
            got = row[prompt] = self._compute(decodes, prompt)[5]
        return got

    def budget(self, decodes: float) -> float:
        """prompt_budget beside `decodes` decode tokens."""
        total = self.chunk_total
        return float(total) if self.eng.prefill_first else max(total - decodes, total / 8)

    def _mix(self, batch: int, others_only: bool) -> tuple[float | None, float, float]:
        """(f, decodes, prompt tokens of the mixed step) of steady_parts; f None without prompts."""
        pp, wl = self.pp, self.wl
        micro = batch / pp
        share = (batch - 1) / batch if others_only else 1.0
        per_step = micro * wl.input_tokens / wl.output_tokens * share
        if per_step <= 0:
            return None, micro, 0.0
        chunk = min(self.budget(micro), clump_tokens(wl, batch, self.cal))
        tokens = max(chunk, per_step)
        return min(1.0, per_step / tokens), micro, tokens

    def steady_parts(self, batch: int, others_only: bool = False) -> dict[str, float]:
        """steady_parts at `batch` sequences (see it)."""
        f, micro, tokens = self._mix(batch, others_only)
        if f is None:
            return self.parts(micro, 0.0)
        mixed_p, pure_p = self.parts(micro, tokens), self.parts(micro, 0.0)
        out = {k: f * mixed_p[k] + (1 - f) * pure_p[k] for k in pure_p}
        out["step"] = self.steady_step(batch, others_only)
        return out

    def steady_step(self, batch: int, others_only: bool = False) -> float:
        """The average stage step of steady_parts: f x the mixed step + (1 - f) x the pure one."""
        kept = self.steps[1 if others_only else 0]
        got = kept.get(batch)
        if got is None:
            f, micro, tokens = self._mix(batch, others_only)
            got = kept[batch] = (self.time(micro, 0.0) if f is None
                                 else f * self.time(micro, tokens) + (1 - f) * self.time(micro, 0.0))
        return got

    def tpot(self, batch: int) -> float:
        """Seconds per output token at `batch` sequences: tpot_from(steady_parts(batch, others only))."""
        got = self.tpots.get(batch)
        if got is None:
            got = self.tpots[batch] = self.pp * self.steady_step(batch, True)
        return got

    @property
    def users_cap(self) -> int:
        """The most sequences it may hold: min(max_batch_by_memory, batch_cap)."""
        got = self.memo.get("users_cap")
        if got is None:
            got = self.memo["users_cap"] = min(self.max_batch, batch_cap(self.m, self.wl, self.tp, self.cal))
        return got

    @property
    def max_batch(self) -> int:
        """max_batch_by_memory of this replica."""
        got = self.memo.get("max_batch")
        if got is None:
            got = self.memo["max_batch"] = max_batch_by_memory(self.m, self.acc, self.wl, self.tp, self.pp, self.cal)
        return got


def stage_time(p: dict[str, float], engine: str | None = None) -> float:
    """Seconds of one stage step from its parts: a roofline over the weight read and all matmuls,
    or, on a prefill-first engine with both decodes and a prompt, a decode pass plus a prefill
    pass (compute-bound: its own weight read hides under its matmuls)."""
    if engines.get(engine).prefill_first and p["compute"] > 0 and p["prefill"] > 0:
        return max(p["memory"], p["compute"]) + p["prefill"] + p["comm"] + p["fixed"]
    return max(p["memory"], p["compute"] + p["prefill"]) + p["comm"] + p["fixed"]


def prompt_budget(acc: Accelerator, decodes: float, engine: str | None) -> float:
    """Prompt tokens one step may carry beside `decodes` decode tokens: the engine's token budget
    less the decodes (decode first), at least an eighth of it; all of it on a prefill-first engine."""
    eng = engines.get(engine)
    total = eng.chunk_tokens(acc)
    return float(total) if eng.prefill_first else max(total - decodes, total / 8)


def admission_wait_s(wl: Workload, batch: int, cal: Calibration) -> float:
    """Seconds a request waits to be admitted in a closed loop of `batch` clients: the serving
    front end admits the prompts that arrive together one after another, at
    admission_us_per_prompt_token for each prompt token of the other batch - 1 clients
    (Calibration.admission_us_per_prompt_token says where the figure comes from)."""
    return cal.admission_us_per_prompt_token * 1e-6 * wl.input_tokens * max(batch - 1, 0)


def clump_tokens(wl: Workload, batch: int, cal: Calibration) -> float:
    """Prompt tokens that share the steady state's mixed steps in a closed loop of `batch` clients
    (the chunk behind TPOT): a request's own prompt plus prefill_queue_fraction of the other
    clients' prompts. A request's own TTFT does not queue behind these at the GPU (physics.ttft:
    its wait is the front end's admission, admission_wait_s)."""
    return wl.input_tokens * (1 + cal.prefill_queue_fraction * max(batch - 1, 0))


def steady_parts(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int, batch: int,
                 link: Link | None = None, cal: Calibration | None = None, engine: str | None = None,
                 others_only: bool = False) -> dict[str, float]:
    """The average step of one stage while `batch` sequences decode in a closed loop: each finished
    request is replaced by a new prompt, so batch x s_in / s_out prompt tokens arrive per step
    (the other clients' only, with `others_only`: a request's own prefill is its TTFT, not part
    of its inter-token latency). They come in chunks of up to the engine's budget: a fraction f
    of steps carries a chunk, the rest are pure decode steps. Returns the f-weighted parts, and
    their average step time as "step" (Replica.steady_step, all the batch search needs). Callers
    must not change the returned dict (without prompts it is the shared pure step's)."""
    return replica(m, acc, wl, tp, pp, link, cal, engine).steady_parts(batch, others_only)


def tpot_from(p: dict[str, float], pp: int, engine: str | None = None) -> float:
    """Seconds per output token: a token passes every stage in turn."""
    return pp * (p["step"] if "step" in p else stage_time(p, engine))
