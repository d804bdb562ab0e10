"""What every verifier check shares: tolerances, the Verification record, the demands a job makes
(re-derived from the scenario), offer eligibility and a ledger of what placements use."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from planner.data.catalog import Catalog, Offer, is_held
from planner.data.scenario import (
    Scenario,
)

REL = 0.005  # cost sums, rounding of reported numbers


USD = 1.0  # absolute slack on dollar sums (values are rounded to cents)


TIGHT = 1e-6  # physics inequalities (the optimizer used the same functions)



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


def offer_problem(o: Offer, s: Scenario, cat: Catalog) -> str:
    """Why the scenario's policy or site forbids holding this offer ('' if it may)."""
    system = cat.systems.get(o.system)
    if system is None or system.accelerator not in cat.accelerators:
        return f"offer '{o.id}' names a system or accelerator the catalog lacks"
    acc = cat.accelerators[system.accelerator]
    p = s.policy
    regions = p.regions if p.regions is not None else (s.site.region, "global")  # (global hardware bought runs at the site)
    held = is_held(o) and any(h.system == o.system and h.count == o.max_systems for h in s.owned)
    rules = [
        (held or o.acquisition in p.acquisition, f"acquisition '{o.acquisition}' is not in policy.acquisition"),
        (held or p.providers is None or o.provider in p.providers, f"provider '{o.provider}' is not in policy.providers"),
        (held or o.provider not in p.exclude_providers, f"provider '{o.provider}' is excluded"),
        (p.accelerators is None or acc.id in p.accelerators, f"accelerator '{acc.id}' not in policy.accelerators"),
        (acc.id not in p.exclude_accelerators, f"accelerator '{acc.id}' is excluded"),
        (p.stacks is None or acc.stack in p.stacks, f"stack '{acc.stack}' is not in policy.stacks"),
        (held or not (o.acquisition == "buy" and system.cooling == "liquid" and s.site.cooling == "air"),
         f"bought liquid-cooled '{system.id}' at an air-cooled site"),
        (o.max_systems != 0, f"offer '{o.id}' has no availability (max_systems 0)"),
        (held or o.region in regions or (o.acquisition == "buy" and o.region == "global" and s.site.region in regions),
         f"offer '{o.id}' is in region '{o.region}'" + (f" (bought for a site in '{s.site.region}')" if
                                                        o.acquisition == "buy" else "") + ", outside policy.regions"),
        (held or p.provider_tiers is None or o.tier in p.provider_tiers,
         f"offer '{o.id}' is of tier '{o.tier}', not in policy.provider_tiers"),
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
        self.usage = defaultdict(lambda: defaultdict(float))  # offer -> demand -> accelerator-hours (cost split)
        self.serve_slots = defaultdict(float)  # offer -> accelerators at peak (owned)
        self.rent_slots = defaultdict(lambda: defaultdict(float))  # offer -> part -> accelerators
        self.slot_hours = defaultdict(float)  # offer -> accelerator-hours per year
        self.hours_slack = defaultdict(float)  # offer -> accelerator-hours the plan's rounding hides
        self.rent_slack = defaultdict(float)  # offer -> USD of batch rent the plan's rounding hides
        self.batch_fit = defaultdict(list)  # offer -> accelerators per run
        self.serve_parts = defaultdict(list)  # owned offer -> (job, hours per day, accelerators at peak)
        self.batch_runs = defaultdict(list)  # owned offer -> (job, accelerators, hours, deadline, runs/year)
        self.edge_units = defaultdict(int)
        self.rent_usd = defaultdict(float)  # offer -> rentals other than serving (batch)
        self.rent_hours = defaultdict(lambda: defaultdict(float))  # offer -> part -> hours per year
        self.rent_batch = defaultdict(lambda: defaultdict(float))  # rented offer -> part -> system accelerator-hours of runs
        self.edge_usd = defaultdict(float)
        self.uses = defaultdict(set)  # offer -> kinds using it
