"""Cost physics: annuities, the yearly cost of owning a system, power, and rentals.

Owned system, per year:
    capital   purchase x annuity(rate, life)          (purchase spread over its useful life)
    support   purchase x support_fraction_per_year
    hosting   power_kw x hosting_usd_per_kw_year       (space, network, staff)
    idle      power_kw x IDLE_POWER_FRACTION x 8760 h x PUE x $/kWh   (always on)
    busy      power_kw x (1 - IDLE_POWER_FRACTION) x PUE x $/kWh per busy hour (charged by the jobs)

Rented system: price per system-hour x hours held (on-demand and spot: the hours used; reserved:
every hour of the year, as the commitment is paid whether used or not).

Spot capacity can be reclaimed at any time. Batch runs on spot checkpoint and restart: their hours
are inflated by SPOT_RESTART_OVERHEAD (lost work since the last checkpoint, restart and reload),
and serving never uses spot unless the policy allows it (and latency-critical serving never does).
"""

from __future__ import annotations

from planner.data.catalog import Offer, System
from planner.data.constants import HOURS_PER_YEAR

IDLE_POWER_FRACTION = 0.3
"""Share of full power drawn by an idle server (GPUs idle near 10-15% of TDP, hosts, fans and
network much higher) [derived; check against your own meters]."""


SPOT_RESTART_OVERHEAD = 1.10
"""Wall-clock hours of a batch run on spot per hour on dedicated capacity: with a checkpoint every
~30 min and a reclaim every few hours, about 10% is lost to redone work and restarts
[assumption; measure your own preemption rate]."""


def run_hours(hours: float, acquisition: str) -> float:
    """Hours one batch run holds its accelerators under this acquisition (spot restarts included)."""
    return hours * SPOT_RESTART_OVERHEAD if acquisition == "spot" else hours


def annuity(rate: float, life_years: float) -> float:
    """Fraction of a purchase paid each year to repay it over `life_years` at `rate`.

    >>> round(annuity(0.0, 5), 4)
    0.2
    >>> round(annuity(0.08, 5), 4)
    0.2505
    """
    if life_years <= 0:
        raise ValueError("life_years must be positive")
    if rate == 0:
        return 1.0 / life_years
    return rate / (1.0 - (1.0 + rate) ** -life_years)


def energy_usd_per_hour(system: System, site) -> float:
    """Electricity for one system at full load for one hour, PUE included."""
    return system.power_kw * site.pue * site.power_usd_per_kwh


def owned_fixed_usd_per_year(offer: Offer, system: System, site, discount_rate: float) -> dict[str, float]:
    """Yearly cost of owning one system whether busy or idle, by component."""
    if offer.acquisition == "buy":
        capital = offer.purchase_usd * annuity(discount_rate, offer.useful_life_years)
        support = offer.purchase_usd * site.support_fraction_per_year
        hosting = system.power_kw * site.hosting_usd_per_kw_year
        idle = energy_usd_per_hour(system, site) * IDLE_POWER_FRACTION * HOURS_PER_YEAR
        return {"capital": capital, "support": support, "hosting": hosting, "power": idle}
    if offer.acquisition in ("reserved-1y", "reserved-3y"):
        return {"rental": offer.price_usd_per_hour * HOURS_PER_YEAR}
    return {}


def busy_usd_per_hour(offer: Offer, system: System, site) -> float:
    """Marginal cost of one busy system-hour: extra power if owned, the price if rented by the hour."""
    if offer.acquisition == "buy":
        return energy_usd_per_hour(system, site) * (1 - IDLE_POWER_FRACTION)
    if offer.acquisition in ("on-demand", "spot"):
        return offer.price_usd_per_hour
    return 0.0


def is_owned(offer: Offer) -> bool:
    """Held all year by the fleet and shareable between jobs (bought or reserved)."""
    return offer.acquisition in ("buy", "reserved-1y", "reserved-3y")




def break_even_utilisation(buy: Offer, rent: Offer, system: System, site, discount_rate: float) -> float:
    """Share of the year above which owning `system` under `buy` is cheaper than renting the same
    system by the hour under `rent`: fixed / (price - busy power) / 8760 (inf if renting always wins)."""
    fixed = sum(owned_fixed_usd_per_year(buy, system, site, discount_rate).values())
    margin = rent.price_usd_per_hour - busy_usd_per_hour(buy, system, site)
    return fixed / (margin * HOURS_PER_YEAR) if margin > 0 else float("inf")
