"""Which offers the policy, the site and each job allow: one place for every rule, so the
optimizer, the why-not table and the diagnosis all give the same reason."""

from __future__ import annotations

import math

from planner.data.catalog import Catalog, Offer, System, is_held
from planner.data.consistency import allowed_regions, in_regions  # noqa: F401  (allowed_regions: options.api reads it here)
from planner.data.scenario import Scenario
from planner.options.export import export_exclusion
from planner.options.types import BatchOption, Demand, Options
from planner.physics import costs

# --- offers the policy allows ----------------------------------------------------------------

def offer_exclusion(o: Offer, s: Scenario, cat: Catalog) -> str:
    """Why the policy or site rules this offer out ('' if allowed)."""
    system = cat.systems[o.system]
    acc = cat.accelerators[system.accelerator]
    p = s.policy
    # the accelerator's own exclusions first: they hold for every offer of it, so the why-not table
    # gives that one reason rather than the first two of its offers' acquisition modes
    if p.accelerators is not None and acc.id not in p.accelerators:
        return "not in policy.accelerators"
    if acc.id in p.exclude_accelerators:
        return "excluded by policy"
    if p.stacks is not None and acc.stack not in p.stacks:
        return f"software stack '{acc.stack}' not in policy.stacks ({', '.join(p.stacks)})"
    if is_held(o):  # (the scenario's owned systems: already bought, cooled and placed)
        return ""
    if o.acquisition not in p.acquisition:
        return f"acquisition '{o.acquisition}' not in policy ({', '.join(p.acquisition)})"
    if p.providers is not None and o.provider not in p.providers:
        return f"provider '{o.provider}' not in policy.providers"
    if o.provider in p.exclude_providers:
        return f"provider '{o.provider}' excluded by policy"
    regions = allowed_regions(s)
    if not in_regions(o, s, regions):
        where = "bought for the site, its region" if o.acquisition == "buy" and o.region == "global" else f"region '{o.region}'"
        return f"{where} not in policy.regions ({', '.join(regions)}); the site is in '{s.site.region}'"
    if p.provider_tiers is not None and o.tier not in p.provider_tiers:
        return f"provider tier '{o.tier}' not in policy.provider_tiers ({', '.join(p.provider_tiers)})"
    licence = export_exclusion(o, acc, s.site.region, p.export_licences)
    if licence:
        return licence
    if o.acquisition == "buy" and system.cooling == "liquid" and s.site.cooling == "air":
        return "needs liquid cooling; the site has air cooling only"
    if o.max_systems == 0:
        return "not available (max_systems is 0)"
    return ""


def tier_exclusion(d: Demand, tier: str, s: Scenario) -> str:
    """Why a serving demand may not use a provider of this tier ('' if it may): with no
    policy.provider_tiers, latency-critical and N+1 serving never runs on marketplace capacity
    (third-party hosts: no capacity or uptime promise)."""
    if s.policy.provider_tiers is not None or d.kind != "serve" or tier != "marketplace":
        return ""
    if d.latency_critical:
        return ("marketplace capacity (third-party hosts, no uptime promise) is not used for latency-critical "
                "serving (set policy.provider_tiers to allow it)")
    if s.policy.redundancy == "n+1":
        return ("marketplace capacity (third-party hosts, no uptime promise) is not used for serving under n+1 "
                "redundancy (set policy.provider_tiers to allow it)")
    return ""


KIND_PHRASES = {"edge": "an edge device", "cloud-instance": "a cloud instance", "tpu-slice": "a TPU slice",
                "rack": "a rack", "server": "a server", "workstation": "a workstation"}


def kind_phrase(kind: str) -> str:
    """'a workstation', 'an edge device': a system kind with its article, for messages."""
    return KIND_PHRASES.get(kind, f"a {kind}")


def site_exclusion(o: Offer, system: System, s: Scenario) -> str:
    """Why a system may not host serving or training here ('' if it may). Edge devices (robot
    computers) run edge jobs only; a data center buys no workstations."""
    if system.kind == "edge":
        return "an edge device (a robot's computer): it runs edge jobs only"
    if o.acquisition == "buy" and s.site.kind == "datacenter" and system.kind == "workstation" and not is_held(o):
        return (f"{kind_phrase(system.kind)}, not a rack server: the site is a data center (set site.kind: "
                "office to buy workstations)")
    return ""


def demand_offer_exclusion(d: Demand, o: Offer, system: System, s: Scenario) -> str:
    """Why demand d may not use offer o, which the policy allows ('' if it may). The one rule the
    fleet and multi-year models and the why-not table share:
      edge units are bought (a robot carries its computer; nothing is rented);
      serving and training run at the site: no edge devices, no bought workstations in a data center;
      serving never runs on spot capacity when it is latency-critical, nor unless the policy allows it;
      latency-critical and N+1 serving never runs on marketplace offers (tier_exclusion)."""
    if d.kind == "edge":
        if o.acquisition != "buy":
            return (f"edge devices are bought, not rented ('{o.acquisition}'): add buy to "
                    "policy.acquisition")
        return ""
    why = site_exclusion(o, system, s)
    if why:
        return why
    why = tier_exclusion(d, o.tier, s)
    if why:
        return why
    if d.kind == "serve" and o.acquisition == "spot":
        if d.latency_critical:
            return "spot capacity is not used for latency-critical serving (it may be reclaimed at any time)"
        if not s.policy.spot_for_serving:
            return "spot capacity is not used for serving (set policy.spot_for_serving: true)"
    return ""


