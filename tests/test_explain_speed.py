"""How the explanations save solver runs without changing an answer: independent LPs solved as one
block-diagonal LP, a raised target's configurations searched for that job only, and the variant
MILPs' share of the time (a variant it leaves out is said so, in the plan and its words)."""

from __future__ import annotations

import json

import pytest
from conftest import SCENARIOS

from planner.app.pipeline import plan_scenario
from planner.cli import render as report
from planner.data import consistency as checks
from planner.data.scenario import load_scenario
from planner.explain import batch, narrative, replan, restricted, whynot
from planner.milp import fleet as model
from planner.milp.solve import SolveResult, solve
from planner.options import build as options


def _forced_models(name: str):
    s = load_scenario(SCENARIOS / name)
    cat = checks.resolve(s, ())
    opts = options.build(s, cat)
    out = []
    for acc in sorted(restricted.accelerators_with_options(opts)):
        fm = model.build(s, cat, restricted.only_on(opts, acc))
        rows = whynot.force_terms(fm, acc)
        if rows:
            fm.prob.addConstraint(sum(rows) >= 1, "variant0")
            out.append(fm)
    return out


@pytest.mark.parametrize("name", ["bank.yaml", "traffic-mix.yaml"])
def test_lps_solved_together_give_each_lp_its_own_optimum(name):
    models = _forced_models(name)
    assert len(models) >= 3
    alone = [solve(fm, gap=0.0, mip=False) for fm in models]
    together = batch.solve_lps(models)
    for fm, a, t in zip(models, alone, together):
        assert a.status == t.status
        if a.ok:
            assert t.objective == pytest.approx(a.objective, rel=1e-7, abs=1e-6)
            # the point read back is the block's own, under its own variable names
            assert set(t.values) == {v.name for v in fm.prob.variables()}


def test_an_infeasible_lp_among_them_is_found_and_the_others_keep_their_optimum():
    models = _forced_models("bank.yaml")[:4]
    v = models[1].prob.variables()[0]
    models[1].prob.addConstraint(v >= 10 ** 9, "impossible")  # no fleet that large fits its bounds
    alone = [solve(fm, gap=0.0, mip=False) for fm in models]
    together = batch.solve_lps(models)
    assert [r.status for r in together] == [r.status for r in alone]
    assert not together[1].ok and not alone[1].ok  # (CBC calls an LP infeasible in presolve "not solved")
    for a, t in zip(alone, together):
        if a.ok:
            assert t.objective == pytest.approx(a.objective, rel=1e-7, abs=1e-6)


def test_lps_past_the_time_limit_are_neither_built_together_nor_halved(monkeypatch):
    """Once the time limit has passed, the explanations' LPs are left out at once, said cut short:
    a joint LP the time stopped was halved down to single models, each rebuilt and started past the
    limit (500 generated jobs, limit 60 s: the command ended at 75 s; now 62 s)."""
    from planner.data import deadline

    models = _forced_models("bank.yaml")[:4]
    built = []
    monkeypatch.setattr(batch, "joint", lambda *a, **k: built.append(len(a[0])))
    with deadline.budget(1e-9) as b:
        deadline.step("explanations")
        got = batch.solve_lps(models)
        cuts = list(b.cuts)
    assert built == [] and [r.status for r in got] == ["not-solved"] * 4 and all(r.cut_short for r in got)
    assert cuts == ["explanations"]


def test_small_milps_solved_together_are_each_proven_optimal():
    models = [fm for fm in _forced_models("bank.yaml") if len(fm.prob.variables()) <= 50][:5]
    assert len(models) >= 2
    alone = [solve(fm, gap=0.0) for fm in models]
    together = batch.joint(models, 60, mip=True, max_nodes=300)
    assert together is not None
    for a, t in zip(alone, together):
        assert a.status == t.status == "optimal"
        assert t.objective == pytest.approx(a.objective, rel=1e-7, abs=1e-6)


@pytest.mark.parametrize("name", ["traffic-mix.yaml", "mixed.yaml"])
def test_a_raised_target_reuses_every_other_jobs_configurations_exactly(name):
    s = load_scenario(SCENARIOS / name)
    cat = checks.resolve(s, ())
    base = options.build(s, cat)
    job = next(j for j in s.jobs if j.stage == "serve")
    faster = job.model_copy(update={"min_tokens_per_s_per_user": job.min_tokens_per_s_per_user * 1.1})
    raised = s.model_copy(update={"jobs": [faster if j.name == job.name else j for j in s.jobs]})
    full = options.build(raised, cat)
    part = options.build(raised, cat, reuse=base, rebuild=frozenset([job.name]))
    for f in ("demands", "serve", "batch", "edge", "eligible", "ineligible", "api", "why_not"):
        assert getattr(part, f) == getattr(full, f), f
        assert list(getattr(part, f)) == list(getattr(full, f)), f
    assert part.serve != base.serve  # (the raised job's configurations did change)


