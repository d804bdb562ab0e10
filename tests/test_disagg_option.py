"""Issue 14: disaggregated serving as an option the MILP may choose (options.disagg): offered when
a prefill pool plus a decode pool inside one system serves more users per accelerator than every
aggregated split there; the plan's placement says what it is and by how much it wins, and the
independent verifier re-derives it."""

from __future__ import annotations

from planner.app.planning import make_plan
from planner.data.catalog import load_catalog
from planner.data.consistency import resolve
from planner.data.scenario import Scenario
from planner.options import build
from planner.options import disagg as disagg_options
from planner.physics import disagg, serving
from planner.verify.plan import verify


def _scenario(tps: float) -> Scenario:
    return Scenario.model_validate({
        "name": "rag-70b", "horizon_years": 1,
        "site": {"ownership": "cloud"},
        "policy": {"acquisition": ["on-demand"], "stacks": ["cuda"]},
        "jobs": [{"name": "rag", "stage": "serve", "model": "llama-3.1-70b", "precision": "fp8",
                  "kv_precision": "fp8", "input_tokens": 3000, "output_tokens": 150,
                  "concurrent_users": 400, "min_tokens_per_s_per_user": tps}]})


def test_offered_at_a_tight_speed_target_with_its_gain_and_not_at_a_loose_one():
    cat = load_catalog()
    m, acc = cat.models["llama-3.1-70b"], cat.accelerators["h100-sxm"]
    system = next(s for s in cat.systems.values() if s.accelerator == "h100-sxm" and s.accelerators == 8)
    w = serving.Workload("fp8", "fp8", 3000, 150)
    tight, _ = build.serve_configs(m, acc, system, w, 40.0, None, "d")
    got = disagg_options.configs(m, acc, system, w, 40.0, None, "d", tight, build.replica_slots)
    assert len(got) == 1
    o = got[0]
    pools = disagg.parse_note(o.basis_note)
    assert pools and pools[0] * pools[1] + pools[2] * pools[3] == o.accelerators_per_replica <= 8
    assert o.tokens_per_s_per_user >= 40.0 and "x the users per accelerator" in o.basis_note
    best = max(t.users_per_replica / t.accelerator_slots for t in tight)
    assert o.users_per_replica / o.accelerator_slots > 1.3 * best
    loose, _ = build.serve_configs(m, acc, system, w, 5.0, None, "d")
    assert disagg_options.configs(m, acc, system, w, 5.0, None, "d", loose, build.replica_slots) == []


def test_the_plan_chooses_it_says_so_and_verifies():
    s = _scenario(40.0)
    plan = make_plan(s, explain="none")
    places = plan["jobs"][0]["placements"]
    split = [p for p in places if disagg.parse_note(p.get("basis_note", ""))]
    assert split, [p.get("basis_note") for p in places]
    assert any("disaggregated" in w for w in plan["jobs"][0]["why"])
    result = verify(plan, s, resolve(s))
    assert result.ok, result.failures
