"""A new user's first steps: the provider list, starter templates, schema descriptions, examples of
own quotes, price overrides and inline models, forgiving ids, and warnings about empty choices."""

from __future__ import annotations

import json

from conftest import SCENARIOS


def test_catalog_providers_lists_every_provider_with_regions_offers_and_modes(plan_cli):
    res = plan_cli("catalog", "providers", "--format", "json")
    assert res.code == 0, res.err
    rows = {r["provider"]: r for r in json.loads(res.out)}
    assert {"aws", "oem", "hyperstack"} <= set(rows)
    assert rows["aws"]["regions"] == "us-east-1" and rows["aws"]["offers"] >= 1
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
