"""Checks on the bundled systems.csv and offers.csv: references, coverage, units and sanity bounds."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from planner.data import catalog as catalog_mod
from planner.data.catalog import load_catalog

CATALOG_DIR = Path(__file__).resolve().parent.parent / "catalog"

# The fixed accelerator ids the systems table is written against (used only if accelerators.csv is absent).
ACCELERATOR_IDS = (
    "rtx-4090 rtx-5090 rtx-6000-ada rtx-pro-6000 a6000 l4 l40s a10g a100-40gb a100-80gb h100-sxm h100-pcie "
    "h100-nvl h200-sxm h200-nvl gh200 h20 b200 b300 gb200 gb300 mi300x mi325x mi355x gaudi2 gaudi3 tpu-v5e "
    "tpu-v5p tpu-v6e tpu-v7 trainium2 trainium3 inferentia2 jetson-agx-thor dgx-spark m3-ultra"
).split()

RENTALS = ("on-demand", "reserved-1y", "reserved-3y", "spot")


@pytest.fixture(scope="module")
def tables():
    """(accelerator ids, systems, offers): the full validated catalog when accelerators.csv exists,
    otherwise systems/offers validated on their own against the fixed accelerator id list."""
    if (CATALOG_DIR / "accelerators.csv").exists():
        cat = load_catalog()  # validates every row and the cross-table references
        return set(cat.accelerators), cat.systems, cat.offers
    systems = catalog_mod._validate_rows("systems", catalog_mod._read_rows(CATALOG_DIR / "systems.csv"),
                                         CATALOG_DIR / "systems.csv")
    offers = catalog_mod._validate_rows("offers", catalog_mod._read_rows(CATALOG_DIR / "offers.csv"),
                                        CATALOG_DIR / "offers.csv")
    return set(ACCELERATOR_IDS), systems, offers


def test_every_system_names_a_known_accelerator(tables):
    accelerators, systems, _ = tables
    unknown = {s.id: s.accelerator for s in systems.values() if s.accelerator not in accelerators}
    assert not unknown


def test_every_accelerator_has_a_system(tables):
    accelerators, systems, _ = tables
    assert accelerators - {s.accelerator for s in systems.values()} == set()


def test_every_system_has_an_offer_and_every_offer_a_system(tables):
    _, systems, offers = tables
    offered = {o.system for o in offers.values()}
    assert set(systems) - offered == set()
    assert offered - set(systems) == set()


def test_scaleup_domain_fits_the_system(tables):
    _, systems, _ = tables
    for s in systems.values():
        assert 1 <= s.scaleup_domain <= s.accelerators, s.id
        assert s.power_kw > 0


def test_rows_are_sourced_and_dated(tables):
    _, systems, offers = tables
    for row in [*systems.values(), *offers.values()]:
        assert len(row.source.strip()) >= 10, row.id
        assert dt.date(2020, 1, 1) <= row.as_of <= dt.date(2026, 12, 31), row.id


def test_offer_ids_follow_the_convention(tables):
    _, _, offers = tables
    for o in offers.values():
        assert o.id == f"{o.system}-{o.acquisition}-{o.provider}", o.id


def test_buy_offers_have_purchase_price_and_life(tables):
    _, _, offers = tables
    buys = [o for o in offers.values() if o.acquisition == "buy"]
    assert buys
    for o in buys:
        assert o.purchase_usd is not None and o.purchase_usd > 0, o.id
        assert o.useful_life_years is not None and 1 <= o.useful_life_years <= 10, o.id
        assert o.price_usd_per_hour is None, o.id


def test_rental_offers_have_an_hourly_price(tables):
    _, _, offers = tables
    for o in offers.values():
        if o.acquisition in RENTALS:
            assert o.price_usd_per_hour is not None and o.price_usd_per_hour > 0, o.id
            assert o.purchase_usd is None, o.id


def test_cloud_only_systems_are_not_for_sale(tables):
    _, systems, offers = tables
    for o in offers.values():
        if o.acquisition == "buy":
            assert systems[o.system].kind not in ("cloud-instance", "tpu-slice"), o.id


def test_an_8x_h100_node_rents_for_a_plausible_price(tables):
    _, _, offers = tables
    rents = [o.price_usd_per_hour for o in offers.values()
             if o.system == "h100-sxm-x8" and o.acquisition in RENTALS]
    assert rents, "no rental offer for an 8x H100 node"
    for price in rents:
        assert 8 * 1.5 <= price <= 8 * 13, price


def test_on_demand_price_per_accelerator_is_not_absurdly_low(tables):
    _, systems, offers = tables
    for o in offers.values():
        if o.acquisition == "on-demand":
            per_acc = o.price_usd_per_hour / systems[o.system].accelerators
            assert per_acc >= 0.05, (o.id, per_acc)


def test_purchase_prices_are_per_system_not_per_card(tables):
    _, systems, offers = tables
    for o in offers.values():
        if o.acquisition == "buy" and systems[o.system].accelerators >= 8 and systems[o.system].kind == "server":
            assert o.purchase_usd >= 50_000, o.id  # an 8-accelerator server costs far more than one card


def test_the_worked_examples_have_systems(tables):
    _, systems, _ = tables
    for sid in ("h200-sxm-x8", "rtx-pro-6000-x4", "gb200-nvl72", "gb300-nvl72", "rtx-4090-x1", "rtx-5090-x1",
                "l40s-x4", "a100-80gb-x1", "h100-sxm-x8", "h20-x8", "jetson-agx-thor-x1", "dgx-spark-x1",
                "m3-ultra-x1"):
        assert sid in systems, sid


def test_every_hourly_rental_is_capped_at_most_512_accelerators_and_says_where_the_cap_comes_from():
    """No offer rented by the hour (on demand or spot, at a hyperscaler, a GPU cloud or a marketplace)
    lets a plan take more than 512 accelerators of it: on-demand quota is not capacity, and the largest
    self-serve allocation (a Lambda 1-Click Cluster, an AWS Capacity Block of 64 p5) is 512 GPUs; the
    source column states the cap's basis, sourced or marked (estimate: ...)."""
    cat = load_catalog()
    rented = [o for o in cat.offers.values() if o.acquisition in ("on-demand", "spot")]
    assert any(o.tier == "hyperscaler" for o in rented)
    for o in rented:
        per = cat.systems[o.system].accelerators
        assert o.max_systems is not None and o.max_systems * per <= 512, (o.id, o.max_systems, per)
        assert "max_systems" in o.source or "estimate" in o.source.lower(), o.id
    p5 = cat.offers["h100-sxm-x8-on-demand-aws"]
    assert p5.max_systems == 64 and "(estimate: 512 accelerators / 8 per system" in p5.source
