"""Rendering: plain-text tables for people, JSON for scripts, Markdown for documents.

Pure functions from plain data (dicts and lists) to strings; no solver, no typer.
"""

from __future__ import annotations

import math

from planner.cli.render_years import years_markdown, years_text
from planner.cli.tables import markdown_table, table, wrap, years
from planner.data.catalog import OWNED_PROVIDER, unquoted, unquoted_kind
from planner.explain.diagnosis import GROUP_AT
from planner.data.money import unit_cost_text, usd
from planner.physics import costs

FLEET_COLUMNS = ["systems", "system", "accelerators", "acquisition", "provider", "cost_usd_per_year"]
FLEET_HEADERS = {"cost_usd_per_year": "$/year", "accelerators": "GPUs"}
PLACEMENT_COLUMNS = ["replicas", "accelerator", "acquisition", "accelerators_per_replica", "tensor_parallel",
                     "pipeline_parallel", "users_per_replica", "tokens_per_s_per_user", "hours_per_run",
                     "memory_gb_per_accelerator", "memory_gb_capacity", "binding"]
PLACEMENT_HEADERS = {"accelerators_per_replica": "acc/rep", "tensor_parallel": "TP", "pipeline_parallel": "PP",
                     "users_per_replica": "users/rep", "tokens_per_s_per_user": "tok/s/user",
                     "hours_per_run": "h/run", "memory_gb_per_accelerator": "mem GiB",
                     "memory_gb_capacity": "of GiB"}


def fleet_rows(plan: dict) -> list[dict]:
    """The fleet table's rows: a hosted API holds no systems nor GPUs ('-', not 0: it is billed per token);
    systems already owned show as owned (the JSON keeps acquisition buy, provider owned)."""
    return [{**f, "systems": None, "accelerators": None} if f["acquisition"] == "api" else
            {**f, "acquisition": "owned"} if f["provider"] == OWNED_PROVIDER else f for f in plan["fleet"]]


"""how the bundled catalog marks a price with no public quote behind it (catalog/offers.csv's header)"""


def fleet_notes(plan: dict) -> list[str]:
    """One line per fleet row whose price is a catalog estimate or assumption, not a quote (the
    source column says so): a plan that rests on it should be checked against a real quote; and one
    for the rows on marketplace capacity (third-party hosts: no capacity or uptime promise)."""
    out = []
    market = [f"{f['systems']}x {f['system']} ({f['provider']})" for f in plan["fleet"] if f.get("tier") == "marketplace"]
    if market:
        out.append(f"Marketplace capacity: {', '.join(market)} run on third-party hosts with no capacity or uptime "
                   "promise (and the catalog's max_systems caps how many one buyer gets); a job that must stay up "
                   "can set latency_critical: true, or the scenario policy.provider_tiers")
    out += money_notes(plan)
    for f in plan["fleet"]:
        source = str(f.get("price_source") or "")
        if unquoted(source):
            out.append(f"Price not quoted: {f['offer']} ({f['acquisition']}, {f['provider']}) is a catalog "
                       f"{unquoted_kind(source)} as of {f['price_as_of']}, not a public price; get a quote before acting on "
                       "this plan, and put it in with --catalog (a CSV of your offers)")
    return out


