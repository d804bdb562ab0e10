"""Issue 14: disaggregated serving across two system types (prefill on one, decode on another, the
KV cache over the network) as an option the MILP may choose: the plan names both systems and says
by how much the pair beats the best aggregated option, it loses where whole systems of two types
cost more, and the independent verifier re-derives both halves and the link between them."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from conftest import shipped_plan

from planner.app.planning import make_plan
from planner.data.catalog import load_catalog
from planner.data.consistency import resolve
from planner.data.jobs import Workload
from planner.data.scenario import Scenario
from planner.explain import splits
from planner.options import build, crossdisagg as cross_options, disagg as disagg_options
from planner.physics import crossdisagg
from planner.verify.plan import verify


def _rag(users: int) -> Scenario:
    return Scenario.model_validate({
        "name": "rag", "policy": {"acquisition": ["on-demand"], "accelerators": ["h100-sxm", "h200-sxm"]},
        "jobs": [{"name": "rag", "stage": "serve", "model": "llama-3.3-70b", "precision": "fp8",
                  "input_tokens": 8192, "output_tokens": 256, "context_tokens": 8448, "concurrent_users": users,
                  "min_tokens_per_s_per_user": 40, "max_ttft_s": 2}]})


def _halves(plan) -> dict[str, dict]:
    """role -> the plan's largest placement of that half (the plan may use more than one pair)."""
    out: dict[str, dict] = {}
    for p in plan["jobs"][0]["placements"]:
        role = (p.get("disaggregated") or {}).get("role")
        if role and p["replicas"] * p["accelerators_per_replica"] > (
                out[role]["replicas"] * out[role]["accelerators_per_replica"] if role in out else 0):
            out[role] = p
    return out


def test_kv_transfer_over_the_network_by_hand():
    cat = load_catalog()
    m = cat.models["llama-3.3-70b"]
    wl = Workload("fp8", "fp8", 8192, 256)
    h100, h200 = cat.systems["h100-sxm-x8"], cat.systems["h200-sxm-x8"]
    # 80 layers x 8 KV heads x 128 dims x (K, V) x 1 byte (fp8) x 8,192 tokens = 1.342 GB, over
    # min(1 x 50, 4 x 50) GB/s at 86% of line rate: 31.2 ms; TP2 prefill sends over two NICs
    assert crossdisagg.kv_network_s(m, wl, h100, 1, h200, 4) == pytest.approx(1.342177e9 / 43e9, rel=1e-4)
    assert crossdisagg.kv_network_s(m, wl, h100, 2, h200, 4) == pytest.approx(1.342177e9 / 86e9, rel=1e-4)
    # no scale-out network in the catalog (a 1-GPU cloud instance): no pair
    assert not crossdisagg.linked(cat.systems["h100-sxm-x1"], h200, cat.accelerators["h100-sxm"], cat.accelerators["h200-sxm"])


def test_prefill_half_meets_the_ttft_limit_with_its_queue_and_the_transfer():
    cat = load_catalog()
    m, acc = cat.models["llama-3.3-70b"], cat.accelerators["h100-sxm"]
    wl = Workload("fp8", "fp8", 8192, 256)
    loose = crossdisagg.prefill_half(m, acc, wl, 1, None, 0.03)
    tight = crossdisagg.prefill_half(m, acc, wl, 1, 2.0, 0.03)
    assert loose.rho == pytest.approx(0.7) and loose.ttft_s > 2.0
    assert tight.ttft_s == pytest.approx(2.0, rel=1e-9) and tight.rho < loose.rho
    assert tight.prompts_per_s == pytest.approx(tight.rho * tight.prompt_tokens_per_s / 8192)
    assert crossdisagg.prefill_half(m, acc, wl, 1, 0.5, 0.03) is None  # one prompt alone takes longer


def test_shipped_scenario_prefills_on_h100_decodes_on_h200_and_says_by_how_much():
    s, plan = shipped_plan("long-prompts.yaml", False)
    halves = _halves(plan)
    assert halves["prefill"]["system"] == "h100-sxm-x8" and halves["decode"]["system"] == "h200-sxm-x8"
    assert halves["prefill"]["users_per_replica"] == 0 and halves["decode"]["users_per_replica"] >= 100
    note = halves["decode"]["basis_note"]
    assert "prefill on h100-sxm-x8" in note and "decode on h200-sxm-x8" in note
    assert "less than the best aggregated option" in note
    # per pair, the prefill replicas admit the prompts the decode replicas' users send
    sides: dict[tuple, dict] = {}
    for p in plan["jobs"][0]["placements"]:
        h = p.get("disaggregated")
        if h:
            key = (h["prefill_system"], h["prefill_tensor_parallel"], h["decode_system"], h["decode_tensor_parallel"])
            sides.setdefault(key, {"prefill": 0.0, "decode": 0.0})[h["role"]] += p["replicas"] * h["prompts_per_s_per_replica"]
    assert sides and all(side["decode"] <= side["prefill"] for side in sides.values()), sides
    assert verify(plan, s, resolve(s)).ok


