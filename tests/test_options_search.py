"""Issue 11: the serving search's shortcuts change no option.

The options build keeps each replica's step model and answers (physics.step.Replica), estimates only
the configurations it keeps, and skips a TP x PP split that a split found before it dominates at
the most users it could hold (options.build.serve_configs). Each must give exactly what the plain
search gives: the same batch, limit and figures, whatever was asked before.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from planner.data.catalog import load_catalog
from planner.options import build, forked, probe
from planner.physics import serving, step

CAT = load_catalog()
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "gpt-oss-120b")
SYSTEMS = ("h100-sxm-x1", "rtx-4090-x4", "h200-nvl-x8", "b200-x8", "gb200-nvl72")
TARGETS = ((10.0, None), (30.0, None), (20.0, 1.0))


def workload(ctx: int = 8192, p: str = "fp8") -> serving.Workload:
    return serving.Workload(p, p, ctx // 8, 512, ctx)


def test_memory_limited_says_what_the_search_finds():
    checked = 0
    for mid in MODELS:
        m = CAT.models[mid]
        for acc in (CAT.accelerators[a] for a in ("h100-sxm", "rtx-4090", "b200", "l40s")):
            for tp in (1, 2, 4, 8):
                for pp in (1, 2, 4):
                    for min_tps, max_ttft in TARGETS:
                        limit = serving.largest_batch(m, acc, workload(), tp, pp, min_tps, max_ttft)[1]
                        assert serving.memory_limited(m, acc, workload(), tp, pp, min_tps, max_ttft) == (
                            limit == "memory"), (mid, acc.id, tp, pp, min_tps, max_ttft, limit)
                        checked += limit == "memory"
    assert checked > 20  # the memory case is exercised, not only the others


def test_skipping_dominated_splits_keeps_every_option(monkeypatch):
    def configs():
        out = {}
        for mid in MODELS:
            for sid in SYSTEMS:
                system = CAT.systems[sid]
                acc = CAT.accelerators[system.accelerator]
                for min_tps, max_ttft in TARGETS:
                    out[(mid, sid, min_tps, max_ttft)] = build.serve_configs(
                        CAT.models[mid], acc, system, workload(), min_tps, max_ttft, "d", {})
        return out

    shortcut = configs()
    monkeypatch.setattr(probe, "most_users", lambda *a: 10**12)  # no split can be ruled out: search all
    plain = configs()
    assert shortcut == plain
    assert sum(len(v[0]) for v in plain.values()) > 30


def test_kept_answers_do_not_depend_on_what_was_asked_before():
    m, acc = CAT.models["llama-3.1-70b"], CAT.accelerators["h100-sxm"]
    cases = [(workload(c, p), tp, pp, b) for c in (4096, 32768) for p in ("fp8", "bf16")
             for tp, pp in ((2, 1), (4, 2), (8, 1)) for b in (1, 7, 64)]

    def answers():
        return [(dataclasses.asdict(serving.estimate(m, acc, w, tp, pp, b)),
                 serving.largest_batch(m, acc, w, tp, pp, 20.0, 2.0)) for w, tp, pp, b in cases]

    step._REPLICAS.clear()
    fresh = answers()
    step._REPLICAS.clear()
    for w, tp, pp, b in reversed(cases):  # warm the kept answers in another order, with other questions
        serving.largest_batch(m, acc, w, tp, pp, 10.0, None)
        step.parts(m, acc, w, tp, pp, b / pp, 512.0)
        serving.ttft_s(m, acc, w, tp, pp, batch=b + 3)
    assert answers() == fresh


@pytest.mark.parametrize("engine", [None, "sglang"])
def test_the_replica_step_is_the_documented_roofline(engine):
    """t_stage = max(t_mem, t_decode + t_prompt) + t_comm + t_fixed (a prefill-first engine runs the
    chunk as its own pass), from the parts the same step reports."""
    m, acc, w = CAT.models["llama-3.1-70b"], CAT.accelerators["h100-sxm"], workload()
    r = step.replica(m, acc, w, 4, 2, engine=engine)
    for d, p in ((16.0, 0.0), (16.0, 2048.0), (0.0, 4096.0)):
        parts = r.parts(d, p)
        assert r.time(d, p) == step.stage_time(parts, engine)
        if engine == "sglang" and d and p:
            assert r.time(d, p) == pytest.approx(max(parts["memory"], parts["compute"]) + parts["prefill"]
                                                 + parts["comm"] + parts["fixed"])
        else:
            assert r.time(d, p) == pytest.approx(max(parts["memory"], parts["compute"] + parts["prefill"])
                                                 + parts["comm"] + parts["fixed"])


def _options(scenario, monkeypatch, fan_out: bool):
    from planner.app import planning
    from planner.data import deadline

    monkeypatch.setattr(forked, "MIN_SEARCHES", 1 if fan_out else 10**9)
    with deadline.budget(120):
        return vars(planning.prepare(scenario)[1])


@pytest.mark.skipif(not hasattr(os, "fork") or forked.cpus() < 2, reason="no fork, or one CPU")
def test_searches_shared_with_a_forked_child_give_the_same_options_and_leave_no_process(monkeypatch):
    """A large build's serving searches, half computed by a forked child (options/forked.py, its
    floor lowered to bank.yaml's few searches): every option, reason and note is the same as from
    the build alone, and the child is gone; a child that fails leaves its share to this process,
    and a fork refused (a process limit) leaves it all here."""
    from conftest import SCENARIOS

    from planner.data.scenario import load_scenario

    s = load_scenario(SCENARIOS / "bank.yaml")
    alone = _options(s, monkeypatch, fan_out=False)
    children, real_fork = [], os.fork
    monkeypatch.setattr(os, "fork", lambda: children.append(real_fork()) or children[-1])
    assert _options(s, monkeypatch, fan_out=True) == alone and len(children) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(children[0], os.WNOHANG)  # reaped: no process left
    parent, real = os.getpid(), build._search

    def failing(args, cache):
        if os.getpid() != parent:
            raise RuntimeError("a child's search failed")
        return real(args, cache)

    monkeypatch.setattr(build, "_search", failing)
    assert _options(s, monkeypatch, fan_out=True) == alone and len(children) == 2

    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")  # (fork's EAGAIN: a process limit)

    monkeypatch.setattr(os, "fork", refused)
    assert _options(s, monkeypatch, fan_out=True) == alone
