"""The options layer's plain data: demands, the ways to run them, and what the optimizer sees."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.data.catalog import Offer
from planner.data.jobs import Demand  # noqa: F401  (options are per demand)


@dataclass(frozen=True)
class Half:
    """One half of a disaggregated replica split across two system types (options/crossdisagg.py):
    a prefill half admits prompts, a decode half holds users; the MILP links them by prompts per
    second (milp/crossdisagg.py)."""

    role: str
    """prefill or decode"""
    prefill_system: str
    prefill_tp: int
    decode_system: str
    decode_tp: int
    prompts_per_s: float
    """per replica: prompts admitted (prefill) or asked of the prefill side (decode)"""
    kv_transfer_s: float

    @property
    def pair(self) -> tuple[str, str, int, int]:
        return (self.prefill_system, self.decode_system, self.prefill_tp, self.decode_tp)


@dataclass(frozen=True)
class ServeOption:
    demand: str
    system: str
    accelerator: str
    tp: int
    pp: int
    accelerators_per_replica: int
    accelerator_slots: float  # accelerators of owned capacity one replica takes, packing waste included
    users_per_replica: int
    tokens_per_s_per_user: float
    ttft_s: float
    memory_gb_per_accelerator: float
    memory_gb_capacity: float
    weights_gb: float
    kv_gb: float
    binding: str
    regime: str
    basis: str = "modelled"
    """measured: users, speed and TTFT from the user's measurements (options/measured.py)"""
    basis_note: str = ""
    """why measurements for this split do not apply (outside their range), or where they come from"""
    half: Half | None = None
    """set on one half of a disaggregated replica across two system types (users_per_replica 0 on
    the prefill half: it holds no users, it admits their prompts)"""

    @property
    def systems_per_replica(self) -> int:
        return 1


@dataclass(frozen=True)
class BatchOption:
    demand: str
    system: str
    accelerator: str
    accelerators: int
    hours_per_run: float
    memory_gb_per_accelerator: float
    memory_gb_capacity: float
    binding: str


@dataclass(frozen=True)
class EdgeOption:
    demand: str
    system: str
    accelerator: str
    tokens_per_s: float
    memory_gb: float
    memory_gb_capacity: float
    power_w: float
    binding: str


@dataclass
class Options:
    demands: dict[str, Demand] = field(default_factory=dict)
    serve: dict[str, list[ServeOption]] = field(default_factory=dict)
    batch: dict[str, list[BatchOption]] = field(default_factory=dict)
    edge: dict[str, list[EdgeOption]] = field(default_factory=dict)
    offers: dict[str, Offer] = field(default_factory=dict)
    excluded_offers: dict[str, str] = field(default_factory=dict)
    eligible: dict[str, list[str]] = field(default_factory=dict)
    """demand -> the allowed offers it may use (demand_offer_exclusion), sorted."""
    ineligible: dict[str, dict[str, str]] = field(default_factory=dict)
    """demand -> allowed offer it may not use -> why."""
    api: dict[str, list] = field(default_factory=dict)
    """demand -> the hosted API offers it may use (options.api.ApiOption)."""
    excluded_api: dict[str, str] = field(default_factory=dict)
    """API offer of a job's model -> why the policy rules it out."""
    why_not: dict[str, dict[str, str]] = field(default_factory=dict)
    """demand -> accelerator -> why no configuration exists."""
    pair_only: set = field(default_factory=set)
    """offers dominated by another provider's (eligibility._dominated) kept for cross-system
    prefill/decode halves alone, at a network where their system pairs with another"""
    pair_eligible: dict[str, list[str]] = field(default_factory=dict)
    """demand -> the pair_only offers it may use (offers_for(..., pairs=True))"""

    def note(self, demand: str, accelerator: str, reason: str) -> None:
        self.why_not.setdefault(demand, {}).setdefault(accelerator, reason)

    def take(self, other: Options, demand: str) -> bool:
        """Demand's eligible offers, configurations and why-nots, as `other` (built for the same
        offers and policy) has them: a demand's options depend on its own job, the offers and the
        policy only, so a variant that changes one job searches only that job's again. True."""
        self.eligible[demand], self.ineligible[demand] = other.eligible[demand], other.ineligible[demand]
        for mine, theirs in ((self.serve, other.serve), (self.batch, other.batch), (self.edge, other.edge)):
            if demand in theirs:
                mine[demand] = list(theirs[demand])
        if demand in other.why_not:
            self.why_not[demand] = dict(other.why_not[demand])
        self.pair_eligible[demand] = other.pair_eligible.get(demand, [])
        return True

    by_system: dict = field(default_factory=dict, repr=False, compare=False)
    """demand -> (its eligible list, system -> offer ids): offers_for's index, rebuilt when the list changes"""

    def offers_for(self, demand: str, system_id: str, pairs: bool = False) -> list[str]:
        """The offers of one system type demand may use (the only source of that rule). The model
        builds ask once per (option, demand): indexed per demand, not a scan of every offer."""
        eligible = self.eligible.get(demand, [])
        entry = self.by_system.get(demand)
        if entry is None or entry[0] is not eligible:
            index: dict[str, list[str]] = {}
            for oid in eligible:
                index.setdefault(self.offers[oid].system, []).append(oid)
            entry = self.by_system[demand] = (eligible, index)
        found = list(entry[1].get(system_id, ()))
        if pairs:  # (a cross-system half may use the pair_only offers too)
            found += [oid for oid in self.pair_eligible.get(demand, ()) if self.offers[oid].system == system_id]
        return found
