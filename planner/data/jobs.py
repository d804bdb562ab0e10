"""How a scenario's job becomes what it asks of the fleet: the one reader of jobs that the options,
the MILPs and the verifier share.

A job makes one or two demands (Demand): serving users (a serve job; an RL job's rollouts), batch
runs (fine-tuning, pretraining; an RL job's trainer, one run per day) or edge units. Each demand
carries the request shape the physics needs (Workload) or the training run (TrainRun), and its
size in a given year of the horizon: year 1's size times demand_factor(job, year).

>>> from types import SimpleNamespace as J
>>> demand_factor(J(demand_multipliers=[1.0, 2.5], growth_per_year=0.0), 2)
2.5
>>> demand_factor(J(demand_multipliers=None, growth_per_year=0.5), 3)
2.25
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.data.constants import DAYS_PER_YEAR
from planner.data.scenario import EdgeJob, FinetuneJob, PretrainJob, RLJob, ServeJob


@dataclass(frozen=True)
class Workload:
    """The request shape of a serving demand: precisions and tokens per request."""

    precision: str = "bf16"
    kv_precision: str = "bf16"
    input_tokens: int = 1024
    output_tokens: int = 256
    context_tokens: int | None = None
    """KV reserved per sequence; default input + output."""

    @property
    def kv_tokens(self) -> int:
        return self.context_tokens or (self.input_tokens + self.output_tokens)

    @property
    def avg_context(self) -> float:
        """Average tokens in the KV cache over a sequence's decode: input + output/2 for one
        request; when the sequence is a conversation holding up to `context_tokens`, at least
        half of that (its history fills the cache between turns)."""
        one_request = self.input_tokens + self.output_tokens / 2
        if self.context_tokens:
            return min(self.kv_tokens, max(one_request, self.context_tokens / 2))
        return min(self.kv_tokens, one_request)


@dataclass(frozen=True)
class TrainRun:
    """One training run: method (full, lora, qlora, pretrain), tokens processed, sequence length,
    LoRA rank and compute precision."""

    method: str
    tokens: float
    sequence_tokens: int
    lora_rank: int
    precision: str


@dataclass(frozen=True)
class Demand:
    """One thing the fleet must provide: users of a serving job, the runs of a batch job, or edge units."""

    key: str  # unique; equals the job name, or "<job>/rollout", "<job>/trainer" for RL
    job: str
    kind: str  # serve | batch | edge
    users: int = 0
    hours_per_day: float = 24.0
    runs_per_year: float = 0.0
    max_hours_per_run: float = 0.0
    units: int = 0
    latency_critical: bool = False
    priority: float = 1.0
    min_tokens_per_s: float = 0.0
    """per user (serving) or per unit (edge)"""
    max_ttft_s: float | None = None
    workload: Workload | None = None
    train: TrainRun | None = None


def kv_precision_of(precision: str, kv_precision: str | None = None) -> str:
    """The KV cache's precision: as given, else fp8 for 8- and 4-bit weights, bf16 otherwise."""
    return kv_precision or ("fp8" if precision in ("fp8", "fp4") else "bf16")


def serve_workload(job: ServeJob) -> Workload:
    return Workload(job.precision, job.kv_precision, job.input_tokens, job.output_tokens, job.context_tokens)


def rollout_workload(job: RLJob) -> Workload:
    """An RL rollout: a prompt of a quarter of the context (at most job.rollout_prompt_tokens),
    generating the rest."""
    ctx = job.rollout_context_tokens
    prompt = max(1, min(job.rollout_prompt_tokens, ctx // 4))
    return Workload(job.precision, kv_precision_of(job.precision), prompt, max(1, ctx - prompt), ctx)


def demand_factor(job, year: int) -> float:
    """Year `year`'s demand over the job's stated size: demand_multipliers[year - 1] when given
    (the last one holds beyond the list), else compound growth_per_year."""
    if job.demand_multipliers:
        return job.demand_multipliers[min(year, len(job.demand_multipliers)) - 1]
    return (1.0 + job.growth_per_year) ** (year - 1)


def _scaled(count: int, g: float) -> int:
    return count if g == 1 else math.ceil(count * g - 1e-9)


def demands_of_job(job, year: int = 1) -> list[Demand]:
    """The demands a job makes in `year` (its stated size times demand_factor)."""
    g = demand_factor(job, year)
    base = dict(job=job.name, priority=job.priority)
    if isinstance(job, ServeJob):
        return [Demand(job.name, kind="serve", users=_scaled(job.concurrent_users, g),
                       hours_per_day=job.hours_per_day, latency_critical=job.latency_critical,
                       min_tokens_per_s=job.min_tokens_per_s_per_user, max_ttft_s=job.max_ttft_s,
                       workload=serve_workload(job), **base)]
    if isinstance(job, FinetuneJob):
        run = TrainRun(job.method, job.dataset_tokens * job.epochs, job.sequence_tokens, job.lora_rank, "bf16")
        return [Demand(job.name, kind="batch", runs_per_year=job.runs_per_year * g,
                       max_hours_per_run=job.max_hours_per_run, train=run, **base)]
    if isinstance(job, PretrainJob):
        run = TrainRun("pretrain", job.training_tokens, job.sequence_tokens, 16, job.precision)  # rank unused
        return [Demand(job.name, kind="batch", runs_per_year=job.runs_per_year * g,
                       max_hours_per_run=job.max_days * 24, train=run, **base)]
    if isinstance(job, RLJob):
        users = math.ceil(job.rollout_tokens_per_s / job.min_tokens_per_s_per_rollout)
        run = TrainRun("full" if job.method == "full" else "lora", job.train_tokens_per_day,
                       job.trainer_sequence_tokens, job.lora_rank, "bf16")
        return [Demand(f"{job.name}/rollout", kind="serve", users=_scaled(users, g), hours_per_day=job.hours_per_day,
                       min_tokens_per_s=job.min_tokens_per_s_per_rollout, workload=rollout_workload(job), **base),
                Demand(f"{job.name}/trainer", kind="batch", runs_per_year=DAYS_PER_YEAR * g,
                       max_hours_per_run=job.hours_per_day, train=run, **base)]
    assert isinstance(job, EdgeJob)
    return [Demand(job.name, kind="edge", units=_scaled(job.devices, g), min_tokens_per_s=job.min_tokens_per_s,
                   **base)]


def demands_of(scenario, year: int = 1) -> list[Demand]:
    """Every demand of the scenario in `year`, in job order."""
    return [d for job in scenario.jobs for d in demands_of_job(job, year)]


def hours_per_year(d: Demand) -> float:
    """Hours a serving demand runs in a year."""
    return d.hours_per_day * DAYS_PER_YEAR

