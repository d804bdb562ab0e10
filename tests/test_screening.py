"""The N+1 search (planner/milp/screening.py): a plan first, the pools it proves unused closed, then
CBC with that plan's cost as cutoff. It must end on the optimum CBC alone proves, close only pools
that every cheaper plan leaves unused, and report a plan it could not prove as feasible."""

from __future__ import annotations

import sys
import time

import pytest

from planner.app import planning
from planner.data import deadline
from planner.data.scenario import Scenario
from planner.milp import fleet, screening
from planner.milp.solve import SolveResult, solve

SERVE = dict(stage="serve", precision="fp8", output_tokens=512, hours_per_day=24)
JOBS = [
    {"name": "chat-gemma", "model": "gemma-3-27b", "context_tokens": 8192, "input_tokens": 1024,
     "concurrent_users": 10, "min_tokens_per_s_per_user": 20, **SERVE},
    {"name": "tune-qwen32", "stage": "finetune", "model": "qwen3-32b", "method": "lora", "dataset_tokens": 1e7,
     "runs_per_year": 52, "max_hours_per_run": 48},
    {"name": "rag-qwen32", "model": "qwen3-32b", "context_tokens": 32768, "input_tokens": 4096,
     "concurrent_users": 100, "min_tokens_per_s_per_user": 30, **SERVE},
    {"name": "docs-qwen8", "model": "qwen3-8b", "context_tokens": 32768, "input_tokens": 4096,
     "concurrent_users": 30, "min_tokens_per_s_per_user": 10, **{**SERVE, "hours_per_day": 12}},
    {"name": "chat-llama8", "model": "llama-3.1-8b", "precision": "bf16", "context_tokens": 32768,
     "input_tokens": 4096, "concurrent_users": 100, "min_tokens_per_s_per_user": 20,
     **{k: v for k, v in SERVE.items() if k != "precision"}},
    {"name": "agent-oss120", "model": "gpt-oss-120b", "context_tokens": 8192, "input_tokens": 1024,
     "concurrent_users": 10, "min_tokens_per_s_per_user": 10, **SERVE},
    {"name": "support-qwen32", "model": "qwen3-32b", "context_tokens": 4096, "input_tokens": 512,
     "concurrent_users": 100, "min_tokens_per_s_per_user": 10, **SERVE},
]
BODY = {"name": "n-plus-one", "site": {"kind": "datacenter"},
        "policy": {"acquisition": ["buy"], "stacks": ["cuda"], "redundancy": "n+1"}, "jobs": JOBS}


def _model(redundancy: str = "n+1"):
    s = Scenario.model_validate({**BODY, "policy": {**BODY["policy"], "redundancy": redundancy}})
    cat, opts = planning.prepare(s)
    return fleet.build(s, cat, opts)


@pytest.fixture(scope="module")
def alone():
    """The plan of CBC alone on the full model (no screening)."""
    with deadline.budget(300):
        fm = _model()
        return solve(fm, time_limit_s=120)


def test_without_n_plus_1_the_pools_are_the_offers_bought_and_the_optimum_the_same(monkeypatch):
    """No spares: a pool is open when its offer has a system bought (p >= 1). This fleet is below
    the size where that pays (CBC alone is searched), so the floor is lowered to test it."""
    with deadline.budget(300):
        fm = _model("none")
        assert not fm.u and screening.pools(fm) == fm.p and not screening.eligible(fm)
        monkeypatch.setattr(screening, "MIN_COLUMNS_PURCHASES", 0)
        assert screening.eligible(fm)
        res = screening.search(fm, time_limit_s=120)
        cbc = solve(_model("none"), time_limit_s=120)
    assert res.status == cbc.status == "optimal"
    assert res.objective == pytest.approx(cbc.objective, rel=1e-3)


def test_the_screened_search_ends_on_the_optimum_cbc_alone_proves(alone, monkeypatch):
    closed = []
    real = screening._screen

    def spy(*args):
        got = real(*args)
        closed.extend(k for k, v in got.items() if v == 0)
        return got

    monkeypatch.setattr(screening, "_screen", spy)
    with deadline.budget(300):
        res = screening.search(_model(), time_limit_s=120)
    assert alone.status == res.status == "optimal"
    assert res.objective == pytest.approx(alone.objective, rel=1e-3)
    assert len(closed) >= 5  # pools proven unused: the search ran on a smaller model


def test_every_pool_it_closes_costs_more_than_its_plan_when_opened():
    """Checked apart from HiGHS: CBC's own LP relaxation with the closed pool's spare forced open."""
    fixed = {}
    real = screening._screen

    with deadline.budget(300):
        fm = _model()

        def keep(*args):
            fixed.update(real(*args))
            return fixed

        screening._screen, saved = keep, screening._screen
        try:
            res = screening.search(fm, time_limit_s=120)
        finally:
            screening._screen = saved
        closed = sorted((k for k, v in fixed.items() if v == 0), key=repr)
        assert closed and res.ok
        for k in closed[:4]:
            fm.u[k].lowBound = 1
            try:
                lp = solve(fm, mip=False)
            finally:
                fm.u[k].lowBound = 0
            assert lp.status == "infeasible" or lp.objective > res.objective, (k, lp.objective, res.objective)


def test_without_highspy_the_search_is_cbc_alone_and_the_plan_the_same(alone, monkeypatch):
    monkeypatch.setitem(sys.modules, "highspy", None)  # import highspy raises ImportError
    assert screening.relaxation(_model().prob) is None
    with deadline.budget(300):
        res = screening.search(_model(), time_limit_s=120)
    assert res.status == "optimal" and res.objective == pytest.approx(alone.objective, rel=1e-3)