def test_variant_milps_the_explanations_share_leaves_out_are_said_so(monkeypatch):
    whole = plan_scenario(load_scenario(SCENARIOS / "bank.yaml"), explain="full")
    assert "cut_short" not in whole["solver"]
    monkeypatch.setattr(narrative, "EXPLAIN_FLOOR_S", 0.0)
    monkeypatch.setattr(narrative, "EXPLAIN_SHARE", 0.0)  # no time at all for the variant MILPs
    cut = plan_scenario(load_scenario(SCENARIOS / "bank.yaml"), explain="full")
    # the explanations' own time, not the time limit: no "cut short by the time limit", no advice
    # to raise it (it would not help), but the plan says what its explanations left out
    assert "cut_short" not in cut["solver"]
    assert "as long as the plan's own search took" in cut["solver"]["explanations_stopped"]
    assert cut["fleet"] == whole["fleet"] and cut["total_cost_usd_per_year"] == whole["total_cost_usd_per_year"]
    assert cut["next_best"]["fleet"] is None and "not re-planned" in cut["next_best"]["message"]
    assert "the explanations' time ran out" in cut["next_best"]["message"]
    assert "--time-limit" not in cut["next_best"]["message"]
    bounded = [a for a in cut["alternatives"] if a["basis"] == "lp-bound"]
    assert bounded and all("at least" in a["reason"] or "does not rule out" in a["reason"] for a in bounded)
    assert all(a["cost_delta_usd_per_year"] is None or a["cost_delta_usd_per_year"] > 0 for a in bounded)
    assert any("the explanations' time ran out first" in a["reason"] for a in bounded)
    # the rows a left-out variant would explain are absent, not guessed
    assert not [e for e in cut["explanations"] if e["family"] == "redundancy"]
    assert [e for e in whole["explanations"] if e["family"] == "redundancy"]


def test_explanations_stopped_by_their_own_time_are_noted_not_warned(monkeypatch, plan_cli):
    """A plan whose re-planned alternatives ran past the explanations' own time (as long as the
    plan's search) says so in the report, and stderr gives no advice to raise --time-limit."""
    monkeypatch.setattr(narrative, "EXPLAIN_FLOOR_S", 0.0)
    monkeypatch.setattr(narrative, "EXPLAIN_SHARE", 0.0)
    res = plan_cli(SCENARIOS / "bank.yaml", "--quiet")
    assert res.code == 0, res.err
    assert "Explanations: the re-planned alternatives had as long as the plan's own search took" in " ".join(res.out.split())
    assert "Cut short by the time limit" not in res.out
    assert "--time-limit" not in res.err and "warning" not in res.err
    for fmt, words in (("markdown", "**Explanations:** the re-planned alternatives"),
                       ("html", "Explanations: the re-planned alternatives")):
        res = plan_cli(SCENARIOS / "bank.yaml", "--quiet", "--format", fmt)
        assert res.code == 0 and words in res.out and "Cut short by the time limit" not in res.out, fmt


def _lifted_redundancy(fm) -> bool:
    """The re-planned variant with N+1 lifted (bank.yaml asks for N+1)."""
    return fm.scenario.policy.redundancy == "none"


def test_a_lifted_cap_whose_replan_does_not_settle_it_claims_nothing(monkeypatch):
    """A lifted cap's re-plan that ends on its work bound without a fleet (or the time) cannot tell
    whether the cap binds: the row says so ("open", no price), never that N+1 costs nothing."""
    real = replan.screening.search
    stopped = []

    def no_fleet(fm, *args, **kwargs):
        if _lifted_redundancy(fm) and "max_nodes" in kwargs:
            stopped.append(fm)
            return SolveResult("not-solved", 0.1, None, None, "cbc")
        return real(fm, *args, **kwargs)

    monkeypatch.setattr(replan.screening, "search", no_fleet)
    plan = plan_scenario(load_scenario(SCENARIOS / "bank.yaml"), explain="full")
    assert stopped
    row = next(e for e in plan["explanations"] if e["family"] == "redundancy")
    assert row["settled"] is False and row["binding"] is False and row["shadow_price"] is None
    assert row["message"] == ("whether N+1 redundancy costs extra is not settled: re-planned without it, no fleet was "
                              f"found before its work bound ({replan.MAX_NODES:,} nodes) was reached")
    assert "[open] policy.redundancy: whether N+1" in report.plan_text(plan)
    assert all("settled" not in e for e in plan["explanations"] if e is not row)


