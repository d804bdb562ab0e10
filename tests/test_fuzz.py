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
