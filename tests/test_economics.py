"""Economics a buyer acts on (issue 13), as a user sees them in the plan: where capacity sits
(site.region, policy.regions), which providers a serving job may lean on (policy.provider_tiers),
hosted APIs and their rate limits, 3-year commitments, resale at a short horizon, the headline unit
of a prefill-heavy job; and the verifier catching forgeries of the plan keys that carry them.

Every plan here is solved without explanations except where the why-not is the point (brief)."""

from __future__ import annotations

import copy
import json
import re

import pytest
import yaml
from conftest import SCENARIOS, shipped_plan

from planner.app.pipeline import plan_scenario
from planner.data.catalog import load_catalog
from planner.data.consistency import resolve
from planner.data.scenario import load_scenario
from planner.physics.costs import annuity
from planner.verify.plan import verify

CAT = load_catalog()

SMALL_CHAT = {"name": "chat", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8",
              "context_tokens": 4096, "concurrent_users": 4, "min_tokens_per_s_per_user": 20}


def _plan(tmp_path, doc: dict, explain: str = "none"):
    path = tmp_path / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    s = load_scenario(path)
    return s, plan_scenario(s, explain=explain)


def _doc(name: str, site: dict, policy: dict, jobs: list[dict], **extra) -> dict:
    return {"name": name, **extra, "site": site, "policy": policy, "jobs": jobs}


def _offers(plan) -> list:
    return [CAT.offers[f["offer"]] for f in plan["fleet"] if f["acquisition"] != "api"]


# --- jurisdiction --------------------------------------------------------------------------------

def test_a_china_only_offer_is_never_used_by_a_us_site_and_why_not_says_so(tmp_path):
    cloud = {"ownership": "cloud"}
    _, us = _plan(tmp_path, _doc("us-site", {**cloud, "region": "us"}, {"acquisition": ["on-demand"]},
                                 [SMALL_CHAT]), explain="brief")
    assert {o.region for o in _offers(us)} <= {"us", "global"}
    _, cn = _plan(tmp_path, _doc("cn-site", {**cloud, "region": "cn"}, {"acquisition": ["on-demand"]}, [SMALL_CHAT]))
    # the same job in a China site takes the cheaper mainland rental the US site may not use
    assert [o.id for o in _offers(cn)] == ["rtx-4090-x1-on-demand-suanjiayun"]
    assert cn["total_cost_usd_per_year"] < 0.6 * us["total_cost_usd_per_year"]
    # H20 is sold only by a mainland cloud: the why-not names the region rule and the site's region
    (h20,) = [a for a in us["alternatives"] if a["accelerator"] == "h20"]
    assert "region 'cn' not in policy.regions (us, global); the site is in 'us'" in h20["reason"]


def test_a_site_in_china_buys_only_what_may_be_exported_there_unless_it_holds_a_licence(tmp_path, plan_cli):
    """US export rules (economics.md s5c): TPP >= 4,800 needs a licence for China with a presumption of
    denial, the H20 one since 2025-04, the H200 a case-by-case one. The review's Shanghai server room
    bought an RTX PRO 6000 node (TPP 7,485); an office in China that buys may have the parts under the
    threshold (RTX A6000 workstations, a DGX Spark), and what it holds a licence for."""
    job = {"name": "staff-chat", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8",
           "context_tokens": 8192, "concurrent_users": 100, "min_tokens_per_s_per_user": 20}
    site = {"ownership": "on-prem", "region": "cn", "cooling": "air", "kind": "office"}
    policy = {"acquisition": ["buy"], "stacks": ["cuda"]}
    from planner.options.export import tpp
    assert round(tpp(CAT.accelerators["h100-sxm"])) == 15832 and round(tpp(CAT.accelerators["rtx-4090"])) == 5285
    s, plan = _plan(tmp_path, _doc("cn-buy", site, policy, [job]), explain="brief")
    bought = {CAT.systems[CAT.offers[f["offer"]].system].accelerator for f in plan["fleet"]}
    assert bought and all(tpp(CAT.accelerators[a]) < 4800 for a in bought), bought
    why = {a["accelerator"]: a["reason"] for a in plan["alternatives"]}
    assert ("a US export licence is needed to ship it to China (TPP 7,485 >= 4,800 since 2023-11-17, presumption of "
            "denial; economics.md s5c); list it in policy.export_licences if you hold a licence") in why["rtx-pro-6000"]
    assert "case by case, with a 25% tariff" in why["h200-nvl"]
    _, licensed = _plan(tmp_path, _doc("cn-lic", site, dict(policy, export_licences=["rtx-pro-6000"]), [job]))
    assert {f["system"] for f in licensed["fleet"]} == {"rtx-pro-6000-x1"}
    assert licensed["total_cost_usd_per_year"] < plan["total_cost_usd_per_year"]
    _, us = _plan(tmp_path, _doc("us-buy", dict(site, region="us"), policy, [job]))  # no export for a US office
    assert us["total_cost_usd_per_year"] == licensed["total_cost_usd_per_year"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_doc("bad", site, dict(policy, export_licences=["h100"]), [job])))
    res = plan_cli(bad)
    assert res.code == 2 and "unknown accelerator 'h100'" in res.err and "policy.export_licences" in res.err


def test_a_licensed_h200_bought_for_china_pays_the_25_percent_tariff(tmp_path):
    """economics.md s5c (E22-E23): the H200 ships to China under a case-by-case licence with a 25%
    tariff; a plan that buys it there under policy.export_licences pays it up front (a finance review
    found the tariff named in the text and not charged)."""
    job = {"name": "a", "stage": "serve", "model": "llama-3.1-70b", "precision": "fp8", "concurrent_users": 100,
           "min_tokens_per_s_per_user": 20}
    policy = {"acquisition": ["buy"], "accelerators": ["h200-nvl"], "export_licences": ["h200-nvl"]}
    site = {"ownership": "on-prem", "region": "cn", "cooling": "air"}
    _, cn = _plan(tmp_path, _doc("cn-h200", site, policy, [job]))
    _, us = _plan(tmp_path, _doc("us-h200", dict(site, region="us"), policy, [job]))
    assert [f["offer"] for f in cn["fleet"]] == [f["offer"] for f in us["fleet"]]
    assert sum(f["purchase_usd"] for f in cn["fleet"]) == pytest.approx(1.25 * sum(f["purchase_usd"] for f in us["fleet"]))
    assert cn["total_cost_usd_per_year"] > us["total_cost_usd_per_year"]


def test_policy_regions_listed_explicitly_replace_the_default(tmp_path):
    _, eu = _plan(tmp_path, _doc("eu-only", {"ownership": "cloud", "region": "us"},
                                 {"acquisition": ["on-demand"], "regions": ["eu"]}, [SMALL_CHAT]))
    assert {o.region for o in _offers(eu)} == {"eu"}


# --- provider tiers ------------------------------------------------------------------------------