def test_the_prefill_half_is_explained_as_admitting_prompts_not_as_serving_no_users():
    _, plan = shipped_plan("long-prompts.yaml", "none")
    job = plan["jobs"][0]
    text = " ".join(job["why"]) + " " + " ".join(job["checks"].values())
    assert not re.search(r"(?<![\d,])0 (users per replica|concurrent sequences)", text)
    assert "prefill half of a pair across two system types: the first-token limit binds at 0.65 prompts/s" in text
    assert "benchmark prefill only of llama-3.3-70b" in text and "on h100-sxm the job is compute-bound" in text


def test_it_wins_by_a_sixth_at_400_users_and_loses_at_60(monkeypatch):
    split = make_plan(_rag(400), explain="none")
    small = make_plan(_rag(60), explain="none")
    assert _halves(split) and not _halves(small)
    # 60 users fill part of one system of each type: whole systems of one type cost less, not offered
    assert all(o.half is None for o in build.build(_rag(60), load_catalog()).serve["rag"])
    monkeypatch.setattr(cross_options, "MAX_PAIRS", 0)
    alone = make_plan(_rag(400), explain="none")
    assert not _halves(alone)
    saving = 1 - split["total_cost_usd_per_year"] / alone["total_cost_usd_per_year"]
    assert 0.15 < saving < 0.5, saving
    assert make_plan(_rag(60), explain="none")["total_cost_usd_per_year"] == small["total_cost_usd_per_year"]


def test_a_pair_is_offered_only_where_one_network_has_both_systems():
    """The KV cache crosses one site's scale-out fabric, never the internet between two providers
    (an expert's DeepSeek plan prefilled at CoreWeave and decoded on an Akash host with the KV in
    0.15 ms): with H100 nodes rented only from Lambda and H200 nodes only from GCP no pair is
    offered; from one provider that has both it is, priced at that provider's offers."""
    apart, one = _rag(400), _rag(400)
    apart.policy.providers, one.policy.providers = ["lambda", "gcp"], ["aws"]
    assert [o for o in build.build(apart, load_catalog()).serve["rag"] if o.half is not None] == []
    halves = [o for o in build.build(one, load_catalog()).serve["rag"] if o.half is not None]
    assert halves and all("both halves at one site" in o.basis_note and "(aws (us))" in o.basis_note for o in halves)
    plan = make_plan(one, explain="none")
    assert {p["offer"].split("-on-demand-")[1] for p in plan["jobs"][0]["placements"]} == {"aws"}
    more = _rag(400)  # a provider more (Lambda's H100 nodes cheaper than AWS's): never a dearer plan (the diff
    more.policy.providers = ["lambda", "aws"]  # review: AWS's H100 offer was dropped as dominated, and the pair with it)
    assert make_plan(more, explain="none")["total_cost_usd_per_year"] <= plan["total_cost_usd_per_year"] * (1 + 1e-6)


def test_short_prompts_at_a_loose_target_are_not_offered_a_pair():
    s = _rag(400)
    s.jobs[0].input_tokens, s.jobs[0].context_tokens, s.jobs[0].min_tokens_per_s_per_user = 512, 768, 10
    s.jobs[0].max_ttft_s = None
    opts = build.build(s, load_catalog())
    assert [o for o in opts.serve["rag"] if o.half is not None] == []


def _forged(mutate):
    s, plan = shipped_plan("long-prompts.yaml", False)
    plan = copy.deepcopy(plan)
    mutate(_halves(plan))
    return verify(plan, s, resolve(s))