def money_notes(plan: dict) -> list[str]:
    """What the yearly cost assumes that no invoice shows (the finance review): the resale of the systems
    bought, netted off their capital (single-period plans), and a reservation whose term runs past
    the horizon, whose whole term the plan's years are charged."""
    horizon, out = plan.get("horizon_years") or 1, []
    sold = [f for f in plan["fleet"] if f.get("residual_value_usd") and "years" not in plan]
    for at, group in sorted(_by_sale_age(sold, horizon).items()):
        back, paid = sum(f["residual_value_usd"] for f in group), sum(f["purchase_usd"] or 0 for f in group)
        items = ", ".join(f"{f['systems']}x {f['system']}" for f in group)
        if at >= horizon and plan.get("end_of_horizon") == "keep":
            out.append(f"Value kept: {items} kept when the {horizon:g}-year horizon ends, valued at {usd(back)} "
                       f"({back / paid:.0%} of the {usd(paid)} paid: the used market's price, no sale's discount; "
                       "policy.end_of_horizon keep); the yearly cost nets it off")
            continue
        rest = costs.years_after_lives(horizon, at)
        when = (f"when the {horizon:g}-year horizon ends" if at >= horizon else
                f"at the end of their {at:g}-year useful life, within the {horizon:g}-year horizon, and replaced"
                + (f" (the last replacement sold {rest:g} year(s) old when the horizon ends; the yearly cost "
                   "averages the two)" if rest > 1e-9 else ""))
        out.append(f"Resale assumed: {items} sold {when}, for {usd(back)} "
                   f"({back / paid:.0%} of the {usd(paid)} paid, at used-market prices); the yearly cost nets it off")
    for f in plan["fleet"]:
        term = f.get("term_years")
        if f.get("paid_upfront_usd"):
            held = min(term, horizon)
            out.append(f"Paid up front: {f['systems']}x {f['system']} ({f['acquisition']}, {f['provider']}), "
                       f"{usd(f['paid_upfront_usd'])} for its {term}-year term when it starts (the offer's rate "
                       f"assumes all-upfront payment); the yearly cost is that payment annuitised over the "
                       f"{held:g} year(s) of this plan at the policy's discount rate (a financing charge on money "
                       "paid at the start)" + (f"; the term's last {term - held:g} year(s) are paid for and lie "
                                               "past this plan's horizon" if term > held else ""))
            continue
        if term and term > horizon and f.get("contract_usd_per_year"):
            rate = f["contract_usd_per_year"]
            out.append(f"Commitment past the horizon: {f['systems']}x {f['system']} ({f['acquisition']}, {f['provider']}) "
                       f"is a {term}-year contract at {usd(rate)} a year ({usd(rate * term)} in all), "
                       f"{term - horizon:g} year(s) past this {horizon:g}-year plan, whose yearly cost spreads the "
                       "whole term over its years")
    return out


def _by_sale_age(sold: list[dict], horizon: float) -> dict[float, list[dict]]:
    """The bought fleet rows by the age their systems are sold at (fleet[].sold_after_years; a plan
    written before that key sells at the horizon)."""
    out: dict[float, list[dict]] = {}
    for f in sold:
        out.setdefault(f.get("sold_after_years", horizon), []).append(f)
    return out


ALTERNATIVE_COLUMNS = ["accelerator", "status", "cost_delta_usd_per_year", "reason"]
ALTERNATIVE_HEADERS = {"cost_delta_usd_per_year": "+$/year"}
CHECKS = (("regime", "Regime"), ("run_it", "Run it"), ("unit_cost", "Unit cost"))


def placement_columns(job: dict) -> list[str]:
    """The placement table's columns; 'part' first when a serve job has request sizes or pooled parts."""
    parts = job["stage"] == "serve" and any(p.get("pool") or p.get("part") not in (None, job["name"])
                                             for p in job["placements"])
    return (["part"] if parts else []) + PLACEMENT_COLUMNS


def api_lines(job: dict) -> list[str]:
    """The job's shares on hosted APIs, which the placement table (systems) does not hold."""
    return [f"{a['users_served']:,.0f} users on {a['provider']}'s API ({a['offer']}): {usd(a['cost_usd_per_year'])}/year "
            f"for {a['input_tokens_per_year'] / 1e9:,.1f}B input and {a['output_tokens_per_year'] / 1e9:,.1f}B output "
            "tokens a year" for a in job.get("api") or []]


def placement_rows(job: dict) -> list[dict]:
    """The placement table's rows as shown (the JSON keeps its values): a prefill half of a split
    across two systems serves no users and decodes no tokens, so its users/rep and tok/s/user read
    "-" and its binding says how many prompts per second a replica admits."""
    rows = []
    for p in job["placements"]:
        half = p.get("disaggregated") or {}
        if half.get("role") == "prefill":
            p = {**p, "users_per_replica": None, "tokens_per_s_per_user": None,
                 "binding": f"prefill: {half['prompts_per_s_per_replica']:.3g} prompts/s"}
        if p.get("provider") == OWNED_PROVIDER:  # (held already: the fleet table says so too)
            p = {**p, "acquisition": "owned"}
        rows.append(p)
    return rows


