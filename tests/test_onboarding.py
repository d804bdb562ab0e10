"""A new user's first steps: the provider list, starter templates, schema descriptions, examples of
own quotes, price overrides and inline models, forgiving ids, and warnings about empty choices."""

from __future__ import annotations

import json

import pytest

from conftest import SCENARIOS


def test_catalog_providers_lists_every_provider_with_regions_offers_and_modes(plan_cli):
    res = plan_cli("catalog", "providers", "--format", "json")
    assert res.code == 0, res.err
    rows = {r["provider"]: r for r in json.loads(res.out)}
    assert {"aws", "oem", "hyperstack"} <= set(rows)
    assert rows["aws"]["regions"] == "us" and rows["aws"]["offers"] >= 1  # issue 13's region vocabulary
    assert "buy" in rows["oem"]["acquisition"] and "reserved-1y" in rows["hyperstack"]["acquisition"]
    text = plan_cli("catalog", "providers")
    assert text.code == 0 and "hyperstack" in text.out and "providers: the names policy.providers" in text.out


def test_unknown_provider_points_at_the_provider_list(plan_cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: t\npolicy: {providers: [zzqq]}\n"
                    "jobs: [{name: a, stage: serve, model: llama-3.1-8b, concurrent_users: 5}]\n")
    res = plan_cli("validate", path)
    assert res.code == 2 and "`plan catalog providers`" in res.err


def test_every_schema_field_has_a_description(plan_cli):
    """The README promises every field in `plan schema`; a field without a description is a field a
    user has to guess (nested models, jobs, inline offers and models included)."""
    res = plan_cli("schema")
    assert res.code == 0
    schema = json.loads(res.out)
    missing = []
    for name, node in [("Scenario", schema), *schema["$defs"].items()]:
        for key, prop in (node.get("properties") or {}).items():
            if not str(prop.get("description", "")).strip():
                missing.append(f"{name}.{key}")
    assert not missing, f"{len(missing)} schema fields without a description: {', '.join(missing)}"
    serve = schema["$defs"]["ServeJob"]["properties"]
    assert serve["min_tokens_per_s_per_user"]["default"] == 10.0  # defaults come with the schema
    assert "second" in serve["min_tokens_per_s_per_user"]["description"]  # and units with the description


@pytest.mark.parametrize("template", ["serve", "finetune", "mixed", "budget"])
def test_plan_init_writes_a_commented_template_that_validates_and_plans(plan_cli, tmp_path, template):
    path = tmp_path / "scenario.yaml"
    res = plan_cli("init", "--template", template, "-o", path)
    assert res.code == 0, res.err
    text = path.read_text()
    assert text.startswith("# A starter scenario") and text.count("#") >= 8  # commented, line by line
    assert plan_cli("validate", path).code == 0
    planned = plan_cli(path, "--format", "json", "--no-timings", "--quiet")
    assert planned.code == 0, planned.err
    plan = json.loads(planned.out)
    assert plan["status"] == "optimal"
    assert plan.get("fleet") or plan.get("years"), plan


def test_plan_init_prints_to_stdout_and_never_overwrites_without_force(plan_cli, tmp_path):
    res = plan_cli("init")
    assert res.code == 0 and "stage: serve" in res.out
    path = tmp_path / "mine.yaml"
    path.write_text("my own work\n")
    refused = plan_cli("init", "-t", "finetune", "-o", path)
    assert refused.code == 2 and "already exists" in refused.err and path.read_text() == "my own work\n"
    assert plan_cli("init", "-t", "finetune", "-o", path, "--force").code == 0
    assert "stage: finetune" in path.read_text()


def test_own_quote_example_buys_the_quote_and_the_overridden_price(plan_cli):
    """scenarios/own-quote.yaml: an offer under offers: (a reseller's quote, one in stock) and a
    catalog price changed under prices: both reach the plan, each with where its price came from."""
    res = plan_cli(SCENARIOS / "own-quote.yaml", "--format", "json", "--no-timings", "--quiet")
    assert res.code == 0, res.err
    fleet = {f["offer"]: f for f in json.loads(res.out)["fleet"]}
    quote, oem = fleet["h200-nvl-x4-buy-acme"], fleet["h200-nvl-x4-buy-oem"]
    assert quote["systems"] == 1 and quote["purchase_usd"] == 119_000 and "ACME-2026-114" in quote["price_source"]
    assert oem["purchase_usd"] == 124_000 and "prices:" in oem["price_source"]  # not the list price of 143,000