def test_marketplace_capacity_serves_a_plain_job_but_not_a_latency_critical_or_n1_one(tmp_path):
    cloud, od = {"ownership": "cloud"}, {"acquisition": ["on-demand"]}
    _, plain = _plan(tmp_path, _doc("plain", cloud, od, [SMALL_CHAT]))
    assert [o.tier for o in _offers(plain)] == ["marketplace"]  # the cheapest rental is a community host
    _, critical = _plan(tmp_path, _doc("critical", cloud, od, [{**SMALL_CHAT, "latency_critical": True}]))
    _, spare = _plan(tmp_path, _doc("n1", cloud, {**od, "redundancy": "n+1"}, [SMALL_CHAT]))
    for plan in (critical, spare):
        assert "marketplace" not in {o.tier for o in _offers(plan)}
        assert plan["total_cost_usd_per_year"] > plain["total_cost_usd_per_year"]
    listed = {**od, "provider_tiers": ["marketplace", "gpu-cloud", "hyperscaler"]}
    _, allowed = _plan(tmp_path, _doc("listed", cloud, listed, [{**SMALL_CHAT, "latency_critical": True}]))
    assert "marketplace" in {o.tier for o in _offers(allowed)}


# --- hosted APIs ---------------------------------------------------------------------------------

RATE_JOB = {"name": "assistant", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8",
            "context_tokens": 4096, "input_tokens": 1024, "output_tokens": 512, "concurrent_users": 190,
            "min_tokens_per_s_per_user": 20, "active_fraction": 0.1}
NOT_AZURE = ["together", "deepinfra", "groq", "sambanova", "aws-bedrock", "nebius"]
NOT_BEDROCK = ["together", "deepinfra", "groq", "sambanova", "azure", "nebius"]


@pytest.fixture(scope="module")
def rate_plans(tmp_path_factory):
    """The same job with Azure's API (400,000 tokens a minute) or AWS Bedrock's (no published limit)."""
    tmp, out = tmp_path_factory.mktemp("rate"), {}
    for name, excluded in (("azure", NOT_AZURE), ("bedrock", NOT_BEDROCK)):
        policy = {"acquisition": ["on-demand", "api"], "exclude_providers": excluded}
        out[name] = _plan(tmp, _doc(f"rate-{name}", {"ownership": "cloud"}, policy, [RATE_JOB]))
    return out


def test_the_api_rate_limit_caps_its_share_and_the_overflow_runs_on_rented_gpus(rate_plans):
    _, limited = rate_plans["azure"]
    _, unlimited = rate_plans["bedrock"]
    # Azure's 400,000 tokens a minute at 20 tok/s x (1 + 1024/512) = 3,600 tokens a minute per user: 111 users
    job = limited["jobs"][0]
    (api,) = job["api"]
    assert api["offer"] == "llama-3.3-70b-api-azure"
    assert api["users_served"] * 3600 <= 400_000 and api["users_served"] >= 100
    hardware = sum(p["users_served"] for p in job["placements"])
    assert hardware + api["users_served"] == pytest.approx(190, abs=1e-6) and hardware >= 190 - 111.12
    # AWS Bedrock publishes no limit, at about the same price ($0.72 vs $0.71 per M): the whole job goes there
    job = unlimited["jobs"][0]
    assert job["placements"] == [] and job["api"][0]["share"] == pytest.approx(1.0)
    assert unlimited["total_cost_usd_per_year"] < limited["total_cost_usd_per_year"]


def test_an_api_share_is_billed_by_the_tokens_the_job_uses(rate_plans):
    _, limited = rate_plans["azure"]
    (api,) = limited["jobs"][0]["api"]
    users = api["users_served"]
    out = users * 20 * 3600 * 24 * 365 * 0.1  # users x tok/s x s/h x h/day x days x active
    assert api["output_tokens_per_year"] == pytest.approx(out, rel=1e-5)
    assert api["input_tokens_per_year"] == pytest.approx(2 * out, rel=1e-5)
    assert api["cost_usd_per_year"] == pytest.approx(3 * out * 0.71 / 1e6, rel=1e-4)


def test_the_internal_tool_is_cheaper_on_an_api_than_on_any_fleet_of_its_own():
    s, plan = shipped_plan("internal-tool.yaml", False)
    assert [f["acquisition"] for f in plan["fleet"]] == ["api"]
    assert plan["total_cost_usd_per_year"] < 500
    hosted = s.model_copy(update={"policy": s.policy.model_copy(
        update={"acquisition": [a for a in s.policy.acquisition if a != "api"]})})
    own = plan_scenario(hosted, explain="none")
    assert own["total_cost_usd_per_year"] > 10 * plan["total_cost_usd_per_year"]


def test_why_not_an_accelerator_moves_the_api_job_onto_it_and_says_so_in_words(plan_cli):
    """Forcing an accelerator takes its jobs off the hosted API too (before, the forced plan kept the
    API and a token unit of work on the accelerator: 'running tool on it' at +$0); an API row reads
    as the provider's API in every line, never '0x', and holds no systems in the fleet table."""
    _, plan = shipped_plan("internal-tool.yaml")
    costlier = [a for a in plan["alternatives"] if a["status"] == "costlier" and a.get("fleet")]
    assert costlier
    for a in costlier:
        assert all(f["acquisition"] != "api" for f in a["fleet"]), a
        assert a["cost_delta_usd_per_year"] > 10 * plan["total_cost_usd_per_year"], a
    res = plan_cli(SCENARIOS / "internal-tool.yaml")
    assert res.code == 0
    row = next(line for line in res.out.splitlines() if " api " in line)
    assert row.split()[:2] == ["-", "llama-3.3-70b"], row
    assert not re.search(r"(^|[\s(:])0x ", res.out), res.out
    assert "  - 10 users on deepinfra's API (" in res.out  # (the placement table holds systems only)
    from planner.cli.html import plan_html

    assert "10 users on deepinfra&#x27;s API (" in plan_html(plan)
    brief = plan_cli(SCENARIOS / "internal-tool.yaml", "--brief").out  # (it said "nothing placed")
    assert re.search(r"tool: \$[\d,]+/year; 10 users on deepinfra's API;", brief) and "nothing placed" not in brief


# --- commitments and resale ------------------------------------------------------------------------

def test_a_three_year_commitment_is_taken_when_it_is_the_cheapest_way_to_serve_all_day(tmp_path):
    job = {"name": "assistant", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8",
           "context_tokens": 8192, "concurrent_users": 200, "min_tokens_per_s_per_user": 20}
    site = {"ownership": "cloud"}
    hyperscalers = ["aws", "gcp", "azure"]
    _, one_year = _plan(tmp_path, _doc("r1", site, {"acquisition": ["on-demand", "reserved-1y"],
                                                    "providers": hyperscalers}, [job], horizon_years=3))
    _, three = _plan(tmp_path, _doc("r3", site, {"acquisition": ["on-demand", "reserved-1y", "reserved-3y"],
                                                 "providers": hyperscalers}, [job], horizon_years=3))
    assert {f["acquisition"] for f in three["fleet"]} == {"reserved-3y"}
    assert three["total_cost_usd_per_year"] < one_year["total_cost_usd_per_year"]
    # a commitment is paid every hour of the year: systems x price x 8,760 h, its three years paid
    # when it starts where the offer says so (AWS's savings plan: 3 x annuity(8%, 3) = 1.164 of them)
    for f in three["fleet"]:
        o = CAT.offers[f["offer"]]
        years = 3 * annuity(0.08, 3) if o.payment == "upfront" else 1.0
        assert f["cost_usd_per_year"] == pytest.approx(f["systems"] * o.price_usd_per_hour * 8760 * years, abs=0.01)