def pool_lines(plan: dict, markdown: bool) -> list[str]:
    """Which serving parts share which replicas (policy.pool_jobs), with the load each puts on them."""
    if not plan.get("pools"):
        return []
    lines = ["## Shared replicas (pooled serving)", ""] if markdown else [
        "Shared replicas (policy.pool_jobs: parts of one model and precision share replicas, split by load)"]
    for p in plan["pools"]:
        loads = ", ".join(f"{k} {v:.2f}" for k, v in sorted(p["load"].items(), key=lambda kv: -kv[1]))
        lines.append(f"{'-' if markdown else ' '} {p['replicas']} replica(s) of {p['accelerators_per_replica']}x "
                     f"{p['accelerator']} (TP{p['tensor_parallel']} PP{p['pipeline_parallel']}, {p['offer']}), "
                     f"pool '{p['pool']}': replica loads {loads}")
    return lines + [""]


def mark_of(e: dict) -> str:
    """An explanation row's mark: binds, slack, or open (a re-plan that did not settle it)."""
    return "binds" if e["binding"] else "slack" if e.get("settled", True) else "open"


def _explanation_lines(plan: dict, markdown: bool, width: int | None = None) -> list[str]:
    """Binding constraints with prices, the why-not table and the next-best fleet (explain.py)."""
    lines = []
    if plan.get("explanations"):
        lines += ["## Why this plan: constraints and prices", ""] if markdown else \
            ["Why this plan: constraints and prices (what one more unit would cost or save)"]
        for e in plan["explanations"]:
            mark = f"**{mark_of(e)}**" if markdown and e["binding"] else mark_of(e)
            lines.append(f"- {mark} ({e['family']}, {e['constraint']}): {e['message']}" if markdown
                         else f"  [{mark}] {e['constraint']}: {e['message']}")
        lines.append("")
    if plan.get("alternatives") is not None:
        title = "Why not the other accelerators"
        rows = alternative_rows(plan)
        lines += ([f"## {title}", "", markdown_table(rows, ALTERNATIVE_COLUMNS, ALTERNATIVE_HEADERS)]
                  if markdown else [title, table(rows, ALTERNATIVE_COLUMNS, ALTERNATIVE_HEADERS, width)])
        lines.append("")
    if plan.get("next_best"):
        lines += (["## Next-best fleet", "", plan["next_best"]["message"], ""] if markdown
                  else [f"Next best: {plan['next_best']['message']}", ""])
    if plan.get("next_best_acquisition"):
        said = plan["next_best_acquisition"]["message"]
        lines += ([said[0].upper() + said[1:], ""] if markdown else [f"Other acquisition: {said}", ""])
    if plan.get("api_fleet"):
        said = plan["api_fleet"]["message"]
        lines += ([said[0].upper() + said[1:], ""] if markdown else [f"On hosted APIs: {said}", ""])
    return lines


def _check_lines(job: dict, markdown: bool) -> list[str]:
    checks = job.get("checks") or {}
    if markdown:
        return [f"- **{label}:** {checks[k]}" for k, label in CHECKS if k in checks]
    return [f"  check, {label.lower()}: {checks[k]}" for k, label in CHECKS if k in checks]


def cost_line(plan: dict) -> str:
    """What the plan costs. A multi-year plan states its cash and its annuitised (accounting) figures
    apart, each with its own total, so that each per-year figure times the years gives its total."""
    n = plan["horizon_years"]
    if plan.get("years"):
        cash = plan["cash_total_usd"]
        annuitised = plan.get("annuitised_total_usd", plan["total_cost_usd_per_year"] * n)
        text = (f"cash {usd(cash)} over {years(n)} ({usd(cash / n)} a year on average); "
                f"annuitised {usd(plan['total_cost_usd_per_year'])} per year ({usd(annuitised)} over {years(n)})")
        if plan.get("npv_usd") is None:
            return text
        sold = sum(y.get("resale_usd") or 0.0 for y in plan["years"])
        before = sold - (plan.get("salvage_usd") or 0.0)
        counted = [f"{what} ({usd(plan[key])})" for what, key in (  # (neither is in the cash)
            ("crediting the resale at the end", "salvage_usd"),
            ("counting the reservations owed after it", "committed_after_horizon_usd")) if plan.get(key)]
        if before > 0.5:
            counted.insert(0, f"crediting the resale of systems retired before the end ({usd(before)})")
        return text + f"; NPV {usd(plan['npv_usd'])}" + (", " + " and ".join(counted) if counted else "")
    per, cash = plan["total_cost_usd_per_year"], plan.get("cash_first_year_usd")
    if n <= 1:
        return f"{usd(per)} per year ({usd(plan['total_cost_usd_over_horizon'])} over {years(n)})"
    # (the UX review: "over 3 years" was neither cash nor NPV, and did not say which)
    first = f"; first year's cash {usd(cash)}" if cash is not None and abs(cash - per) > 0.5 else ""
    return f"{usd(per)} per year ({usd(plan['total_cost_usd_over_horizon'])} over {years(n)} at that annualised cost{first})"