def test_own_model_example_plans_a_model_defined_inline(plan_cli):
    """scenarios/own-model.yaml: a model the catalog lacks, defined from its config.json."""
    res = plan_cli(SCENARIOS / "own-model.yaml", "--format", "json", "--no-timings", "--quiet")
    assert res.code == 0, res.err
    job = json.loads(res.out)["jobs"][0]
    assert job["model"] == "qwen2.5-14b-instruct" and job["placements"] and job["cost_usd_per_year"] > 0
    assert "params_b" not in res.err  # its stated size agrees with its architecture


def _scenario(tmp_path, policy: str, model: str = "llama-3.1-8b"):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nsite: {{ownership: cloud}}\npolicy: {policy}\n"
                    f"jobs: [{{name: a, stage: serve, model: {model}, concurrent_users: 20}}]\n")
    return path


def test_ids_with_capitals_are_read_as_the_catalog_ids_with_a_note(plan_cli, tmp_path):
    path = _scenario(tmp_path, "{acquisition: [on-demand], accelerators: [H100-SXM], providers: [Lambda]}",
                     model="Llama-3.1-8B")
    res = plan_cli(path, "--format", "json", "--no-timings", "--quiet")
    assert res.code == 0, res.err
    notes = [line for line in res.err.splitlines() if line.startswith("note:")]
    assert len(notes) == 3, res.err  # one line each, said once though the scenario is read twice
    assert "'Llama-3.1-8B' is read as 'llama-3.1-8b'" in res.err and "'H100-SXM' is read as 'h100-sxm'" in res.err
    plan = json.loads(res.out)
    assert plan["jobs"][0]["model"] == "llama-3.1-8b"
    assert plan["notes"] == notes  # a script that keeps only the JSON keeps the notes too
    assert {f["accelerator"] for f in plan["fleet"]} == {"h100-sxm"} and {f["provider"] for f in plan["fleet"]} == {"lambda"}
    assert plan_cli("validate", path).err.count("note:") == 3