def systems_per_run(accelerators: int, per_system: int) -> int:
    return max(1, math.ceil(accelerators / per_system))


def batch_offer_exclusion(d: Demand, opt: BatchOption, o: Offer, system: System) -> str:
    """Why one batch configuration may not run on an offer demand d may use ('' if it may): a
    rented run needs its systems within the offer's availability cap, and a spot run with its
    restart overhead (costs.run_hours) must still meet the deadline. Owned offers: always ''."""
    if costs.is_owned(o):
        return ""
    need = systems_per_run(opt.accelerators, system.accelerators)
    if o.max_systems is not None and need > o.max_systems:
        return f"a run needs {need}x {system.id}; offer '{o.id}' has {o.max_systems}"
    hours = costs.run_hours(opt.hours_per_run, o.acquisition)
    if hours > d.max_hours_per_run:
        return (f"on {o.acquisition} a run takes {hours:,.1f} h with restarts, above the "
                f"{d.max_hours_per_run:g} h deadline")
    return ""


def _dominated(o: Offer, others: list[Offer]) -> bool:
    """Same system and acquisition, no cheaper, no larger availability: never worth choosing (unless
    a cross-system pair needs it at its network: _pairs_at_its_network)."""
    if o.acquisition == "buy":
        return False
    cap = o.max_systems if o.max_systems is not None else math.inf
    for q in others:
        if q.id == o.id or q.system != o.system or q.acquisition != o.acquisition:
            continue
        qcap = q.max_systems if q.max_systems is not None else math.inf
        if q.price_usd_per_hour <= o.price_usd_per_hour and qcap >= cap and (
                q.price_usd_per_hour < o.price_usd_per_hour or qcap > cap or q.id < o.id):
            return True
    return False


def allowed_offers(s: Scenario, cat: Catalog) -> tuple[dict[str, Offer], dict[str, str], set[str]]:
    """(the offers the policy allows less the dominated ones, why the others are excluded, the
    dominated ones kept for cross-system pairs only: _pairs_at_its_network)."""
    allowed, excluded = {}, {}
    for oid in sorted(cat.offers):
        o = cat.offers[oid]
        why = offer_exclusion(o, s, cat)
        if why:
            excluded[oid] = why
        else:
            allowed[oid] = o
    pool = list(allowed.values())
    dominated = {oid for oid, o in allowed.items() if _dominated(o, pool)}
    pair_only = {oid for oid in dominated if _pairs_at_its_network(allowed[oid], pool, cat)}
    return {oid: o for oid, o in allowed.items() if oid not in dominated - pair_only}, excluded, pair_only


def _pairs_at_its_network(o: Offer, pool: list[Offer], cat: Catalog) -> bool:
    """Whether offer o's network (data.colocation.network_of) holds an offer of another system its
    system may pair with for cross-system prefill/decode (physics.crossdisagg.linked): such a pair
    keeps both halves on one network, so an offer cheaper elsewhere does not replace o there (the
    diff review: with Lambda and AWS allowed, AWS's H100 nodes were dropped as dearer than
    Lambda's, the H100/H200 pair was lost, and the plan cost more than with AWS alone)."""
    from planner.data.colocation import network_of
    from planner.physics.crossdisagg import linked

    mine = cat.systems[o.system]
    if not mine.scaleout_gbps:
        return False
    net, acc = network_of(o), cat.accelerators[mine.accelerator]
    for q in pool:
        if q.system != o.system and network_of(q) == net:
            other = cat.systems[q.system]
            if linked(mine, other, acc, cat.accelerators[other.accelerator]) or linked(
                    other, mine, cat.accelerators[other.accelerator], acc):
                return True
    return False


def record_eligible(opts: Options, d: Demand, s: Scenario, cat: Catalog, seen: dict) -> None:
    """The offers demand d may use, and why not the others. demand_offer_exclusion reads a demand's
    kind and latency_critical only, so demands alike in both share one pass over the offers (`seen`)."""
    key = (d.kind, d.latency_critical)
    if key not in seen:
        ok, why = [], {}
        for oid, o in sorted(opts.offers.items()):
            reason = demand_offer_exclusion(d, o, cat.systems[o.system], s)
            if reason:
                why[oid] = reason
            else:
                ok.append(oid)
        pairs = [oid for oid in ok if oid in opts.pair_only]  # (cross-system halves only: offers_for(pairs=True))
        seen[key] = [oid for oid in ok if oid not in opts.pair_only], why, pairs
    ok, why, pairs = seen[key]
    opts.eligible[d.key], opts.ineligible[d.key], opts.pair_eligible[d.key] = list(ok), dict(why), list(pairs)