@pytest.mark.parametrize("label, mutate, says", [
    ("a third of the prefill replicas gone", lambda h: h["prefill"].update(replicas=h["prefill"]["replicas"] * 2 // 3),
     "admits"),
    ("prefill admits twice the prompts", lambda h: h["prefill"]["disaggregated"].update(
        prompts_per_s_per_replica=h["prefill"]["disaggregated"]["prompts_per_s_per_replica"] * 2), "prompts/s a replica"),
    ("prefill half claims another pair", lambda h: h["prefill"]["disaggregated"].update(prefill_tensor_parallel=2),
     "not the prefill side of its pair"),
    ("KV transfer reported free", lambda h: h["decode"]["disaggregated"].update(kv_transfer_ms=0.0), "KV over the network"),
    ("decode replicas hold twice the users", lambda h: h["decode"].update(
        users_per_replica=h["decode"]["users_per_replica"] * 2), "users per replica"),
    ("decode half at another provider", lambda h: h["decode"].update(offer=next(
        o.id for o in load_catalog().offers.values() if o.system == h["decode"]["system"]
        and o.acquisition == "on-demand" and o.provider != load_catalog().offers[h["decode"]["offer"]].provider)),
     "not two"),
])
def test_forgery_of_a_split_is_caught(label, mutate, says):
    result = _forged(mutate)
    assert not result.ok, label
    assert any(says in f for f in result.failures), result.failures


def _mix() -> Scenario:
    s = _rag(400).model_dump(exclude_none=True)
    job = s["jobs"][0]
    for key in ("input_tokens", "output_tokens"):
        job.pop(key)
    job["request_mix"] = [{"input_tokens": 8192, "output_tokens": 256, "share": 0.7},
                          {"input_tokens": 4096, "output_tokens": 256, "share": 0.3}]
    return Scenario.model_validate(s)


def test_pooled_request_sizes_share_the_halves_and_verify(monkeypatch):
    s = _mix()
    plan = make_plan(s, explain="none")
    halves = [r for r in plan.get("pools", []) if "disaggregated" in r]
    assert {r["disaggregated"]["role"] for r in halves} == {"prefill", "decode"}
    prefill = [r for r in halves if r["disaggregated"]["role"] == "prefill"]
    assert {r["system"] for r in prefill} == {"h100-sxm-x8"}
    assert set().union(*(r["load"] for r in prefill)) == {"rag/8192x256", "rag/4096x256"}
    assert verify(plan, s, resolve(s)).ok
    # a part's prefill load cut by a third: its prompts are no longer admitted
    forged = copy.deepcopy(plan)
    part = next(p for p in forged["jobs"][0]["placements"] if p["part"] == "rag/8192x256"
                and (p.get("disaggregated") or {}).get("role") == "prefill")
    part["replica_load"] *= 2 / 3
    for r in forged["pools"]:
        if r.get("disaggregated", {}).get("role") == "prefill":
            r["load"]["rag/8192x256"] = part["replica_load"]
    result = verify(forged, s, resolve(s))
    assert not result.ok and any("admits" in f for f in result.failures), result.failures
    monkeypatch.setattr(cross_options, "MAX_PAIRS", 0)
    alone = make_plan(s, explain="none")
    assert alone["total_cost_usd_per_year"] > plan["total_cost_usd_per_year"] * 1.1


@pytest.mark.parametrize("cut, ok", [(0.00004, True), (0.01, False)])
def test_pooled_loads_are_read_to_their_four_decimals(cut, ok):
    # a pooled part's load is stated to 4 decimals: the link holds within that rounding, not beyond
    s = _mix()
    plan = copy.deepcopy(make_plan(s, explain="none"))
    for p in plan["jobs"][0]["placements"]:
        if (p.get("disaggregated") or {}).get("role") == "prefill":
            p["replica_load"] = round(p["replica_load"] - cut * (p["replica_load"] if not ok else 1), 6)
            for r in plan["pools"]:
                if r.get("disaggregated", {}).get("role") == "prefill" and p["part"] in r["load"]:
                    r["load"][p["part"]] = p["replica_load"]
    result = verify(plan, s, resolve(s))
    assert not any("admits" in f for f in result.failures) == ok, result.failures


def test_brief_names_both_halves():
    from planner.cli.brief import brief_text

    plan = shipped_plan("long-prompts.yaml", False)[1]
    out = brief_text(plan, 100)
    h = _halves(plan)
    said = (f"prefill on {h['prefill']['replicas']}x h100-sxm TP{h['prefill']['tensor_parallel']}, decode on "
            f"{h['decode']['replicas']}x h200-sxm TP{h['decode']['tensor_parallel']}")
    assert said in " ".join(out.split()), out  # (wrapped)


# --- a split considered and not chosen: one line on the job (explain.splits) ------------------------

def _cheapest_usd_per_accelerator_year(s, cat, system_id: str) -> float:
    """By hand: the cheapest on-demand hourly offer of the system, 24 h x 365 days, per accelerator."""
    hourly = min(o.price_usd_per_hour for o in cat.offers_for(system_id) if o.acquisition == "on-demand")
    return hourly * 24 * 365 / cat.systems[system_id].accelerators


def _dollars(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\$([\d,]+) per user-year|against \$([\d,]+)", text)
            for x in x if x]


def test_a_small_demand_is_told_the_one_system_split_it_was_offered_and_what_each_costs(plan_cli, tmp_path):
    """8 users of 8k-token prompts: the split inside one H100 node holds 21 users on 8 accelerators,
    cheaper per user than the plan's TP4 replicas of 7 users, but one whole node of it costs more."""
    s = _rag(8)
    cat = load_catalog()
    plan = make_plan(s, explain="none")
    job = plan["jobs"][0]
    assert not _halves(plan) and not any("basis_note" in p for p in job["placements"])
    split = [o for o in build.build(s, cat).serve["rag"] if o.basis_note.startswith("disaggregated:")]
    best = min(split, key=lambda o: o.accelerator_slots / o.users_per_replica)
    c = _cheapest_usd_per_accelerator_year(s, cat, best.system)
    # the plan holds one node of aggregated replicas (2x TP4 and TP2 + TP4 cost the same): its price
    # per user-year is each placement's accelerators per user at the cheapest offer, weighted by users
    chosen = job["placements"]
    assert sum(p["replicas"] * p["accelerators_per_replica"] for p in chosen) <= 8
    assert {p["tensor_parallel"] for p in chosen} <= {2, 4}
    served = sum(p["users_served"] for p in chosen)
    expected = sum(_cheapest_usd_per_accelerator_year(s, cat, p["system"]) * p["accelerators_per_replica"]
                   / p["users_per_replica"] * p["users_served"] for p in chosen) / served
    text = job["split_considered"]
    assert text.startswith("disaggregated prefill/decode was considered: the best split, ")
    assert f"on one h100-sxm-x8 ({best.users_per_replica} users on 8 accelerators)" in text
    split_usd, plan_usd = _dollars(text)
    assert split_usd == pytest.approx(c * 8 / best.users_per_replica, abs=0.5)
    assert plan_usd == pytest.approx(expected, abs=0.5)
    assert split_usd < plan_usd and "cheaper per user, but the solver, pricing the whole fleet" in text
    # where a user reads about the job: the text report's job section
    path = tmp_path / "rag.yaml"
    path.write_text(yaml.safe_dump(s.model_dump(mode="json", exclude_none=True)))
    r = plan_cli(str(path), "--explain", "none")
    assert r.code == 0, r.err
    assert f"- {text}" in " ".join(r.out.split())  # (prose wraps at the terminal width)


def test_a_pair_offered_and_not_chosen_is_priced_as_its_options_priced_it(monkeypatch):
    """400 users planned without any split (no pair, no split inside one node): the line names the
    cheapest pair offered at the figure its halves' basis note gives."""
    s, cat = _rag(400), load_catalog()
    opts = build.build(s, cat)
    pairs = [o for o in opts.serve["rag"] if o.half is not None]
    assert pairs
    monkeypatch.setattr(cross_options, "MAX_PAIRS", 0)
    monkeypatch.setattr(disagg_options, "configs", lambda *a, **k: [])
    alone = make_plan(s, explain="none")
    assert not any("basis_note" in p or "disaggregated" in p for p in alone["jobs"][0]["placements"])
    text = splits.line(alone["jobs"][0], s, cat, opts)
    cheapest = min(pairs, key=lambda o: _dollars(o.basis_note)[0])
    h = cheapest.half
    assert f"prefill on {h.prefill_system} TP{h.prefill_tp}, decode on {h.decode_system} TP{h.decode_tp}" in text
    assert _dollars(text)[0] == pytest.approx(_dollars(cheapest.basis_note)[0], abs=1.0)


def test_a_chosen_split_and_a_job_never_offered_one_say_nothing():
    assert all("split_considered" not in j for j in shipped_plan("long-prompts.yaml", "none")[1]["jobs"])
    s = _rag(400)
    s.jobs[0].input_tokens, s.jobs[0].context_tokens, s.jobs[0].min_tokens_per_s_per_user = 128, 384, 5
    s.jobs[0].max_ttft_s, s.jobs[0].model = None, "llama-3.1-8b"
    assert not any(o.half is not None or o.basis_note.startswith("disaggregated:")
                   for o in build.build(s, load_catalog()).serve["rag"])
    assert "split_considered" not in make_plan(s, explain="none")["jobs"][0]


def test_a_prefill_half_row_reads_prompts_per_second_not_users_or_tokens():
    from planner.cli.html import plan_html
    from planner.cli.render import plan_markdown, plan_text

    _, plan = shipped_plan("long-prompts.yaml", "none")
    prefill = _halves(plan)["prefill"]
    # the JSON keeps its keys and values
    assert prefill["users_per_replica"] == 0 and prefill["tokens_per_s_per_user"] > 0
    pps = f"prefill: {prefill['disaggregated']['prompts_per_s_per_replica']:.3g} prompts/s"
    rows = [line for line in plan_text(plan).splitlines() if line.rstrip().endswith(pps)]
    assert rows and all(re.search(r"\s1\s+-\s+-\s+-\s", line) for line in rows), rows  # PP, users, tok/s, h/run
    assert not any(re.search(r"\s0\s+\d+\.\d+\s", line) for line in rows)
    assert pps in plan_markdown(plan) and pps in plan_html(plan)
    decode = _halves(plan)["decode"]
    assert any(f"{decode['users_per_replica']}" in line and "decode-half" in line for line in plan_text(plan).splitlines())
