"""Rendering of a multi-year plan's "years": one row per year (cash, budget, fleet, unserved) and
what is bought or reserved when. Pure functions of the plan dict."""

from __future__ import annotations

from planner.cli.tables import markdown_table, table
from planner.data.catalog import OWNED_PROVIDER
from planner.data.fleet_words import fleet_item
from planner.data.money import usd
from planner.data.years import SPENT_KEY

YEAR_COLUMNS = ["year", "capex_usd", "opex_usd", "cost_usd", "budget_usd", "used", "annuitised_cost_usd",
                "fleet", "unserved"]
YEAR_HEADERS = {"capex_usd": "capex $", "opex_usd": "opex $", "cost_usd": "cash $", "budget_usd": "budget $",
                "used": "budget used", "annuitised_cost_usd": "annuitised $", "unserved": "unserved",
                "complexity_usd": "of which complexity $", "resale_usd": "resale $"}
BUY_COLUMNS = ["year", "systems", "system", "acquisition", "unit_price_usd", "total_usd"]
BUY_HEADERS = {"unit_price_usd": "unit $ (reserved: per year)", "total_usd": "total $ (reserved: per year)"}


def fleet_summary(fleet: list[dict]) -> str:
    """'2x h200-nvl-x4 buy (+1), 1x b200-x1 on-demand'."""
    parts = []
    for f in fleet:
        new = (f" (+{f['new_this_year']})" if f.get("new_this_year") and f["acquisition"] == "buy"
               and f.get("provider") != OWNED_PROVIDER else "")
        parts.append(fleet_item(f, brackets=False) + new)
    return ", ".join(parts) or "-"


def unserved_summary(unserved: dict) -> str:
    parts = []
    for dk, u in sorted(unserved.items()):
        if u.get("users") is not None:
            parts.append(f"{dk}: {u['users']:,.0f} users ({u['tokens_per_s']:,.0f} tok/s)")
        elif u.get("runs") is not None:
            parts.append(f"{dk}: {u['runs']:g} runs")
        else:
            parts.append(f"{dk}: {u['share']:.0%}")
    return "; ".join(parts) or "-"


def year_rows(plan: dict) -> list[dict]:
    """One row a year; its budget column names each cap of that year (total, capex, opex) and its
    used column the share of each that the year spends (the total in the plan's budget_basis: cash,
    or annualised, said beside the cap)."""
    rows = []
    book = plan.get("budget_basis") == "annualised"
    for y in plan["years"]:
        caps = [(what, cap, spent) for what, cap, spent in (
            ("annualised " if book else "", y.get("budget_usd"), y[SPENT_KEY["annualised" if book else "cash"]]), ("capex ", y.get("budget_capex_usd"), y["capex_usd"]),
            ("opex ", y.get("budget_opex_usd"), y["opex_usd"])) if cap is not None]
        rows.append({**y, "budget_usd": "; ".join(f"{what}{cap:,.0f}" for what, cap, _ in caps) or None,
                     "used": "; ".join(f"{what}{spent / cap:.0%}" if cap else f"{what}-" for what, cap, spent in caps) or "-",
                     "fleet": fleet_summary(y["fleet"]), "unserved": unserved_summary(y["unserved"])})
    return rows


def year_columns(plan: dict) -> list[str]:
    """YEAR_COLUMNS, with the part of opex that fleet complexity costs when the plan prices it, and
    the resale each year's leaving systems fetch (credited in the NPV, not in the cash) where any
    leave before the final year (the finance review: a system retired mid-horizon was sold unseen)."""
    out = list(YEAR_COLUMNS)
    if any(y.get("complexity_usd") for y in plan["years"]):
        at = out.index("opex_usd") + 1
        out = [*out[:at], "complexity_usd", *out[at:]]
    if any(y.get("resale_usd") for y in plan["years"][:-1]):
        at = out.index("cost_usd") + 1
        out = [*out[:at], "resale_usd", *out[at:]]
    return out


def purchase_rows(plan: dict) -> list[dict]:
    """The purchases and reservations made each year; systems already owned are none (the finance
    review: they read as year-1 purchases at $0)."""
    return [{"year": y["year"], **p} for y in plan["years"] for p in y["purchases"]
            if not p["offer"].endswith(f"-{OWNED_PROVIDER}")]


def headline(plan: dict) -> str:
    """What the two money views mean and the NPV the solver minimised (the first line states the totals)."""
    after = plan.get("committed_after_horizon_usd") or 0
    beyond = (f", and {usd(after)} more committed to reservations that run past year {plan['horizon_years']} "
              "(the NPV counts it)" if after > 0.5 else "")
    return (f"Cash view: capex when paid plus opex, {usd(plan['cash_total_usd'])} in all{beyond}. Annuitised view: each "
            f"purchase spread over the years held, less what it resells for, {usd(plan['total_cost_usd_per_year'])} per year. NPV {usd(plan['npv_usd'])}: "
            f"the cash discounted at {plan['discount_rate']:.0%}, resale credited ({plan['mode']}). "
            "Fleet and jobs below are the final year's." + prepaid_text(plan))


def prepaid_text(plan: dict) -> str:
    """' Paid up front: ...' for the reservations whose whole term the cash pays the year they start
    (the finance review: the purchases table showed a year's fee; the cash held three)."""
    said = []
    for y in plan["years"]:
        for p in y["purchases"]:
            if p.get("paid_upfront_usd"):
                past = p.get("paid_past_horizon_usd") or 0.0
                said.append(f"{p['systems']}x {p['system']} ({p['acquisition']}) in year {y['year']}, "
                            f"{usd(p['paid_upfront_usd'])} for its whole term"
                            + (f", of which {usd(past)} for years past year {plan['horizon_years']}" if past > 0.5 else ""))
    return f" Paid up front (the offer's rate assumes it): {'; '.join(said)}." if said else ""


def years_text(plan: dict) -> str:
    return "\n".join([headline(plan), "", "Year by year (cash view: capex when paid + opex)",
                      table(year_rows(plan), year_columns(plan), YEAR_HEADERS), "",
                      "Purchases and reservations", table(purchase_rows(plan), BUY_COLUMNS, BUY_HEADERS)])


def years_markdown(plan: dict) -> str:
    return "\n".join([headline(plan), "", "## Year by year", "",
                      markdown_table(year_rows(plan), year_columns(plan), YEAR_HEADERS), "",
                      "## Purchases and reservations", "",
                      markdown_table(purchase_rows(plan), BUY_COLUMNS, BUY_HEADERS)])