def test_a_three_year_commitment_on_a_one_year_horizon_carries_all_its_payments(tmp_path):
    """A reservation is not resold: a one-year plan that signs for three years pays all three (the
    review's 1,500-user chat on aws H100 nodes: reserved-3y showed $181,294 a year and won; signing it
    commits $543,882, so on demand is the cheaper answer for one year). Here on GCP's 3-year
    commitment, paid monthly (AWS's is paid up front: test_a_reservation_paid_up_front_...)."""
    job = {"name": "chat8b", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8", "context_tokens": 4096,
           "concurrent_users": 1500, "min_tokens_per_s_per_user": 30, "max_ttft_s": 2}
    policy = {"acquisition": ["on-demand", "reserved-3y"], "accelerators": ["h100-sxm"], "redundancy": "none",
              "providers": ["gcp"]}
    site = {"ownership": "cloud"}
    _, one = _plan(tmp_path, _doc("c1", site, policy, [job], horizon_years=1))
    _, three = _plan(tmp_path, _doc("c3", site, policy, [job], horizon_years=3))
    reserved = CAT.offers[three["fleet"][0]["offer"]]
    assert {f["acquisition"] for f in three["fleet"]} == {"reserved-3y"}  # over its own term it wins
    assert three["total_cost_usd_per_year"] == pytest.approx(reserved.price_usd_per_hour * 8760, abs=0.01)
    assert {f["acquisition"] for f in one["fleet"]} == {"on-demand"}
    assert one["total_cost_usd_per_year"] < 3 * three["total_cost_usd_per_year"]
    # forced onto the reservation, one year carries its three years' payments, at their present value
    # (8%: 1 + 1/1.08 + 1/1.08^2 = 2.783 years of them, as the multi-year NPV counts them)
    s1, forced = _plan(tmp_path, _doc("c1r", site, dict(policy, acquisition=["reserved-3y"]), [job], horizon_years=1))
    years = annuity(s1.policy.discount_rate, 1) / annuity(s1.policy.discount_rate, 3)
    assert years == pytest.approx(2.7833, abs=1e-4)
    assert forced["total_cost_usd_per_year"] == pytest.approx(years * reserved.price_usd_per_hour * 8760, abs=0.01)


def test_a_multi_year_plan_says_what_its_reservations_commit_to_after_the_horizon(tmp_path):
    job = {"name": "chat8b", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8", "context_tokens": 4096,
           "concurrent_users": 1500, "min_tokens_per_s_per_user": 30, "growth_per_year": 0.01}
    policy = {"acquisition": ["reserved-3y"], "accelerators": ["h100-sxm"], "redundancy": "none", "providers": ["gcp"]}
    _, plan = _plan(tmp_path, _doc("c2", {"ownership": "cloud"}, policy, [job], horizon_years=2))
    reserved = CAT.offers[plan["fleet"][0]["offer"]]
    systems = sum(p["systems"] for y in plan["years"] for p in y["purchases"])
    assert plan["committed_after_horizon_usd"] == pytest.approx(systems * reserved.price_usd_per_hour * 8760, abs=0.01)
    from planner.cli.render_years import headline
    assert "more committed to reservations that run past year 2 (the NPV counts it)" in headline(plan)


def test_a_purchase_over_a_short_horizon_is_credited_its_resale():
    s, plan = shipped_plan("rent-vs-buy.yaml", False)  # 3 years; used H100 nodes: $164,000, 4-year life
    (bought,) = [f for f in plan["fleet"] if f["acquisition"] == "buy"]
    assert bought["offer"] == "h100-sxm-x8-buy-secondary-market" and bought["systems"] == 2
    # resold after 3 years for 0.61 x 0.72^3 = 22.8% of the price: $37,339.73 a node
    assert bought["residual_value_usd"] == pytest.approx(2 * 37_339.73, abs=1.0)
    # capital: (price - resale / 1.08^3) x annuity(8%, 3) = (164,000 - 29,641.59) x 0.388034 a node
    assert plan["cost_breakdown_usd_per_year"]["capital"] == pytest.approx(2 * 52_135.61, rel=1e-5)
    assert bought["sold_after_years"] == 3
    # kept to the end of its 4-year life within an 8-year horizon: still sold then, at the used
    # market's price for 4 years (0.61 x 0.72^4 = 16.4%, economics.md s3c), and replaced; before,
    # it fetched nothing and a horizon of 4 years cost more a year than one of 3
    kept = s.model_copy(update={"horizon_years": 8})
    plan8 = plan_scenario(kept, explain="none")
    (bought8,) = [f for f in plan8["fleet"] if f["acquisition"] == "buy"]
    n = bought8["systems"]
    assert bought8["sold_after_years"] == 4
    assert bought8["residual_value_usd"] == pytest.approx(n * 26_884.58, abs=1.0)
    # (164,000 - 26,884.58 / 1.08^4) x annuity(8%, 4) = (164,000 - 19,761.04) x 0.301921 a node
    assert plan8["cost_breakdown_usd_per_year"]["capital"] == pytest.approx(n * 43_548.80, rel=1e-5)
    from planner.cli.render import money_notes
    assert any(x.startswith(f"Resale assumed: {n}x h100-sxm-x8 sold at the end of their 4-year useful life, "
                            "within the 8-year horizon, and replaced, for $") for x in money_notes(plan8))


# --- the headline unit ---------------------------------------------------------------------------

def test_a_prefill_heavy_job_is_priced_per_million_input_tokens(tmp_path):
    rag = {**SMALL_CHAT, "name": "rag", "input_tokens": 3584, "output_tokens": 256}
    _, plan = _plan(tmp_path, _doc("rag", {"ownership": "cloud"}, {"acquisition": ["on-demand"]}, [rag]))
    unit = plan["jobs"][0]["unit_cost"]
    assert unit["headline"] == "input"
    assert unit["usd_per_million_input_tokens"] == pytest.approx(unit["usd_per_million_output_tokens"] / 14, rel=1e-3)
    assert "per million input tokens" in plan["jobs"][0]["checks"]["unit_cost"]
    chat = plan_scenario(load_scenario(SCENARIOS / "bank.yaml"), explain="none")["jobs"][0]["unit_cost"]
    assert chat["headline"] == "output"


# --- forgeries of the new plan keys ----------------------------------------------------------------

def _api_row(plan):
    return next(r for j in plan["jobs"] for r in j.get("api") or [])


def _api_fleet(plan):
    return next(f for f in plan["fleet"] if f["acquisition"] == "api")


def _bought(plan):
    return next(f for f in plan["fleet"] if f["acquisition"] == "buy")


def _rented(plan):
    return next(f for f in plan["fleet"] if f["acquisition"] == "on-demand")


def _set(getter, key, value):
    def mutate(plan):
        getter(plan)[key] = value(getter(plan)[key]) if callable(value) else value
    return mutate


UNIT = lambda p: p["jobs"][0]["unit_cost"]


def _move(src: str, dst: str):
    """A cost component moved into another: the total still adds up."""
    def mutate(plan):
        parts = plan["cost_breakdown_usd_per_year"]
        parts[dst] = parts.get(dst, 0.0) + parts.pop(src)
    return mutate


