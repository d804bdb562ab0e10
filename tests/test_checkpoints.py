"""A job's model named as its Hugging Face checkpoint (data.checkpoints): read as the catalog's
architecture with a note, never guessed when the name could stand for several or none."""

from __future__ import annotations

import json

import pytest

from planner.data.catalog import load_catalog
from planner.data.checkpoints import catalog_model, stem


@pytest.fixture(scope="module")
def models():
    return load_catalog().models


@pytest.mark.parametrize("name, expected", [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Llama-3.1-70B-Instruct", "llama-3.1-70b"),
    ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "llama-3.3-70b"),  # a quantised checkpoint: its architecture
    ("Qwen/Qwen3-32B-FP8", "qwen3-32b"),
    ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
    ("google/gemma-3-27b-it", "gemma-3-27b"),
])
def test_a_checkpoint_name_stands_for_its_architecture(models, name, expected):
    assert catalog_model(name, models) == expected


@pytest.mark.parametrize("name", [
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",  # a distilled model is not its teacher's architecture
    "meta-llama/Llama-3.1-13B-Instruct",  # no such size
    "Llama-3",  # several sizes: not guessed
    "",
])
def test_a_name_that_stands_for_none_or_several_is_not_guessed(models, name):
    assert catalog_model(name, models) is None


def test_stem_drops_the_organisation_and_suffixes_only_at_the_end():
    assert stem("meta-llama/Llama-3.1-8B-Instruct-FP8") == "llama-3.1-8b"
    assert stem("mistralai/Mistral-7B-Instruct-v0.3") == "mistral-7b"
    assert stem("Qwen/Qwen3-30B-A3B") == "qwen3-30b-a3b"


def _scenario(tmp_path, model: str):
    path = tmp_path / "s.yaml"
    path.write_text("name: t\nsite: {ownership: cloud}\npolicy: {acquisition: [on-demand], providers: [lambda]}\n"
                    f"jobs: [{{name: a, stage: serve, model: '{model}', concurrent_users: 20}}]\n")
    return path


def test_a_scenario_naming_a_checkpoint_plans_its_architecture_with_a_note(plan_cli, tmp_path):
    named = plan_cli(_scenario(tmp_path, "meta-llama/Llama-3.1-8B-Instruct"), "--format", "json", "--no-timings",
                     "--quiet", "--explain", "none")
    assert named.code == 0, named.err
    assert ("note: jobs.0.model 'meta-llama/Llama-3.1-8B-Instruct' is read as 'llama-3.1-8b', the catalog's "
            "architecture of that checkpoint") in named.err
    by_id = plan_cli(_scenario(tmp_path, "llama-3.1-8b"), "--format", "json", "--no-timings", "--quiet",
                     "--explain", "none")
    plan, same = json.loads(named.out), json.loads(by_id.out)
    assert plan["jobs"][0]["model"] == "llama-3.1-8b"
    assert plan["total_cost_usd_per_year"] == pytest.approx(same["total_cost_usd_per_year"], rel=1e-9)


def test_an_unknown_checkpoint_is_exit_2_with_the_close_ids(plan_cli, tmp_path):
    res = plan_cli("validate", _scenario(tmp_path, "meta-llama/Llama-3.1-13B-Instruct"))
    assert res.code == 2
    assert "unknown model 'meta-llama/Llama-3.1-13B-Instruct'" in res.err and "'llama-3.1-8b'" in res.err


def test_estimate_reads_a_checkpoint_name(plan_cli):
    res = plan_cli("estimate", "--model", "Qwen/Qwen3-8B", "--accelerator", "l40s", "--format", "json")
    assert res.code == 0, res.err
    assert json.loads(res.out)["model"] == "qwen3-8b" and "'Qwen/Qwen3-8B' is read as 'qwen3-8b'" in res.err


def test_a_job_without_a_precision_serves_its_model_as_published(plan_cli, tmp_path):
    # the serving review: DeepSeek-R1 was planned in BF16 (1,256 GiB of weights) and Qwen3-32B-FP8 as BF16
    def planned(model: str, extra: str = "") -> dict:
        path = tmp_path / "s.yaml"
        path.write_text("name: t\nsite: {ownership: cloud}\npolicy: {acquisition: [on-demand]}\n"
                        f"jobs: [{{name: j, stage: serve, model: {model}, concurrent_users: 5{extra}}}]\n")
        res = plan_cli(path, "--format", "json", "--quiet", "--explain", "none")
        assert res.code == 0, res.err
        return json.loads(res.out)

    r1 = planned("deepseek-ai/DeepSeek-R1-0528")
    assert any("served at fp8, as deepseek-r1's published weights (fp8)" in n for n in r1["notes"])
    assert r1["jobs"][0]["placements"][0]["weights_gb"] * r1["jobs"][0]["placements"][0]["accelerators_per_replica"] < 700
    qwen = planned("Qwen/Qwen3-32B-FP8")
    assert any("served at fp8, as its checkpoint's name (Qwen/Qwen3-32B-FP8)" in n for n in qwen["notes"])
    assert "qwen3-32b (fp8" in qwen["jobs"][0]["checks"]["run_it"]
    told = planned("deepseek-ai/DeepSeek-R1-0528", ", precision: bf16")  # what the job says, it gets
    assert not any("is not set" in n for n in told.get("notes", []))
    assert "served at" not in json.dumps(planned("meta-llama/Llama-3.1-8B-Instruct").get("notes", []))
