"""The parts of the plan contract (planner.data.plan): fleet rows, placements, unit costs, unserved
demand, explanation rows, why-not alternatives, the next-best fleet, the three checks, the solver.

Each model describes one JSON object of `plan --format json` exactly: every key that can appear,
its type and unit; an unknown key fails (extra="forbid"). A key that may be missing from the JSON
(not null: missing) is declared with absent(); one that may be null is `X | None`.
"""

from __future__ import annotations

import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from planner.data.catalog import Acquisition, PolicyAcquisition

Stage = Literal["serve", "finetune", "pretrain", "rl", "edge"]


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def absent(description: str) -> Any:
    """A key that some plans leave out (never null when present): not required, no default shown."""
    return Field(None, description=description, json_schema_extra=_no_default)


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FleetItem(Part):
    """One offer held: how many systems, what they cost per year and draw."""

    system: str = Field(description="catalog system id")
    accelerator: str = Field(description="catalog accelerator id")
    acquisition: PolicyAcquisition = Field(description="how the systems are acquired; api: a hosted "
                                                       "token-priced endpoint (no systems held)")
    provider: str = Field(description="the offer's provider")
    region: str = Field(description="where the offer's capacity sits: us, eu, uk, cn, jp, in, ... or global")
    tier: str = Field(description="provider tier: hyperscaler, gpu-cloud, marketplace, oem, used, quote, api")
    offer: str = Field(description="catalog offer id")
    owned: bool = absent("true for systems the scenario already owns (owned:; provider 'owned', no purchase or "
                         "sale: acquisition reads 'buy', as it did before this key)")
    systems: int = Field(description="systems held (edge: devices)")
    accelerators: int = Field(description="accelerators held: systems x accelerators per system")
    new_this_year: int = absent("systems acquired in this year (multi-year plans only)")
    edge_units: int = absent("of the systems, edge units deployed with their devices, not at the site "
                             "(multi-year years only)")
    cost_usd_per_year: float = Field(description="USD per year attributed to this offer: capital (annuitised "
                                                 "purchases), power, hosting and rent")
    purchase_usd: float | None = Field(description="USD paid up front for the systems; null unless bought")
    output_tokens_per_year: float = absent("output tokens a year billed (acquisition api only)")
    input_tokens_per_year: float = absent("input tokens a year billed (acquisition api only)")
    residual_value_usd: float | None = absent(
        "USD the bought systems fetch when sold, sold_after_years old (physics.costs.residual_fraction: "
        "0.61 x max(0.03, 0.72^years) of purchase), credited in their yearly capital cost; null unless bought "
        "(single-period plans only)")
    sold_after_years: float = absent(
        "age in years at which the bought systems are sold: the end of the horizon, or of their useful life "
        "where that comes first (then they are replaced, each life costing the same) (bought offers only)")
    term_years: int = absent("a reservation's term in years (reserved offers only)")
    contract_usd_per_year: float = absent(
        "USD a year the reservation's invoices come to: its hourly rate x 8,760 x systems, for term_years; "
        "cost_usd_per_year differs where the term runs past the horizon (the whole term is charged to the "
        "plan's years) (reserved offers only)")
    paid_upfront_usd: float = absent(
        "USD paid when the reservation starts for its whole term: contract_usd_per_year x term_years (reserved "
        "offers paid up front only, catalog payment: upfront; multi-year plans at the catalog's price)")
    power_kw: float = Field(description="kW drawn by the systems at full load")
    price_source: str = Field(description="where the offer's price comes from")
    price_as_of: datetime.date = Field(description="date of the offer's price (ISO 8601)")


