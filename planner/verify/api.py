"""The verifier's checks of hosted-API use, re-derived from the scenario and the catalog's
api_offers (never from the planner's options): each share's offer is allowed (acquisition api in
the policy, the job's model, an allowed region and provider), its tokens follow from the job
(users x target tok/s x 3600 x h/day x 365 x active_fraction output tokens; requests = output /
output tokens per request; input = requests x input tokens), its cost from the API's prices, its
peak within the API's rate limit; each API fleet row adds up the jobs' shares."""

from __future__ import annotations

from planner.data.catalog import Catalog
from planner.data.constants import DAYS_PER_YEAR, SECONDS_PER_HOUR
from planner.data.jobs import api_prompt_tokens, output_tokens_per_s_per_user
from planner.data.scenario import Scenario
from planner.verify.common import REL, USD, Ledger, Verification, close


def check_api(rows: list[dict], part, job, s: Scenario, cat: Catalog, v: Verification, ledger: Ledger) -> float:
    """Users of demand `part` the API rows serve (0 if none), after checking each row."""
    users = 0.0
    for r in rows:
        a = cat.api_offers.get(r["offer"])
        where = f"'{part.key}' on API '{r['offer']}'"
        if not v.check("catalog", a is not None, f"{where}: not in the catalog's api_offers"):
            continue
        regions = s.policy.regions if s.policy.regions is not None else [s.site.region, "global"]
        v.check("policy", "api" in s.policy.acquisition and a.model == job.model and a.region in regions
                and (s.policy.providers is None or a.provider in s.policy.providers)
                and a.provider not in s.policy.exclude_providers and job.stage == "serve",
                f"{where}: the policy, region or model rules this API out (model {a.model}, region {a.region})")
        v.check("plan", (r.get("provider"), r.get("region")) == (a.provider, a.region),
                f"{where}: reported from {r.get('provider')} in '{r.get('region')}'; the catalog API is "
                f"{a.provider}'s in '{a.region}'")
        share = r["share"]
        v.check("plan", 0 < share <= 1 + 1e-9 and close(r["users_served"], share * part.users, 1e-5, 2e-3),
                f"{where}: a share of {share} serves {share * part.users:.3f} of {part.users} users, "
                f"reported {r['users_served']}")
        served = share * part.users
        tps = output_tokens_per_s_per_user(job)  # (the speed target, or the request rate's share)
        out = served * tps * SECONDS_PER_HOUR * job.hours_per_day * DAYS_PER_YEAR * job.active_fraction
        requests = out / job.output_tokens
        sent = api_prompt_tokens(job)  # (a conversation's earlier turns are sent again each turn)
        inp = requests * sent
        for key, want in (("output_tokens_per_year", out), ("input_tokens_per_year", inp),
                          ("requests_per_year", requests)):
            v.check("costs", close(r[key], want, 1e-5, 1.0), f"{where}: {key} {r[key]:,.0f}, the job gives {want:,.0f}")
        usd = (out * a.usd_per_m_output_tokens + inp * a.usd_per_m_input_tokens) / 1e6
        v.check("costs", close(r["cost_usd_per_year"], usd, 1e-5, USD),
                f"{where}: ${r['cost_usd_per_year']:,.2f}/yr; its tokens at ${a.usd_per_m_input_tokens}/"
                f"${a.usd_per_m_output_tokens} per M in/out cost ${usd:,.2f}")
        per_minute = served * tps * 60  # generated tokens a minute at the peak
        use = {"tokens": per_minute * (1 + sent / job.output_tokens), "output tokens": per_minute,
               "input tokens": per_minute * sent / job.output_tokens,
               "requests": per_minute / job.output_tokens}
        for what, limit in a.limits():
            v.check("availability", use[what] <= limit * (1 + 1e-6),
                    f"{where}: {use[what]:,.0f} {what} a minute at the peak, the API allows {limit:,.0f}")
        ledger.usage[a.id][part.key] += r["cost_usd_per_year"]
        users += served
    return users


def check_api_fleet(rows: list[dict], plan_jobs: list[dict], v: Verification, cat: Catalog | None = None) -> None:
    """Each API fleet row names its catalog API (model, provider, region, tier api), costs what the
    jobs' shares on it cost, and bills their tokens."""
    for f in rows:
        a = cat.api_offers.get(f["offer"]) if cat is not None else None
        if cat is not None and v.check("catalog", a is not None, f"API fleet row '{f['offer']}' is not in the catalog's api_offers"):
            v.check("plan", (f.get("system"), f.get("provider"), f.get("region"), f.get("tier"))
                    == (a.model, a.provider, a.region, "api"),
                    f"API fleet row '{f['offer']}' is reported as {f.get('system')} from {f.get('provider')} in "
                    f"'{f.get('region')}' (tier {f.get('tier')}); the catalog API is {a.model} from {a.provider} in '{a.region}'")
        shares = [r for j in plan_jobs for r in j.get("api") or [] if r["offer"] == f["offer"]]
        v.check("plan", bool(shares) and f["systems"] == 0 and f["accelerators"] == 0 and f["power_kw"] == 0,
                f"API fleet row '{f['offer']}': no job uses it, or it claims systems or power")
        usd = sum(r["cost_usd_per_year"] for r in shares)
        v.check("costs", close(f["cost_usd_per_year"], usd, REL, USD * max(1, len(shares))),
                f"API fleet row '{f['offer']}' costs ${f['cost_usd_per_year']:,.2f}; its jobs' shares ${usd:,.2f}")
        toks = sum(r["output_tokens_per_year"] for r in shares)
        v.check("costs", close(f.get("output_tokens_per_year") or 0.0, toks, 1e-6, 1.0 * max(1, len(shares))),
                f"API fleet row '{f['offer']}' bills {f.get('output_tokens_per_year')} output tokens; its jobs {toks:,.0f}")