def status_text(plan: dict) -> str:
    """The plan's status, with its gap when it is not proven optimal: a report passed on without the
    command's warnings still says how far from the cheapest plan it may be."""
    unmet = "" if plan.get("demand_met", True) else " (demand not fully met: see unserved)"
    if plan["status"] != "feasible":
        return plan["status"] + unmet
    gap = plan["solver"].get("gap")
    return "feasible, not proven optimal (" + (f"gap up to {gap:.2%})" if gap is not None else "gap unknown)") + unmet


def headline(plan: dict) -> str:
    return f"Plan for '{plan['scenario']}': {status_text(plan)}, {cost_line(plan)}"


def plan_text(plan: dict, width: int | None = None) -> str:
    """The plan for a person; with `width` (the terminal's columns) prose wraps and the why-not
    table's reasons wrap under themselves; tables of numbers keep their rows."""
    lines = [headline(plan), ""]
    lines += [plan["summary"], ""] if plan.get("summary") else []
    lines += _years_section(plan, markdown=False)
    lines += ["Fleet", table(fleet_rows(plan), FLEET_COLUMNS, FLEET_HEADERS)]
    lines += [f"  - {line}" for line in fleet_notes(plan)] + [""]
    for job in plan["jobs"]:
        lines.append(f"Job '{job['name']}' ({job['stage']}, {job['model']}): {usd(job['cost_usd_per_year'])}/year; "
                     + (unit_cost_text(job["unit_cost"]) or "-"))
        lines.append(table(placement_rows(job), placement_columns(job), PLACEMENT_HEADERS))
        lines += [f"  - {line}" for line in api_lines(job)]
        for key in ("traffic", "colocation", "spare"):
            if job.get(key):
                lines.append(f"  - {job[key]}")
        if job.get("split_considered"):
            lines.append(f"  - {job['split_considered']}")
        for dk, u in job.get("unserved", {}).items():
            lines.append(f"  unserved: {dk}: {u['share']:.1%}" + (f" ({u['users']:,.0f} users)" if u.get("users") else ""))
        for msg in job.get("why", []):
            lines.append(f"  - {msg}")
        lines += _check_lines(job, False)
        lines.append("")
    lines += pool_lines(plan, False)
    lines += _explanation_lines(plan, False, width)
    s = plan["solver"]
    gap = "" if s.get("gap") in (None, 0) else (
        f", within {s['gap']:.2%} of optimal" if plan["status"] == "optimal" else f", gap up to {s['gap']:.2%}")
    took = f" in {s['seconds']:.2f} s" if s.get("seconds") is not None else ""
    lines.append(f"Solved by {s['name']}{took} ({s['variables']} variables, "
                 f"{s['constraints']} constraints{gap}).")
    if s.get("cut_short"):
        lines.append("Cut short by the time limit: " + "; ".join(s["cut_short"]) + ".")
    if s.get("explanations_stopped"):
        lines.append("Explanations: " + s["explanations_stopped"] + ".")
    if width:
        lines = [part for line in "\n".join(lines).split("\n") for part in
                 (wrap(line, width) if not _is_table_line(line) else [line])]
    return "\n".join(lines).rstrip() + "\n"