class Placement(Part):
    """One configuration of a job on one offer (a serving replica shape, a training run, edge devices)."""

    part: str = Field(description="the demand placed: the job name, or job|part for jobs with several")
    system: str = Field(description="catalog system id")
    accelerator: str = Field(description="catalog accelerator id")
    acquisition: Acquisition = Field(description="how the systems are acquired")
    provider: str = Field(description="the offer's provider")
    offer: str = Field(description="catalog offer id")
    replicas: int = Field(description="replicas (serving), 1 (training) or devices (edge)")
    accelerators_per_replica: int = Field(description="accelerators per replica (training: per run)")
    tensor_parallel: int = Field(description="tensor-parallel degree")
    pipeline_parallel: int = Field(description="pipeline-parallel degree")
    users_per_replica: int | None = Field(description="concurrent users (or rollouts) per replica; null for "
                                                        "training")
    tokens_per_s_per_user: float | None = Field(description="output tokens per second per user (edge: per "
                                                               "device); null for training")
    ttft_s: float | None = Field(description="seconds to the first token; null unless serving")
    hours_per_run: float | None = Field(description="hours per training run (spot restarts included); null "
                                                       "unless training")
    memory_gb_per_accelerator: float = Field(description="memory used per accelerator, GiB (2^30 bytes: the "
                                                         "unit of vendors' memory labels and the catalog's memory_gb)")
    memory_gb_capacity: float = Field(description="memory per accelerator, GiB: the catalog's memory_gb (an H200: 141)")
    binding: str = Field(description="the resource that limits the configuration: compute, bandwidth, memory, "
                                     "batch-cap, ttft (the first-token limit under load), deadline, overhead, ...")
    regime: str = Field(description="the roofline regime: compute, bandwidth, capacity, overhead, ...")
    weights_gb: float = absent("weights per accelerator, GiB (serving only)")
    kv_gb: float = absent("KV cache per accelerator at the planned batch, GiB (serving only)")
    users_served: int = absent("concurrent users (or rollouts) this placement serves (serving only)")
    share_of_runs: float = absent("fraction of the job's runs done here, 0..1 (training only)")
    runs_per_year: float = absent("runs per year done here (training only)")
    power_w: float = absent("W drawn per device (edge only)")
    basis: Literal["measured", "modelled"] = absent(
        "where users_per_replica, tokens_per_s_per_user and ttft_s come from: measured (rows of a "
        "measurements CSV for this model, system, TP and precision) or modelled (the physics model); serving only")
    basis_note: str = absent("where the measurements come from (measured), or why they do not apply here "
                             "(modelled: outside the measured request sizes); for an MoE laid out as expert "
                             "parallelism with data-parallel attention, 'modelled as expert parallelism EP<n> "
                             "...' (physics.moe), else tensor parallelism")
    disaggregated: DisaggHalf = absent("set when this placement is one half of a replica disaggregated across "
                                       "two system types (serving only)")
    pool: str = absent("the pool whose replicas this part shares (policy.pool_jobs): replicas are the pool's "
                       "on this configuration and offer, shared with the parts listed in the plan's pools")
    replica_load: float = absent("replicas' worth of capacity this part's load takes of the pool's replicas "
                                 "(users served / users_per_replica); pooled parts only")


class DisaggHalf(Part):
    """One half of a replica disaggregated across two system types (physics/crossdisagg.py): prefill
    on one system type, decode on another, each prompt's KV cache sent over the network."""

    role: Literal["prefill", "decode"] = Field(description="prefill: admits prompts, holds no users "
                                                           "(users_per_replica 0); decode: holds the users")
    prefill_system: str = Field(description="catalog system id of the pair's prefill half")
    prefill_tensor_parallel: int = Field(description="tensor-parallel degree of one prefill replica")
    decode_system: str = Field(description="catalog system id of the pair's decode half")
    decode_tensor_parallel: int = Field(description="tensor-parallel degree of one decode replica")
    prompts_per_s_per_replica: float = Field(description="prefill: prompts per second one replica admits within "
                                                         "the TTFT limit; decode: prompts per second one replica's "
                                                         "users send (users / (output_tokens x TPOT)). The pair's "
                                                         "prefill replicas admit at least what its decode replicas send")
    kv_transfer_ms: float = Field(description="one prompt's KV cache over the network, prefill to decode, ms "
                                              "(in ttft_s)")


class PoolHalf(Part):
    """Which half of which pair across two system types a pool's replicas are (DisaggHalf without
    the per-part figures)."""

    role: Literal["prefill", "decode"] = Field(description="prefill or decode")
    prefill_system: str = Field(description="catalog system id of the pair's prefill half")
    prefill_tensor_parallel: int = Field(description="tensor-parallel degree of one prefill replica")
    decode_system: str = Field(description="catalog system id of the pair's decode half")
    decode_tensor_parallel: int = Field(description="tensor-parallel degree of one decode replica")


class PoolRow(Part):
    """Replicas shared by several serving parts (policy.pool_jobs) on one configuration and offer."""

    pool: str = Field(description="pool id: model/precision[/kv-KV][/engine][/Hh][/critical]; its parts may share replicas")
    offer: str = Field(description="catalog offer id")
    system: str = Field(description="catalog system id")
    accelerator: str = Field(description="catalog accelerator id")
    tensor_parallel: int = Field(description="tensor-parallel degree")
    pipeline_parallel: int = Field(description="pipeline-parallel degree")
    accelerators_per_replica: int = Field(description="accelerators per replica")
    replicas: int = Field(description="replicas the pool holds here")
    load: dict[str, float] = Field(description="part -> replicas' worth of load it puts here; the sum is at "
                                               "most replicas (Melange's fractional load)")
    disaggregated: PoolHalf = absent("set when the replicas are one half of replicas split across two "
                                     "system types: which half of which pair")


