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

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property

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
    """KV reserved per sequence; default input + output, and never less: a request's own tokens
    are in the cache by its last one, whatever context the job states."""
    attention_dp: bool = False
    """How a replica of an MoE over several ranks is laid out: False, tensor-parallel attention and
    experts; True, expert parallelism with data-parallel attention (physics.moe)."""
    open_loop: bool = False
    """How requests arrive: False, a closed loop of concurrent users (the benchmark convention:
    clients that finish together send together, physics.ttft); True, at a rate, each request on its
    own (a job given as requests_per_s): its first token waits for the prompts ahead of it at the
    replica's prefill, not for a wave of them (physics.ttft.open_loop_wait_s)."""

    @property
    def kv_tokens(self) -> int:
        return max(self.context_tokens or 0, self.input_tokens + self.output_tokens)

    @cached_property
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
    forward_passes: int = 0
    """forward passes over the tokens besides the update: an RL trainer's log-prob passes"""


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
    pool: str | None = None
    """serving demands with the same pool share replicas (policy.pool_jobs; see pools_of)"""
    requests_per_s: float | None = None
    """peak request rate of this part, when the job gives traffic as requests_per_s"""


def kv_precision_of(precision: str, kv_precision: str | None = None) -> str:
    """The KV cache's precision: as given, else fp8 for fp8 and fp4 weights, bf16 otherwise (int8 and
    int4 are weight-only formats beside a bf16 cache)."""
    return kv_precision or ("fp8" if precision in ("fp8", "fp4") else "bf16")


def serve_workload(job: ServeJob) -> Workload:
    return Workload(job.precision, job.kv_precision, job.input_tokens, job.output_tokens, job.context_tokens,
                    open_loop=job.requests_per_s is not None)


def request_seconds(job: ServeJob, output_tokens: int) -> float:
    """Seconds one request is in flight at the job's latency target: the TTFT limit (0 when unset)
    plus its output at the per-user speed target."""
    return (job.max_ttft_s or 0.0) + output_tokens / job.min_tokens_per_s_per_user


def serve_parts(job: ServeJob) -> list[tuple[str, Workload, int, float | None]]:
    """(demand key, workload, concurrent users, requests per s) for each request size of a serve job.

    Without request_mix: the job itself. With requests_per_s, concurrency follows by Little's law
    at the latency target, per bucket b of the mix:
        users_b = ceil(requests_per_s x share_b x (max_ttft_s + output_tokens_b / min_tokens_per_s_per_user))
    With concurrent_users and a mix, the users split in proportion to share_b x that time (the
    share of in-flight requests of size b). A mix of several sizes gives parts '<job>/<in>x<out>'."""
    mix = job.request_mix or [None]
    sizes = [(b.input_tokens, b.output_tokens, b.share) if b else (job.input_tokens, job.output_tokens, 1.0)
             for b in mix]
    weights = [share * request_seconds(job, out) for _, out, share in sizes]
    out = []
    for (inp, outp, share), w in zip(sizes, weights):
        key = job.name if len(sizes) == 1 else f"{job.name}/{inp}x{outp}"
        ctx = job.context_tokens if (not job.request_mix or "context_tokens" in job.model_fields_set) else None
        wl = Workload(job.precision, job.kv_precision, inp, outp, ctx, open_loop=job.requests_per_s is not None)
        if job.requests_per_s is not None:
            rate = job.requests_per_s * share
            users = max(1, math.ceil(rate * request_seconds(job, outp) - 1e-9))
        else:
            rate = None
            users = max(1, math.ceil(job.concurrent_users * w / sum(weights) - 1e-9))
        out.append((key, wl, users, rate))
    return out


def api_prompt_tokens(job: ServeJob) -> int:
    """Prompt tokens a hosted API bills per request of a serve job: its input_tokens (what a
    self-hosted replica prefills: not already cached) and its history_tokens, a conversation's
    earlier turns, which the replica keeps in its prefix cache but a stateless API receives again on
    every turn (the serving review: 16k-token chats billed 1,000 input tokens a turn)."""
    return job.input_tokens + job.history_tokens


def output_tokens_per_s_per_user(job: ServeJob) -> float:
    """Output tokens one concurrent user of a serve job generates per second at the peak, for its
    yearly tokens (token-priced APIs, unit costs): its speed target; or, where the job gives its
    traffic as requests_per_s, the peak rate's output tokens over its Little's-law users (summed over
    the request sizes of a request_mix), who also spend max_ttft_s waiting for the first token and
    round up to whole users:
        sum_b requests_per_s x share_b x output_tokens_b / sum_b users_b  (<= min_tokens_per_s_per_user)
    (0.5 requests/s of 600 output tokens at 20 tok/s within 5 s: 18 users, 16.7 tok/s each, not 20;
    8 requests/s of 70% 1000x300 and 30% 6000x400 at 25 tok/s within 1 s: 73 + 41 users, 2,640
    output tokens/s, 23.2 each)."""
    parts = serve_parts(job)
    if job.requests_per_s is None:
        return job.min_tokens_per_s_per_user
    users = sum(u for _, _, u, _ in parts)
    return min(job.min_tokens_per_s_per_user, sum(rate * wl.output_tokens for _, wl, _, rate in parts) / users)