def _is_table_line(line: str) -> bool:
    """Rows of a plain-text table: columns apart by two spaces, or its rule of dashes."""
    return set(line.strip()) <= {"-", " "} and line.strip() != "" or ("  " in line.strip() and not
                                                                      line.lstrip().startswith(("- ", "[", "check")))


def plan_markdown(plan: dict) -> str:
    notes = [f"- {line}" for line in fleet_notes(plan)]
    lines = [f"# Hardware plan: {plan['scenario']}", "",
             f"**Status:** {status_text(plan)}. **Cost:** {cost_line(plan)}.", "",
             *[f"- {line}" for line in plan.get("notes", [])], *([""] if plan.get("notes") else []),
             *(["## Recommendation", "", plan["summary"], ""] if plan.get("summary") else []),
             *_years_section(plan, markdown=True),
             "## What to buy or rent", "",
             markdown_table(fleet_rows(plan), FLEET_COLUMNS + ["purchase_usd", "price_as_of"],
                            {**FLEET_HEADERS, "purchase_usd": "purchase $", "price_as_of": "price as of"}), "",
             *notes, *([""] if notes else [])]
    for job in plan["jobs"]:
        lines += [f"## Job: {job['name']} ({job['stage']}, {job['model']})", "",
                  f"Cost {usd(job['cost_usd_per_year'])} per year; {unit_cost_text(job['unit_cost'])}.", "",
                  markdown_table(placement_rows(job), placement_columns(job), PLACEMENT_HEADERS), ""]
        lines += [f"- {line}" for line in api_lines(job)]
        lines += [f"- {job[k]}" for k in JOB_NOTES if job.get(k)]
        lines += [f"- {msg}" for msg in job.get("why", [])]
        lines += ["", "Before signing:", ""] + _check_lines(job, True) if job.get("checks") else []
        lines.append("")
    lines += pool_lines(plan, True)
    lines += _explanation_lines(plan, True)
    if plan["solver"].get("cut_short"):
        lines += ["", "**Cut short by the time limit:** " + "; ".join(plan["solver"]["cut_short"]) + "."]
    if plan["solver"].get("explanations_stopped"):
        lines += ["", "**Explanations:** " + plan["solver"]["explanations_stopped"] + "."]
    return "\n".join(lines).rstrip() + "\n"


def _years_section(plan: dict, markdown: bool) -> list[str]:
    """A multi-year plan's year-by-year table and purchases (planner.multiyear_report)."""
    if not plan.get("years"):
        return []
    return [years_markdown(plan) if markdown else years_text(plan), ""]


JOB_NOTES = ("traffic", "colocation", "split_considered", "spare")
"""a job's one-line notes beside its placements' reasons, in the order markdown and HTML list them"""



def alternative_rows(plan: dict) -> list[dict]:
    """The why-not table's rows, each extra cost in whole dollars as its reason writes it (text,
    markdown and HTML alike: the HTML showed 832.88 beside the text's 833); GROUP_AT or more ruled
    out for the same reason, with no cost, in one row where the first of them stood."""
    rows = [{**a, "cost_delta_usd_per_year": _whole_dollars(a)} if a.get("cost_delta_usd_per_year") is not None else a
            for a in plan["alternatives"]]
    alike: dict[tuple, list[str]] = {}
    for a in rows:
        if a.get("cost_delta_usd_per_year") is None:
            alike.setdefault((a["status"], a["reason"]), []).append(a["accelerator"])
    out, done = [], set()
    for a in rows:
        key = (a["status"], a["reason"])
        names = alike.get(key, []) if a.get("cost_delta_usd_per_year") is None else []
        if len(names) < GROUP_AT:
            out.append(a)
        elif key not in done:
            done.add(key)
            out.append({**a, "accelerator": f"{len(names)} others", "reason": f"{a['reason']} [{', '.join(names)}]"})
    return out


def _whole_dollars(alternative: dict) -> float:
    """An alternative's extra cost in whole dollars as its reason writes it: an LP bound rounded
    down (never above a plan: whynot.py), a re-planned cost rounded (the table said $34,548 beside
    a reason's '+$34,547 or more')."""
    delta = alternative["cost_delta_usd_per_year"]
    return float(math.floor(delta) if alternative.get("basis") == "lp-bound" else round(delta))
