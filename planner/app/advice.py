"""Warnings about a scenario that plans but may not mean what it says: an inline model whose stated
size disagrees with its own architecture, a context longer than the model supports, an RL trainer
sized for far more or fewer tokens than its rollouts make, or measurements that no serving job can use. They are notes on stderr (planner.data.notes) and never change the plan."""

from __future__ import annotations

from planner.data.catalog import Catalog
from planner.data.measurements import load_measurements
from planner.data.notes import note
from planner.data.scenario import Scenario
from planner.physics import arch

PARAMS_TOLERANCE = 0.10
"""Stated and computed parameter counts differ by publishers' conventions (tied or counted
embeddings, biases, norms) by well under this; more means a field copied wrong."""
CONTEXT_KEYS = ("context_tokens", "rollout_context_tokens", "sequence_tokens", "trainer_sequence_tokens")


def advise(s: Scenario, cat: Catalog) -> None:
    """Note each inline model whose params_b is more than 10% off its architecture's count, each
    job whose context is above its model's max_context_tokens, and measurements for no serving job."""
    for i, m in enumerate(s.models):
        total_b = arch.param_counts(m)["total"] / 1e9
        if abs(m.params_b - total_b) > PARAMS_TOLERANCE * total_b:
            note(f"warning: models.{i} ({m.id}): params_b is {m.params_b:,.2f} (billion) but its architecture "
                 f"has {total_b:,.2f} billion parameters ({m.params_b / total_b - 1:+.0%}); memory and speed "
                 "follow the architecture, so check layers, hidden_size, ffn_size, vocab_size and experts "
                 "against config.json, or correct params_b")
    _residency(s)
    for i, job in enumerate(s.jobs):
        m = cat.models.get(job.model)
        if m is None or not m.max_context_tokens:
            continue
        for key in CONTEXT_KEYS:
            value = getattr(job, key, None)
            if value and value > m.max_context_tokens:
                note(f"warning: jobs.{i}.{key} ({job.name}) is {value:,} tokens, above {m.id}'s maximum "
                     f"context of {m.max_context_tokens:,}: the model cannot attend that far; lower {key} to "
                     f"at most {m.max_context_tokens:,} or choose a model with a longer context")
        request = _request_tokens(job)
        if getattr(job, "context_tokens", None) and request > job.context_tokens:
            note(f"warning: jobs.{i}.context_tokens ({job.name}) is {job.context_tokens:,} tokens, below one request's "
                 f"input + output of {request:,}: a request's own tokens are all in the KV cache by its last one, so "
                 f"the cache is sized for {request:,}; raise context_tokens to at least {request:,} (or shorten the "
                 "requests)")
        _rl_tokens(i, job)
        _history(i, job, s)
        _units(i, job)
        _default_context(i, job)
    unused_measurements(s)


def _residency(s: Scenario) -> None:
    """Note a site outside the US whose policy names no regions: 'global' offers (marketplace hosts,
    clouds with capacity in several regions) are allowed beside the site's region by default, wherever
    their hardware is (the finance and serving reviews: an EU site's plan rented Akash and RunPod hosts)."""
    region = s.site.region
    if s.policy.regions is not None or region in ("us", "global"):
        return
    note(f"note: policy.regions is unset, so offers in 'global' (marketplace hosts and clouds with capacity in "
         f"several regions, wherever their hardware is) may serve beside '{region}'; set policy.regions: [{region}] "
         f"if the data or the hardware must stay in '{region}'")


def _history(i: int, job, s: Scenario) -> None:
    """Note a serve job a hosted API may take whose context is well above one request's tokens with no
    history_tokens: if that context is a conversation, the API bills its earlier turns on every turn."""
    if getattr(job, "stage", None) != "serve" or "api" not in s.policy.acquisition or job.history_tokens \
            or "context_tokens" not in job.model_fields_set or job.request_mix:
        return
    request = job.input_tokens + job.output_tokens
    if job.context_tokens >= 2 * request:
        note(f"note: jobs.{i} ({job.name}) holds {job.context_tokens:,} tokens of context per user for requests of "
             f"{request:,}: if that is a conversation's history, a hosted API bills it again on every turn while "
             "a replica keeps it cached; set history_tokens to the earlier turns each request sends (the API's price "
             "rises, self-hosting's does not)")


GROWTH_WORDS_ABOVE, TTFT_WORDS_ABOVE_S, RUN_TOKENS_BELOW = 1.0, 60.0, 1e6
"""values a unit slip writes (an expert review): growth_per_year 5 meant as 5% (read as 500% a year),
max_ttft_s 500 meant as milliseconds, a training run of 1,000 tokens meant as a trillion"""


