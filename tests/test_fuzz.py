"""Property-based: random valid scenarios end in a verified plan (exit 0) or a diagnosed
infeasibility (exit 3); random invalid ones in exit 2 with a message; never a traceback.

A small fixed-seed sample (derandomized hypothesis); benchmarks/fuzz.py runs thousands."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.app.fuzzgen import invalid_scenario, run_mapping, valid_scenario

SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=16, **SETTINGS)
@given(st.randoms(use_true_random=False))
def test_valid_scenarios_end_in_a_verified_plan_or_a_diagnosis(rng):
    scenario = valid_scenario(rng)
    code, message = run_mapping(scenario, time_limit_s=5)
    assert code != -1, f"traceback for {scenario}:\n{message}"
    assert code != 1, f"plan failed verification for {scenario}:\n{message}"
    assert code in (0, 3, 4), (code, message, scenario)
    assert message
    if code == 3:
        assert message.startswith(("no plan meets every constraint", "job '")), message


@settings(max_examples=24, **SETTINGS)
@given(st.randoms(use_true_random=False))
def test_invalid_scenarios_end_in_exit_2_with_a_message(rng):
    scenario = invalid_scenario(rng)
    code, message = run_mapping(scenario, time_limit_s=5)
    assert code == 2, (code, message, scenario)
    assert "Traceback" not in message and len(message) > 10


def test_explanations_the_plans_own_numbers_contradict_are_caught():
    """The fuzzer's check on explanations: bank.yaml's hold together; a next-best fleet cheaper than
    the plan's proven bound, a forced accelerator likewise, or N+1 said to bind at no saving do not."""
    import copy

    from conftest import shipped_plan

    from planner.app.fuzzgen import explanation_faults

    _, plan = shipped_plan("bank.yaml")
    assert explanation_faults(plan) == []
    bad = copy.deepcopy(plan)
    base = bad["total_cost_usd_per_year"]
    bad["next_best"]["cost_usd_per_year"] = base * 0.9
    forced = next(a for a in bad["alternatives"] if a.get("basis") == "milp")
    forced["cost_delta_usd_per_year"] = -0.05 * base
    row = next(e for e in bad["explanations"] if e["family"] == "redundancy")
    row["shadow_price"] = -5.0
    faults = explanation_faults(bad)
    assert len(faults) == 3, faults
    assert faults[0].startswith("next-best fleet $122,104/yr below the plan's bound")
    assert faults[1].startswith(f"forced {forced['accelerator']} $128,887/yr below")
    assert faults[2].startswith("policy.redundancy said to bind at price -5.0")
