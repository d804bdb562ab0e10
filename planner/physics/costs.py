"""Cost physics: annuities, the yearly cost of owning a system, power, and rentals.

Owned system, per year:
    capital   the purchase less its resale when sold at age A, the end of the plan's horizon H or of
              its useful life L, whichever comes first (then replaced; each life costs the same):
              (purchase - residual(A) / (1+rate)^A) x annuity(rate, A), A = min(H, L)
    support   purchase x support_fraction_per_year
    ops       site.ops_usd_per_system_year             (operations staff per system)
    hosting   power_kw x hosting_usd_per_kw_year       (space, cooling, network)
    idle      power_kw x IDLE_POWER_FRACTION x 8760 h x PUE x $/kWh   (always on)
    busy      power_kw x (1 - IDLE_POWER_FRACTION) x PUE x $/kWh per busy hour (charged by the jobs)

Rented system: price per system-hour x hours held (on-demand and spot: the hours used; reserved:
every hour of the year, as the commitment is paid whether used or not).

Spot capacity can be reclaimed at any time. Batch runs on spot checkpoint and restart: their hours
are inflated by SPOT_RESTART_OVERHEAD (lost work since the last checkpoint, restart and reload),
and serving never uses spot unless the policy allows it (and latency-critical serving never does).
"""

from __future__ import annotations

import math

from planner.data.catalog import Offer, System
from planner.data.constants import HOURS_PER_YEAR

IDLE_POWER_FRACTION = 0.3
"""Share of full power drawn by an idle server (GPUs idle near 10-15% of TDP, hosts, fans and
network much higher) [derived; check against your own meters]."""

RESERVED_TERM_YEARS = {"reserved-1y": 1, "reserved-3y": 3}
"""the years a reserved contract commits to"""


SPOT_RESTART_OVERHEAD = 1.10
"""Wall-clock hours of a batch run on spot per hour on dedicated capacity: with a checkpoint every
~30 min and a reclaim every few hours, about 10% is lost to redone work and restarts
[assumption; measure your own preemption rate]."""


RESIDUAL_KEPT_PER_YEAR = 0.72
"""Market value of datacenter GPU hardware after t years: 0.72^t of its purchase price (declining
balance, 28%/yr: 1 y 0.72, 3 y 0.37, 5 y 0.19) [economics.md s3c (E): synthesis of the GLRI H100
model (Y1 60-65%, Y3 25-35%) and SpotWire's vintage curve 1.00/0.78/0.60/0.46/0.35, 2026-06-04;
bounds 0.65^t-0.78^t]."""

RESALE_REALISED = 0.61
"""Cash a seller realises of that market value: used-working condition 0.72 x broker sale within
90 days 0.85 [economics.md s3a, SpotWire R2v3 condition and ASA liquidation factors, 2026-06-04]."""

RESIDUAL_FLOOR = 0.03
"""Residual never below 3% of purchase: 8-year-old V100s trade at 1-5% of list [economics.md s3a C5]."""


def residual_fraction(age_years: float) -> float:
    """Share of the purchase price a system sold after `age_years` fetches, cash in hand:
    RESALE_REALISED x max(RESIDUAL_FLOOR, RESIDUAL_KEPT_PER_YEAR ^ age).

    >>> round(residual_fraction(3), 4)
    0.2277
    """
    return RESALE_REALISED * max(RESIDUAL_FLOOR, RESIDUAL_KEPT_PER_YEAR ** age_years)


def sale_age_years(offer: Offer, horizon_years: float | None) -> float | None:
    """Age at which a bought system of a one-period plan is sold: at the end of the plan's horizon
    H, or at the end of its useful life L where that comes first (then it is replaced, and each
    life costs the same); None for an offer that is not bought. A useful life is when the owner
    retires it, not when it stops being worth anything: it still fetches the used market's price
    (economics.md s3c: 0.72^5 = 0.19 of the purchase at 5 years; V100s at 8 years 1-5%)."""
    if offer.acquisition != "buy":
        return None
    life = offer.useful_life_years or 0.0
    return life if horizon_years is None else min(float(horizon_years), life)


def resold_before_life_ends(offer: Offer, horizon_years: float | None) -> bool:
    """A bought system is sold when the plan's horizon ends, before the end of its useful life."""
    age = sale_age_years(offer, horizon_years)
    return age is not None and age < (offer.useful_life_years or 0.0)


def residual_value_usd(offer: Offer, horizon_years: float | None, kept: bool = False) -> float:
    """Cash one bought system fetches when it is sold (sale_age_years: at the end of the horizon,
    or of its useful life where that comes first); 0 for an offer that is not bought. `kept`
    (policy.end_of_horizon keep): one the horizon's end finds within its life is valued at the used
    market's price, without a sale's discount (market_fraction)."""
    age = sale_age_years(offer, horizon_years)
    if not age:
        return 0.0
    if kept and resold_before_life_ends(offer, horizon_years):
        return offer.purchase_usd * market_fraction(age)
    return offer.purchase_usd * residual_fraction(age)


