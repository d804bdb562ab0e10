"""The price rows' wording (explain/narrative.py): a job whose systems are all rented by the hour is
priced as renting, whatever the fleet owns; an RL job's trainer price names the key that sizes it
(train_tokens_per_day: RL jobs have no runs_per_year)."""

from __future__ import annotations

import json

from conftest import planned_json, shipped_plan

SCENARIO = """\
name: wording
site: {ownership: colo, region: us}
policy: {acquisition: [buy, on-demand], stacks: [cuda]}
jobs:
  - {name: chat, stage: serve, model: llama-3.1-8b, concurrent_users: 400}
  - {name: tune, stage: finetune, model: llama-3.1-8b, method: lora, dataset_tokens: 20000000, runs_per_year: 4,
     max_hours_per_run: 24}
  - {name: grpo, stage: rl, model: llama-3.1-8b, method: lora, rollout_tokens_per_s: 2000, rollout_context_tokens: 4096,
     min_tokens_per_s_per_rollout: 20, train_tokens_per_day: 100000000, colocate: false}
"""


def test_rented_jobs_and_rl_trainers_are_priced_in_their_own_words(plan_cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    res = plan_cli(path, "--format", "json", "--no-timings", "--quiet")
    assert res.code == 0, res.err
    rows = {e["constraint"]: e["message"] for e in json.loads(res.out)["explanations"]}
    assert "jobs.grpo.runs_per_year" not in rows, rows.keys()
    assert "one more training day of 'grpo/trainer' costs $" in rows["jobs.grpo.train_tokens_per_day"]
    assert "renting by the hour, as the plan does for it" in rows["jobs.tune.runs_per_year"]
    assert not any("with the fleet you own" in m for m in rows.values())


def test_fp8_weights_on_an_accelerator_without_fp8_matmuls_are_benchmarked_weight_only(plan_cli, tmp_path):
    """Ampere has no FP8 tensor cores (catalog fp8_tflops empty): the plan's 'run it' check says the
    weights run W8A16 with weight-only kernels, not 'fp8 ... with TensorRT-LLM'; on Hopper it does not."""
    runs = {acc: planned_json(plan_cli, tmp_path / f"{acc}.yaml",
                              f"name: w\nsite: {{ownership: cloud}}\npolicy: {{acquisition: [on-demand], accelerators: [{acc}]}}\n"
                              "jobs: [{name: a, stage: serve, model: llama-3.1-8b, precision: fp8, concurrent_users: 20}]\n"
                              )["jobs"][0]["checks"]["run_it"] for acc in ("a100-80gb", "h100-sxm")}
    assert "weight-only: a100-80gb has no fp8 matmuls, so they run as W8A16" in runs["a100-80gb"], runs
    assert "Marlin" in runs["a100-80gb"] and "TensorRT-LLM" not in runs["a100-80gb"]
    assert "weight-only" not in runs["h100-sxm"] and "(fp8 weights, fp8 KV: on vLLM pass --kv-cache-dtype fp8, its default is 16-bit) with vLLM or TensorRT-LLM" in runs["h100-sxm"]


def test_a_token_price_says_it_counts_the_peak_load_all_day_unless_active_fraction_says_otherwise(plan_cli, tmp_path):
    body = ("name: w\nsite: {ownership: cloud}\npolicy: {acquisition: [on-demand], accelerators: [h100-sxm]}\n"
            "jobs: [{name: a, stage: serve, model: llama-3.1-8b, precision: fp8, requests_per_s: 5%s}]\n")
    checks = [planned_json(plan_cli, tmp_path / "s.yaml", body % extra)["jobs"][0]["checks"]["unit_cost"]
              for extra in ("", ", active_fraction: 0.3")]
    assert "tokens counted at the peak load for all 24 h a day" in checks[0] and "active_fraction" in checks[0]
    assert "peak load" not in checks[1]


def test_an_api_served_jobs_unit_cost_says_token_prices_not_capital(tmp_path, plan_cli):
    """A job on a hosted API printed 'capital, power and hosting included' (the new-user review); it
    says the API's token prices, and no peak-load caveat (an API's price per token does not move
    with the load); a rented job says rental prices; a bought one keeps its capital."""
    from conftest import planned_json

    text = ("name: support\nsite: {ownership: cloud}\npolicy: {acquisition: [api], stacks: [cuda]}\n"
            "jobs:\n  - {name: chatbot, stage: serve, model: llama-3.3-70b, precision: fp8, concurrent_users: 150,"
            " input_tokens: 800, output_tokens: 250, max_tpot_ms: 40, max_ttft_s: 1.5}\n")
    plan = planned_json(plan_cli, tmp_path / "api.yaml", text)
    (job,) = plan["jobs"]
    assert job.get("api") and not job["placements"], job
    assert job["checks"]["unit_cost"].endswith("per concurrent user-year at the API's token prices")
    bank = shipped_plan("bank.yaml")[1]["jobs"][0]["checks"]["unit_cost"]
    assert "capital, power and hosting included" in bank


def test_a_part_day_rental_of_whole_nodes_says_what_it_assumes(plan_cli, tmp_path):
    """On-demand rentals are charged for hours_per_day only, which assumes an 8-GPU node can be given
    back each evening and won again each morning (the new-user review): the plan says so, and a job
    running 24 h a day gets no such line."""
    text = ("name: part-day\nsite: {ownership: cloud}\npolicy: {acquisition: [on-demand], stacks: [cuda], "
            "providers: [lambda]}\njobs:\n  - {name: office, stage: serve, model: llama-3.1-405b, precision: fp8, "
            "concurrent_users: 100, min_tokens_per_s_per_user: 20, hours_per_day: 10}\n")
    path = tmp_path / "pd.yaml"
    path.write_text(text)
    out = " ".join(plan_cli(path, "--explain", "none").out.split())
    assert "only 10 h a day: that assumes the capacity is given back each day and won again the next" in out
    path.write_text(text.replace("hours_per_day: 10", "hours_per_day: 24"))
    assert "given back each day" not in " ".join(plan_cli(path, "--explain", "none").out.split())


def test_an_edge_jobs_unit_cost_says_it_holds_the_devices_capital_and_support(plan_cli, tmp_path):
    """300 robots' devices: the unit cost read 'at the planned batch, capital, power and hosting
    included' (the expert review) where it holds the devices' capital and support only."""
    path = tmp_path / "robots.yaml"
    text = ("name: robots\nhorizon_years: 3\nsite: {ownership: on-prem}\npolicy: {acquisition: [buy]}\njobs:\n"
                    "  - {name: brain, stage: edge, model: qwen3-8b, device: robot, devices: 300, precision: fp4, "
                    "context_tokens: 8192, min_tokens_per_s: 15}\n")
    plan = planned_json(plan_cli, path, text)
    job = plan["jobs"][0]
    assert set(plan["cost_breakdown_usd_per_year"]) == {"capital", "support"}, plan["cost_breakdown_usd_per_year"]
    unit = job["checks"]["unit_cost"]
    assert "capital and support included" in unit and "hosting" not in unit and "planned batch" not in unit, unit


def test_a_trainer_beside_serving_on_one_system_is_said_to_run_beside_it(plan_cli, tmp_path):
    """An RL trainer on 4 of a b300-x8's 8 accelerators beside serving on the other 4 read 'batch runs
    take 4 at a time, in the hours serving leaves' (the expert review: it runs at the same time); where
    serving fills the system the runs take the hours it leaves."""
    path = tmp_path / "rl.yaml"
    path.write_text("name: rl\nhorizon_years: 2\nsite: {ownership: colo, power_usd_per_kwh: 0.11, cooling: air}\n"
                    "policy: {acquisition: [buy, on-demand, reserved-1y], stacks: [cuda], accelerators: [b300, rtx-pro-6000]}\njobs:\n"
                    "  - {name: grpo, stage: rl, model: qwen3-32b, method: full, precision: bf16, rollout_tokens_per_s: 40000,"
                    " rollout_context_tokens: 16384, min_tokens_per_s_per_rollout: 20, train_tokens_per_day: 1.0e9}\n"
                    "  - {name: product, stage: serve, model: qwen3-32b, precision: fp8, context_tokens: 16384,"
                    " concurrent_users: 300, min_tokens_per_s_per_user: 30, max_ttft_s: 2}\n")
    res = plan_cli(path, "--format", "json")
    assert res.code == 0, res.err
    rows = [e["message"] for e in json.loads(res.out)["explanations"] if "batch runs take" in e["message"]]
    assert rows, "no system row hosts batch runs"
    for m in rows:
        used, per = (int(x) for x in m.split(" accelerators busy")[0].rsplit("; ", 1)[1].split(" of "))
        runs = int(m.split("batch runs take ")[1].split(" at a time")[0])
        said = "beside serving, on accelerators it leaves free" if used + runs <= per else "in the hours serving leaves"
        assert said in m, m
    assert any("beside serving" in m for m in rows), rows
