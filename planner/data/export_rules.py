"""The US export rules' lists and figures that both the offers a site may buy (options/export.py)
and the prices it pays (data/consistency.py) read (reference/economics.md s5c)."""

from __future__ import annotations

RESTRICTED_SITES = ("cn", "mo")
"""site regions the rules name: China and Macau (E22)"""
CASE_BY_CASE = frozenset({"h200-sxm", "h200-nvl"})
"""accelerators shipped there only under a licence reviewed case by case (since 2026-01, E22)"""
LICENSED_TARIFF = 0.25
"""the US tariff on H200-class accelerators exported to China under such a licence (E22, E23): a
purchase there costs this share more than the catalog's price"""


def tariffed(accelerator: str, site_region: str, licences) -> bool:
    """Whether a purchase of `accelerator` for a site in `site_region` pays LICENSED_TARIFF: an
    H200-class part bought for China or Macau under a licence the policy lists."""
    return site_region in RESTRICTED_SITES and accelerator in CASE_BY_CASE and accelerator in licences