class UnitCost(Part):
    """A job's unit cost: the keys depend on its stage."""

    usd_per_million_tokens: float | None = absent("USD per million output tokens (serve; = "
                                                     "usd_per_million_output_tokens); null when nothing is served")
    usd_per_million_output_tokens: float = absent("serve: the job's whole cost per million output tokens served "
                                                  "(served demand: users served x min_tokens_per_s_per_user x "
                                                  "hours x active_fraction, not the capacity held)")
    usd_per_million_input_tokens: float = absent("serve: the job's whole cost per million input (prompt) tokens served")
    usd_per_request: float = absent("serve: the job's whole cost per request served")
    usd_per_million_tokens_blended: float = absent(
        "serve: the job's whole cost per million tokens in and out together, at its own input:output mix: the "
        "figure an API's blended price compares with (its input and output prices weighted by the same mix)")
    headline: Literal["output", "input"] = absent(
        "serve: the unit that fits the job: input for prefill-heavy jobs (input_tokens >= 4 x output_tokens), "
        "else output")
    input_tokens_per_year: float = absent("input tokens per year served (serve)")
    requests_per_year: float = absent("requests per year served (serve)")
    output_tokens_per_year: float = absent("output tokens per year (serve)")
    usd_per_user_per_year: float = absent("USD per concurrent user per year (serve)")
    usd_per_run: float = absent("USD per run (finetune, pretrain)")
    usd_per_day: float = absent("USD per day (rl)")
    usd_per_device_per_year: float = absent("USD per device per year (edge)")


class ApiPlacement(Part):
    """A share of a serving job's users on a hosted token-priced API (options/api.py)."""

    part: str = Field(description="the demand placed (the job name)")
    offer: str = Field(description="catalog api_offers id")
    provider: str = Field(description="the API's provider")
    region: str = Field(description="where the API serves: us, eu, ...")
    share: float = Field(description="share of the job's concurrent users on this API, 0..1")
    users_served: float = Field(description="concurrent users at the peak this API serves (share x users)")
    output_tokens_per_year: float = Field(description="output tokens a year: users x tok/s x 3600 x h/day x 365 x "
                                                      "active_fraction")
    input_tokens_per_year: float = Field(description="input tokens a year: requests x input tokens per request")
    requests_per_year: float = Field(description="requests a year: output tokens / output tokens per request")
    cost_usd_per_year: float = Field(description="USD a year: tokens x the API's $/M input and output prices")


class Unserved(Part):
    """Demand left unserved (max-coverage mode)."""

    share: float = Field(description="fraction of the demand unserved, 0..1")
    users: float | None = absent("concurrent users (or rollouts) unserved; null unless serving "
                                    "(single-period plans)")
    tokens_per_s: float = absent("output tokens per second unserved (multi-year plans, serving)")
    runs: float = absent("runs per year unserved (multi-year plans, training)")
    units: float = absent("devices unserved (multi-year plans, edge)")


class Checks(Part):
    """The three checks before signing, for one job."""

    regime: str = Field(description="what bounds the job on each accelerator and the lever that moves it")
    run_it: str = Field(description="the benchmark to run to confirm the plan")
    unit_cost: str = Field(description="the unit cost in words")


class Explanation(Part):
    """A constraint family of the plan with its price (a shadow price or a re-planned difference)."""

    family: Literal["demand", "target", "systems", "power", "budget", "redundancy"] = Field(
        description="the constraint family")
    constraint: str = Field(description="the scenario field or offer the row is about, e.g. budget.usd_per_year")
    binding: bool = Field(description="whether the constraint binds")
    shadow_price: float | None = Field(description="the price of one more unit, in `unit`; null when none "
                                                      "could be computed")
    unit: str = Field(description="the unit of shadow_price, e.g. 'USD per year per concurrent user'")
    message: str = Field(description="the explanation in words")
    basis: Literal["short-run", "long-run", "re-planned"] = Field(
        description="short-run: LP with the fleet fixed; long-run: LP relaxation; re-planned: MILP re-solved")
    settled: bool = absent("false when the re-planned variant ended (its work bound, or the time) before it "
                           "could tell whether the constraint binds, or a short-run row's LP did not solve in "
                           "the time left: binding is then false and shadow_price null, and the message says "
                           "so; absent when it did tell")


UNSERVED_JOBS = ("max-coverage plans: the jobs this fleet leaves more unserved than the plan does, job -> "
                 "the largest share of any of its parts left unserved (1: none of it served); its lower "
                 "cost buys less coverage, not a cheaper way to serve the same users")
AT_LEAST = ("the least the difference can be where the re-plan stopped within its own gap (1%) above the "
            "bound its search proved: the difference lies between this and cost_delta_usd_per_year")


