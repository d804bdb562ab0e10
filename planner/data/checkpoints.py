"""Which catalog model a checkpoint's name stands for: a scenario, `plan estimate --model` or a
benchmark result may name a model the way Hugging Face does (meta-llama/Llama-3.1-8B-Instruct,
Qwen/Qwen3-32B-FP8) instead of by its catalog id (llama-3.1-8b, qwen3-32b).

A name stands for a catalog model when, case aside, it is
  1. the model's id;
  2. one of the row's `checkpoints` (models.yaml: the repos of that exact architecture), or the repo
     its source cites (huggingface.co/<org>/<repo>);
  3. or, once the organisation and trailing tuning or quantisation suffixes (-Instruct, -it, -FP8,
     -AWQ, -v0.3, ...) are dropped from both, the same stem as the id or one of those repos.
A name that stands for several models, or for none, is not resolved (the caller says so and lists
the close ids): a planner that guessed the architecture would size the wrong fleet. A quantised
checkpoint resolves to its architecture; the precision served is the job's `precision`, or where it sets
none the name's suffix (data/consistency.py: -FP8 serves fp8, -AWQ int4, ...).
"""

from __future__ import annotations

import re

_SUFFIX = re.compile(r"[-_.](instruct|chat|hf|it|base|fp8|fp4|nvfp4|mxfp4|int8|int4|awq|gptq|w8a8|w4a16|"
                     r"w4a8|dynamic|bf16|fp16|quantized|v\d+(\.\d+)*)$")
_REPO = re.compile(r"huggingface\.co/([\w.-]+/[\w.-]+)")


def stem(name: str) -> str:
    """'meta-llama/Llama-3.1-8B-Instruct-FP8' -> 'llama-3.1-8b': lower case, the organisation and
    trailing tuning or quantisation suffixes dropped."""
    s = name.strip().lower().rsplit("/", 1)[-1]
    while (m := _SUFFIX.search(s)) and m.start() > 0:
        s = s[:m.start()]
    return s


def repos(model) -> list[str]:
    """The checkpoints a catalog model row names: its `checkpoints` and the repos its source cites."""
    return list(getattr(model, "checkpoints", ()) or ()) + _REPO.findall(getattr(model, "source", "") or "")


def catalog_model(name: str, models: dict) -> str | None:
    """The id in `models` (id -> catalog.Model) that the checkpoint `name` stands for (the module
    docstring), or None when none or several do."""
    low = str(name).strip().lower()
    if low in models:
        return low
    exact = {mid for mid, m in models.items() if any(r.lower() == low for r in repos(m))}
    if exact:
        return exact.pop() if len(exact) == 1 else None
    s = stem(low)
    if s in models:
        return s
    hits = {mid for mid, m in models.items() if any(stem(r) == s for r in repos(m))}
    return hits.pop() if len(hits) == 1 else None
