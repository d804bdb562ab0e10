"""Hosted token-priced APIs as a way to serve a job (policy.acquisition: api; catalog api_offers.csv).

A serve job's yearly tokens come from its users at their target speed, its hours and the share of
those hours they are actually generating (ServeJob.active_fraction):
  output tokens/yr = users x tok/s x 3600 x hours_per_day x 365 x active_fraction
where tok/s is min_tokens_per_s_per_user, or for traffic given as requests_per_s the peak rate's
output tokens over the users it makes (data.jobs.output_tokens_per_s_per_user: they also wait for
the first token, and the users round up)
  requests/yr      = output tokens / output_tokens per request
  input tokens/yr  = requests x (input_tokens + history_tokens): a conversation's earlier turns,
                     which a stateless API receives again on every turn (data.jobs.api_prompt_tokens)
An API bills those tokens at its $/M input and output prices, so a tool busy a small share of its
hours pays for that share, where self-hosted capacity is sized for the peak of concurrent users.
An API's rate limits cap the share of a job's peak it can take, each over one user's use of it per
minute at the peak (Tokens.per_minute): input + output tokens (max_tokens_per_minute), prompt tokens
(max_input_tokens_per_minute), generated tokens (max_output_tokens_per_minute), requests
(max_requests_per_minute); e.g. share x users x tok/s x 60 <= max_output_tokens_per_minute
(Fireworks: 36,000 generated tokens a minute, so about 30 users at 20 tok/s, economics.md s1b).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.data.catalog import ApiOffer, Catalog
from planner.data.constants import DAYS_PER_YEAR, SECONDS_PER_HOUR
from planner.data.jobs import api_prompt_tokens, output_tokens_per_s_per_user
from planner.data.scenario import Scenario, ServeJob
from planner.options.eligibility import allowed_regions


@dataclass(frozen=True)
class Tokens:
    """A serve job's yearly volume per concurrent user (at the peak) and its request shape."""

    output_per_user_year: float
    input_per_user_year: float
    requests_per_user_year: float
    tokens_per_minute_per_user: float
    """input + output tokens per minute one user sends at the peak (rate limits)"""
    output_per_minute_per_user: float
    """generated tokens per minute one user receives at the peak"""
    output_tokens: float
    """generated tokens per request"""

    def per_minute(self, what: str) -> float:
        """One user's use per minute at the peak of what a rate limit counts (ApiOffer.limits):
        tokens (input + output), input tokens, output tokens or requests."""
        out = self.output_per_minute_per_user
        return {"tokens": self.tokens_per_minute_per_user, "output tokens": out,
                "input tokens": self.tokens_per_minute_per_user - out, "requests": out / self.output_tokens}[what]


def job_tokens(job: ServeJob) -> Tokens:
    """Yearly tokens per concurrent user of a serve job (see the module docstring)."""
    tps = output_tokens_per_s_per_user(job)
    out = tps * SECONDS_PER_HOUR * job.hours_per_day * DAYS_PER_YEAR * job.active_fraction
    requests = out / job.output_tokens
    sent = api_prompt_tokens(job)  # (a conversation's history included: data.jobs)
    per_minute = tps * 60 * (1 + sent / job.output_tokens)
    return Tokens(out, requests * sent, requests, per_minute, tps * 60, job.output_tokens)


def api_usd_per_user_year(a: ApiOffer, t: Tokens) -> float:
    """What one concurrent user's yearly tokens cost on this API."""
    return (t.output_per_user_year * a.usd_per_m_output_tokens + t.input_per_user_year * a.usd_per_m_input_tokens) / 1e6


@dataclass(frozen=True)
class ApiOption:
    demand: str
    offer: str
    usd_per_user_year: float
    max_users: float | None
    """concurrent users the rate limit admits at the peak (None: no published limit)"""
    tokens: Tokens


def api_exclusion(a: ApiOffer, job, s: Scenario) -> str:
    """Why a job may not use an API offer ('' if it may)."""
    p = s.policy
    if "api" not in p.acquisition:
        return "acquisition 'api' not in policy"
    if not isinstance(job, ServeJob):
        return "hosted APIs serve serve jobs only"
    if a.model != job.model:
        return f"serves {a.model}, not {job.model}"
    regions = allowed_regions(s)
    if a.region not in regions:
        return f"region '{a.region}' not in policy.regions ({', '.join(regions)})"
    if p.providers is not None and a.provider not in p.providers:
        return f"provider '{a.provider}' not in policy.providers"
    if a.provider in p.exclude_providers:
        return f"provider '{a.provider}' excluded by policy"
    return ""


def api_options(s: Scenario, cat: Catalog, demands) -> tuple[dict[str, list[ApiOption]], dict[str, str]]:
    """demand -> the API offers it may use; and, for the why-not table, API offers of the jobs'
    models that were ruled out -> why."""
    jobs = {j.name: j for j in s.jobs}
    out: dict[str, list[ApiOption]] = {}
    excluded: dict[str, str] = {}
    for d in demands:
        job = jobs[d.job]
        if d.kind != "serve" or d.key != job.name:  # an RL job's rollouts are not token-priced
            continue
        for aid, a in sorted(cat.api_offers.items()):
            if a.model != job.model:
                continue
            why = api_exclusion(a, job, s)
            if why:
                excluded[aid] = why
                continue
            t = job_tokens(job)
            caps = [limit / t.per_minute(what) for what, limit in a.limits()]
            cap = min(caps) if caps else None
            out.setdefault(d.key, []).append(ApiOption(d.key, aid, api_usd_per_user_year(a, t), cap, t))
    return out, excluded