def market_fraction(age_years: float) -> float:
    """Share of the purchase price the used market values a system at after `age_years`, before any
    sale: max(RESIDUAL_FLOOR, RESIDUAL_KEPT_PER_YEAR ^ age) (what a system kept past the horizon is
    worth: residual_fraction without RESALE_REALISED).

    >>> round(market_fraction(3), 4)
    0.3732
    """
    return max(RESIDUAL_FLOOR, RESIDUAL_KEPT_PER_YEAR ** age_years)


def capital_usd_per_year(offer: Offer, discount_rate: float, horizon_years: float | None = None,
                         kept: bool = False) -> float:
    """Yearly capital cost of one bought system: the purchase less the discounted resale at the
    age it is sold (sale_age_years: the end of the horizon H or of its useful life L, whichever
    comes first), annuitised over the years held (held_capital_usd_per_year); over a horizon longer
    than the life, each life so, and the last replacement held what is left of the horizon and sold
    then, the yearly cost averaged over the horizon's years (as a multi-year plan holds them: 7 years
    of a 5-year life are 5 years at the life's cost and 2 at a 2-year holding's).

    >>> from types import SimpleNamespace as O
    >>> o = O(acquisition="buy", purchase_usd=100.0, useful_life_years=5)
    >>> round(capital_usd_per_year(o, 0.0, 3), 2), round(capital_usd_per_year(o, 0.0, 5), 2), round(capital_usd_per_year(o, 0.0, 10), 2)
    (25.74, 17.64, 17.64)
    >>> round(capital_usd_per_year(o, 0.0, 7), 2)  # (5 x 17.64 + 2 x (100 - 31.62) / 2) / 7
    22.37
    """
    age = sale_age_years(offer, horizon_years)
    price, life = offer.purchase_usd, offer.useful_life_years
    first = held_capital_usd_per_year(price, discount_rate, life, age, residual_value_usd(offer, horizon_years, kept))
    rest = 0.0 if horizon_years is None else years_after_lives(horizon_years, life)
    if horizon_years is None or horizon_years <= life or rest < 1e-9:
        return first
    # the last replacement is held `rest` years and sold when the horizon ends (as a multi-year plan
    # holds it): the yearly cost is the average over the horizon's years
    sold = price * (market_fraction(rest) if kept else residual_fraction(rest))
    last = held_capital_usd_per_year(price, discount_rate, life, rest, sold)
    return (first * (horizon_years - rest) + last * rest) / horizon_years


def years_after_lives(horizon_years: float, life_years: float) -> float:
    """Years of a horizon left after the whole useful lives it holds: what the last replacement of a
    one-period plan over a horizon longer than a life is held (capital_usd_per_year); 0 for a multiple.

    >>> years_after_lives(7, 5), years_after_lives(10, 5), years_after_lives(3, 5)
    (2.0, 0.0, 3.0)
    """
    return float(horizon_years - life_years * math.floor(horizon_years / life_years + 1e-9))


def exit_share(age_years: float, life_years: float, resale_fraction: float | None = None,
               decline: float = 0.0, kept: bool = False) -> float:
    """Share of its purchase price a bought system fetches when it leaves the fleet after
    `age_years` of its `life_years` (at the end of its life, or of the horizon): without a resale
    assumption of the scenario's (trends: resale_fraction), the market's, as a one-period plan
    reads it (residual_fraction, at any age: a system past its useful life still sells, down to
    RESIDUAL_FLOOR), never above the realised share of the new price of the day where the
    scenario's prices fall faster than the market's curve (RESALE_REALISED (1 - decline)^age: used
    hardware tracks new prices); with one, rf, its straight-line book value
    max(rf, 1 - (1 - rf) age / life) at the prices of the day ((1 - decline)^age). `kept` (a system
    the horizon's end finds within its life, policy.end_of_horizon keep): the market's price without
    the sale's discount RESALE_REALISED (the book value is a value already).

    >>> round(exit_share(3, 5), 4), round(exit_share(5, 5), 4), round(exit_share(3, 5, decline=0.6), 4)
    (0.2277, 0.118, 0.039)
    >>> round(exit_share(3, 5, 0.1, 0.15), 4)
    0.2825
    """
    if resale_fraction is None:
        share = min(residual_fraction(age_years), RESALE_REALISED * max(RESIDUAL_FLOOR, (1.0 - decline) ** age_years))
        return share / RESALE_REALISED if kept else share
    return (1.0 - decline) ** age_years * max(resale_fraction, 1.0 - (1.0 - resale_fraction) * age_years / life_years)


def held_capital_usd_per_year(price: float, discount_rate: float, life_years: float, held_years: float,
                              exit_usd: float) -> float:
    """Yearly capital cost of one system bought at `price`, held `held_years` and sold for
    `exit_usd` when it leaves: the purchase less the discounted sale, annuitised over the years
    held; with nothing back, the annuity over its useful life. One formula for
    the one-year plans (capital_usd_per_year) and each year a multi-year plan holds it
    (milp/owned.py), so that one fleet costs the same a year in both.

    >>> round(held_capital_usd_per_year(100.0, 0.0, 5, 3, 22.77), 2), held_capital_usd_per_year(100.0, 0.0, 5, 5, 0.0)
    (25.74, 20.0)
    """
    if exit_usd <= 0:
        return price * annuity(discount_rate, life_years)
    return (price - exit_usd * (1.0 + discount_rate) ** -held_years) * annuity(discount_rate, held_years)


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


