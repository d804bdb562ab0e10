"""Catalog listings derived from the tables: one row per provider (`plan catalog providers`)."""

from __future__ import annotations

from planner.data.catalog import ACQUISITIONS, Catalog


def provider_rows(cat: Catalog) -> list[dict]:
    """One row per provider: its tier where the catalog states one, the regions it sells in, how many
    offers it has and the acquisition modes they cover (in the catalog's order)."""
    by: dict[str, list] = {}
    for offer in cat.offers.values():
        by.setdefault(offer.provider, []).append(offer)
    rows = []
    for provider in sorted(by):
        offers = by[provider]
        modes = {o.acquisition for o in offers}
        row = {"provider": provider}
        tiers = sorted({str(t) for o in offers if (t := getattr(o, "tier", None))})
        if tiers:
            row["tier"] = ", ".join(tiers)
        row.update({"regions": ", ".join(sorted({o.region for o in offers})), "offers": len(offers),
                    "acquisition": ", ".join(m for m in ACQUISITIONS if m in modes),
                    "accelerators": len({cat.systems[o.system].accelerator for o in offers if o.system in cat.systems})})
        rows.append(row)
    return rows
