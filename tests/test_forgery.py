"""Mutation tests of the verifier: single-field forgeries of shipped plans (single-period and
multi-year). Each one changes a decision or a cost by more than the verifier's tolerance (0.5% and $1 on
costs, 1% on physics figures), so each must be caught. Plans are solved once per process and only
verified here (no re-solving)."""

from __future__ import annotations

import copy
from functools import cache

import pytest
from conftest import SCENARIOS, shipped_plan


@cache
def _plan(name: str):
    from planner.data.consistency import resolve

    if name == "annual-budget.yaml":
        from planner.app.planning import make_multiyear_plan
        from planner.data.scenario import load_scenario

        s = load_scenario(SCENARIOS / name)
        plan = make_multiyear_plan(s, explain=False)  # (the verifier checks the plan, not its explanations)
    else:
        s, plan = shipped_plan(name)  # (the session's full plan: the verifier reads the plan, not its explanations)
    return s, plan, resolve(s)


def _verify(name: str, plan: dict):
    from planner.verify.plan import verify

    s, _, cat = _plan(name)
    return verify(plan, s, cat)


def _serve(plan):  # the first serving placement
    return next(p for j in plan["jobs"] for p in j["placements"] if p.get("users_per_replica"))


def _batch(plan):
    return next(p for j in plan["jobs"] for p in j["placements"] if p.get("share_of_runs") is not None)


def _owned_row(plan):
    return next(f for f in plan["fleet"] if f["acquisition"] == "buy")


def _rented_row(plan):
    return next(f for f in plan["fleet"] if f["acquisition"] in ("on-demand", "spot"))


def _scale_money(node, k=0.1):
    """Every dollar figure x k (keys naming usd or cost)."""
    if isinstance(node, dict):
        for key, val in node.items():
            if isinstance(val, (int, float)) and not isinstance(val, bool) and ("usd" in key or "cost" in key):
                node[key] = val * k
            else:
                _scale_money(val, k)
    elif isinstance(node, list):
        for x in node:
            _scale_money(x, k)


def _set(getter, key, value):
    def mutate(plan):
        getter(plan)[key] = value(getter(plan)[key]) if callable(value) else value
    return mutate


def _move_cost(plan):
    a, b = plan["jobs"][0], plan["jobs"][1]
    moved = a["cost_usd_per_year"] * 0.5
    a["cost_usd_per_year"] -= moved
    b["cost_usd_per_year"] += moved


def _more_rented(plan):  # a rented line raised by one system at the same cost
    row = _rented_row(plan)
    per = row["accelerators"] // row["systems"]
    row["systems"] += 1
    row["accelerators"] += per
    row["power_kw"] = round(row["power_kw"] / (row["systems"] - 1) * row["systems"], 2)


def _fewer_owned(plan):
    row = _owned_row(plan)
    per = row["accelerators"] // row["systems"]
    row["systems"] -= 1
    row["accelerators"] -= per


FLEET0 = lambda p: p["fleet"][0]
JOB0 = lambda p: p["jobs"][0]
UNIT0 = lambda p: p["jobs"][0]["unit_cost"]
YEAR = lambda t: (lambda p: p["years"][t - 1])