FORGERIES = [
    ("rent-vs-buy.yaml", "residual value x 2", _set(_bought, "residual_value_usd", lambda x: x * 2)),
    ("rent-vs-buy.yaml", "residual value 0", _set(_bought, "residual_value_usd", 0.0)),
    ("rent-vs-buy.yaml", "residual value on a rental", _set(_rented, "residual_value_usd", 10_000.0)),
    ("rent-vs-buy.yaml", "bought row moved to region cn", _set(_bought, "region", "cn")),
    ("rent-vs-buy.yaml", "rented row called a hyperscaler", _set(_rented, "tier", "hyperscaler")),
    ("rent-vs-buy.yaml", "$/M input tokens x 0.1", _set(UNIT, "usd_per_million_input_tokens", lambda x: x * 0.1)),
    ("rent-vs-buy.yaml", "$ per request x 0.1", _set(UNIT, "usd_per_request", lambda x: x * 0.1)),
    ("rent-vs-buy.yaml", "headline input for a chat job", _set(UNIT, "headline", "input")),
    ("rent-vs-buy.yaml", "ops staff moved into capital", _move("ops", "capital")),
    ("rent-vs-buy.yaml", "first year's cash less the purchases", _set(lambda p: p, "cash_first_year_usd", lambda x: x - 328_000)),
    ("rent-vs-buy.yaml", "sold after 4 years on a 3-year horizon", _set(_bought, "sold_after_years", 4)),
    ("internal-tool.yaml", "API tokens moved into rental", _move("api", "rental")),
    ("internal-tool.yaml", "API share 0.5", _set(_api_row, "share", 0.5)),
    ("internal-tool.yaml", "API users served x 0.5", _set(_api_row, "users_served", lambda x: x * 0.5)),
    ("internal-tool.yaml", "API cost x 0.1", _set(_api_row, "cost_usd_per_year", lambda x: x * 0.1)),
    ("internal-tool.yaml", "API output tokens x 0.1", _set(_api_row, "output_tokens_per_year", lambda x: x * 0.1)),
    ("internal-tool.yaml", "API requests x 2", _set(_api_row, "requests_per_year", lambda x: x * 2)),
    ("internal-tool.yaml", "API on an EU endpoint", _set(_api_row, "offer", "llama-3.3-70b-api-nebius")),
    ("internal-tool.yaml", "API on an unknown endpoint", _set(_api_row, "offer", "llama-3.3-70b-api-nobody")),
    ("internal-tool.yaml", "API row from another provider", _set(_api_row, "provider", "together")),
    ("internal-tool.yaml", "API fleet row cost x 0.1", _set(_api_fleet, "cost_usd_per_year", lambda x: x * 0.1)),
    ("internal-tool.yaml", "API fleet row in region eu", _set(_api_fleet, "region", "eu")),
    ("internal-tool.yaml", "API fleet row holds a system", _set(_api_fleet, "systems", 1)),
    ("internal-tool.yaml", "API fleet row tokens x 0.1",
     _set(_api_fleet, "output_tokens_per_year", lambda x: x * 0.1)),
]


@pytest.mark.parametrize("name", sorted({f[0] for f in FORGERIES}))
def test_the_plans_with_the_new_keys_verify_unforged(name):
    s, plan = shipped_plan(name)  # (the session's full plan: the verifier reads the plan, not its explanations)
    assert verify(plan, s, resolve(s)).ok


@pytest.mark.parametrize("name,label,mutate", FORGERIES, ids=[f"{f[0]}:{f[1]}" for f in FORGERIES])
def test_a_forged_economics_key_is_caught(name, label, mutate):
    s, plan = shipped_plan(name)  # (the session's full plan: the verifier reads the plan, not its explanations)
    forged = copy.deepcopy(plan)
    mutate(forged)
    result = verify(forged, s, resolve(s))
    assert not result.ok, f"{label}: {result.summary()}"


def test_the_api_rate_limit_is_verified(rate_plans):
    s, limited = rate_plans["azure"]
    forged = copy.deepcopy(limited)
    job = forged["jobs"][0]
    job["api"][0]["users_served"] = 190.0
    job["api"][0]["share"] = 1.0
    result = verify(forged, s, resolve(s))
    assert any("[availability]" in f and "the API allows 400,000" in f for f in result.failures), result.summary()


def test_an_api_that_publishes_a_generated_token_limit_is_held_to_it(tmp_path, plan_cli):
    """Fireworks publishes 36,000 generated tokens a minute (and 900k uncached prompt tokens, 6,000
    requests; economics.md s1b), not 3.6M input + output: at 20 tok/s, 30 users. The review's 300
    coding users on its Qwen3 235B endpoint were all placed there for $166,510/yr; now the API takes
    30, the diagnosis says which limit, and the verifier holds a plan to it."""
    job = {"name": "code", "stage": "serve", "model": "qwen3-235b-a22b", "precision": "fp8", "context_tokens": 16384,
           "input_tokens": 4000, "output_tokens": 500, "concurrent_users": 300, "min_tokens_per_s_per_user": 20,
           "hours_per_day": 8}
    doc = _doc("fw", {"ownership": "cloud"}, {"acquisition": ["api"], "providers": ["fireworks"]}, [job],
               budget={"mode": "max-coverage", "usd_per_year": 1_000_000})
    s, plan = _plan(tmp_path, doc)
    (api,) = plan["jobs"][0]["api"]
    assert api["offer"] == "qwen3-235b-a22b-api-fireworks" and api["users_served"] == pytest.approx(30, abs=0.01)
    forged = copy.deepcopy(plan)
    forged["jobs"][0]["api"][0]["users_served"] = 60.0
    forged["jobs"][0]["api"][0]["share"] = 0.2
    assert any("[availability]" in f and "72,000 output tokens a minute at the peak, the API allows 36,000" in f
               for f in verify(forged, s, resolve(s)).failures)
    only = tmp_path / "only.yaml"
    only.write_text(yaml.safe_dump(dict(doc, name="fw-only", budget={"mode": "min-cost"})))
    res = plan_cli(only, "--explain", "none")
    assert res.code == 3 and "fireworks's published rate limit (36,000 output tokens a minute) admits 30 users" in res.err


# --- the shortlist ranks pairs by the cost the MILP pays -----------------------------------------------

def test_the_shortlist_prices_a_bought_node_as_the_plan_charges_it_resale_and_ops_included():
    """A large scenario's shortlist keeps the pairs pair_cost ranks cheapest; on a 3-year horizon a
    bought node is charged capital less its resale, support, ops, hosting and idle power: pair_cost
    must use that same yearly figure, or the shortlist would rank purchases by a cost the plan never pays."""
    from planner.options import shortlist
    from planner.options.build import build
    from planner.physics import costs

    s, plan = shipped_plan("rent-vs-buy.yaml", False)
    cat = resolve(s)
    oid = "h100-sxm-x8-buy-secondary-market"
    row = next(f for f in plan["fleet"] if f["offer"] == oid)
    o, system = cat.offers[oid], cat.systems["h100-sxm-x8"]
    busy = costs.busy_usd_per_hour(o, system, s.site) / system.accelerators  # per accelerator-hour
    jobs = {j.name: j for j in s.jobs}
    used = sum(p["replicas"] * p["accelerators_per_replica"] * jobs[j["name"]].hours_per_day * 365
               for j in plan["jobs"] for p in j["placements"] if p["offer"] == oid)
    fixed = (row["cost_usd_per_year"] - busy * used) / row["systems"]  # what the plan charges a node a year
    opts = build(s, cat)
    dk = "at-90-percent"
    i = next(i for i, x in enumerate(opts.serve[dk]) if x.system == "h100-sxm-x8" and x.users_per_replica == 171)
    hours = jobs[dk].hours_per_day * 365
    want = 240 / 171 * 4 * (fixed + busy * system.accelerators * hours) / system.accelerators
    assert shortlist.pair_cost(s, cat, opts, dk, i, oid) == pytest.approx(want, rel=1e-4)


