"""`plan validate`'s summary of a scenario, a line each for its site, budget, trends and jobs."""

from __future__ import annotations

from planner.data.years import BASIS_WORDS


def site_summary(s) -> str:
    """The site's line: power price and PUE only where the plan may buy or holds systems (rented
    systems include them); the systems already owned there."""
    site = f"{s.site.ownership} ({s.site.kind})"
    owned = ("; systems you own there: " + ", ".join(f"{o.count}x {o.system}" for o in s.owned)) if s.owned else ""
    if s.site.ownership == "cloud" and "buy" not in s.policy.acquisition and not s.owned:
        return site + ": power, cooling and hosting are in the providers' prices"
    return (site + f", {s.site.cooling} cooling, ${s.site.power_usd_per_kwh}/kWh, PUE {s.site.pue}"
            + (f", power cap {s.site.power_cap_kw:g} kW" if s.site.power_cap_kw else "") + owned)


def budget_summary(b, basis: str = "annualised", years: bool = True) -> str:
    """The budget's caps in one line: yearly, then per year ('' when none); the yearly cost in its
    `basis` (data.years.budget_basis), said after the caps; a one-period plan (`years` False) caps
    its first year's cash."""
    cost = f"{basis} per year" if basis != "cash" or years else "cash in the first year"
    caps = [f"${v:,.0f} {what}" for v, what in ((b.usd_per_year, cost), (b.capex_usd_per_year, "capex per year"),
                                                (b.opex_usd_per_year, "opex per year")) if v is not None]
    caps += [f"year {y.year}: " + ", ".join(f"${v:,.0f} {what}" for v, what in ((y.usd, basis), (y.capex_usd, "capex"),
                                                                               (y.opex_usd, "opex")) if v is not None)
             for y in b.years]
    costed = b.usd_per_year is not None or any(y.usd is not None for y in b.years)
    said = f"; {basis}: {BASIS_WORDS[basis].split(' (', 1)[1][:-1]}" if costed else ""
    return "; ".join(caps) + (f" ({b.mode})" if caps and b.mode != "min-cost" else "") + said


def job_summary(j) -> str:
    if j.stage == "serve":
        load = (f"{j.concurrent_users:,} users" if j.concurrent_users is not None
                else f"{j.requests_per_s:g} requests/s at peak")
        return (f", {j.precision}, {load} x {j.min_tokens_per_s_per_user:g} tok/s, "
                f"{j.context_tokens:,} context, {j.hours_per_day:g} h/day")
    if j.stage == "finetune":
        return f", {j.method}, {j.dataset_tokens * j.epochs:,.0f} tokens/run, {j.runs_per_year:g} runs/yr"
    if j.stage == "pretrain":
        return f", {j.training_tokens:,.0f} tokens within {j.max_days:g} days"
    if j.stage == "rl":
        return f", rollouts {j.rollout_tokens_per_s:,.0f} tok/s, trainer {j.train_tokens_per_day:,.0f} tok/day"
    return f", {j.devices:,} {j.device} devices at {j.min_tokens_per_s:g} tok/s"




def trends_summary(trends) -> str:
    """The trends in one line: each accelerator's fields as written."""
    return f"{len(trends)} (" + "; ".join(
        f"{t.accelerator}: " + ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in t.model_dump(exclude={"accelerator"}).items()
                                          if k in t.model_fields_set and v is not None) for t in trends) + ")"