class Alternative(Part):
    """Why not accelerator A: one row per catalog accelerator the plan does not use."""

    accelerator: str = Field(description="catalog accelerator id")
    status: Literal["costlier", "serves-less", "infeasible", "not-evaluated"] = Field(
        description="costlier: a plan using it exists; serves-less: the best plan using it leaves more of "
                    "the demand unserved than the plan (a budget-capped, max-coverage plan; unserved_jobs "
                    "says which; its cost_delta may be negative); infeasible: none does; not-evaluated: "
                    "neither re-planned nor ruled out by its LP bound (the reason says why)")
    cost_delta_usd_per_year: float | None = Field(description="USD per year more than the plan (negative: "
                                                                 "less); null when not evaluated or infeasible")
    fleet: list[FleetItem] | None = Field(description="the cheapest fleet using it; null when none")
    cost_delta_at_least_usd_per_year: float = absent(AT_LEAST)
    unserved_jobs: dict[str, float] = absent(UNSERVED_JOBS)
    reason: str = Field(description="the reason in words")
    basis: Literal["milp", "lp-bound", "reason"] | None = absent(
        "how the row was found: milp (the plan re-solved with the accelerator forced), lp-bound (the LP "
        "relaxation of that plan: cost_delta is a lower bound), reason (it cannot run the jobs)")


class NextBest(Part):
    """The cheapest fleet without the plan's costliest system type."""

    fleet: list[FleetItem] | None = Field(description="the next-best fleet; null when there is none")
    cost_usd_per_year: float | None = Field(description="its cost, USD per year; null when there is none")
    cost_delta_usd_per_year: float | None = Field(description="USD per year more than the plan; null when "
                                                                 "there is none")
    excluded_systems: list[str] = Field(description="catalog system ids left out")
    excluded_acquisition: str = absent("the acquisition mode left out (next_best_acquisition only)")
    cost_is_upper_bound: bool = absent("true where the re-plan stopped at its work bound before proving its fleet the "
                                       "cheapest: the cost is the best found, at most that")
    kept_owned: int = absent("systems of the excluded type already owned, which the next-best fleet keeps (what "
                             "is held is sunk): it goes without acquiring more of them")
    cost_delta_at_least_usd_per_year: float = absent(AT_LEAST)
    unserved_jobs: dict[str, float] = absent(UNSERVED_JOBS)
    message: str = Field(description="the next-best fleet in words")


class Utilisation(Part):
    """How busy an owned offer's systems are."""

    offer: str = Field(description="catalog offer id")
    systems: int = Field(description="systems held")
    accelerator_hours_used: float = Field(description="accelerator-hours used per year")
    utilisation: float = Field(description="fraction of the accelerator-hours available in a year, 0..1")


class Purchase(Part):
    """Systems acquired in one year of a multi-year plan (bought or reserved)."""

    offer: str = Field(description="catalog offer id")
    system: str = Field(description="catalog system id")
    accelerator: str = Field(description="catalog accelerator id")
    acquisition: Acquisition = Field(description="buy, reserved-1y or reserved-3y")
    systems: int = Field(description="systems acquired this year")
    unit_price_usd: float = Field(description="USD per system (purchase price, or a year of the reservation) "
                                              "in this year's prices")
    total_usd: float = Field(description="USD: unit_price_usd x systems")
    paid_upfront_usd: float = absent("USD paid this year for the reservation's whole term: total_usd x its years "
                                     "(reservations paid up front only, catalog payment: upfront)")
    paid_past_horizon_usd: float = absent("USD of paid_upfront_usd for the term's years after the horizon: paid in "
                                          "the cash, used after the plan (reservations paid up front only)")


class SolverInfo(Part):
    """The MILP solve."""

    name: str = Field(description="the solver used")
    seconds: float = absent("wall-clock seconds of the solve (a shortlisted plan's: the shortlist's search, the "
                            "full model's LP bound and its root nodes together); absent with --no-timings")
    gap: float | None = Field(description="relative optimality gap at the end, 0..1; null when unknown")
    variables: int = Field(description="variables in the model")
    constraints: int = Field(description="constraint rows in the model")
    pairs_pruned: int = absent("(configuration, offer) pairs left out by the shortlist (single-period only)")
    cut_short: list[str] = absent("what the command's wall-clock budget (--time-limit, else solver.time_limit_s) "
                                  "cut short, in order: the MILP search, the full model's LP bound, the "
                                  "explanations; absent when nothing was (the plan then depends on work done only)")
    explanations_stopped: str = absent("the re-planned alternatives' own time (as long as the plan's search took, "
                                       "at least 5 s; not the time limit) ran out before all were solved: those left "
                                       "show an LP bound or the best fleet found so far. Wall-clock dependent, like "
                                       "cut_short; absent when every alternative finished")