SINGLE = {
    "acquisition buy -> spot": _set(_owned_row, "acquisition", "spot"),
    "acquisition buy -> on-demand": _set(_owned_row, "acquisition", "on-demand"),
    "purchase_usd -> 1": _set(_owned_row, "purchase_usd", 1.0),
    "purchase_usd x 0.5": _set(_owned_row, "purchase_usd", lambda x: x * 0.5),
    "provider renamed": _set(FLEET0, "provider", "nobody"),
    "fleet cost x 0.1": _set(FLEET0, "cost_usd_per_year", lambda x: x * 0.1),
    "fleet cost x 2": _set(FLEET0, "cost_usd_per_year", lambda x: x * 2),
    "power halved": _set(FLEET0, "power_kw", lambda x: x / 2),
    "one owned system fewer": _fewer_owned,
    "accelerators +8": _set(FLEET0, "accelerators", lambda x: x + 8),
    "total x 0.1": _set(lambda p: p, "total_cost_usd_per_year", lambda x: x * 0.1),
    "horizon total x 0.1": _set(lambda p: p, "total_cost_usd_over_horizon", lambda x: x * 0.1),
    "job cost x 0.1": _set(JOB0, "cost_usd_per_year", lambda x: x * 0.1),
    "3.9 replicas": _set(_serve, "replicas", 3.9),
    "replicas - 1": _set(_serve, "replicas", lambda x: x - 1),
    "users per replica 2.5": _set(_serve, "users_per_replica", 2.5),
    "tokens/s per user x 2": _set(_serve, "tokens_per_s_per_user", lambda x: x * 2),
    "first token 10x sooner": _set(_serve, "ttft_s", lambda x: x / 10),
    "users served x 2": _set(_serve, "users_served", lambda x: x * 2),
    "placement on another offer": _set(_serve, "offer", "h100-sxm-x8-buy-oem"),
    "utilisation halved": _set(lambda p: p["utilisation"][0], "utilisation", lambda x: x / 2),
    "accelerator-hours halved": _set(lambda p: p["utilisation"][0], "accelerator_hours_used", lambda x: x / 2),
}
SERVE_UNIT = {
    "$/M tokens -> 0.001": _set(UNIT0, "usd_per_million_tokens", 0.001),
    "$/M tokens x 0.5": _set(UNIT0, "usd_per_million_tokens", lambda x: x * 0.5),
    "$ per user-year x 0.1": _set(UNIT0, "usd_per_user_per_year", lambda x: x * 0.1),
    "output tokens x 10": _set(UNIT0, "output_tokens_per_year", lambda x: x * 10),
    "breakdown capital x 0.1": _set(lambda p: p["cost_breakdown_usd_per_year"], "capital", lambda x: x * 0.1),
}
BATCH = {
    "batch share 2.0": _set(_batch, "share_of_runs", 2.0),
    "batch share -1.0": _set(_batch, "share_of_runs", -1.0),
    "batch share 0.5": _set(_batch, "share_of_runs", 0.5),
    "runs per year x 2": _set(_batch, "runs_per_year", lambda x: x * 2),
    "hours per run halved": _set(_batch, "hours_per_run", lambda x: x / 2),
}
MULTI = {
    "all costs x 0.1": _scale_money,
    "year-1 fleet emptied": lambda p: p["years"][0].update(fleet=[], utilisation=[]),
    "a purchase erased": lambda p: p["years"][2].update(purchases=[]),
    "NPV set to 1": _set(lambda p: p, "npv_usd", 1.0),
    "NPV x 0.9": _set(lambda p: p, "npv_usd", lambda x: x * 0.9),
    "year-1 capex x 0.1": _set(YEAR(1), "capex_usd", lambda x: x * 0.1),
    "year-2 opex x 0.1": _set(YEAR(2), "opex_usd", lambda x: x * 0.1),
    "year-2 accounting cost x 0.5": _set(YEAR(2), "annuitised_cost_usd", lambda x: x * 0.5),
    "resale x 0.1": _set(YEAR(3), "resale_usd", lambda x: x * 0.1),
    "salvage 0": _set(lambda p: p, "salvage_usd", 0.0),
    "cash total x 0.1": _set(lambda p: p, "cash_total_usd", lambda x: x * 0.1),
    "accounting total x 0.1": _set(lambda p: p, "annuitised_total_usd", lambda x: x * 0.1),
    "yearly average x 0.1": _set(lambda p: p, "total_cost_usd_per_year", lambda x: x * 0.1),
    "purchase unit price x 0.5": _set(lambda p: p["years"][0]["purchases"][0], "unit_price_usd", lambda x: x * 0.5),
    "purchase total x 0.5": _set(lambda p: p["years"][0]["purchases"][0], "total_usd", lambda x: x * 0.5),
    "purchase of 2 systems": _set(lambda p: p["years"][0]["purchases"][0], "systems", 2),
    "year-3 fleet one system more": _set(lambda p: p["years"][2]["fleet"][0], "systems", lambda x: x + 1),
    "year-1 new systems 0": _set(lambda p: p["years"][0]["fleet"][0], "new_this_year", 0),
    "final purchase_usd -> 1": _set(_owned_row, "purchase_usd", 1.0),
    "final acquisition buy -> spot": _set(_owned_row, "acquisition", "spot"),
    "final job cost x 0.1": _set(JOB0, "cost_usd_per_year", lambda x: x * 0.1),
    "final $/M tokens -> 0.001": _set(UNIT0, "usd_per_million_tokens", 0.001),
    "year-2 demand halved": lambda p: p["years"][1]["demand"].update(assistant=150.0),
    "budget used 0.1": _set(YEAR(1), "budget_used", 0.1),
    "discount rate 0": _set(lambda p: p, "discount_rate", 0.0),
    "year-3 utilisation halved": _set(lambda p: p["years"][2]["utilisation"][0], "utilisation", lambda x: x / 2),
    "final 3.9 replicas": _set(_serve, "replicas", 3.9),
    "final batch share 2.0": _set(_batch, "share_of_runs", 2.0),
    "final cost moved between jobs": _move_cost,
    "year-1 rented cost x 10": _set(lambda p: _rented_row(p["years"][0]), "cost_usd_per_year", lambda x: x * 10),
}

CASES = [("bank.yaml", k, f) for k, f in {**SINGLE, **SERVE_UNIT}.items()]
CASES += [("rent-vs-buy.yaml", k, f) for k, f in {**SINGLE, **SERVE_UNIT}.items()
          if k not in ("acquisition buy -> spot", "acquisition buy -> on-demand", "purchase_usd -> 1",
                       "purchase_usd x 0.5", "one owned system fewer", "breakdown capital x 0.1")]
CASES += [("rent-vs-buy.yaml", "a rented line 2 -> 3 at the same cost", _more_rented)]
CASES += [("mixed.yaml", "cost moved between jobs", _move_cost)]
CASES += [("support-finetune.yaml", k, f) for k, f in BATCH.items()]
CASES += [("support-finetune.yaml", "$ per run -> 0.001", _set(UNIT0, "usd_per_run", 0.001))]
CASES += [("annual-budget.yaml", k, f) for k, f in MULTI.items()]


@pytest.mark.parametrize("name", sorted({c[0] for c in CASES}))
def test_shipped_plan_verifies_before_forgery(name):
    _, plan, _ = _plan(name)
    result = _verify(name, plan)
    assert result.ok, result.summary()


def test_suite_is_large_and_covers_multiyear():
    assert len(CASES) >= 60
    assert sum(1 for c in CASES if c[0] == "annual-budget.yaml") >= 25


@pytest.mark.parametrize("name,label,mutate", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_forgery_is_caught(name, label, mutate):
    _, plan, _ = _plan(name)
    forged = copy.deepcopy(plan)
    try:
        mutate(forged)
    except (StopIteration, IndexError, KeyError):
        pytest.skip(f"{name} has no field for '{label}' in this solve")
    assert forged != plan, f"'{label}' changed nothing"
    result = _verify(name, forged)
    assert not result.ok, f"forgery '{label}' of {name} passed verification"
