"""Serving traffic as requests per second with a request mix, and pooled replicas (issue 12):
what a user sees in the plan, and that the verifier holds pooled plans to account."""

from __future__ import annotations

import copy
import math

import pytest
from pydantic import ValidationError

from planner.app.planning import make_plan
from planner.data.catalog import load_catalog
from planner.data.jobs import demands_of, pools_of
from planner.data.scenario import Scenario
from planner.verify.plan import verify

MIX = [{"input_tokens": 512, "output_tokens": 128, "share": 0.5},
       {"input_tokens": 4000, "output_tokens": 600, "share": 0.5}]


def scenario(pool: bool = True, **chat) -> Scenario:
    jobs = [{"name": "chat", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8", "requests_per_s": 5,
             "request_mix": MIX, "min_tokens_per_s_per_user": 20, **chat},
            {"name": "rag", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8", "concurrent_users": 30,
             "input_tokens": 8000, "output_tokens": 300, "context_tokens": 8300}]
    return Scenario.model_validate({"name": "pool", "policy": {"acquisition": ["on-demand"], "pool_jobs": pool},
                                    "jobs": jobs})


@pytest.fixture(scope="module")
def plans():
    return {pool: make_plan(scenario(pool), explain=False) for pool in (True, False)}


def test_requests_per_s_become_users_by_littles_law_per_bucket():
    s = scenario(max_ttft_s=2)
    d = {x.key: x for x in demands_of(s)}
    # users = ceil(rate x share x (max_ttft_s + output_tokens / min tokens/s per user))
    assert d["chat/512x128"].users == math.ceil(5 * 0.5 * (2 + 128 / 20)) == 21
    assert d["chat/4000x600"].users == math.ceil(5 * 0.5 * (2 + 600 / 20)) == 80
    assert d["chat/4000x600"].workload.input_tokens == 4000 and d["chat/4000x600"].requests_per_s == 2.5
    assert d["rag"].users == 30


def test_concurrent_users_with_a_mix_split_by_time_in_flight():
    s = scenario(requests_per_s=None, concurrent_users=100)
    d = {x.key: x.users for x in demands_of(s)}
    assert d == {"chat/512x128": math.ceil(100 * 6.4 / 36.4), "chat/4000x600": math.ceil(100 * 30 / 36.4), "rag": 30}


@pytest.mark.parametrize("change, words", [
    ({"concurrent_users": 10}, "give either concurrent_users or requests_per_s"),
    ({"request_mix": [{**MIX[0], "share": 0.7}, MIX[1]]}, "shares sum to 1.2; they must sum to 1"),
    ({"request_mix": [MIX[0], MIX[0]]}, "one request size twice"),
    ({"input_tokens": 100}, "either as input_tokens/output_tokens or as request_mix"),
])
def test_bad_traffic_is_refused_with_the_reason(change, words):
    with pytest.raises(ValidationError, match=words.replace("(", r"\(")):
        scenario(**change)


def test_same_model_and_precision_share_one_pool_unless_switched_off():
    assert set(pools_of(scenario())) == {"chat/512x128", "chat/4000x600", "rag"}
    assert set(pools_of(scenario())).pop() and set(pools_of(scenario()).values()) == {"llama-3.1-8b/fp8"}
    assert pools_of(scenario(pool=False)) == {}
    other = scenario(precision="bf16")  # the mix's buckets pool together; rag at fp8 in a pool of its own,
    assert pools_of(other) == {"chat/512x128": "llama-3.1-8b/bf16", "chat/4000x600": "llama-3.1-8b/bf16",
                               "rag": "llama-3.1-8b/fp8"}  # so that their replicas share rented systems (same hours)
    apart = scenario(precision="bf16").model_copy(deep=True)
    apart.jobs[1].hours_per_day = 12  # another day: nothing to share its rentals with
    assert "rag" not in pools_of(apart)
    owned = scenario(precision="bf16").model_copy(deep=True)
    owned.policy.acquisition = ["buy"]  # no hourly rentals to share: alone as before
    assert "rag" not in pools_of(owned)


def test_pooling_is_cheaper_and_the_plan_says_who_shares_what(plans):
    pooled, alone = plans[True], plans[False]
    assert pooled["total_cost_usd_per_year"] < alone["total_cost_usd_per_year"]
    assert "pools" not in alone
    rows = pooled["pools"]
    assert rows and all(sum(r["load"].values()) <= r["replicas"] + 1e-3 for r in rows)
    sharing = {dk for r in rows for dk in r["load"]}
    assert sharing == {"chat/512x128", "chat/4000x600", "rag"}
    for j in pooled["jobs"]:
        for p in j["placements"]:
            assert p["pool"] == "llama-3.1-8b/fp8" and 0 < p["replica_load"] <= p["replicas"]
    cat = load_catalog()
    for pool in (True, False):
        v = verify(plans[pool], scenario(pool), cat)
        assert v.ok, v.failures