def owned_fixed_usd_per_year(offer: Offer, system: System, site, discount_rate: float,
                             horizon_years: float | None = None, kept: bool = False) -> dict[str, float]:
    """Yearly cost of owning one system whether busy or idle, by component (capital: see
    capital_usd_per_year; `horizon_years` None: kept to the end of its life)."""
    if offer.acquisition == "buy":
        capital = capital_usd_per_year(offer, discount_rate, horizon_years, kept)
        support = offer.purchase_usd * site.support_fraction_per_year
        hosting = system.power_kw * site.hosting_usd_per_kw_year
        idle = energy_usd_per_hour(system, site) * IDLE_POWER_FRACTION * HOURS_PER_YEAR
        return {"capital": capital, "support": support, "ops": getattr(site, "ops_usd_per_system_year", 0.0),
                "hosting": hosting, "power": idle}
    if offer.acquisition in RESERVED_TERM_YEARS:
        return {"rental": offer.price_usd_per_hour * HOURS_PER_YEAR * commitment_factor(offer, discount_rate, horizon_years)}
    return {}


def prepaid(offer: Offer) -> bool:
    """A reservation whose whole term is paid when it starts (Offer.payment upfront)."""
    return offer.acquisition in RESERVED_TERM_YEARS and getattr(offer, "payment", "monthly") == "upfront"


def invoiced_years(offer: Offer) -> int:
    """Years of a reservation's fees its first year's invoices hold: its term T if prepaid, else 1."""
    return RESERVED_TERM_YEARS[offer.acquisition] if prepaid(offer) else 1


def commitment_factor(offer: Offer, discount_rate: float, horizon_years: float | None) -> float:
    """The yearly payments of a reserved contract that one year of a plan over `horizon_years`
    carries: 1 when its term T ends within the horizon H (or none is given: renewed as it ends);
    when T > H, every payment the contract commits to is the plan's (a reservation is not resold
    as a bought system is: residual_value_usd), their present value annuitised over H,
    annuity(r, H) / annuity(r, T): T / H undiscounted. A one-year plan of a 3-year reservation at
    $20.70/h commits to $543,882 over its term, $504,590 at 8% (as the multi-year NPV counts those
    payments past the horizon: milp/owned.py, `beyond`), not $181,294.
    Paid up front (prepaid), the T years' fees fall due when the term starts, and are annuitised
    over the years held, the term or the horizon where shorter: T x annuity(r, min(T, H)), above 1
    at any positive rate (the same fees, paid sooner).

    >>> from types import SimpleNamespace as O
    >>> o = O(acquisition="reserved-3y")
    >>> commitment_factor(o, 0.0, 1), commitment_factor(o, 0.0, 3), round(commitment_factor(o, 0.08, 2), 4)
    (3.0, 1.0, 1.4452)
    >>> u = O(acquisition="reserved-3y", payment="upfront")
    >>> commitment_factor(u, 0.0, 3), round(commitment_factor(u, 0.08, 3), 4), round(commitment_factor(u, 0.08, 2), 4)
    (1.0, 1.1641, 1.6823)
    """
    term = RESERVED_TERM_YEARS.get(offer.acquisition, 1)
    if prepaid(offer):
        return term * annuity(discount_rate, term if horizon_years is None else min(term, horizon_years))
    if horizon_years is None or term <= horizon_years:
        return 1.0
    return annuity(discount_rate, horizon_years) / annuity(discount_rate, term)


def busy_usd_per_hour(offer: Offer, system: System, site) -> float:
    """Marginal cost of one busy system-hour: extra power if owned, the price if rented by the hour."""
    if offer.acquisition == "buy":
        return energy_usd_per_hour(system, site) * (1 - IDLE_POWER_FRACTION)
    if offer.acquisition in ("on-demand", "spot"):
        return offer.price_usd_per_hour
    return 0.0


def is_owned(offer: Offer) -> bool:
    """Held all year by the fleet and shareable between jobs (bought or reserved)."""
    return offer.acquisition == "buy" or offer.acquisition in RESERVED_TERM_YEARS




def break_even_utilisation(buy: Offer, rent: Offer, system: System, site, discount_rate: float,
                           horizon_years: float | None = None) -> float:
    """Share of the year above which owning `system` under `buy` is cheaper than renting the same
    system by the hour under `rent`: fixed / (price - busy power) / 8760 (inf if renting always wins)."""
    fixed = sum(owned_fixed_usd_per_year(buy, system, site, discount_rate, horizon_years).values())
    margin = rent.price_usd_per_hour - busy_usd_per_hour(buy, system, site)
    return fixed / (margin * HOURS_PER_YEAR) if margin > 0 else float("inf")