def test_a_lifted_caps_replan_starts_from_the_plan(monkeypatch):
    """The plan is a plan of every variant that lifts a cap, so that variant's MILP starts from it:
    bounded by work, it never ends on a fleet dearer than the plan (which would read as 'N+1 costs
    nothing')."""
    real = replan.screening.search
    seen = []

    def spy(fm, *args, **kwargs):
        res = real(fm, *args, **kwargs)
        if _lifted_redundancy(fm) and "max_nodes" in kwargs:
            seen.append((kwargs.get("warm"), res))
        return res

    monkeypatch.setattr(replan.screening, "search", spy)
    monkeypatch.setattr(replan, "MAX_NODES", 0)  # the root node only
    plan = plan_scenario(load_scenario(SCENARIOS / "bank.yaml"), explain="full")
    [(warm, res)] = seen
    assert warm is True and res.ok and res.objective <= plan["total_cost_usd_per_year"] + 1.0
    row = next(e for e in plan["explanations"] if e["family"] == "redundancy")
    assert row["binding"] and row["shadow_price"] == pytest.approx(plan["total_cost_usd_per_year"] - 69_557, abs=1)


def test_a_re_plan_the_explanations_time_stopped_does_not_blame_the_time_limit():
    """A raised target's MILP stopped by the explanations' own share of time (as long as the plan's
    search) said "(cut short by the time limit)" while the command had half its limit left."""
    from planner.explain.replan import OWN_TIME, cut_words

    own = cut_words({"cut_short": True, "cut_by": OWN_TIME})
    assert "explanations' time" in own and "time limit" not in own
    assert cut_words({"cut_short": True}) == " (cut short by the time limit)"
    assert cut_words({"cut_short": False, "cut_by": OWN_TIME}) == ""


def _bank_variants():
    from planner.app import planning
    from planner.milp.readout import read_plan

    s = load_scenario(SCENARIOS / "bank.yaml")
    cat, opts, fm, res = planning.solve_scenario(s)
    plan = read_plan(s, fm, res)
    before = whynot.variants_for(plan, s, cat, fm, [])
    forced = whynot.variants_for(plan, s, cat, fm, sorted(restricted.accelerators_with_options(opts))[:3], {}, [])
    return s, cat, opts, plan, before, forced


def test_variants_added_while_others_replan_are_all_answered_as_alone():
    """The explanations add the next-best, lifted-cap and raised-target variants first (re-planned
    on one core while the why-not LP bounds are solved), the forced accelerators after: every
    variant gets the answer it gets when all are run at once."""
    s, cat, opts, plan, before, forced = _bank_variants()
    base = plan["total_cost_usd_per_year"]
    with replan.Runner(s, cat, opts, 60, base, 60) as runner:
        runner.add(before, workers=1)
        runner.add(forced)
    _, _, _, _, before2, forced2 = _bank_variants()
    with replan.Runner(s, cat, opts, 60, base, 60) as together:
        together.add(before2 + forced2)
    alone = together.out
    assert set(runner.out) == {v.key for v in before + forced} == set(alone)
    for key, got in alone.items():
        assert (runner.out[key]["status"], runner.out[key].get("cost")) == (got["status"], got.get("cost")), key


def test_the_variants_share_of_time_counts_from_the_first_added(monkeypatch):
    """budget_s bounds the re-plans together from the first add: variants added once it has run
    out are left out (skipped, said cut short by the explanations' own time), not given more."""
    import time

    from planner.data import deadline

    s, cat, opts, plan, before, forced = _bank_variants()
    monkeypatch.setattr(replan, "from_lp", lambda *a: None)  # every variant needs its MILP
    with deadline.budget(600) as b:
        with replan.Runner(s, cat, opts, 60, plan["total_cost_usd_per_year"], 0.05) as runner:
            runner.add(before[:0])
            time.sleep(0.1)
            runner.add(forced)
        assert {runner.out[v.key]["status"] for v in forced} == {"skipped"}
        assert all(runner.out[v.key]["cut_short"] for v in forced)
        assert replan.OWN_TIME in b.cuts


def test_what_n_plus_1_costs_is_what_planning_without_it_saves(plan_cli, tmp_path):
    """The serving review: 'N+1 costs $20,411/yr' while plan compare showed $25,930: the re-plan dropped
    the spares but kept N+1's ban on marketplace hosts. Without N+1 a serving job may use them again."""
    body = ("name: chat70b\nhorizon_years: 1\npolicy: {{acquisition: [on-demand, reserved-1y], redundancy: {r}}}\n"
            "jobs: [{{name: chat, stage: serve, model: llama-3.3-70b, precision: fp8, concurrent_users: 400,\n"
            "        input_tokens: 2000, output_tokens: 500, max_tpot_ms: 40, max_ttft_s: 1.0}}]\n")
    costs = {}
    for r in ("n+1", "none"):
        path = tmp_path / f"{r}.yaml"
        path.write_text(body.format(r=r))
        res = plan_cli(path, "--format", "json", "--quiet", "--explain", "full" if r == "n+1" else "none")
        assert res.code == 0, res.err
        costs[r] = json.loads(res.out)
    row = next(e for e in costs["n+1"]["explanations"] if e["constraint"] == "policy.redundancy")
    saved = costs["n+1"]["total_cost_usd_per_year"] - costs["none"]["total_cost_usd_per_year"]
    assert row["binding"] and abs(row["shadow_price"] - saved) <= 1.0, (row, saved)
