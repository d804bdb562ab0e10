"""The hosted-API part of a plan: each serving job's shares on APIs (jobs[].api) and one fleet row
per API used (acquisition api, no systems held), for the one-year and multi-year readers."""

from __future__ import annotations


def _r(x: float, nd: int = 2) -> float:
    return round(float(x), nd)


def api_rows(m, values: dict, dk: str, year: int | None = None) -> list[dict]:
    """Demand dk's shares on hosted APIs in `year` (default: the last), with tokens and cost."""
    out = []
    year = year or m.last
    users = m.demand_at(dk, year)
    for c in m.options.api.get(dk, []):
        v = m.api.get((dk, c.offer, year))
        share = values.get(v.name, 0.0) if v is not None else 0.0
        if share <= 1e-6:
            continue
        a = m.catalog.api_offers[c.offer]
        served = share * users
        out.append({"part": dk, "offer": c.offer, "provider": a.provider, "region": a.region,
                    # (9 significant digits: written to 6 decimals, 4 of 300 users (0.013333) failed the verifier)
                    "share": float(f"{share:.9g}"), "users_served": _r(served, 3),
                    "output_tokens_per_year": _r(served * c.tokens.output_per_user_year, 0),
                    "input_tokens_per_year": _r(served * c.tokens.input_per_user_year, 0),
                    "requests_per_year": _r(served * c.tokens.requests_per_user_year, 0),
                    "cost_usd_per_year": _r(served * c.usd_per_user_year)})
    return out


def api_fleet(m, values: dict, year: int | None = None) -> list[dict]:
    """One fleet row per hosted API used: acquisition api, no systems held, the tokens billed."""
    rows: dict[str, dict] = {}
    for dk in sorted(m.options.api):
        for row in api_rows(m, values, dk, year):
            a = m.catalog.api_offers[row["offer"]]
            f = rows.setdefault(a.id, {
                "system": a.model, "accelerator": "api", "acquisition": "api", "provider": a.provider,
                "region": a.region, "tier": "api", "offer": a.id, "systems": 0, "accelerators": 0,
                "cost_usd_per_year": 0.0, "purchase_usd": None, "power_kw": 0.0,
                "output_tokens_per_year": 0.0, "input_tokens_per_year": 0.0,
                "price_source": a.source, "price_as_of": a.as_of.isoformat()})
            for key in ("output_tokens_per_year", "input_tokens_per_year", "cost_usd_per_year"):
                f[key] = _r(f[key] + row[key], 0 if "tokens" in key else 2)
    return list(rows.values())


def api_usage(m, values: dict, year: int | None = None) -> dict[str, dict[str, float]]:
    """API offer -> demand -> its cost on it in `year` (default: the last; an API's cost is each
    job's own tokens), for the job split."""
    use: dict[str, dict[str, float]] = {}
    year = year or m.last
    cost = {v.name: c for c, v, _ in m.cash.get((year, "api"), [])}
    for (dk, aid, t), v in m.api.items():
        if t == year:
            use.setdefault(aid, {})[dk] = cost.get(v.name, 0.0) * values.get(v.name, 0.0)
    return use
