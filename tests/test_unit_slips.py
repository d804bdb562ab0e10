"""An expert review's input mistakes: values that plan but read as a unit slip (a percentage written
as a fraction's place, milliseconds as seconds, a trillion tokens as a thousand) are said on stderr,
a refused percentage says the field is a fraction, and a serve job sized by its requests with the
default conversation context is told what that default holds."""

from __future__ import annotations

import yaml


def _validate(plan_cli, tmp_path, jobs: list[dict], horizon: int = 1):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "slips", "horizon_years": horizon, "jobs": jobs}, sort_keys=False))
    return plan_cli("validate", path)


CHAT = {"name": "chat", "stage": "serve", "model": "llama-3.1-8b", "concurrent_users": 40,
        "min_tokens_per_s_per_user": 20}


def test_unit_slips_plan_but_are_said(plan_cli, tmp_path):
    r = _validate(plan_cli, tmp_path, [
        {**CHAT, "growth_per_year": 5, "max_ttft_s": 500},
        {"name": "pre", "stage": "pretrain", "model": "llama-3.1-8b", "training_tokens": 1000, "max_days": 30}],
        horizon=3)
    assert r.code == 0, r.err
    assert ("warning: jobs.0.growth_per_year (chat) is 5: demand grows 500% a year (x6); it is a fraction: write "
            "0.05 for 5% a year") in r.err
    assert "warning: jobs.0.max_ttft_s (chat) is 500 s (8.3 minutes) to the first token: it is in seconds" in r.err
    assert "warning: jobs.1.training_tokens (pre) is 1,000 tokens, a run of moments" in r.err
    fine = _validate(plan_cli, tmp_path, [{**CHAT, "growth_per_year": 0.5, "max_ttft_s": 2}], horizon=3)
    assert fine.code == 0 and "warning" not in fine.err


def test_a_refused_percentage_says_the_field_is_a_fraction(plan_cli, tmp_path):
    r = _validate(plan_cli, tmp_path, [{**CHAT, "growth_per_year": 50}], horizon=3)
    assert r.code == 2
    assert "use a value at most 10.0 (growth_per_year is a fraction: 0.5 is 50%)" in r.err


def test_requests_sized_without_a_context_are_told_the_default_conversation(plan_cli, tmp_path):
    r = _validate(plan_cli, tmp_path, [{**CHAT, "input_tokens": 500, "output_tokens": 150}])
    assert ("note: jobs.0 (chat) sets no context_tokens, so each user holds the default 4,096 tokens of KV cache "
            "(a conversation's history), 6.3x one request's 650; for stateless requests (an API call, a RAG query) "
            "set context_tokens: 650") in r.err
    quiet = _validate(plan_cli, tmp_path, [{**CHAT, "input_tokens": 500, "output_tokens": 150, "context_tokens": 650}])
    assert "context_tokens" not in quiet.err
