"""The hosted-API family of both fleet MILPs (options/api.py has the token arithmetic).

Variables
  a[d,k]     in [0, 1]  share of serving demand d's users served by API offer k (single period)
  a[d,k,t]   in [0, 1]  the same in year t (multi-year)
Cost: a x users_d x usd_per_user_year_k (tokens billed per million; a job busy a small share of
its hours pays for that share, as options/api.py sets out). In the multi-year model the cost is
paid in the year as opex component 'api'.
Supply: users_d x a enters the demand row of d (fleet._supply / years._supply: api_supply), so the
MILP may put a job, or its overflow above the owned fleet, on an API.
Rate limit: a x users_d <= max_users_k (max_tokens_per_minute over one user's tokens per minute at
the peak), registered as ('api-rate', (d, k[, t])).
"""

from __future__ import annotations

import pulp


def define_api_variables(fm) -> None:
    """a[d,k] for each serving demand and API offer it may use (options.api); cost and rate limit."""
    for dk, choices in sorted(fm.options.api.items()):
        users = fm.options.demands[dk].users
        for c in choices:
            v = fm.var(fm.api, (dk, c.offer), "Continuous", 0, 1)
            fm.cost("api", users * c.usd_per_user_year, v)
            if c.max_users is not None:
                fm.add("api-rate", (dk, c.offer), users * v <= c.max_users)


def define_api_variables_years(ym) -> None:
    """a[d,k,t] per year: year t's users x usd_per_user_year, paid in year t; rate limit per year."""
    for dk, choices in sorted(ym.options.api.items()):
        for t in ym.years:
            users = ym.demand_at(dk, t)
            for c in choices:
                v = ym.var(ym.api, (dk, c.offer, t), "Continuous", 0, 1)
                ym.pay(t, "api", users * c.usd_per_user_year, v, c.offer)
                if c.max_users is not None:
                    ym.add("api-rate", (dk, c.offer, t), users * v <= c.max_users)


def api_supply(m, dk: str, year: int | None = None):
    """Users of demand dk the API shares serve (in `year` for the multi-year model)."""
    if year is None:
        users = m.options.demands[dk].users
        return pulp.lpSum(users * v for (d, _), v in sorted(m.api.items()) if d == dk)
    users = m.demand_at(dk, year)
    return pulp.lpSum(users * v for (d, _, t), v in sorted(m.api.items()) if d == dk and t == year)