def test_a_multi_year_plan_that_uses_an_api_reports_and_verifies_it(tmp_path):
    doc = yaml.safe_load((SCENARIOS / "internal-tool.yaml").read_text())
    doc["name"] = "internal-tool-growing"
    doc["jobs"][0]["growth_per_year"] = 0.5  # a multi-year plan: the tool's users grow by half a year
    _, plan = _plan(tmp_path, doc)
    assert [f["acquisition"] for f in plan["fleet"]] == ["api"]
    assert all(y["opex_usd"] > 0 for y in plan["years"])


def test_an_api_bills_a_request_rate_by_its_requests_not_by_its_littles_law_users():
    """0.5 requests/s of 12,000 input and 600 output tokens, 20 tok/s within 5 s: Little's law holds
    18 users in flight (capacity must hold them), but they generate 0.5 x 600 = 300 tok/s, not
    18 x 20 = 360: each also waits for its first token, and 17.5 users round up. The API bill was
    20% too high, and the API looked that much dearer than a fleet of one's own. A policy of APIs
    alone was refused outright (exit 3: "no accelerator ... can run it")."""
    doc = {"name": "summaries", "site": {"region": "eu"}, "policy": {"acquisition": ["api"]},
           "jobs": [{"name": "summariser", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8",
                     "context_tokens": 32768, "input_tokens": 12000, "output_tokens": 600,
                     "requests_per_s": 0.5, "min_tokens_per_s_per_user": 20, "max_ttft_s": 5}]}
    from planner.data.scenario import Scenario

    plan = plan_scenario(Scenario.model_validate(doc), explain="none")
    (share,) = plan["jobs"][0]["api"]
    seconds = 3600 * 24 * 365
    assert share["users_served"] == 18
    assert share["output_tokens_per_year"] == pytest.approx(0.5 * 600 * seconds, rel=1e-6)
    assert share["input_tokens_per_year"] == pytest.approx(0.5 * 12000 * seconds, rel=1e-6)
    assert share["requests_per_year"] == pytest.approx(0.5 * seconds, rel=1e-6)
    a = load_catalog().api_offers[share["offer"]]
    billed = (0.5 * seconds) * (600 * a.usd_per_m_output_tokens + 12000 * a.usd_per_m_input_tokens) / 1e6
    assert share["cost_usd_per_year"] == pytest.approx(billed, rel=1e-5)
    unit = plan["jobs"][0]["unit_cost"]
    assert unit["output_tokens_per_year"] == pytest.approx(0.5 * 600 * seconds, rel=1e-6)


def test_a_plan_says_what_its_yearly_cost_assumes_that_no_invoice_shows(plan_cli, tmp_path):
    """The finance review: a one-period plan credits the resale of what it buys, and charges a 3-year
    reservation over a 2-year horizon, without a word in the text."""
    bank = " ".join(plan_cli(SCENARIOS / "bank.yaml", "--explain", "none", "--quiet").out.split())  # (unwrapped)
    assert "Resale assumed: 2x h200-nvl-x4 sold when the 3-year horizon ends, for $65,117 (23% of the" in bank
    path = tmp_path / "r.yaml"
    path.write_text("name: r\nhorizon_years: 2\nsite: {ownership: cloud}\n"
                    "policy: {acquisition: [reserved-3y], accelerators: [h100-sxm], providers: [gcp]}\n"
                    "jobs: [{name: chat, stage: serve, model: llama-3.1-70b, precision: fp8, concurrent_users: 200}]\n")
    res = plan_cli(path, "--format", "json", "--explain", "none", "--quiet")
    assert res.code == 0, res.err
    row = json.loads(res.out)["fleet"][0]
    assert row["term_years"] == 3 and row["contract_usd_per_year"] < row["cost_usd_per_year"]
    text = " ".join(plan_cli(path, "--explain", "none", "--quiet").out.split())
    assert f"is a 3-year contract at ${row['contract_usd_per_year']:,.0f} a year" in text
    assert "1 year(s) past this 2-year plan" in text


def test_a_site_that_can_buy_nothing_usable_says_so_not_a_ttft_it_meets(plan_cli, tmp_path):
    # the finance review: a China site buying only got "the quickest is a6000 at 0.50 s: raise max_ttft_s to
    # 0.51" against a 2 s limit; the a6000 is a workstation a data center does not buy, the rest need licences
    path = tmp_path / "cn.yaml"
    path.write_text("name: cn\nsite: {ownership: colo, region: cn, cooling: air}\n"
                    "policy: {acquisition: [buy], stacks: [cuda]}\n"
                    "jobs: [{name: a, stage: serve, model: llama-3.1-70b, precision: fp8, concurrent_users: 400,\n"
                    "        min_tokens_per_s_per_user: 20, max_ttft_s: 2}]\n")
    res = plan_cli(path, "--quiet")
    assert res.code == 3, res.err
    head = next(line for line in res.err.splitlines() if line.startswith("infeasible:"))
    assert "max_ttft_s" not in head and "none this job may use" in head, head
    assert "export licence" in res.err


def test_an_api_bills_a_conversations_history_on_every_turn(plan_cli, tmp_path):
    """The serving review: a 16k-token chat billed 1,000 input tokens a turn on a hosted API, which
    receives the whole conversation again each turn (a replica keeps it in its prefix cache)."""
    def planned(extra: str):
        path = tmp_path / "h.yaml"
        path.write_text("name: h\npolicy: {acquisition: [api]}\n"
                        "jobs: [{name: chat, stage: serve, model: llama-3.3-70b, precision: fp8, concurrent_users: 300,\n"
                        f"        context_tokens: 16000, input_tokens: 1000, output_tokens: 400{extra},\n"
                        "        min_tokens_per_s_per_user: 25, active_fraction: 0.25}]\n")
        res = plan_cli(path, "--format", "json", "--explain", "none", "--quiet")
        assert res.code == 0, res.err
        return res, json.loads(res.out)["jobs"][0]["api"][0]
    res, alone = planned("")
    assert "set history_tokens to the earlier turns each request sends" in res.err
    _, chat = planned(", history_tokens: 7000")
    assert chat["input_tokens_per_year"] == pytest.approx(alone["input_tokens_per_year"] * 8, rel=1e-6)
    assert chat["cost_usd_per_year"] > 3 * alone["cost_usd_per_year"]


