"""One memory unit everywhere: the catalog's memory_gb is the vendor's label, a binary size (an
"80 GB" H100 shows 81,559 MiB), and plans, estimates, fine-tuning and explanations state memory in
that unit (GiB), labelled, so an accelerator's capacity reads as its catalog label."""

from __future__ import annotations

import json

from conftest import shipped_plan


def test_serving_and_finetuning_state_capacity_as_the_catalog_label(plan_cli):
    serve = json.loads(plan_cli("estimate", "--model", "llama-3.1-70b", "--accelerator", "h200-sxm",
                                "--precision", "fp8", "--format", "json").out)
    assert serve["memory_gb_capacity"] == 141  # not 151.4 (141 x 2^30 bytes / 1e9)
    assert 65 < serve["weights_gb"] < 68  # 70.6e9 bytes of fp8 weights = 65.8 GiB
    tune = json.loads(plan_cli("estimate", "--model", "llama-3.1-8b", "--accelerator", "rtx-pro-6000", "--stage",
                               "finetune", "--method", "qlora", "--format", "json").out)
    serve96 = json.loads(plan_cli("estimate", "--model", "llama-3.1-8b", "--accelerator", "rtx-pro-6000",
                                  "--format", "json").out)
    assert tune["memory_gb_capacity"] == serve96["memory_gb_capacity"] == 96  # not 103.1 beside 96


def test_plans_label_memory_in_gib_and_agree_with_the_catalog(plan_cli):
    s, plan = shipped_plan("bank.yaml")
    from planner.data.catalog import load_catalog

    cat = load_catalog()
    for job in plan["jobs"]:
        for p in job["placements"]:
            assert p["memory_gb_capacity"] == cat.accelerators[p["accelerator"]].memory_gb
            assert p["memory_gb_per_accelerator"] <= p["memory_gb_capacity"]
    text = plan_cli("scenarios/bank.yaml", "--quiet").out
    assert "GiB weights +" in text and "usable GB" not in text and "mem GiB" in text
    listing = plan_cli("catalog", "accelerators").out
    assert "binary GB (GiB" in listing

