"""Units and how money figures are written for people (shared by explanations and reports)."""

from __future__ import annotations


def usd(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"${x:,.{digits}f}"


def signed_usd(x: float, digits: int = 0) -> str:
    """'$1,234' or '-$1,234'; an amount that rounds to zero is '$0', not '-$0'."""
    return f"-${abs(x):,.{digits}f}" if round(x, digits) < 0 else f"${abs(x) if round(x, digits) == 0 else x:,.{digits}f}"


def hours_text(h: float) -> str:
    """'12.5 h', or in minutes below a tenth of an hour ('2.4 min', not '0.0 h')."""
    return f"{h:,.1f} h" if h >= 0.05 else f"{h * 60:,.1f} min"


def unit_cost_text(uc: dict, headline_only: bool = False) -> str:
    """'$0.929 per million output tokens; $587 per concurrent user-year', from a unit_cost dict; a
    job whose headline unit is input tokens leads with '$0.066 per million input tokens or $0.264 per
    million output (either one is the whole cost; not to be added)': each is the job's whole cost over that
    stream (readout._unit_cost),
    unlike an API's list prices, which add up. headline_only: the headline unit alone (--brief)."""
    parts = []
    if uc.get("headline") == "input" and uc.get("usd_per_million_input_tokens") is not None and headline_only:
        parts.append(f"{usd(uc['usd_per_million_input_tokens'], 3)} per million input tokens (the whole cost)")
    elif uc.get("headline") == "input" and uc.get("usd_per_million_input_tokens") is not None:
        # a prefill-heavy job (RAG, summarising) is priced by what it reads first
        parts.append(f"{usd(uc['usd_per_million_input_tokens'], 3)} per million input tokens or "
                     f"{usd(uc['usd_per_million_tokens'], 3)} per million output (either one is the whole "
                     "cost; not to be added)")
    elif uc.get("usd_per_million_tokens") is not None:
        parts.append(f"{usd(uc['usd_per_million_tokens'], 3)} per million output tokens")
    if uc.get("usd_per_million_tokens_blended") is not None and not headline_only:
        parts.append(f"{usd(uc['usd_per_million_tokens_blended'], 3)} per million tokens in and out together "
                     "(as an API's blended price)")
    if uc.get("usd_per_user_per_year") is not None:
        parts.append(f"{usd(uc['usd_per_user_per_year'])} per concurrent user-year")
    if uc.get("usd_per_run") is not None:
        parts.append(f"{usd(uc['usd_per_run'], 2)} per run")
    if uc.get("usd_per_day") is not None:
        parts.append(f"{usd(uc['usd_per_day'])} per day")
    if uc.get("usd_per_device_per_year") is not None:
        parts.append(f"{usd(uc['usd_per_device_per_year'])} per device-year")
    return "; ".join(parts)


def listed(items: list[str]) -> str:
    """Items in a sentence: 'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