def test_a_multi_year_plan_sells_a_system_retired_at_the_end_of_its_life(tmp_path):
    # a used H100 node (4-year life) over 6 years: it leaves at the start of year 5 and fetches the
    # used market's price for a 4-year-old system (0.61 x 0.72^4), not nothing; the node bought to
    # replace it is sold when the horizon ends, 2 years old
    job = {**SMALL_CHAT, "concurrent_users": 300, "growth_per_year": 0.01}
    policy = {"acquisition": ["buy"], "providers": ["secondary-market"], "accelerators": ["h100-sxm"],
              "redundancy": "none"}
    _, plan = _plan(tmp_path, _doc("retire", {"kind": "datacenter"}, policy, [job], horizon_years=6))
    bought = {y["year"]: sum(p["systems"] for p in y["purchases"]) for y in plan["years"]}
    resale = {y["year"]: y["resale_usd"] for y in plan["years"]}
    first = bought[1]
    assert first >= 1 and bought[5] == first  # replaced when its life ends
    assert resale[4] == pytest.approx(first * 164_000 * 0.61 * 0.72 ** 4, abs=1.0)
    assert resale[6] == pytest.approx(bought[5] * 164_000 * 0.61 * 0.72 ** 2, abs=1.0)


# --- what a budget caps --------------------------------------------------------------------------

def test_a_budget_says_whether_it_caps_the_annualised_cost_or_the_cash_paid(tmp_path, plan_cli):
    # the finance review: the same $150k budget planned bank.yaml's buy at $135,671 a year, but one
    # no-op demand_multipliers (a multi-year plan, which caps cash) made it infeasible; budget.basis
    # says which is meant, and every plan says which it read
    bank = yaml.safe_load((SCENARIOS / "bank.yaml").read_text())
    _, annualised = _plan(tmp_path, {**bank, "name": "b-ann", "budget": {"usd_per_year": 150_000}})
    assert annualised["budget_basis"] == "annualised" and annualised["total_cost_usd_per_year"] <= 150_000
    bought = sum(f["purchase_usd"] for f in annualised["fleet"] if f["acquisition"] == "buy")
    running = annualised["total_cost_usd_per_year"] - annualised["cost_breakdown_usd_per_year"]["capital"]
    assert annualised["cash_first_year_usd"] == pytest.approx(bought + running, abs=1.0)  # $286,000 + running
    cash = tmp_path / "b-cash.yaml"
    cash.write_text(yaml.safe_dump({**bank, "name": "b-cash", "budget": {"usd_per_year": 150_000, "basis": "cash"}}))
    res = plan_cli(cash, "--explain", "none")
    assert res.code == 3
    assert "budget short by $" in res.err and "of the first year's cash (purchases in full plus running costs)" in res.err
    _, roomy = _plan(tmp_path, {**bank, "name": "b-cash2", "budget": {"usd_per_year": 340_000, "basis": "cash"}})
    assert roomy["budget_basis"] == "cash" and bought < roomy["cash_first_year_usd"] <= 340_000
    # a multi-year plan may cap its years' annualised cost instead of their cash
    years = yaml.safe_load((SCENARIOS / "annual-budget.yaml").read_text())
    _, by_cash = _plan(tmp_path, {**years, "name": "y-cash"})
    assert by_cash["budget_basis"] == "cash" and max(y["cost_usd"] for y in by_cash["years"]) > 150_000
    _, by_book = _plan(tmp_path, {**years, "name": "y-ann", "budget": {"usd_per_year": 120_000, "basis": "annualised"}})
    assert by_book["budget_basis"] == "annualised"
    for y in by_book["years"]:
        assert y["annuitised_cost_usd"] <= 120_000 + 1
        assert y["budget_used"] == pytest.approx(y["annuitised_cost_usd"] / 120_000, abs=1e-4)
    assert max(y["cost_usd"] for y in by_book["years"]) > 120_000  # (a year's purchases, paid in full)


def test_a_reservation_paid_up_front_is_paid_when_its_term_starts(tmp_path):
    # AWS's 3-year EC2 Instance Savings Plan rate for p5en ($23.80/h) is an all-upfront one
    # (economics.md s2 B4): the three years' fees, $625,464, fall due in year 1; paid monthly,
    # the NPV would be $45,187 lower and year 1's cash $416,976 lower (the finance review)
    job = {"name": "chat", "stage": "serve", "model": "llama-3.1-70b", "precision": "fp8", "context_tokens": 8192,
           "concurrent_users": 500, "min_tokens_per_s_per_user": 20, "max_ttft_s": 2}
    policy = {"acquisition": ["on-demand", "reserved-3y"], "accelerators": ["h200-sxm"], "providers": ["aws"]}
    offer = CAT.offers["h200-sxm-x8-reserved-3y-aws"]
    assert offer.payment == "upfront"
    term = 3 * offer.price_usd_per_hour * 8760
    assert term == pytest.approx(625_464.0)
    s1, one = _plan(tmp_path, _doc("aws1", {"ownership": "cloud"}, policy, [job], horizon_years=3))
    (row,) = one["fleet"]
    assert row["offer"] == offer.id and row["systems"] == 1 and row["paid_upfront_usd"] == pytest.approx(term)
    assert one["cash_first_year_usd"] == pytest.approx(term, abs=1.0)
    assert one["total_cost_usd_per_year"] == pytest.approx(term * annuity(0.08, 3), abs=1.0)  # $242,701
    from planner.cli.render import money_notes
    assert any(x.startswith("Paid up front: 1x h200-sxm-x8 (reserved-3y, aws), $625,464 for its 3-year term")
               for x in money_notes(one))
    for key, value in (("paid_upfront_usd", term / 3), ("cash_first_year_usd", term / 3)):
        forged = copy.deepcopy(one)
        (forged["fleet"][0] if key == "paid_upfront_usd" else forged)[key] = value
        assert not verify(forged, s1, resolve(s1)).ok, key
    _, years = _plan(tmp_path, _doc("aws3", {"ownership": "cloud"}, policy, [{**job, "demand_multipliers": [1, 1, 1]}],
                                    horizon_years=3))
    assert [y["cost_usd"] for y in years["years"]] == pytest.approx([term, 0.0, 0.0], abs=1.0)
    assert years["npv_usd"] == pytest.approx(term, abs=1.0) and not years["committed_after_horizon_usd"]
    assert [y["annuitised_cost_usd"] for y in years["years"]] == pytest.approx([term * annuity(0.08, 3)] * 3, abs=1.0)
    # renewed in year 4 of 4: the cash of year 4 pays three years, two of them past the horizon
    only = dict(policy, acquisition=["reserved-3y"])
    _, four = _plan(tmp_path, _doc("aws4", {"ownership": "cloud"}, only, [{**job, "demand_multipliers": [1, 1, 1, 1]}],
                                   horizon_years=4))
    (renewal,) = four["years"][3]["purchases"]
    assert renewal["paid_upfront_usd"] == pytest.approx(term) and renewal["paid_past_horizon_usd"] == pytest.approx(term * 2 / 3)
    from planner.cli.render_years import headline
    assert "in year 4, $625,464 for its whole term, of which $416,976 for years past year 4" in headline(four)