def _forged(plan, change):
    p = copy.deepcopy(plan)
    change(p)
    return verify(p, scenario(), load_catalog())


def test_the_verifier_catches_pooled_forgeries(plans):
    plan = plans[True]

    def fewer_replicas(p):
        p["pools"][0]["replicas"] = max(0, math.floor(sum(p["pools"][0]["load"].values())) - 1) or 0
        for j in p["jobs"]:
            for x in j["placements"]:
                if x["offer"] == p["pools"][0]["offer"]:
                    x["replicas"] = p["pools"][0]["replicas"]

    def more_users(p):
        x = p["jobs"][0]["placements"][0]
        x["users_served"] += 5

    def stranger(p):
        p["pools"][0]["load"]["intruder"] = 0.1

    def no_pool_row(p):
        del p["pools"]

    for change in (fewer_replicas, more_users, stranger, no_pool_row):
        assert not _forged(plan, change).ok, change.__name__


def test_each_bucket_of_a_mix_reserves_its_own_kv_unless_context_tokens_is_given():
    # the scenario's validator once marked its derived context_tokens as given, so every bucket
    # reserved the largest bucket's KV: a short chat bucket held as few users as the 4,600-token one
    s = scenario()
    d = {x.key: x for x in demands_of(s)}
    assert d["chat/512x128"].workload.kv_tokens == 640 and d["chat/4000x600"].workload.kv_tokens == 4600
    assert "context_tokens" not in s.jobs[0].model_fields_set and s.jobs[0].context_tokens == 4600
    given = {x.key: x for x in demands_of(scenario(context_tokens=8192))}
    assert {x.workload.kv_tokens for k, x in given.items() if k.startswith("chat/")} == {8192}
    plan = make_plan(scenario(), explain=False)
    users = {p["part"]: p["users_per_replica"] for j in plan["jobs"] for p in j["placements"] if p.get("part")}
    small, large = users.get("chat/512x128"), users.get("chat/4000x600")
    assert small and large and small > large


def test_the_plan_states_littles_law_per_size_and_which_parts_share_replicas(plan_cli, monkeypatch):
    from pathlib import Path

    monkeypatch.delenv("COLUMNS", raising=False)  # whole lines, as a pipe gets them
    sc = Path(__file__).resolve().parents[1] / "scenarios" / "traffic-mix.yaml"
    r = plan_cli(sc, "--explain", "none", "--no-timings")
    assert r.code == 0, r.err
    assert ("traffic: 12 requests/s at peak become concurrent users by Little's law" in r.out
            and "400x150: 7.2 x (2 + 150 / 25) = 57.60 -> 58" in r.out
            and "12000x600: 1.2 x (2 + 600 / 25) = 31.20 -> 32" in r.out)
    assert "Shared replicas (policy.pool_jobs" in r.out and "pool 'llama-3.1-8b/fp8': replica loads" in r.out
    assert "support/3000x300 " in r.out  # the placement table names the part
    assert "at 3,300-token context (3,000 in, 300 out)" in r.out  # run it: the part's own request size


def test_a_request_rates_yearly_volume_is_the_rate_over_the_year_not_its_rounded_users():
    """traffic-mix's support job, 12 requests/s of three sizes all year: 378.4 million requests and
    their tokens, whatever the Little's-law users (rounded up, waiting for first tokens) number; its
    unit costs divide by those (they divided by users x 25 tok/s: 8% more volume on the review's
    8 requests/s mix, so every $ per token read low)."""
    from conftest import shipped_plan

    plan = shipped_plan("traffic-mix.yaml", False)[1]
    (job,) = [j for j in plan["jobs"] if j["name"] == "support"]
    u = job["unit_cost"]
    seconds = 3600 * 24 * 365
    assert u["requests_per_year"] == pytest.approx(12 * seconds, rel=1e-9)
    assert u["output_tokens_per_year"] == pytest.approx(12 * seconds * (0.6 * 150 + 0.3 * 300 + 0.1 * 600), rel=1e-9)
    assert u["usd_per_request"] == pytest.approx(job["cost_usd_per_year"] / (12 * seconds), abs=5e-7)  # (6 decimals)


def test_a_job_alone_in_its_pool_does_not_read_as_sharing_replicas():
    """Jobs of other models running the same hours share rented systems, each in a pool of its own:
    its placements say nothing of 'shared in pool' (no other part's load is on its replicas)."""
    s = scenario(precision="bf16")
    plan = make_plan(s, explain="none")
    rag = next(j for j in plan["jobs"] if j["name"] == "rag")
    assert rag["placements"] and all(p.get("pool") == "llama-3.1-8b/fp8" for p in rag["placements"])
    assert not any("shared in pool" in w for w in rag["why"])
    chat = next(j for j in plan["jobs"] if j["name"] == "chat")
    assert any("shared in pool 'llama-3.1-8b/bf16'" in w for w in chat["why"])