def _final_search_answers(monkeypatch, answer):
    """screening's CBC runs as they are, except the last (the one with a cutoff): it answers `answer`."""
    real = screening.solve

    def fake(fm, *args, cutoff=None, **kwargs):
        if cutoff is not None:
            return answer
        return real(fm, *args, **kwargs)

    monkeypatch.setattr(screening, "solve", fake)


def test_nothing_below_the_cutoff_proves_the_first_plan_optimal(alone, monkeypatch):
    _final_search_answers(monkeypatch, SolveResult("infeasible", 0.1, None, None, "cbc"))
    with deadline.budget(300):
        res = screening.search(_model(), time_limit_s=120)
    assert res.status == "optimal" and res.gap == pytest.approx(0.001)
    assert res.objective >= alone.objective * (1 - 1e-6) and res.values
    assert res.solver == screening.FIRST_NAME  # step 3's plan (HiGHS's), named so


def test_a_solve_by_another_engine_reads_its_bound_with_the_objectives_constant(alone):
    """solve(engine="highs") on a model whose scenario asks for CBC: HiGHS's plan, and its dual
    bound (the objective's constant added back) below the plan and within the gap asked of it."""
    with deadline.budget(300):
        fm = _model()
        res = solve(fm, time_limit_s=120, gap=0.01, engine="highs")
    assert fm.scenario.solver.name == "cbc" and res.solver == "highs" and res.ok
    assert res.objective == pytest.approx(alone.objective, rel=0.011)
    assert res.bound is not None and res.objective * (1 - 0.0101) <= res.bound <= res.objective * (1 + 1e-9)


def test_a_final_search_stopped_by_the_clock_leaves_a_feasible_plan_with_its_gap(alone, monkeypatch):
    _final_search_answers(monkeypatch, SolveResult("not-solved", 5.0, None, None, "cbc", cut_short=True,
                                                   bound=alone.objective * 0.97))
    with deadline.budget(300):
        res = screening.search(_model(), time_limit_s=120)
    assert res.status == "feasible" and res.cut_short
    assert res.bound <= res.objective and res.bound <= alone.objective * (1 + 1e-6)
    assert res.gap == pytest.approx((res.objective - res.bound) / res.objective)


def test_a_warm_start_that_is_a_plan_is_the_incumbent_and_one_that_breaks_a_row_is_not(alone):
    """A lifted cap's re-plan starts from the plan: that start is taken as the incumbent (no dive)
    only when it meets every row; its cost is then what the screen compares against."""
    with deadline.budget(300):
        fm = _model()
        for v in fm.prob.variables():
            v.setInitialValue(round(alone.values.get(v.name, 0.0)) if v.cat != "Continuous"
                              else alone.values.get(v.name, 0.0))
        start = screening.start_plan(fm)
        assert start is not None and start.objective == pytest.approx(alone.objective, rel=1e-6)
        res = screening.search(fm, time_limit_s=120, warm=True, spares_only=True)
        assert res.status == "optimal" and res.objective == pytest.approx(alone.objective, rel=1e-3)
        bought = next(v for v in fm.p.values() if (v.varValue or 0) >= 1)
        bought.setInitialValue(0)  # one system fewer than the plan needs: a row is broken
        assert screening.start_plan(fm) is None


def test_the_final_search_starts_from_the_first_plan_unless_node_limited(monkeypatch):
    """Step 5 (CBC with the cutoff) gets the incumbent as its start (warm, the model's values at
    it), so its improvement heuristics have a plan to search around; an explanation's node-limited
    re-plan (max_nodes) starts cold, as before."""
    real, calls = screening.solve, []

    def spy(fm, *args, cutoff=None, **kwargs):
        if cutoff is not None:
            values = {v.name: v.varValue for v in fm.prob.variables()}
            calls.append((kwargs.get("warm"), kwargs.get("max_nodes"), values))
        return real(fm, *args, cutoff=cutoff, **kwargs)

    monkeypatch.setattr(screening, "solve", spy)
    with deadline.budget(300):
        started = time.perf_counter()
        res = screening.search(_model(), time_limit_s=120)
        took = time.perf_counter() - started
        screening.search(_model(), time_limit_s=120, max_nodes=300)
    (warm, nodes, values), (warm_limited, _, _) = calls
    assert 0 < res.seconds <= took  # (the search's own time, as the plan reports it)
    assert warm is True and nodes is None and warm_limited is False
    fm = _model()
    first = screening.start_plan(fm, values)  # the start handed to CBC is a plan of the model
    assert first is not None and first.objective > 0


def test_on_a_slow_machine_the_pool_search_leaves_the_plan_its_time(alone, monkeypatch):
    """Steps 1-2 are bounded by LPs (the same answer on any machine) and by STEPS_SHARE of the
    search's limit, step 4 by SCREEN_SHARE: with each LP 0.2 s slower (a machine far slower than
    this one; the search solves 84 LPs here), it still ends near its limit with a plan."""
    from planner.milp import relaxation

    real = relaxation.Relaxation.solve

    def slow(self, *args, **kwargs):
        time.sleep(0.2)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(relaxation.Relaxation, "solve", slow)
    with deadline.budget(300):
        fm = _model()
        started = time.perf_counter()
        res = screening.search(fm, time_limit_s=3)
        took = time.perf_counter() - started
    assert res.ok and res.objective <= alone.objective * 1.05
    assert took < 3 + 1.5  # (an LP past the clock, and CBC's last search may overrun by a cut pass)