def test_a_rented_offer_counts_its_serving_systems_and_its_runs_apart(tmp_path):
    # the finance review: one b200-x1 billed 8,824 h in a year (8,760 h serving + 64 h of runs) was
    # reported as 1 system; at a run's peak the offer holds the serving system and the run's
    policy = {"acquisition": ["on-demand"], "accelerators": ["h100-sxm"], "providers": ["lambda"], "redundancy": "none"}
    chat = {**SMALL_CHAT, "concurrent_users": 20}
    tune = {"name": "tune", "stage": "finetune", "model": "llama-3.1-8b", "method": "lora", "dataset_tokens": 1e8,
            "runs_per_year": 12, "max_hours_per_run": 48}
    _, plan = _plan(tmp_path, _doc("rb", {"ownership": "cloud"}, policy, [chat, tune]))
    (row,) = plan["fleet"]
    serve = next(j for j in plan["jobs"] if j["name"] == "chat")["placements"]
    runs = next(j for j in plan["jobs"] if j["name"] == "tune")["placements"]
    assert len(serve) == len(runs) == 1 and serve[0]["offer"] == runs[0]["offer"] == row["offer"]
    assert row["systems"] == serve[0]["replicas"] + runs[0]["replicas"] == 2
    hours = 8760 + 12 * runs[0]["hours_per_run"]
    assert row["cost_usd_per_year"] == pytest.approx(CAT.offers[row["offer"]].price_usd_per_hour * hours, rel=1e-3)


def test_a_served_job_says_its_cost_per_million_tokens_in_and_out_together():
    # the finance review: a job on an API listed at $0.40/$0.40 showed $1.200 per million output tokens
    # (the whole cost over the output alone); the blended figure is what the price sheet compares with
    _, plan = shipped_plan("internal-tool.yaml", False)  # all on DeepInfra's Llama 3.3 70B: $0.10 in, $0.32 out
    (job,) = plan["jobs"]
    assert [a["share"] for a in job["api"]] == [1.0]
    o = CAT.api_offers[job["api"][0]["offer"]]
    uc = job["unit_cost"]
    inp, out = uc["input_tokens_per_year"], uc["output_tokens_per_year"]
    blended = (o.usd_per_m_input_tokens * inp + o.usd_per_m_output_tokens * out) / (inp + out)
    assert uc["usd_per_million_tokens_blended"] == pytest.approx(blended, abs=1e-4)  # 1,024 in, 512 out: $0.1733
    assert uc["usd_per_million_tokens_blended"] < o.usd_per_m_output_tokens < uc["usd_per_million_output_tokens"]


def test_systems_kept_past_the_horizon_are_valued_at_the_market_price_not_a_sale(tmp_path):
    # the finance review (J3): a forced sale at the horizon loses the broker's discount (0.61), so a
    # purchase late in the horizon looked dear; policy.end_of_horizon: keep values what is kept at
    # the used market's price (0.72^age); a system retired at the end of its life is still sold
    bank = yaml.safe_load((SCENARIOS / "bank.yaml").read_text())
    bank["policy"]["end_of_horizon"] = "keep"
    _, kept = _plan(tmp_path, {**bank, "name": "bank-keep"})
    (row,) = kept["fleet"]
    assert kept["end_of_horizon"] == "keep" and row["systems"] == 2
    assert row["residual_value_usd"] == pytest.approx(2 * 143_000 * 0.72 ** 3, abs=1.0)  # $106,749
    # (143,000 - 0.72^3 x 143,000 / 1.08^3) x annuity(8%, 3) a system: $78,095 for two, against $90,919 sold
    assert kept["cost_breakdown_usd_per_year"]["capital"] == pytest.approx(78_095.34, abs=1.0)
    from planner.cli.render import money_notes
    assert any(x.startswith("Value kept: 2x h200-nvl-x4 kept when the 3-year horizon ends, valued at $106,749")
               for x in money_notes(kept))
    job = {**SMALL_CHAT, "concurrent_users": 300, "growth_per_year": 0.01}
    policy = {"acquisition": ["buy"], "providers": ["secondary-market"], "accelerators": ["h100-sxm"],
              "redundancy": "none", "end_of_horizon": "keep"}
    _, years = _plan(tmp_path, _doc("retire-keep", {"kind": "datacenter"}, policy, [job], horizon_years=6))
    bought = {y["year"]: sum(p["systems"] for p in y["purchases"]) for y in years["years"]}
    resale = {y["year"]: y["resale_usd"] for y in years["years"]}
    assert resale[4] == pytest.approx(bought[1] * 164_000 * 0.61 * 0.72 ** 4, abs=1.0)  # retired: sold
    assert resale[6] == pytest.approx(bought[5] * 164_000 * 0.72 ** 2, abs=1.0)  # kept: the market's price



def test_a_horizon_longer_than_a_life_costs_the_same_in_one_period_and_year_by_year(tmp_path):
    # the finance review: over 7 years a 5-year node cost $57,036 a year planned as one period (as if
    # replaced for ever) and $64,325 year by year (the replacement bought in year 6 is sold 2 years
    # old when the horizon ends); the one-period plan now holds the replacement as the years do
    job = {"name": "assistant", "stage": "serve", "model": "llama-3.1-70b", "precision": "fp8", "kv_precision": "fp8",
           "context_tokens": 8192, "concurrent_users": 200, "min_tokens_per_s_per_user": 20, "max_ttft_s": 2}
    site = {"ownership": "on-prem", "power_usd_per_kwh": 0.12, "pue": 1.3, "cooling": "air"}
    policy = {"acquisition": ["buy"], "redundancy": "none", "stacks": ["cuda"], "accelerators": ["h200-nvl"]}
    _, one = _plan(tmp_path, _doc("h7", site, policy, [job], horizon_years=7))
    _, years = _plan(tmp_path, _doc("h7y", site, policy, [{**job, "growth_per_year": 0.001}], horizon_years=7))
    assert one["fleet"][0]["offer"] == years["fleet"][0]["offer"] and one["fleet"][0]["systems"] == 1
    assert one["total_cost_usd_per_year"] == pytest.approx(years["total_cost_usd_per_year"], abs=1.0)  # $64,325
    from planner.cli.render import money_notes
    assert any("(the last replacement sold 2 year(s) old when the horizon ends" in x for x in money_notes(one))


def test_a_plan_resting_on_an_estimated_price_says_so_in_its_summary():
    # the finance review (J1): rent-vs-buy.yaml buys used H100 nodes at a catalog estimate ($164,000);
    # only a note below the fleet said so, not the paragraph a reader passes on
    _, plan = shipped_plan("rent-vs-buy.yaml")
    assert ("It rests on estimated prices, not quotes: h100-sxm-x8-buy-secondary-market (buy); get a quote before "
            "acting on it") in plan["summary"]
    _, bank = shipped_plan("bank.yaml")
    assert "estimated prices" not in bank["summary"]


def test_a_part_day_marketplace_rental_says_the_capacity_may_not_be_there_tomorrow(tmp_path):
    # the finance review (J7): the 'given back each day' caveat was said of whole nodes only; a
    # marketplace host rented 12 h a day promises even less
    chat = {**SMALL_CHAT, "concurrent_users": 20, "hours_per_day": 12}
    policy = {"acquisition": ["on-demand"], "provider_tiers": ["marketplace"], "redundancy": "none"}
    _, plan = _plan(tmp_path, _doc("mk", {"ownership": "cloud"}, policy, [chat]), explain="brief")
    (row,) = plan["fleet"]
    assert row["tier"] == "marketplace"
    assert "only 12 h a day: that assumes the capacity is given back each day" in plan["summary"]
    assert "a marketplace host promises no capacity at all" in plan["summary"]


