"""Where an RL job's trainer and rollouts may run: at one site, on one software stack, unless the
job sets colocate: false.

The trainer's new weights reach every rollout replica after each training step (the decision guide:
keep weight synchronisation from trainers to generators on the fastest links you have): inside one
site they cross its scale-out network (a 32B bf16 policy, 64 GB, in about 1.3 s at 400 Gb/s); between
clouds they cross the internet (about a minute at 10 Gb/s, every step), and between software stacks
(a JAX trainer and a PyTorch/vLLM rollout, CUDA and ROCm) each checkpoint is converted as well. A
plan that puts the two apart is a different system from the one the planner priced.

A site is the user's own (systems bought or already held, whoever sold them: they run at the
scenario's site) or one provider's region (reserved, on-demand and spot capacity); a marketplace
(tier marketplace: Vast, Akash, RunPod Community) rents third-party hosts one by one, which are no
one site, so a part that colocates does not run there. A stack is the
accelerator's software stack (cuda, rocm, xla, neuron, gaudi, metal). The options (options/colocation.py)
keep each part's offers at the places both parts can use; the MILP (milp/colocation.py) picks one
place per job and year; the verifier (verify/fleet.py) re-derives each part's place from its offers.
"""

from __future__ import annotations

OWN_SITE = "your site"


MARKETPLACE = "a marketplace's third-party hosts"


def place_of(offer, stack: str) -> tuple[str, str]:
    """(site, stack) of an offer of an accelerator on `stack` (the module docstring); the site is
    MARKETPLACE for a marketplace's rentals, which are no one site."""
    if offer.acquisition == "buy":
        return OWN_SITE, stack
    return (MARKETPLACE if offer.tier == "marketplace" else f"{offer.provider} ({offer.region})"), stack


def spare_pool_of(offer) -> tuple:
    """An owned offer's N+1 pool (policy.redundancy: n+1): its system type at its site (bought or
    already held: the scenario's site; reserved: its provider's region), any idle system of which can
    take the replicas of whichever fails; a marketplace's hosts are no one site, so each offer alone."""
    site = place_of(offer, "")[0]
    return (offer.id,) if site == MARKETPLACE else (site, offer.system)


def network_of(offer) -> str:
    """The network an offer's systems share (place_of's site): a cross-system pair's KV cache
    (physics.crossdisagg) travels within one, never between two (between providers it would cross
    the internet, not the scale-out fabric its transfer time is priced on); each marketplace rental
    is a host of its own."""
    site = place_of(offer, "")[0]
    return offer.id if site == MARKETPLACE else site


def place_in(offer, cat) -> tuple[str, str]:
    """place_of an offer, its stack read from the catalog's accelerator of its system."""
    return place_of(offer, cat.accelerators[cat.systems[offer.system].accelerator].stack)


def words(place: tuple[str, str]) -> str:
    return f"{place[0]} on {place[1]}"


def colocated(s) -> dict[str, tuple[str, str]]:
    """RL job name -> (trainer demand key, rollout demand key), for the jobs that colocate."""
    return {j.name: (f"{j.name}/trainer", f"{j.name}/rollout") for j in s.jobs
            if getattr(j, "stage", None) == "rl" and getattr(j, "colocate", False)}


def placed_at(placements: list[dict], cat) -> set[tuple[str, str]]:
    """The places of a job's placements (plan JSON rows naming their offers)."""
    out = set()
    for p in placements:
        o = cat.offers.get(p.get("offer", ""))
        if o is not None:
            out.add(place_in(o, cat))
    return out


def reason(job_plan: dict, s, cat) -> str:
    """The sentence a colocated RL job's plan carries ('' for other jobs, or a plan placing nothing)."""
    if job_plan["name"] not in colocated(s):
        return ""
    places = placed_at(job_plan["placements"], cat)
    if len(places) != 1 or next(iter(places))[0] == MARKETPLACE:
        return ""
    return (f"trainer and rollouts together at {words(next(iter(places)))}: the new weights reach every rollout "
            "after each training step over that site's own network, on one software stack (colocate: true; "
            "colocate: false lets them sit apart)")
