"""An expert review's wording findings: a price per more user names that year's request rate, and
a job the budget leaves unserved is not priced at $0 a user."""

from __future__ import annotations

import json
import re

import pytest
import yaml


def _plan(plan_cli, tmp_path, doc: dict) -> dict:
    path = tmp_path / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = plan_cli(path, "--format", "json", "--explain", "brief")
    assert r.code == 0, r.err
    return json.loads(r.out)


def _row(plan: dict, constraint: str) -> str:
    return next(x["message"] for x in plan["explanations"] if x["constraint"] == constraint)


def test_the_price_of_one_more_user_names_that_years_request_rate(plan_cli, tmp_path):
    # it read 'its 2 requests a second hold 1,188 at once': 2 was year 1's rate, 1,188 year 4's users
    job = {"name": "chat", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8", "requests_per_s": 2,
           "input_tokens": 1000, "output_tokens": 200, "context_tokens": 1200, "min_tokens_per_s_per_user": 25,
           "growth_per_year": 1.0}
    plan = _plan(plan_cli, tmp_path, {"name": "rate", "horizon_years": 3, "site": {"ownership": "cloud"},
                                      "policy": {"acquisition": ["on-demand"]}, "jobs": [job]})
    assert "one more concurrent user (its 8 requests a second hold 64 at once) on 'chat' in year 3 " in _row(
        plan, "jobs.chat.requests_per_s")  # (year 3's rate: 2 x 2 x 2)


def test_a_job_the_budget_leaves_unserved_is_not_priced_at_nothing(plan_cli, tmp_path):
    job = {"name": "assistant", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8", "concurrent_users": 300,
           "min_tokens_per_s_per_user": 20}
    plan = _plan(plan_cli, tmp_path, {"name": "maxcov", "site": {"ownership": "cloud"},
                                      "policy": {"acquisition": ["on-demand"], "accelerators": ["h100-sxm"]},
                                      "budget": {"usd_per_year": 1000, "mode": "max-coverage"}, "jobs": [job]})
    msg = _row(plan, "jobs.assistant.concurrent_users")
    assert msg == ("one more concurrent user on 'assistant' would go unserved, as 300 do already: the plan serves 0 of "
                   "300 needed (see what binds: the budget or a cap)")


