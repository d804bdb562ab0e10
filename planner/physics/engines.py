"""Serving engines: how each schedules prefill beside decode, and its per-step token budget.

Facts, each from the engine's own code or docs (reference/serving-benchmarks.md §C):
  vllm     V1 always chunks prefill and schedules decode first: every step packs the running
           decodes, then fills the rest of `max_num_batched_tokens` with prompt chunks. `vllm serve`
           default budget 8192 tokens on devices of >= 70 GiB other than A100, else 2048
           (vllm/engine/arg_utils.py @99d7eb5d, [V7], [V8]).
  sglang   prefill first: a new prompt runs as its own forward pass while running decodes wait
           (scheduler.get_next_batch_to_run, [S7]); `--chunked-prefill-size` default 2048 below
           35 GB, 8192 below 160 GB, 16384 from 160 GB (server_args.py, [S6]).
  trtllm   in-flight batching packs context chunks and generation tokens in one step
           (paged-attention-ifb-scheduler docs, [T7]); trtllm-bench turns chunked context on
           (throughput.py @5685103, [T4]); its default max_num_tokens is not verified: 8192 assumed.
  llamacpp single-stream bench rows (calibration.md C5); logical batch (`-b`) default 2048.
No engine given: vLLM's scheduling rules (the most common open stack), at the fitted base step
overhead, which is TensorRT-LLM's (overhead_vllm is 1.37 of it): the rates a tuned stack reaches, as
the training rates are NeMo/Megatron-class. A job served by stock vLLM sets engine: vllm (the serving
review: unset, the planner was 5-12% faster per token than with vllm).

The per-engine fixed step cost (kernel launches, CUDA graphs, host scheduling) is the one
engine-specific factor, a multiplier on Calibration.layer_overhead_us fitted only for engines
with public rows in benchmarks/calibration_data.csv (overhead_<engine>; 1.0 where no data).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.data.catalog import Accelerator

ENGINES = ("vllm", "sglang", "trtllm", "llamacpp")


@dataclass(frozen=True)
class Engine:
    name: str
    prefill_first: bool
    """A prompt's prefill runs as its own pass, pausing decodes (SGLang); else it shares the step."""

    def chunk_tokens(self, acc: Accelerator) -> int:
        """Tokens one step may process (prompt chunks plus decodes)."""
        gb = acc.memory_gb
        if self.name == "sglang":
            return 2048 if gb < 35 else (8192 if gb < 160 else 16384)
        if self.name == "trtllm":
            return 8192
        if self.name == "llamacpp":
            return 2048
        return 8192 if gb >= 70 and not acc.id.startswith("a100") else 2048


def get(name: str | None) -> Engine:
    """The engine profile for `name` (None: vLLM's scheduling rules); ValueError if unknown."""
    try:
        return _PROFILES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}") from None


_PROFILES = {None: Engine("default", prefill_first=False),
             **{name: Engine(name, prefill_first=name == "sglang") for name in ENGINES}}


def overhead_factor(name: str | None, cal) -> float:
    """Multiplier on the per-layer step overhead for this engine (calibration overhead_<name>)."""
    return getattr(cal, f"overhead_{name}", 1.0) if name else 1.0
