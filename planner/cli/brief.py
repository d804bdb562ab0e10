"""`plan SCENARIO --brief`: the decision on one screen, at most 25 lines of at most 100 columns: the
cost, the recommendation, the fleet, one line per job, the years of a multi-year plan, the replicas
jobs share (one line per pool) and what binds.
The full explanation stays in `plan SCENARIO` (text), `--format markdown` and `--format html`."""

from __future__ import annotations

import textwrap

from planner.cli.render import headline
from planner.cli.render_years import fleet_summary
from planner.data.catalog import OWNED_PROVIDER
from planner.data.money import hours_text, unit_cost_text, usd

MAX_LINES = 25
MAX_WIDTH = 100
MAX_POOLS = 3


def _wrap(text: str, width: int, indent: str = "", limit: int | None = None) -> list[str]:
    lines = textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ",
                          break_on_hyphens=False) or [indent]
    if limit is not None and len(lines) > limit:
        lines = lines[:limit]
        cut = lines[-1][: width - 4]  # at a space: a figure is never cut mid-number ("$10,60...")
        lines[-1] = (cut[: cut.rfind(" ")] if cut.rfind(" ") > len(indent) else cut).rstrip() + " ..."
    return lines


def _placement(p: dict, shared: set, more: int) -> str:
    how = "owned" if p.get("provider") == OWNED_PROVIDER else p["acquisition"]  # (the expert review read '(buy)')
    what = f"{p['replicas']:,} replica(s) of {p['accelerators_per_replica']}x {p['accelerator']} ({how}"
    what += ", shared)" if (p.get("part"), p.get("offer")) in shared else ")"
    if p.get("users_per_replica"):
        what += f", {p['users_per_replica']:,} users each"
    elif p.get("hours_per_run"):
        what += f", {hours_text(p['hours_per_run'])} per run"
    if more:
        what += f", and {more} more placement(s)"
    return what + (f"; {p['binding']} binds" if p.get("binding") else "")


def _size(p: dict) -> int:
    """A placement's accelerators: the line a job's --brief entry shows is its largest placement."""
    return p["replicas"] * p["accelerators_per_replica"]


def _split(placements: list[dict]) -> str:
    """'prefill on ..., decode on ...' when a job's replicas are split across two system types."""
    halves = {}
    for p in placements:
        h = p.get("disaggregated")
        if h and _size(p) > halves.get(h["role"], (0,))[0]:
            halves[h["role"]] = (_size(p), p)
    if set(halves) != {"prefill", "decode"}:
        return ""
    pre, dec = halves["prefill"][1], halves["decode"][1]
    return (f"prefill on {pre['replicas']:,}x {pre['accelerator']} TP{pre['tensor_parallel']}, decode on "
            f"{dec['replicas']:,}x {dec['accelerator']} TP{dec['tensor_parallel']} ({dec['users_per_replica']:,} "
            f"users each), the KV over the network")


def _shared(plan: dict) -> tuple[list[dict], set]:
    """The plan's pool rows that several parts share, and their (part, offer) pairs."""
    rows = [r for r in plan.get("pools") or [] if len(r["load"]) > 1]
    return rows, {(part, r["offer"]) for r in rows for part in r["load"]}


def _pool_lines(plan: dict, rows: list[dict], width: int) -> list[str]:
    """'Shared replicas': one line per pool (model/precision...): its replicas and the jobs sharing
    them; at most MAX_POOLS lines, then how many more."""
    if not rows:
        return []
    job_of = {p.get("part") or j["name"]: j["name"] for j in plan["jobs"] for p in j["placements"]}
    pools: dict[str, list[dict]] = {}
    for r in rows:
        pools.setdefault(r["pool"], []).append(r)
    out = ["Shared replicas (policy.pool_jobs)"]
    for name, held in list(pools.items())[:MAX_POOLS]:
        parts: dict[str, set] = {}
        for r in held:
            for part in r["load"]:
                parts.setdefault(job_of.get(part, part), set()).add(part)
        jobs = [f"{j} ({len(ps)} sizes)" if len(ps) > 1 else j for j, ps in parts.items()]
        replicas = ", ".join(f"{r['replicas']:,}{' replica(s)' if i == 0 else ''} of "
                             f"{r['accelerators_per_replica']}x {r['accelerator']}" for i, r in enumerate(held))
        out += _wrap(f"{name}: {', '.join(jobs)} share {replicas}", width, "  ", limit=1)
    if len(pools) > MAX_POOLS:
        out.append(f"  ... and {len(pools) - MAX_POOLS} more pools")
    return out


def brief_text(plan: dict, width: int = MAX_WIDTH) -> str:
    width = max(40, min(width, MAX_WIDTH))
    out = _wrap(headline(plan), width, limit=2) + [""]
    if plan.get("summary"):
        out += _wrap(plan["summary"], width, limit=4) + [""]
    out.append("Fleet")
    fleet = plan["fleet"]
    for f in fleet[:4]:
        what = (f"{f['provider']}'s hosted API for {f['system']}, billed per token" if f["acquisition"] == "api" else
                f"{f['systems']}x {f['system']} ({f['accelerators']} x {f['accelerator']}), "
                + ("you own" if f.get("owned") else f"{f['acquisition']} from {f['provider']}"))
        out += _wrap(f"{what}: {usd(f['cost_usd_per_year'])}/year", width, "  ", limit=1)
    if len(fleet) > 4:
        out.append(f"  ... and {len(fleet) - 4} more")
    if plan.get("years"):
        out.append("Years (cash: capex + opex)")
        for y in plan["years"][:4]:
            used = f", {y['budget_used']:.0%} of budget" if y.get("budget_used") is not None else ""
            out += _wrap(f"year {y['year']}: {usd(y['cost_usd'])}{used}; {fleet_summary(y['fleet'])}", width, "  ",
                         limit=1)
        if len(plan["years"]) > 4:
            out.append(f"  ... and {len(plan['years']) - 4} more years")
    out.append("Jobs")
    jobs = plan["jobs"]
    rows, shared = _shared(plan)
    pooled = _pool_lines(plan, rows, width)
    room = max(1, MAX_LINES - len(out) - 5 - len(pooled))
    for job in jobs[:room]:
        first = max(job["placements"], key=_size, default=None)  # (the job's largest placement)
        api = "; ".join(f"{a['users_served']:,.0f} users on {a['provider']}'s API" for a in job.get("api") or [])
        text = (f"{job['name']}: {usd(job['cost_usd_per_year'])}/year" + (f"; {api}" if api else "")
                + (f"; {unit}" if (unit := unit_cost_text(job["unit_cost"], headline_only=True)) else "")
                + (f"; {_split(job['placements']) or _placement(first, shared, len(job['placements']) - 1)}"
                   if first else "" if api else "; nothing placed"))
        out += _wrap(text, width, "  ", limit=2 if len(jobs) <= 3 else 1)
    if len(jobs) > room:
        out.append(f"  ... and {len(jobs) - room} more jobs")
    if pooled and len(out) + len(pooled) < MAX_LINES:
        out += pooled
    binding = [e for e in plan.get("explanations") or [] if e["binding"]]
    left = MAX_LINES - len(out) - 2
    if binding and left > 1:
        out.append("What binds")
        for e in binding[: left - 1]:
            out += _wrap(f"{e['constraint']}: {e['message']}", width, "  ", limit=1)
    out.append("Full explanation: run without --brief; charts: --format html -o report.html")
    return "\n".join(out[:MAX_LINES]) + "\n"