def test_an_allowed_acquisition_mode_without_any_offer_is_warned_about(plan_cli, tmp_path):
    path = _scenario(tmp_path, "{acquisition: [buy, spot], providers: [oem]}")  # OEMs sell, never rent
    res = plan_cli(path, "--quiet")
    assert res.code == 0, res.err
    warning = [line for line in res.err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "allows spot, but no offer sells spot" in warning[0], res.err
    report = plan_cli(path, "--quiet", "--format", "markdown").out  # a report passed on carries the warning
    assert "- " + warning[0] in report.split("## Recommendation")[0], report[:600]
    # modes left at the default are the catalog's business, not the user's choice: no warning
    assert "warning" not in plan_cli("validate", _scenario(tmp_path, "{accelerators: [h100-sxm]}")).err


def test_the_acquisition_warning_reads_policy_regions(plan_cli, tmp_path):
    # reserved-3y is sold in the us only: allowed there, a mode no offer sells in the eu
    eu = plan_cli("validate", _scenario(tmp_path, "{acquisition: [on-demand, reserved-3y], regions: [eu]}"))
    assert eu.code == 0, eu.err
    warning = [line for line in eu.err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "allows reserved-3y, but no offer sells reserved-3y" in warning[0], eu.err
    assert "regions (eu)" in warning[0], eu.err
    us = plan_cli("validate", _scenario(tmp_path, "{acquisition: [on-demand, reserved-3y], regions: [us]}"))
    assert us.code == 0 and "warning" not in us.err, us.err


def test_estimate_reads_ids_with_capitals_too(plan_cli):
    res = plan_cli("estimate", "--model", "Llama-3.1-8B", "--accelerator", "H100-SXM", "--format", "json")
    assert res.code == 0, res.err
    assert json.loads(res.out)["model"] == "llama-3.1-8b" and "'H100-SXM' is read as 'h100-sxm'" in res.err


def test_estimate_max_throughput_at_a_given_split_takes_its_largest_batch(plan_cli):
    """--max-throughput with --tp fixed the split and then ran batch 1 (130 tok/s for 70B on 8 H200
    against 13,235 with the split searched): it now takes the split's largest batch."""
    args = ("estimate", "--model", "llama-3.1-70b", "--accelerator", "h200-sxm", "--precision", "fp8",
            "--count", "8", "--tp", "8", "--format", "json")
    fixed = json.loads(plan_cli(*args, "--max-throughput").out)
    one = json.loads(plan_cli(*args, "--batch", "1").out)
    assert fixed["tensor_parallel"] == 8 and fixed["batch"] > 100
    assert fixed["tokens_per_s"] > 10 * one["tokens_per_s"]


def test_estimate_gives_no_hours_for_a_run_that_does_not_fit(plan_cli):
    args = ("estimate", "--model", "llama-2-7b", "--accelerator", "h100-sxm", "--stage", "finetune", "--method",
            "full", "--tokens", "75e6", "--format", "json")
    alone = json.loads(plan_cli(*args).out)
    assert alone["fits"] is False and alone["hours"] is None and alone["accelerators_needed_for_memory"] == 2
    pair = json.loads(plan_cli(*args, "--count", "2").out)
    assert pair["fits"] is True and pair["hours"] > 0


def test_estimate_open_loop_gives_a_rate_sized_jobs_ttft(plan_cli):
    """plan estimate --open-loop: the TTFT a requests_per_s job is planned with (physics/ttft.py), far
    below the closed loop's at 89 requests in flight (serving-benchmarks.md's open-loop rows: 73 ms)."""
    args = ("estimate", "--model", "llama-3.2-3b", "--accelerator", "l40s", "--input-tokens", "1000",
            "--output-tokens", "500", "--batch", "89", "--format", "json")
    closed, opened = (json.loads(plan_cli(*args, *extra).out) for extra in ((), ("--open-loop",)))
    assert opened["ttft_ms"] < 100 < 400 < closed["ttft_ms"]
    assert "arriving one by one at a rate" in opened["ttft_convention"]
    assert opened["tpot_ms"] == closed["tpot_ms"]


def test_estimate_context_tokens_reserves_a_serve_jobs_kv(plan_cli):
    """--context-tokens holds a serve job's context_tokens of KV per sequence, as the plan does: bank's
    70B at FP8 with 8k context on one H200 holds 50 users at 20 tok/s (its plan's TP1 replicas), not
    the 90 that 1,536 tokens a sequence would allow."""
    args = ("estimate", "--model", "llama-3.1-70b", "--accelerator", "h200-sxm", "--count", "2", "--precision",
            "fp8", "--input-tokens", "1024", "--output-tokens", "512", "--min-tokens-per-s-per-user", "20",
            "--format", "json")
    short, held = (json.loads(plan_cli(*args, *extra).out) for extra in ((), ("--context-tokens", "8192")))
    assert held["batch"] < short["batch"] and held["kv_gb"] > short["kv_gb"]
    assert held["batch"] == 50


def test_a_site_outside_the_us_with_no_regions_is_told_global_offers_may_serve(plan_cli, tmp_path):
    # the reviews: an EU site's plan rented marketplace hosts anywhere, with no word about residency
    path = tmp_path / "eu.yaml"
    path.write_text("name: eu\nsite: {region: eu}\npolicy: {acquisition: [on-demand]}\n"
                    "jobs: [{name: a, stage: serve, model: llama-3.1-8b, concurrent_users: 20}]\n")
    res = plan_cli(path, "--quiet", "--explain", "none")
    assert res.code == 0 and "set policy.regions: [eu] if the data or the hardware must stay in 'eu'" in res.err
    path.write_text(path.read_text().replace("acquisition: [on-demand]", "acquisition: [on-demand], regions: [eu]"))
    assert "policy.regions is unset" not in plan_cli(path, "--quiet", "--explain", "none").err