def test_a_plan_that_self_hosts_what_an_api_could_serve_prices_the_all_api_fleet(plan_cli, tmp_path):
    # the startup's question (API or self-host?) had no API-only figure beside a self-hosted plan
    job = {"name": "chat", "stage": "serve", "model": "qwen3-32b", "precision": "fp8", "concurrent_users": 300,
           "input_tokens": 1000, "output_tokens": 400, "context_tokens": 1400, "min_tokens_per_s_per_user": 25}
    path = tmp_path / "api.yaml"
    path.write_text(yaml.safe_dump({"name": "api", "site": {"ownership": "cloud"},
                                    "policy": {"acquisition": ["api", "on-demand"]}, "jobs": [job]}, sort_keys=False))
    r = plan_cli(path, "--format", "json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    assert any(p.get("users_per_replica") for p in plan["jobs"][0]["placements"])  # it self-hosts
    api = plan["api_fleet"]
    assert api["fleet"] and all(f["acquisition"] == "api" for f in api["fleet"]) and api["excluded_systems"] == []
    assert api["cost_delta_usd_per_year"] > 0
    assert api["message"].startswith("cheapest fleet without self-hosting what an API serves: ")
    assert f"The {api['message']}." in plan["summary"]
    text = plan_cli(path)
    assert f"On hosted APIs: {api['message']}" in " ".join(text.out.split())  # (the text wraps at the terminal)


def test_a_target_written_as_tpot_is_priced_in_ms(plan_cli, tmp_path):
    # the review: a job written with max_tpot_ms read 'raising 'chat' from 25 to 27.5 tok/s per user'
    job = {"name": "chat", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8", "concurrent_users": 200,
           "max_tpot_ms": 40, "context_tokens": 4096}
    path = tmp_path / "tpot.yaml"
    path.write_text(yaml.safe_dump({"name": "tpot", "site": {"ownership": "cloud"},
                                    "policy": {"acquisition": ["on-demand"]}, "jobs": [job]}, sort_keys=False))
    r = plan_cli(path, "--format", "json")
    assert r.code == 0, r.err
    msg = _row(json.loads(r.out), "jobs.chat.min_tokens_per_s_per_user")
    assert msg.startswith("tightening 'chat' from 40 to 36.36 ms per token (25 to 27.5 tok/s per user) costs "), msg


def test_a_demand_row_the_time_left_could_not_price_is_open_not_slack(plan_cli, tmp_path, monkeypatch):
    # the review: a cut-short 4-year N+1 plan read '[slack] ... costs -/yr with the fleet you own', and
    # '[binds] ... $291.17/yr' once given the time
    from planner.explain import prices

    monkeypatch.setattr(prices, "short_run", lambda *a, **k: prices.LPPrices(None, "not-solved"))
    doc = {"name": "cut", "site": {"ownership": "cloud"}, "policy": {"acquisition": ["on-demand"]},
           "jobs": [{"name": "chat", "stage": "serve", "model": "llama-3.1-8b", "precision": "fp8",
                     "concurrent_users": 200, "context_tokens": 4096},
                    {"name": "tune", "stage": "finetune", "model": "llama-3.1-8b", "method": "lora",
                     "dataset_tokens": 1e7, "runs_per_year": 4}]}
    plan = _plan(plan_cli, tmp_path, doc)
    rows = {x["constraint"]: x for x in plan["explanations"] if x["family"] == "demand"}
    chat, tune = rows["jobs.chat.concurrent_users"], rows["jobs.tune.runs_per_year"]
    for r in (chat, tune):
        assert r["settled"] is False and r["shadow_price"] is None and not r["binding"]
        assert "cut short by the time limit" in r["message"] and "-/yr" not in r["message"], r["message"]
    assert chat["message"].startswith("one more concurrent user on 'chat': the re-solve that prices it")
    path = tmp_path / "cut.yaml"
    text = plan_cli(path, "--explain", "brief").out
    assert "[open] jobs.chat.concurrent_users" in text and "[slack] jobs.chat" not in text


def test_a_coverage_budgets_price_names_the_fleet_it_takes_and_how_far_over_the_budget(plan_cli, tmp_path):
    # it read '$132,447/yr more serves 122 of them' beside a $120,000 budget the plan spent $108,628 of:
    # a finance reader asked for $132,447 more budget where $121,075 more would do; spend and budget are
    # compared in the budget's basis (cash here: a bought fleet pays its purchases in full in year 1)
    job = {"name": "assistant", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8", "concurrent_users": 300,
           "min_tokens_per_s_per_user": 20}
    for basis, acquisition in (("annualised", "on-demand"), ("cash", "buy")):
        doc = {"name": "maxcov", "site": {"ownership": "cloud" if acquisition != "buy" else "colo"},
               "policy": {"acquisition": [acquisition], "accelerators": ["h100-sxm"]},
               "budget": {"usd_per_year": 100000, "mode": "max-coverage", "basis": basis}, "jobs": [job]}
        path = tmp_path / "maxcov.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        r = plan_cli(path, "--format", "json")
        assert r.code == 0, r.err
        plan = json.loads(r.out)
        msg = next(x for x in plan["explanations"] if x["constraint"] == "budget.usd_per_year")["message"]
        spent = plan["cash_first_year_usd"] if basis == "cash" else plan["total_cost_usd_per_year"]

        def amount(text: str) -> float:
            return float(text.lstrip("$").replace(",", ""))
        assert f"(the plan spends ${spent:,.0f} of $100,000)" in msg and spent <= 100000, msg
        found = re.search(r"a fleet that spends \$([\d,]+), \$([\d,]+) over the budget,", msg)
        assert found, msg
        spends, over = amount(found.group(1)), amount(found.group(2))
        assert spends > 100000 and over == pytest.approx(spends - 100000, abs=1), msg
        cost = amount(msg.split(" of them at ")[1].split("/yr")[0])
        extra = amount(msg.split("/yr (")[1].split("/yr more than the plan")[0])
        assert extra == pytest.approx(cost - plan["total_cost_usd_per_year"], abs=1), msg


def test_an_accelerator_that_serves_less_says_so_before_its_cost(plan_cli, tmp_path):
    # it read "b300 serves-less -99,509 the cheapest plan running 'code-assist', 'core-chat', 'monthly-tune' on
    # it costs $9,118/yr": the $9,118 fleet ran the fine-tune alone, and the minus read as a saving
    jobs = [{"name": "core-chat", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8", "context_tokens": 8192,
             "concurrent_users": 200, "min_tokens_per_s_per_user": 20, "max_ttft_s": 2, "priority": 3},
            {"name": "code-assist", "stage": "serve", "model": "qwen3-32b", "precision": "fp8", "context_tokens": 32768,
             "concurrent_users": 100, "min_tokens_per_s_per_user": 40, "max_ttft_s": 2, "priority": 2},
            {"name": "monthly-tune", "stage": "finetune", "model": "llama-3.3-70b", "method": "lora",
             "dataset_tokens": 2e8, "epochs": 2, "runs_per_year": 12, "max_hours_per_run": 48}]
    doc = {"name": "tight", "site": {"ownership": "cloud"}, "policy": {"acquisition": ["on-demand", "reserved-1y"],
           "stacks": ["cuda"]}, "budget": {"usd_per_year": 120000, "mode": "max-coverage"}, "jobs": jobs}
    path = tmp_path / "tight.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = plan_cli(path, "--format", "json")
    assert r.code == 0, r.err
    less = [a for a in json.loads(r.out)["alternatives"] if a["status"] == "serves-less"]
    assert less
    for a in less:
        assert a["reason"].startswith("the best plan with ") and " allowed only on it serves less: it leaves " in a["reason"]
        tail = "less than the plan)" if a["cost_delta_usd_per_year"] < 0 else f"(+${a['cost_delta_usd_per_year']:,.0f})"
        assert "; it costs $" in a["reason"] and tail in a["reason"], a["reason"]
        assert "the cheapest plan running" not in a["reason"], a["reason"]
