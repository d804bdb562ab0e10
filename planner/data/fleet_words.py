"""How one fleet row of a plan reads in a line of text: '2x h200-nvl-x4 (buy, oem)', or for a hosted
API, which holds no systems and is billed per token, "nebius's API for llama-3.3-70b" (not '0x')."""

from __future__ import annotations

from planner.data.catalog import OWNED_PROVIDER
from planner.data.money import listed

VERBS = {"buy": "Buy", "on-demand": "Rent on demand", "spot": "Rent spot", "reserved-1y": "Reserve for 1 year",
         "reserved-3y": "Reserve for 3 years"}
"""how a plan's decision names each acquisition mode ("Rent on demand 2x ...")"""


def fleet_item(f: dict, provider: bool = False, brackets: bool = True) -> str:
    """A plan's fleet row (plan["fleet"][i]) in words; provider: name it beside the acquisition;
    brackets: '2x s (buy)' rather than '2x s buy'."""
    if f["acquisition"] == "api":
        return f"{f['provider']}'s API for {f['system']}"
    kind = "owned" if f.get("provider") == OWNED_PROVIDER else f["acquisition"]  # (held already: never bought here)
    how = f"{kind}, {f['provider']}" if provider and kind != "owned" else kind
    return f"{f['systems']}x {f['system']} ({how})" if brackets else f"{f['systems']}x {f['system']} {how}"


def fleet_clauses(fleet: list[dict]) -> list[str]:
    """The fleet in words, one clause per verb (the report review: "Rent on demand ...; Rent on demand ..."):
    systems acquired, systems already owned, or a hosted API billed per token."""
    by_verb: dict[str, list[str]] = {}
    for f in fleet:
        if f["acquisition"] == "api":
            by_verb.setdefault(f"Use {f['provider']}'s hosted API for {f['system']} (billed per token)", [])
        elif f["provider"] == OWNED_PROVIDER:
            by_verb.setdefault(f"Keep {f['systems']:,}x {f['system']} you own ({f['accelerators']:,} {f['accelerator']}; "
                               "no capital, their power, hosting and operations paid)", [])
        else:
            by_verb.setdefault(VERBS.get(f["acquisition"], f["acquisition"]), []).append(
                f"{f['systems']:,}x {f['system']} ({f['accelerators']:,} {f['accelerator']}, {f['provider']})")
    return [f"{verb} {listed(rest)}" if rest else verb for verb, rest in by_verb.items()]
