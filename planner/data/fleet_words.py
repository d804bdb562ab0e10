"""How one fleet row of a plan reads in a line of text: '2x h200-nvl-x4 (buy, oem)', or for a hosted
API, which holds no systems and is billed per token, "nebius's API for llama-3.3-70b" (not '0x')."""

from __future__ import annotations

from planner.data.catalog import OWNED_PROVIDER


def fleet_item(f: dict, provider: bool = False, brackets: bool = True) -> str:
    """A plan's fleet row (plan["fleet"][i]) in words; provider: name it beside the acquisition;
    brackets: '2x s (buy)' rather than '2x s buy'."""
    if f["acquisition"] == "api":
        return f"{f['provider']}'s API for {f['system']}"
    kind = "owned" if f.get("provider") == OWNED_PROVIDER else f["acquisition"]  # (held already: never bought here)
    how = f"{kind}, {f['provider']}" if provider and kind != "owned" else kind
    return f"{f['systems']}x {f['system']} ({how})" if brackets else f"{f['systems']}x {f['system']} {how}"
