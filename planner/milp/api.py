"""The hosted-API family of the fleet MILP (options/api.py has the token arithmetic).

Variables
  a[d,k,t]   in [0, 1]  share of serving demand d's users served by API offer k in year t
Cost: a x users[d,t] x usd_per_user_year_k (tokens billed per million; a job busy a small share of
its hours pays for that share, as options/api.py sets out), an opex component 'api' of year t.
Supply: users[d,t] x a enters the demand row of d (rows.supply: api_supply), so the MILP may put a
job, or its overflow above the owned fleet, on an API.
Rate limit: a x users[d,t] <= max_users_k (max_tokens_per_minute over one user's tokens per minute at
the peak), registered as ('api-rate', (d, k, t)).
"""

from __future__ import annotations

import pulp


def define_api_variables(m) -> None:
    """a[d,k,t] for each serving demand, API offer it may use (options.api) and year: year t's users
    x usd_per_user_year, an 'api' cost of year t; the rate limit per year."""
    for dk, choices in sorted(m.options.api.items()):
        for t in m.years:
            users = m.demand_at(dk, t)
            for c in choices:
                v = m.var(m.api, (dk, c.offer, t), "Continuous", 0, 1)
                m.cost(t, "api", users * c.usd_per_user_year, v, c.offer)
                if c.max_users is not None:
                    m.add("api-rate", (dk, c.offer, t), users * v <= c.max_users)


def api_supply(m, dk: str, year: int):
    """Users of demand dk the API shares serve in `year`."""
    users = m.demand_at(dk, year)
    return pulp.lpSum(users * v for (d, _, t), v in sorted(m.api.items()) if d == dk and t == year)