def _units(i: int, job) -> None:
    """Note values that plan but read as a unit slip: growth above 100% a year, a first-token limit
    above a minute, a fine-tune or pretraining run of under a million tokens."""
    g = job.growth_per_year
    if g > GROWTH_WORDS_ABOVE:
        note(f"warning: jobs.{i}.growth_per_year ({job.name}) is {g:g}: demand grows {g:.0%} a year (x{1 + g:g}); "
             "it is a fraction: write 0.05 for 5% a year")
    ttft = getattr(job, "max_ttft_s", None)
    if ttft and ttft > TTFT_WORDS_ABOVE_S:
        note(f"warning: jobs.{i}.max_ttft_s ({job.name}) is {ttft:g} s ({ttft / 60:.1f} minutes) to the first token: "
             "it is in seconds; write 0.5 for 500 ms")
    key = {"finetune": "dataset_tokens", "pretrain": "training_tokens"}.get(getattr(job, "stage", ""))
    if key and getattr(job, key) < RUN_TOKENS_BELOW:
        note(f"warning: jobs.{i}.{key} ({job.name}) is {getattr(job, key):,.0f} tokens, a run of moments; it counts "
             "tokens, not thousands or billions of them: write 1e9 for a billion, 1e12 for a trillion")


def _default_context(i: int, job) -> None:
    """Note a serve job that sets its requests' sizes but not context_tokens, where the default
    conversation (4,096 tokens of KV a user) is twice one request or more: a stateless request (an API
    call, a RAG query) holds only its own tokens, and the same traffic written as a request_mix is
    sized so (an expert review: $224,256 against $107,744 a year for 400 users of 500 + 150 tokens)."""
    if getattr(job, "stage", None) != "serve" or job.request_mix or "context_tokens" in job.model_fields_set \
            or "input_tokens" not in job.model_fields_set:
        return
    request = job.history_tokens + job.input_tokens + job.output_tokens  # (a conversation's history is its own)
    if job.context_tokens >= 2 * request:
        note(f"note: jobs.{i} ({job.name}) sets no context_tokens, so each user holds the default {job.context_tokens:,} "
             f"tokens of KV cache (a conversation's history), {job.context_tokens / request:.1f}x one request's "
             f"{request:,}; for stateless requests (an API call, a RAG query) set context_tokens: {request}, which "
             "may need fewer GPUs")


RL_TRAIN_OVER_GENERATED = (0.1, 8.0)
"""On-policy RL (GRPO, PPO) trains on what its rollouts generate and their prompts, over 1-4 passes
(PPO epochs), or on a tenth of them and more where rollouts are filtered (rejection sampling): a
trainer that consumes far more or far less than that is sized for another job."""


def _rl_tokens(i: int, job) -> None:
    """Note an RL job whose trainer consumes far more or far less than its rollouts produce."""
    if getattr(job, "stage", None) != "rl":
        return
    generated = job.rollout_tokens_per_s * 3600 * job.hours_per_day
    ratio = job.train_tokens_per_day / generated
    low, high = RL_TRAIN_OVER_GENERATED
    if not low <= ratio <= high:
        note(f"warning: jobs.{i} ({job.name}): the trainer consumes {job.train_tokens_per_day:,.0f} tokens a day, "
             f"{ratio:,.2g}x the {generated:,.0f} its rollouts generate ({job.rollout_tokens_per_s:,g} tok/s for "
             f"{job.hours_per_day:g} h); on-policy RL trains on its rollouts (with their prompts) over 1-4 passes, or "
             f"on the ones a filter keeps: {low:g}-{high:g}x; check train_tokens_per_day and rollout_tokens_per_s")


def _request_tokens(job) -> int:
    """The largest request's input + output tokens of a serving job (its request_mix buckets, or
    the job's own sizes); 0 for other stages."""
    if getattr(job, "stage", None) != "serve":
        return 0
    sizes = [(b.input_tokens, b.output_tokens) for b in job.request_mix or []] or [(job.input_tokens, job.output_tokens)]
    return max(i + o for i, o in sizes)


def unused_measurements(s: Scenario) -> None:
    """Note measurements none of whose rows is for a serving job's model and precision: they cannot
    replace the physics model anywhere, which is otherwise silent (a bad row is exit 2 elsewhere)."""
    if not s.measurements:
        return
    rows = load_measurements(tuple(s.measurements))
    serve = {(j.model, j.precision) for j in s.jobs if j.stage == "serve"}
    measured = {(r.model, r.precision) for r in rows}
    if not rows or not serve or measured & serve:
        return
    text = lambda pairs: ", ".join(f"{m} {p}" for m, p in sorted(pairs))  # noqa: E731
    note(f"warning: no row of the measurements ({len(rows)} row(s): {text(measured)}) is for a serving job's "
         f"model and precision ({text(serve)}), so every placement is modelled; measure the model at the "
         "precision the job serves, or check the model and precision columns")