def pool_key(job) -> str | None:
    """Serving jobs that may share replicas: same model, precision, KV precision, engine, hours per
    day and latency_critical (a replica runs one engine with one set of weights, for the hours its
    jobs run; a latency-critical job shares only with other latency-critical ones)."""
    if not isinstance(job, ServeJob):
        return None
    key = f"{job.model}/{job.precision}"
    if job.kv_precision != kv_precision_of(job.precision):
        key += f"/kv-{job.kv_precision}"
    if job.engine:
        key += f"/{job.engine}"
    if job.hours_per_day < 24:
        key += f"/{job.hours_per_day:g}h"
    if job.latency_critical:
        key += "/critical"
    return key


def edge_workload(job: EdgeJob) -> Workload:
    """An edge unit's requests: half its context in, a quarter out, the whole context reserved."""
    ctx = job.context_tokens
    return Workload(job.precision, kv_precision_of(job.precision), max(1, ctx // 2), max(1, ctx // 4), ctx)


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


def train_precision(job) -> str:
    """The precision a training job computes in: an RL job's trainer_precision, else its precision."""
    return getattr(job, "trainer_precision", None) or getattr(job, "precision", "bf16")


def demands_of_job(job, year: int = 1) -> list[Demand]:
    """The demands a job makes in `year` (its stated size times demand_factor)."""
    g = demand_factor(job, year)
    base = dict(job=job.name, priority=job.priority)
    if isinstance(job, ServeJob):
        return [Demand(key, kind="serve", users=_scaled(users, g),
                       hours_per_day=job.hours_per_day, latency_critical=job.latency_critical,
                       min_tokens_per_s=job.min_tokens_per_s_per_user, max_ttft_s=job.max_ttft_s,
                       workload=wl, requests_per_s=None if rate is None else rate * g, **base)
                for key, wl, users, rate in serve_parts(job)]
    if isinstance(job, FinetuneJob):
        run = TrainRun(job.method, job.dataset_tokens * job.epochs, job.sequence_tokens, job.lora_rank, train_precision(job))
        return [Demand(job.name, kind="batch", runs_per_year=job.runs_per_year * g,
                       max_hours_per_run=job.max_hours_per_run, train=run, **base)]
    if isinstance(job, PretrainJob):
        run = TrainRun("pretrain", job.training_tokens, job.sequence_tokens, 16, job.precision)  # rank unused
        return [Demand(job.name, kind="batch", runs_per_year=job.runs_per_year * g,
                       max_hours_per_run=job.max_days * 24, train=run, **base)]
    if isinstance(job, RLJob):
        users = math.ceil(job.rollout_tokens_per_s / job.min_tokens_per_s_per_rollout)
        run = TrainRun("full" if job.method == "full" else "lora", job.train_tokens_per_day,
                       job.trainer_sequence_tokens, job.lora_rank, train_precision(job), job.logprob_passes)
        return [Demand(f"{job.name}/rollout", kind="serve", users=_scaled(users, g), hours_per_day=job.hours_per_day,
                       min_tokens_per_s=job.min_tokens_per_s_per_rollout, workload=rollout_workload(job), **base),
                Demand(f"{job.name}/trainer", kind="batch", runs_per_year=DAYS_PER_YEAR * g,
                       max_hours_per_run=job.hours_per_day, train=run, **base)]
    assert isinstance(job, EdgeJob)
    return [Demand(job.name, kind="edge", units=_scaled(job.devices, g), min_tokens_per_s=job.min_tokens_per_s,
                   **base)]


def demands_of(scenario, year: int = 1) -> list[Demand]:
    """Every demand of the scenario in `year`, in job order, each serving demand with its pool
    (pools_of) when policy.pool_jobs."""
    out = [d for job in scenario.jobs for d in demands_of_job(job, year)]
    pools = pools_of(scenario)
    return [dataclasses.replace(d, pool=pools[d.key]) if d.key in pools else d for d in out]


HOURLY = ("on-demand", "spot")
"""acquisition modes rented by the hour: a pool's rentals of them are shared with every pool that runs
the same hours a day (pooling's R)"""


def pools_of(scenario) -> dict[str, str]:
    """Demand key -> pool id, for serving demands that share replicas: those of serve jobs with the
    same pool_key, when policy.pool_jobs and at least two demands share it; and, where the policy
    rents by the hour, a job alone in its pool when another pool runs the same hours a day, so that
    their replicas share rented systems (a job's own hourly rentals are whole systems of its own:
    three models on AWS H100 x8 nodes with N+1 rented 6 nodes, $2,892,902 a year, where sharing
    takes 2, $964,301)."""
    if not getattr(scenario.policy, "pool_jobs", False):
        return {}
    members: dict[str, list[str]] = {}
    hours: dict[str, float] = {}
    for job in scenario.jobs:
        key = pool_key(job)
        if key is not None:
            members.setdefault(key, []).extend(k for k, *_ in serve_parts(job))
            hours[key] = job.hours_per_day
    rents = any(a in HOURLY for a in scenario.policy.acquisition)
    alike = {h: sum(1 for x in hours.values() if x == h) for h in hours.values()}
    return {dk: key for key, dks in members.items() if len(dks) > 1 or (rents and alike[hours[key]] > 1)
            for dk in dks}


def hours_per_year(d: Demand) -> float:
    """Hours a serving demand runs in a year."""
    return d.hours_per_day * DAYS_PER_YEAR

