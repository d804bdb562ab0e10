"""What every verifier check shares: tolerances, the Verification record, the demands a job makes
(re-derived from the scenario), offer eligibility and a ledger of what placements use."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from planner.data.catalog import Catalog, Offer
from planner.data.scenario import (
    EdgeJob,
    FinetuneJob,
    PretrainJob,
    RLJob,
    Scenario,
    ServeJob,
)
from planner.physics import costs, serving

REL = 0.005  # cost sums, rounding of reported numbers


USD = 1.0  # absolute slack on dollar sums (values are rounded to cents)


TIGHT = 1e-6  # physics inequalities (the optimizer used the same functions)


HOURS_PER_YEAR = costs.HOURS_PER_YEAR


EDGE_KINDS = {"robot": ("edge",), "desk": ("workstation",), "phone": (), "any": ("edge", "workstation")}


@dataclass
class Verification:
    """What was checked: the number of checks passed, and each failure as one line."""

    passed: int = 0
    failures: list[str] = field(default_factory=list)
    families: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def check(self, family: str, ok: bool, message: str) -> bool:
        self.families[family] = self.families.get(family, 0) + 1
        if ok:
            self.passed += 1
        else:
            self.failures.append(f"[{family}] {message}")
        return ok

    def summary(self) -> str:
        if self.ok:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.families.items()))
            return f"verified: {self.passed} checks passed ({kinds})"
        lines = [f"plan failed verification: {len(self.failures)} of "
                 f"{self.passed + len(self.failures)} checks failed"]
        return "\n".join(lines + ["  - " + f for f in self.failures])


@dataclass(frozen=True)
class Part:
    """One thing a job asks of the fleet, re-derived from the scenario."""

    key: str
    kind: str  # serve | batch | edge
    users: int = 0
    hours_per_day: float = 24.0
    target_tps: float = 0.0
    max_ttft_s: float | None = None
    workload: serving.Workload | None = None
    latency_critical: bool = False
    runs_per_year: float = 0.0
    deadline_h: float = 0.0
    train: tuple = ()  # (method, tokens, seq, rank, precision)


def demand_factor(job, year: int) -> float:
    """Year `year`'s demand over year 1's: demand_multipliers if given, else compound growth."""
    if job.demand_multipliers:
        return job.demand_multipliers[min(year, len(job.demand_multipliers)) - 1]
    return (1.0 + job.growth_per_year) ** (year - 1)


def _scaled(count: int, g: float) -> int:
    return count if g == 1 else math.ceil(count * g - 1e-9)


def parts_of(job, year: int = 1) -> list[Part]:
    """The demands a job makes in `year`: serving users, batch runs, or edge units (RL: rollouts +
    trainer), year 1's scaled by its growth."""
    g = demand_factor(job, year)
    if isinstance(job, ServeJob):
        wl = serving.Workload(job.precision, job.kv_precision, job.input_tokens, job.output_tokens,
                              job.context_tokens)
        return [Part(job.name, "serve", _scaled(job.concurrent_users, g), job.hours_per_day,
                     job.min_tokens_per_s_per_user, job.max_ttft_s, wl, job.latency_critical)]
    if isinstance(job, FinetuneJob):
        return [Part(job.name, "batch", runs_per_year=job.runs_per_year * g, deadline_h=job.max_hours_per_run,
                     train=(job.method, job.dataset_tokens * job.epochs, job.sequence_tokens, job.lora_rank, "bf16"))]
    if isinstance(job, PretrainJob):
        return [Part(job.name, "batch", runs_per_year=job.runs_per_year * g, deadline_h=job.max_days * 24,
                     train=("pretrain", job.training_tokens, job.sequence_tokens, 16, job.precision))]
    if isinstance(job, RLJob):
        ctx = job.rollout_context_tokens
        prompt = max(1, min(2048, ctx // 4))
        wl = serving.Workload(job.precision, "fp8" if job.precision in ("fp8", "fp4") else "bf16", prompt,
                              max(1, ctx - prompt), ctx)
        users = math.ceil(job.rollout_tokens_per_s / job.min_tokens_per_s_per_rollout)
        return [Part(f"{job.name}/rollout", "serve", _scaled(users, g), job.hours_per_day,
                     job.min_tokens_per_s_per_rollout, None, wl),
                Part(f"{job.name}/trainer", "batch", runs_per_year=365 * g, deadline_h=job.hours_per_day,
                     train=("full" if job.method == "full" else "lora", job.train_tokens_per_day, 8192, 16, "bf16"))]
    assert isinstance(job, EdgeJob)
    return [Part(job.name, "edge", users=_scaled(job.devices, g))]


def offer_problem(o: Offer, s: Scenario, cat: Catalog) -> str:
    """Why the scenario's policy or site forbids holding this offer ('' if it may)."""
    system = cat.systems.get(o.system)
    if system is None or system.accelerator not in cat.accelerators:
        return f"offer '{o.id}' names a system or accelerator the catalog lacks"
    acc = cat.accelerators[system.accelerator]
    p = s.policy
    rules = [
        (o.acquisition in p.acquisition, f"acquisition '{o.acquisition}' is not in policy.acquisition"),
        (p.providers is None or o.provider in p.providers, f"provider '{o.provider}' is not in policy.providers"),
        (o.provider not in p.exclude_providers, f"provider '{o.provider}' is excluded"),
        (p.accelerators is None or acc.id in p.accelerators, f"accelerator '{acc.id}' not in policy.accelerators"),
        (acc.id not in p.exclude_accelerators, f"accelerator '{acc.id}' is excluded"),
        (p.stacks is None or acc.stack in p.stacks, f"stack '{acc.stack}' is not in policy.stacks"),
        (not (o.acquisition == "buy" and system.cooling == "liquid" and s.site.cooling == "air"),
         f"bought liquid-cooled '{system.id}' at an air-cooled site"),
        (o.max_systems != 0, f"offer '{o.id}' has no availability (max_systems 0)"),
    ]
    return next((why for ok, why in rules if not ok), "")


def slots(replica: int, per_system: int) -> float | None:
    """Accelerators of a system a replica occupies (the remainder it cannot use included);
    None if a replica larger than one system is not a whole number of systems."""
    if replica <= per_system:
        return per_system / (per_system // replica)
    return float(replica) if replica % per_system == 0 else None


def owned(o: Offer) -> bool:
    return o.acquisition in ("buy", "reserved-1y", "reserved-3y")


def close(a: float, b: float, rel: float = REL, absolute: float = USD) -> bool:
    return abs(a - b) <= absolute + rel * max(abs(a), abs(b))


class Ledger:
    """Per offer: what the placements use of it, and what they should cost."""

    def __init__(self):
        self.serve_slots = defaultdict(float)  # offer -> accelerators at peak (owned)
        self.rent_slots = defaultdict(lambda: defaultdict(float))  # offer -> part -> accelerators
        self.slot_hours = defaultdict(float)  # offer -> accelerator-hours per year
        self.hours_slack = defaultdict(float)  # offer -> accelerator-hours the plan's rounding hides
        self.batch_fit = defaultdict(list)  # offer -> accelerators per run
        self.edge_units = defaultdict(int)
        self.rent_usd = defaultdict(float)  # offer -> rentals other than serving (batch)
        self.rent_hours = defaultdict(lambda: defaultdict(float))  # offer -> part -> hours per year
        self.edge_usd = defaultdict(float)
        self.uses = defaultdict(set)  # offer -> kinds using it