def test_a_price_worked_out_from_an_assumption_is_an_estimate_too(tmp_path):
    # the expert review: a plan buying MI325X nodes (catalog source 'derived: 8 x $17k MI325X
    # (ASSUMPTION: no public price found ...)') did not say its price was assumed
    chat = {**SMALL_CHAT, "concurrent_users": 200}
    policy = {"acquisition": ["buy"], "redundancy": "none", "accelerators": ["mi325x"]}
    _, plan = _plan(tmp_path, _doc("amd", {"ownership": "on-prem"}, policy, [chat]), explain="none")
    assert plan["fleet"][0]["offer"] == "mi325x-x8-buy-oem"
    assert "It rests on estimated prices, not quotes: mi325x-x8-buy-oem (buy)" in plan["summary"]
    from planner.cli.render import fleet_notes
    assert any(n.startswith("Price not quoted: mi325x-x8-buy-oem (buy, oem) is a catalog assumption as of ")
               for n in fleet_notes(plan))  # (it read 'a catalog derived')
    # bought over the default 1-year horizon of a 5-year life: the yearly cost is the first year's resale loss
    f = plan["fleet"][0]
    assert (f"Bought for a 1-year horizon: the yearly cost nets off a sale when it ends, ${f['residual_value_usd']:,.0f} "
            f"for the ${f['purchase_usd']:,.0f} paid") in plan["summary"]
    assert "set horizon_years to the years you will run them, or policy.end_of_horizon: keep." in plan["summary"]
    _, kept = _plan(tmp_path, _doc("amd2", {"ownership": "on-prem"}, {**policy, "end_of_horizon": "keep"}, [chat]))
    assert "Bought for a" not in kept["summary"]


def test_an_n_plus_1_pool_splits_its_cost_by_the_pool_s_use(tmp_path):
    # the expert review: a used H100 node bought beside the owned ones (the pool's N+1 spare) was
    # charged whole to the one LoRA job that used 2 of its GPUs a few hours a month ($141,230 a year);
    # the pool's systems are one pool, so every job pays the pool's cost by its accelerator-hours
    serve = {"name": "assistant", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8",
             "concurrent_users": 420, "context_tokens": 8192, "input_tokens": 1500, "output_tokens": 300,
             "min_tokens_per_s_per_user": 20}
    lora = {"name": "monthly-lora", "stage": "finetune", "model": "llama-3.3-70b", "method": "lora",
            "dataset_tokens": 1e8, "runs_per_year": 12, "max_hours_per_run": 24}
    policy = {"acquisition": ["buy"], "stacks": ["cuda"], "redundancy": "n+1", "accelerators": ["h100-sxm"]}
    doc = _doc("pool", {"ownership": "on-prem", "power_usd_per_kwh": 0.09}, policy, [serve, lora],
               owned=[{"system": "h100-sxm-x8", "count": 2}])
    _, plan = _plan(tmp_path, doc)
    pool = sum(f["cost_usd_per_year"] for f in plan["fleet"])
    assert {f["offer"] for f in plan["fleet"]} == {"h100-sxm-x8-owned", "h100-sxm-x8-buy-secondary-market"}
    hours = {j["name"]: sum(p["replicas"] * p["accelerators_per_replica"] * (
        p["hours_per_run"] * 12 if p.get("hours_per_run") else 8760) for p in j["placements"]) for j in plan["jobs"]}
    for j in plan["jobs"]:
        assert j["cost_usd_per_year"] == pytest.approx(pool * hours[j["name"]] / sum(hours.values()), rel=1e-3)
    assert next(j for j in plan["jobs"] if j["name"] == "monthly-lora")["cost_usd_per_year"] < 0.01 * pool


def test_the_next_best_fleet_keeps_the_systems_already_owned(tmp_path):
    # the expert review: 'next-best fleet without h100-sxm-x8' dropped the 4 nodes the company owns
    # and priced 10 new servers; what is held is sunk, so the next best goes without buying more
    serve = {"name": "assistant", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8",
             "concurrent_users": 420, "context_tokens": 8192, "input_tokens": 1500, "output_tokens": 300,
             "min_tokens_per_s_per_user": 20}
    policy = {"acquisition": ["buy"], "stacks": ["cuda"], "redundancy": "n+1"}
    doc = _doc("nb", {"ownership": "on-prem", "power_usd_per_kwh": 0.09}, policy, [serve],
               owned=[{"system": "h100-sxm-x8", "count": 2}])
    _, plan = _plan(tmp_path, doc, explain="full")
    nb = plan["next_best"]
    assert plan["fleet"][0]["offer"] == "h100-sxm-x8-buy-secondary-market"
    assert (nb["excluded_systems"], nb["kept_owned"]) == (["h100-sxm-x8"], 2)
    assert {f["offer"]: f["systems"] for f in nb["fleet"]}["h100-sxm-x8-owned"] == 2
    assert not any(f["system"] == "h100-sxm-x8" and not f.get("owned") for f in nb["fleet"])
    assert nb["message"].startswith("next-best fleet without more h100-sxm-x8 than the 2 you own: ")
    assert nb["cost_delta_usd_per_year"] > 0


def test_a_fleet_of_many_system_types_says_their_running_cost_is_not_priced(tmp_path):
    # the expert review: a fine-tuning team's cheapest fleet rented 5 system types from several
    # providers, CUDA and ROCm, for $163 a year less than the next best; nothing said why one might not
    tune = {"stage": "finetune", "max_hours_per_run": 24}
    jobs = [{**tune, "name": "lora-8b", "model": "llama-3.1-8b", "method": "lora", "dataset_tokens": 2e7, "epochs": 3,
             "runs_per_year": 52, "max_hours_per_run": 12},
            {**tune, "name": "qlora-70b", "model": "llama-3.3-70b", "method": "qlora", "dataset_tokens": 3e7, "epochs": 2,
             "runs_per_year": 12, "max_hours_per_run": 48},
            {**tune, "name": "full-8b", "model": "llama-3.1-8b", "method": "full", "dataset_tokens": 5e8, "epochs": 2,
             "runs_per_year": 12},
            {**tune, "name": "full-70b", "model": "llama-3.3-70b", "method": "full", "dataset_tokens": 1e9,
             "runs_per_year": 4, "max_hours_per_run": 96},
            {"name": "nightly", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8", "concurrent_users": 512,
             "input_tokens": 4000, "output_tokens": 300, "min_tokens_per_s_per_user": 10, "hours_per_day": 6}]
    policy = {"acquisition": ["on-demand", "reserved-1y", "buy"]}
    _, plan = _plan(tmp_path, _doc("team", {"ownership": "cloud"}, policy, jobs))
    types = {f["system"] for f in plan["fleet"]}
    assert len(types) >= 4
    assert (f"The fleet mixes {len(types)} system types from ") in plan["summary"]
    assert "set policy.cost_per_system_type_usd_year to what one more type costs you a year" in plan["summary"]
    _, priced = _plan(tmp_path, _doc("team2", {"ownership": "cloud"}, {**policy, "cost_per_system_type_usd_year": 5000},
                                     jobs))
    assert "system types from" not in priced["summary"] and len({f["system"] for f in priced["fleet"]}) < len(types)
