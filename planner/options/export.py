"""US export controls on accelerators bought for a site in China (reference/economics.md s5c).

A purchase ships the hardware to the site, so a site in China or Macau (site.region cn, mo) may buy
an accelerator only where the US rules let it be exported there, or where the buyer holds a licence
(policy.export_licences). Rented capacity is not exported by the plan: a cloud's or a China-mainland
provider's hardware is where it already is.

  TPP >= 4,800 (total processing performance, BIS rule of 2023-10-17, in force 2023-11-17: A100, H100,
  L40S, RTX 4090, ... need a licence for China, with a presumption of denial; E15-E17). TPP is the
  dense peak times the bit length, the highest over the formats the catalog gives:
      TPP = max(16 x bf16 TFLOPS, 8 x fp8 TFLOPS, 8 x int8 TOPS, 4 x fp4 TFLOPS)
  (an H100: 8 x 1,979 = 15,832, its published TPP; an RTX 4090: 8 x 660.6 = 5,285, the reference's 5,280).
  H20 (and AMD's MI308): a licence "indefinitely" since 2025-04 (E20), though under the threshold.
  H200: case-by-case review with certifications since 2025-12/2026-01, and a 25% tariff (E22, E23),
  added to the price of a licensed purchase (data/export_rules.py, data/consistency.py).
The density rule for smaller parts and the other destinations of country groups D:1/D:4/D:5 are not
modelled: the catalog's region codes do not name them.
"""

from __future__ import annotations

from planner.data.catalog import Accelerator, Offer
from planner.data.export_rules import CASE_BY_CASE, LICENSED_TARIFF, RESTRICTED_SITES

TPP_THRESHOLD = 4800.0
BY_NAME = {"h20": "since 2025-04 the H20 needs a US export licence for China 'indefinitely' (economics.md s5c, E20)"}


def tpp(acc: Accelerator) -> float:
    """Total processing performance: the dense peak times its bit length, the highest format's."""
    return max((acc.bf16_tflops or 0) * 16, (acc.fp8_tflops or 0) * 8, (acc.int8_tops or 0) * 8,
               (acc.fp4_tflops or 0) * 4)


def export_exclusion(o: Offer, acc: Accelerator, site_region: str, licences) -> str:
    """Why a purchase may not be shipped to the site ('' if it may): see the module docstring."""
    if o.acquisition != "buy" or site_region not in RESTRICTED_SITES or acc.id in licences:
        return ""
    hold = "; list it in policy.export_licences if you hold a licence"
    if acc.id in BY_NAME:
        return BY_NAME[acc.id] + hold
    if acc.id in CASE_BY_CASE:
        return ("the H200 ships to China only under a US licence reviewed case by case, with a "
                f"{LICENSED_TARIFF:.0%} tariff (since 2026-01; economics.md s5c, E22-E23)" + hold
                + ", and its purchase then carries the tariff")
    total = tpp(acc)
    if total >= TPP_THRESHOLD:
        return (f"a US export licence is needed to ship it to China (TPP {total:,.0f} >= {TPP_THRESHOLD:,.0f} since "
                f"2023-11-17, presumption of denial; economics.md s5c)" + hold)
    return ""
