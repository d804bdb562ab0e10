"""Issue 2: the CLI's catalog, validate and schema commands, and precise errors for bad scenarios."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import SCENARIOS

ACC_KEYS = {"id", "name", "vendor", "memory_gb", "mem_bw_tbps", "bf16_tflops", "fp8_tflops", "fp4_tflops",
            "tdp_w", "scaleup_domain", "stack", "source", "as_of"}
MODEL_KEYS = {"id", "params_b", "active_params_b", "layers", "hidden_size", "attention_heads", "kv_heads",
              "head_dim", "vocab_size", "experts", "experts_per_token", "kv_lora_rank", "rope_head_dim", "source"}


def test_help_lists_commands(plan_cli):
    r = plan_cli("--help")
    assert r.code == 0
    for cmd in ("validate", "schema", "catalog", "estimate"):
        assert cmd in r.out


def test_version_names_the_calibration(plan_cli):
    r = plan_cli("--version")
    assert r.code == 0 and r.out.startswith("plan ") and "calibrated" in r.out


def test_catalog_accelerators_json_has_contract_keys(plan_cli):
    r = plan_cli("catalog", "accelerators", "--format", "json")
    assert r.code == 0
    rows = json.loads(r.out)
    assert len(rows) >= 36
    for row in rows:
        assert ACC_KEYS <= set(row), row["id"]
    h200 = next(r for r in rows if r["id"] == "h200-sxm")
    assert h200["memory_gb"] == 141 and h200["mem_bw_tbps"] == pytest.approx(4.8)


def test_catalog_models_json_has_contract_keys(plan_cli):
    rows = json.loads(plan_cli("catalog", "models", "--format", "json").out)
    for row in rows:
        assert MODEL_KEYS <= set(row), row["id"]
    assert any(r["id"] == "deepseek-v3" and r["kv_lora_rank"] == 512 for r in rows)


def test_catalog_offers_csv_parses_with_sources(plan_cli):
    r = plan_cli("catalog", "offers", "--format", "csv")
    assert r.code == 0
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert len(rows) > 50 and all(row["source"] and row["as_of"] for row in rows)


def test_catalog_table_is_readable(plan_cli):
    r = plan_cli("catalog", "systems")
    assert r.code == 0 and "h200-sxm-x8" in r.out and "every row has a source" in r.out


def test_validate_prints_summary(plan_cli):
    r = plan_cli("validate", SCENARIOS / "bank.yaml")
    assert r.code == 0
    assert "valid" in r.out and "200 users" in r.out and "Llama 3.1 70B" in r.out


def test_schema_is_json_schema(plan_cli):
    schema = json.loads(plan_cli("schema").out)
    assert {"jobs", "site", "policy", "budget"} <= set(schema["properties"])


def write(tmp_path, text: str, name="s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


BASE = """name: t
jobs:
  - name: a
    stage: serve
    model: llama-3.1-8b
    concurrent_users: 10
