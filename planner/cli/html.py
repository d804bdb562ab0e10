"""The plan and the sweep as one self-contained HTML file: inline CSS and inline SVG charts
(planner.cli.svg), no script, no font, image or style sheet fetched from anywhere, so it opens
offline and can be mailed on. Pure functions of the plan dict / sweep entries.
"""

from __future__ import annotations

from html import escape

from planner.cli import svg
from planner.cli.render import (
    ALTERNATIVE_COLUMNS,
    ALTERNATIVE_HEADERS,
    alternative_rows,
    CHECKS,
    FLEET_COLUMNS,
    FLEET_HEADERS,
    JOB_NOTES,
    PLACEMENT_HEADERS,
    api_lines,
    cost_line,
    fleet_rows,
    mark_of,
    placement_columns,
    placement_rows,
    pool_lines,
    status_text,
    fleet_notes,
)
from planner.cli.render_years import (
    BUY_COLUMNS,
    BUY_HEADERS,
    YEAR_HEADERS,
    purchase_rows,
    year_columns,
    year_rows,
)
from planner.cli.render_years import headline as years_headline
from planner.cli.tables import fmt
from planner.data.fleet_words import fleet_item
from planner.data.money import unit_cost_text, usd

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#1a202c;
  max-width:1180px;margin:24px auto;padding:0 20px;line-height:1.45;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e2e8f0;
  padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.headline{font-size:16px;color:#2d3748;margin:0 0 12px}
.decision{background:#ebf8ff;border-left:4px solid #2b6cb0;padding:10px 14px;margin:12px 0;font-size:15px}
.warn{background:#fffaf0;border-left:4px solid #dd6b20;padding:8px 14px 8px 28px;margin:8px 0}
.status-optimal{color:#276749;font-weight:600}.status-feasible{color:#b7791f;font-weight:600}
.status-infeasible{color:#c53030;font-weight:600}
.charts{display:flex;flex-wrap:wrap;align-items:flex-start;gap:18px 28px;margin:8px 0}
.charts figure{margin:0;padding:10px;border:1px solid #e2e8f0;border-radius:6px;background:#fff}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
.scroll{overflow-x:auto;max-width:100%}.scroll table{width:max-content}.scroll td{max-width:520px}
svg{max-width:100%;height:auto}
th,td{border-bottom:1px solid #e2e8f0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f7fafc;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
ul{margin:4px 0 8px;padding-left:22px}li{margin:2px 0}
.binds{color:#c53030;font-weight:600}.slack{color:#718096}
.muted{color:#718096;font-size:12px}.swatch{display:inline-block;width:11px;height:11px;margin-right:6px;
  vertical-align:middle;border-radius:2px}
"""


def _e(text) -> str:
    return escape(str(text), quote=True)


def _table(rows: list[dict], columns: list[str], headers: dict | None = None) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    headers = headers or {}
    numeric = {c: all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) or r.get(c) is None
                      for r in rows) for c in columns}
    head = "".join(f"<th>{_e(headers.get(c, c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f'<td{" class=num" if numeric[c] else ""}>{_e(fmt(r.get(c)))}</td>'
                                    for c in columns) + "</tr>" for r in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def infeasible_html(title: str, diagnosis: str, rows: list[dict], columns: list[str]) -> str:
    """The page for a scenario with no plan: its diagnosis and what to relax, by how much."""
    lead, *items = diagnosis.split("\n  - ")
    body = [f"<h1>{_e(title)}</h1>", f'<p class="headline"><span class="status-infeasible">infeasible</span> '
            f"&middot; {_e(lead)}</p>"]
    if items:
        body.append("<ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>")
    if rows:
        body += ["<h2>What to relax</h2>", _table(rows, columns)]
    return _page(title, body)


# --- charts of a plan ----------------------------------------------------------------------------------

def breakdown_chart(plan: dict) -> str:
    """Cost by component (single period) or by system in the final year (multi-year)."""
    parts = plan.get("cost_breakdown_usd_per_year")
    if parts:
        items = sorted(((k, v) for k, v in parts.items() if v > 0), key=lambda kv: (-kv[1], kv[0]))
        return svg.hbar(items, "Cost per year by component",
                        note=f"total {usd(plan['total_cost_usd_per_year'])} per year; purchases annuitised")
    items = [(fleet_item(f, brackets=False), f["cost_usd_per_year"]) for f in plan["fleet"]]
    if not items:
        return ""
    return svg.hbar(items, "Final year's cost per year by system", note="accounting view: purchases annuitised")


def years_chart(plan: dict) -> str:
    """Cash per year (capex + opex, stacked), the accounting view's cost beside it, the budget dashed."""
    ys = plan.get("years") or []
    if not ys:
        return ""
    budget = [y.get("budget_usd") for y in ys]
    what = "budget (annualised)" if plan.get("budget_basis") == "annualised" else "budget (cash)"
    return svg.columns([f"year {y['year']}" for y in ys],
                       [("capex (cash)", [y["capex_usd"] for y in ys], True),
                        ("opex (cash)", [y["opex_usd"] for y in ys], True),
                        ("annuitised cost", [y["annuitised_cost_usd"] for y in ys], False)],
                       "Cash and cost per year", line=(what, budget) if any(b is not None for b in budget) else None)


def whynot_chart(plan: dict) -> str:
    alts = [a for a in plan.get("alternatives") or []
            if a.get("cost_delta_usd_per_year") is not None and a["status"] == "costlier"]
    if not alts:
        return ""
    alts.sort(key=lambda a: (a["cost_delta_usd_per_year"], a["accelerator"]))
    items = [(a["accelerator"], a["cost_delta_usd_per_year"]) for a in alts[:15]]
    more = f"; {len(alts) - 15} more in the table" if len(alts) > 15 else ""
    near = sorted(v for _, v in items)[:5]
    clip = 2 * near[-1] if items[-1][1] > 4 * near[-1] else None  # (one far alternative hid the near ones: the report review)
    bounds = {a["accelerator"] for a in alts[:15] if a.get("basis") == "lp-bound"}
    return svg.hbar(items, "Why not: extra cost per year of the cheapest plan running every job it can on each "
                           "accelerator", width=860, fmt=lambda v: "+" + svg.money(v), faint=bounds, clip=clip,
                    note="pale: at least this much (an LP bound); broken: runs past the chart; the table below lists "
                         "the accelerators that cannot run the jobs" + more)


# --- the plan ------------------------------------------------------------------------------------------

def plan_html(plan: dict) -> str:
    body = [f"<h1>Hardware plan: {_e(plan['scenario'])}</h1>",
            f'<p class="headline"><span class="status-{_e(plan["status"] if plan.get("demand_met", True) else "feasible")}">'
            f'{_e(status_text(plan))}</span> '
            f"&middot; {_e(cost_line(plan))}</p>"]
    if plan.get("notes"):  # (the input's warnings, printed on stderr when it was planned)
        body.append('<ul class="warn">' + "".join(f"<li>{_e(m)}</li>" for m in plan["notes"]) + "</ul>")
    if plan.get("years"):  # (what the money views and the NPV mean, and that the fleet below is the final year's)
        body.append(f'<p class="muted">{_e(years_headline(plan))}</p>')
    if plan.get("summary"):
        body.append(f'<div class="decision">{_e(plan["summary"])}</div>')
    charts = [c for c in (breakdown_chart(plan), years_chart(plan), whynot_chart(plan)) if c]
    if charts:
        body.append('<div class="charts">' + "".join(f"<figure>{c}</figure>" for c in charts) + "</div>")
    if plan.get("years"):
        body += ["<h2>Year by year</h2>", f'<p class="muted">{_e(plan["views"]["cash"])}; annuitised: '
                 f'{_e(plan["views"]["accounting"])}</p>', _table(year_rows(plan), year_columns(plan), YEAR_HEADERS),
                 "<h3>Purchases and reservations</h3>", _table(purchase_rows(plan), BUY_COLUMNS, BUY_HEADERS)]
    body += ["<h2>What to buy or rent" + _e(f" (year {plan['years'][-1]['year']}'s fleet; the year table shows "
                                             "each year's)" if plan.get("years") else "") + "</h2>",
             _table(fleet_rows(plan), FLEET_COLUMNS + ["purchase_usd", "price_as_of"],
                    {**FLEET_HEADERS, "purchase_usd": "purchase $", "price_as_of": "price as of"})]
    notes = fleet_notes(plan)
    if notes:
        body.append('<ul class="warn">' + "".join(f"<li>{_e(m)}</li>" for m in notes) + "</ul>")
    for job in plan["jobs"]:
        body += [f"<h2>Job {_e(job['name'])} <span class=muted>({_e(job['stage'])}, {_e(job['model'])})</span></h2>",
                 f"<p>{_e(usd(job['cost_usd_per_year']))} per year; {_e(unit_cost_text(job['unit_cost']) or '-')}</p>",
                 _table(placement_rows(job), placement_columns(job), PLACEMENT_HEADERS)]
        items = api_lines(job) + [job[k] for k in JOB_NOTES if job.get(k)] + (job.get("why") or [])
        if items:
            body.append("<ul>" + "".join(f"<li>{_e(m)}</li>" for m in items) + "</ul>")
        checks = job.get("checks") or {}
        if checks:
            body.append("<h3>Before signing</h3><ul>" + "".join(
                f"<li><b>{_e(label)}:</b> {_e(checks[k])}</li>" for k, label in CHECKS if k in checks) + "</ul>")
    pools = pool_lines(plan, markdown=True)
    if pools:
        body += [f"<h2>{_e(pools[0][3:])}</h2><ul>" + "".join(f"<li>{_e(x[2:])}</li>" for x in pools[2:] if x)
                 + "</ul>"]
    body += _explanation(plan)
    s = plan["solver"]
    took = f" in {s['seconds']:.2f} s" if s.get("seconds") is not None else ""
    body.append(f'<p class="muted">Solved by {_e(s["name"])}{_e(took)} ({s["variables"]} variables, '
                f'{s["constraints"]} constraints). Prices are dated catalog figures: put your own quotes in.</p>')
    if s.get("cut_short"):
        body.append(f'<p class="muted">Cut short by the time limit: {_e("; ".join(s["cut_short"]))}.</p>')
    if s.get("explanations_stopped"):
        body.append(f'<p class="muted">Explanations: {_e(s["explanations_stopped"])}.</p>')
    return _page(f"Hardware plan: {plan['scenario']}", body)


def _explanation(plan: dict) -> list[str]:
    out = []
    if plan.get("explanations"):
        out.append("<h2>Why this plan: constraints and prices</h2><ul>")
        for x in plan["explanations"]:
            mark = f'<span class="{"binds" if x["binding"] else "slack"}">{mark_of(x)}</span>'
            out.append(f"<li>{mark} <code>{_e(x['constraint'])}</code>: {_e(x['message'])}</li>")
        out.append("</ul>")
    if plan.get("next_best"):
        out.append(f"<h2>Next-best fleet</h2><p>{_e(plan['next_best']['message'])}</p>")
    for key in ("next_best_acquisition", "api_fleet"):
        if plan.get(key):
            out.append(f"<p>{_e(plan[key]['message'])}</p>")
    if plan.get("alternatives") is not None:
        out += ["<h2>Why not the other accelerators</h2>",
                _table(alternative_rows(plan), ALTERNATIVE_COLUMNS, ALTERNATIVE_HEADERS)]
    return out


# --- the sweep -----------------------------------------------------------------------------------------

def fleet_key(summary: dict) -> str:
    return ", ".join(fleet_item(f, brackets=False) for f in summary.get("fleet", [])) or "no plan"


def sweep_chart(entries: list[dict]) -> tuple[str, list[str]]:
    """Cost against the first swept setting, one line per value of the others; marker colour = fleet."""
    keys = list(entries[0]["settings"])
    x_key = keys[0]
    xs = list(dict.fromkeys(e["settings"][x_key] for e in entries))
    groups = list(dict.fromkeys(tuple(e["settings"][k] for k in keys[1:]) for e in entries))
    series, marks = [], []
    for g in groups:
        by_x = {e["settings"][x_key]: e for e in entries if tuple(e["settings"][k] for k in keys[1:]) == g}
        name = ", ".join(f"{setting_words(k)} = {v}" for k, v in zip(keys[1:], g)) or "$/year"
        series.append((name, [(by_x[x]["summary"].get("total_cost_usd_per_year") if x in by_x else None) for x in xs]))
        marks.append([fleet_key(by_x[x]["summary"]) if x in by_x and by_x[x]["summary"].get("fleet") else ""
                      for x in xs])  # (a variant without a plan has no point, so no fleet in the legend)
    fleets = list(dict.fromkeys(m for ms in marks for m in ms if m))
    chart = svg.lines(xs, series, "Cost per year against " + setting_words(x_key), setting_label(x_key), marks=marks,
                      mark_names=fleets)
    return chart, fleets


UNIT_WORDS = {"usd": "USD", "kwh": "kWh", "kw": "kW", "w": "W", "gb": "GB", "ttft": "TTFT", "tpot": "TPOT", "rl": "RL"}


def setting_label(path: str) -> str:
    """A swept setting in words with its unit, its path after it (the report review: the axis read
    'jobs.0.min_tokens_per_s_per_user'): 'min tokens/s per user (jobs.0.min_tokens_per_s_per_user)',
    'power, USD per kWh (site.power_usd_per_kwh)', 'max TTFT, s (jobs.0.max_ttft_s)'."""
    return f"{setting_words(path)} ({path})"


def setting_words(path: str) -> str:
    """setting_label's words alone, for the chart's title and its series: 'min tokens/s per user',
    'redundancy'."""
    words: list[str] = []
    for w in path.rsplit(".", 1)[-1].split("_"):
        w = UNIT_WORDS.get(w, w)
        if w == "s" and words and words[-1] == "per" and len(words) > 1:
            words.pop()
            words[-1] += "/s"
        elif w == "year" and words and words[-1] == "USD":
            words += ["per", "year"]
        else:
            words.append(w)
    unit = next((i for i, w in enumerate(words) if w == "USD"), None)
    if unit is None and len(words) > 1 and words[-1] in ("s", "h", "W", "kW", "GB"):
        unit = len(words) - 1
    if unit:
        words[unit - 1] += ","
    return " ".join(words)


def sweep_html(entries: list[dict], rows: list[dict], cols: list[str], closing: str, scenario: str) -> str:
    chart, fleets = sweep_chart(entries)
    legend = "".join(f'<li><span class="swatch" style="background:{svg.PALETTE[i % len(svg.PALETTE)]}"></span>'
                     f"{_e(f)}</li>" for i, f in enumerate(fleets))
    changes = _changes(entries)
    body = [f"<h1>Sweep: {_e(scenario)}</h1>",
            f'<p class="headline">{len(entries)} variants of {", ".join(_e(k) for k in entries[0]["settings"])}; '
            f"{len(fleets)} distinct fleet(s)" + (f"; {none} without a plan (the status column says which; --format json holds each diagnosis)" if (none := sum(
                not e["summary"].get("fleet") for e in entries)) else "") + ".</p>",
            f'<div class="charts"><figure>{chart}</figure><div style="max-width:360px"><h3>Fleets (marker colour)</h3>'
            f"<ul>{legend}</ul></div></div>",
            f"<h2>Where the fleet changes</h2><ul>{changes}</ul>" if changes else "",
            "<h2>Variants</h2>", _table(rows, cols), f'<p class="muted">{_e(closing)}</p>']
    return _page(f"Sweep: {scenario}", body)


def _changes(entries: list[dict]) -> str:
    """Each place along the first setting where the fleet differs from the previous value's (same
    values of the other settings)."""
    keys = list(entries[0]["settings"])
    out, last = [], {}
    for e in sorted(entries, key=lambda e: [str(e["settings"][k]) for k in keys[1:]]):
        rest = tuple(str(e["settings"][k]) for k in keys[1:])
        key = fleet_key(e["summary"])
        if rest in last and last[rest] != key:
            where = ", ".join(f"{k}={v}" for k, v in e["settings"].items())
            out.append(f"<li>{_e(where)}: {_e(last[rest])} &rarr; {_e(key)}</li>")
        last[rest] = key
    return "".join(out)