"""


@pytest.mark.parametrize("text, expect", [
    (BASE.replace("concurrent_users", "concurent_users"), ["s.yaml:6", "did you mean 'concurrent_users'"]),
    (BASE.replace("concurrent_users: 10", "concurrent_users: 0"), ["jobs.0.concurrent_users", "at least 1"]),
    (BASE.replace("concurrent_users: 10", "concurrent_users: -5"), ["jobs.0.concurrent_users"]),
    (BASE.replace("llama-3.1-8b", "llama-3-8b"), ["unknown model 'llama-3-8b'", "did you mean",
                                                  "? Or define it under 'models:' in the scenario."]),
    (BASE.replace("llama-3.1-8b", "zz-unheard-of"), ["unknown model 'zz-unheard-of'",
                                                     "`plan catalog models`, or define it under 'models:'"]),
    (BASE + "policy:\n  accelerators: [h200]\n", ["unknown accelerator 'h200'", "h200-sxm"]),
    (BASE + "policy:\n  redundancy: n+l\n", ["s.yaml:8", "policy.redundancy", "To fix: did you mean 'n+1'?"]),
    (BASE + "budget:\n  usd_per_year: 1000\n  basis: accrual\n", ["budget.basis", "To fix: use one of: 'annualised', 'cash'"]),
    ("name: t\njobs: [\n", ["malformed YAML", "s.yaml:"]),
    ("", ["file is empty"]),
    ("- a\n- b\n", ["top level is a list", "s.yaml:1"]),
    ("a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
     "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
     ["alias bomb"]),
    (BASE.replace("stage: serve", "stage: train"), ["stage", "serve, finetune, pretrain, rl, edge"]),
])
def test_bad_scenarios_exit_2_with_where_and_fix(plan_cli, tmp_path, text, expect):
    path = write(tmp_path, text)
    for command in (("validate", path), (path,)):
        r = plan_cli(*command)
        assert r.code == 2, r.err
        assert "Traceback" not in r.err
        for fragment in expect:
            assert fragment in r.err, (fragment, r.err)
        assert r.out == ""


def test_missing_file_exit_2(plan_cli, tmp_path):
    r = plan_cli("validate", tmp_path / "nope.yaml")
    assert r.code == 2 and "file not found" in r.err and "To fix" in r.err


def test_every_problem_listed_at_once(plan_cli, tmp_path):
    text = BASE.replace("concurrent_users: 10", "concurrent_users: 0\n    contex_tokens: 5")
    r = plan_cli("validate", write(tmp_path, text))
    assert r.code == 2 and "2 problems" in r.err


def test_unknown_model_suggestion_in_estimate(plan_cli):
    r = plan_cli("estimate", "--model", "llama-3-70b", "--accelerator", "h200-sxm")
    assert r.code == 2 and "did you mean" in r.err and "llama-3.1-70b" in r.err


def test_user_catalog_overrides_price(plan_cli, tmp_path):
    offers = tmp_path / "offers.csv"
    offers.write_text("id,system,acquisition,provider,region,price_usd_per_hour,purchase_usd,useful_life_years,"
                      "max_systems,source,as_of\n"
                      "h200-sxm-x8-buy-oem,h200-sxm-x8,buy,oem,global,,1000,5,,my quote,2026-12-01\n")
    rows = json.loads(plan_cli("catalog", "offers", "--format", "json", "--catalog", offers).out)
    row = next(r for r in rows if r["id"] == "h200-sxm-x8-buy-oem")
    assert row["purchase_usd"] == 1000 and row["source"] == "my quote"


def test_bad_user_catalog_exit_2(plan_cli, tmp_path):
    systems = tmp_path / "systems.csv"
    systems.write_text("id,name,accelerator,accelerators,scaleup_domain,power_kw,cooling,kind,source,as_of\n"
                       "x-x8,X,no-such-gpu,8,8,10,air,server,my own quote,2026-01-01\n")
    r = plan_cli("catalog", "systems", "--catalog", systems)
    assert r.code == 2 and "unknown accelerator 'no-such-gpu'" in r.err


def test_the_catalog_lists_its_hosted_apis_and_their_providers(plan_cli):
    """Hosted APIs could not be listed from the CLI, and their providers were missing from `plan
    catalog providers` (the new-user review): `plan catalog apis` lists every api_offers row with its
    token prices and source, and the providers listing names API-only providers with acquisition api."""
    rows = json.loads(plan_cli("catalog", "apis", "--format", "json").out)
    assert len(rows) >= 20 and all(r["source"] and r["usd_per_m_output_tokens"] >= 0 for r in rows)
    assert any(r["provider"] == "deepinfra" for r in rows)
    providers = {r["provider"]: r for r in json.loads(plan_cli("catalog", "providers", "--format", "json").out)}
    assert providers["deepinfra"]["acquisition"] == "api"
    assert "list prices per million tokens" in plan_cli("catalog", "apis").out
