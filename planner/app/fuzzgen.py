"""Random scenarios for fuzzing the planner end to end (tests/test_fuzz.py, benchmarks/fuzz.py).

valid_scenario(rng) draws a mapping the schema accepts, over the catalog's models, accelerators and
providers, with edge cases on purpose: one user and a hundred million, tiny and huge contexts, tight
TTFT, short days, budgets and power caps, policies narrowing stacks, acquisition and providers.
Every valid scenario must end in a verified plan (exit 0) or a diagnosed infeasibility (exit 3).

invalid_scenario(rng) mutates a valid one so the schema or the catalog must reject it (exit 2):
a dropped required key, a wrong type, a negative, zero or non-finite number, an unknown key, a
garbage name. run_mapping() runs one through YAML, the schema and the pipeline in-process and
returns (exit code, first line of the message), with a traceback's text instead if one escapes.
"""

from __future__ import annotations

import copy
import functools
import math
import random
import traceback

import yaml

from planner.data.catalog import load_catalog

STACKS = ["cuda", "rocm", "xla", "neuron", "gaudi", "metal"]
ACQUISITIONS = ["buy", "on-demand", "reserved-1y", "reserved-3y", "spot"]
PRECISIONS = ["bf16", "fp8", "int8", "int4", "fp4"]
TIME_LIMIT_S = 5


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _int(rng: random.Random, lo: int, hi: int) -> int:
    """Log-uniform integer with the ends drawn often (edge cases)."""
    roll = rng.random()
    if roll < 0.08:
        return lo
    if roll < 0.12:
        return hi
    return max(lo, min(hi, int(round(_log_uniform(rng, lo, hi)))))


@functools.lru_cache(maxsize=None)
def _context_cap(model: str) -> int:
    """The longest context a served job of `model` may hold (its max_context_tokens: more is bad
    input, exit 2), at most a million."""
    return min(1_000_000, load_catalog().models[model].max_context_tokens or 1_000_000)


def _names():
    cat = load_catalog()
    return (sorted(cat.models), sorted(cat.accelerators), sorted({o.provider for o in cat.offers.values()}))


def _serve(rng, model, i) -> dict:
    cap = _context_cap(model)
    ctx = _int(rng, 16, cap)
    out = _int(rng, 1, max(1, min(4096, ctx, cap - 1)))  # (room for a prompt token within the model's context)
    job = {"name": f"serve-{i}", "stage": "serve", "model": model, "precision": rng.choice(PRECISIONS),
           "context_tokens": ctx, "output_tokens": out,
           "input_tokens": _int(rng, 1, max(1, min(ctx, 2 * ctx - out, cap - out))),
           "concurrent_users": _int(rng, 1, 100_000_000),
           "min_tokens_per_s_per_user": round(_log_uniform(rng, 0.5, 300), 3),
           "hours_per_day": rng.choice([24, 24, 12, 8, 1, 0.25])}
    if rng.random() < 0.4:
        job["max_ttft_s"] = round(_log_uniform(rng, 0.02, 20), 3)
    if rng.random() < 0.2:
        job["latency_critical"] = True
    if rng.random() < 0.3:
        job["kv_precision"] = rng.choice(["bf16", "fp8", "int8"])
    return job


def _finetune(rng, model, i) -> dict:
    return {"name": f"tune-{i}", "stage": "finetune", "model": model,
            "method": rng.choice(["full", "lora", "qlora"]),
            "dataset_tokens": float(f"{_log_uniform(rng, 1e4, 1e11):.3g}"),
            "epochs": rng.choice([1, 2, 3, 0.5]), "runs_per_year": rng.choice([1, 4, 12, 52, 365]),
            "max_hours_per_run": rng.choice([1, 8, 24, 72, 500]),
            "sequence_tokens": _int(rng, 128, 32768), "lora_rank": rng.choice([8, 16, 64])}


def _pretrain(rng, model, i) -> dict:
    return {"name": f"pre-{i}", "stage": "pretrain", "model": model,
            "training_tokens": float(f"{_log_uniform(rng, 1e8, 1e13):.3g}"),
            "max_days": rng.choice([1, 7, 30, 90, 365]), "precision": rng.choice(["bf16", "fp8"]),
            "sequence_tokens": rng.choice([2048, 4096, 8192])}


def _rl(rng, model, i) -> dict:
    return {"name": f"rl-{i}", "stage": "rl", "model": model, "method": rng.choice(["full", "lora"]),
            "rollout_tokens_per_s": float(f"{_log_uniform(rng, 10, 1e6):.3g}"),
            "rollout_context_tokens": _int(rng, min(256, _context_cap(model)), min(65536, _context_cap(model))),
            "min_tokens_per_s_per_rollout": rng.choice([5, 20, 50]),
            "train_tokens_per_day": float(f"{_log_uniform(rng, 1e5, 1e10):.3g}"),
            "hours_per_day": rng.choice([24, 12, 4])}


def _edge(rng, model, i) -> dict:
    job = {"name": f"edge-{i}", "stage": "edge", "model": model, "devices": _int(rng, 1, 100_000),
           "device": rng.choice(["robot", "desk", "phone", "any"]), "precision": rng.choice(PRECISIONS),
           "context_tokens": _int(rng, 64, min(131072, _context_cap(model))), "min_tokens_per_s": rng.choice([1, 5, 10, 30])}
    if rng.random() < 0.3:
        job["max_power_w"] = rng.choice([15, 60, 300, 1000])
    return job


JOBS = {"serve": (_serve, 0.5), "finetune": (_finetune, 0.2), "pretrain": (_pretrain, 0.08),
        "rl": (_rl, 0.1), "edge": (_edge, 0.12)}


def valid_scenario(rng: random.Random) -> dict:
    """A scenario mapping the schema accepts (it may still be infeasible)."""
    models, accelerators, providers = _names()
    small = [m for m in models if any(k in m for k in ("3b", "7b", "8b", "20b", "24b", "a3b", "27b", "32b"))]
    kinds = list(JOBS)
    jobs = []
    for i in range(rng.choice([1, 1, 1, 2, 2, 3])):
        kind = rng.choices(kinds, [JOBS[k][1] for k in kinds])[0]
        model = rng.choice(small if small and rng.random() < 0.6 else models)
        jobs.append(JOBS[kind][0](rng, model, i))
    s: dict = {"name": f"fuzz-{rng.randrange(10 ** 6)}", "jobs": jobs,
               "solver": {"time_limit_s": TIME_LIMIT_S}}
    if rng.random() < 0.2:
        s["horizon_years"] = rng.choice([1, 3, 5])
        if s["horizon_years"] > 1 and rng.random() < 0.5:  # a multi-year plan: demand grows
            for job in jobs:
                job["growth_per_year"] = rng.choice([0.1, 0.5, 1.0])
    site = {}
    if rng.random() < 0.5:
        site["kind"] = rng.choice(["datacenter", "office"])
    if rng.random() < 0.4:
        site["cooling"] = rng.choice(["air", "liquid"])
    if rng.random() < 0.2:
        site["power_cap_kw"] = float(f"{_log_uniform(rng, 1, 5000):.3g}")
    if rng.random() < 0.2:
        site["power_usd_per_kwh"] = round(rng.uniform(0, 0.4), 3)
    if site:
        s["site"] = site
    policy = {}
    if rng.random() < 0.4:
        policy["acquisition"] = sorted(rng.sample(ACQUISITIONS, rng.randint(1, len(ACQUISITIONS))))
    if rng.random() < 0.2:
        policy["stacks"] = sorted(rng.sample(STACKS, rng.randint(1, 3)))
    if rng.random() < 0.1:
        policy["providers"] = sorted(rng.sample(providers, rng.randint(1, 4)))
    if rng.random() < 0.1:
        policy["accelerators"] = sorted(rng.sample(accelerators, rng.randint(1, 6)))
    if rng.random() < 0.05:
        policy["exclude_accelerators"] = sorted(rng.sample(accelerators, 3))
    if rng.random() < 0.2:
        policy["redundancy"] = "n+1"
    if rng.random() < 0.15:
        policy["spot_for_serving"] = True
    if policy:
        s["policy"] = policy
    budget = {}
    if rng.random() < 0.15:
        budget["usd_per_year"] = float(f"{_log_uniform(rng, 1e3, 1e8):.3g}")
    if rng.random() < 0.05:
        budget["capex_usd_per_year"] = float(f"{_log_uniform(rng, 1e4, 1e8):.3g}")
    if rng.random() < 0.05:
        budget["opex_usd_per_year"] = float(f"{_log_uniform(rng, 1e4, 1e8):.3g}")
    if budget and rng.random() < 0.3:
        budget["mode"] = "max-coverage"
    if "usd_per_year" in budget and rng.random() < 0.5:  # (drawn last: the cases before it are as they were)
        budget["basis"] = rng.choice(["annualised", "cash"])
    if budget:
        s["budget"] = budget
    if rng.random() < 0.15:  # systems already held, often beside the same ones bought under N+1 (drawn last)
        systems = sorted(sid for sid, sy in load_catalog().systems.items() if sy.kind in ("server", "rack"))
        s["owned"] = [{"system": rng.choice(systems), "count": rng.randint(1, 4)}]
    return s


# --- invalid scenarios -----------------------------------------------------------------------------

def _job(rng, s) -> dict:
    return rng.choice(s["jobs"])


def _drop_required(rng, s):
    job = _job(rng, s)
    required = {"serve": ["concurrent_users"], "finetune": ["dataset_tokens"], "pretrain": ["training_tokens"],
                "rl": ["rollout_tokens_per_s", "train_tokens_per_day"], "edge": ["model"]}.get(job.get("stage"), ["model"])
    target = rng.choice([(s, "name"), (s, "jobs"), (job, "model"), (job, "name"), (job, "stage")]
                        + [(job, k) for k in required])
    target[0].pop(target[1], None)


def _wrong_type(rng, s):
    job = _job(rng, s)
    choice = rng.randrange(5)
    if choice == 0:
        s["jobs"] = {"oops": job}
    elif choice == 1:
        s["site"] = ["not", "a", "mapping"]
    elif choice == 2:
        job["name"] = {"nested": 1}
    elif choice == 3:
        s["policy"] = {"acquisition": "buy, rent"}
    else:
        job["stage"] = 42


def _bad_number(rng, s):
    job = _job(rng, s)
    numeric = {"serve": "concurrent_users", "finetune": "dataset_tokens", "pretrain": "training_tokens",
               "rl": "rollout_tokens_per_s", "edge": "devices"}.get(job.get("stage"), "model")
    bad = rng.choice([-1, 0, -1e300, float("nan"), float("inf"), "many", "1e400", "yes"])
    if rng.random() < 0.5:
        job[numeric] = bad
    else:
        s.setdefault("site", {})["pue"] = rng.choice([0.5, -1, float("nan"), 99, "hot"])


def _unknown_key(rng, s):
    where = rng.choice([s, _job(rng, s), s.setdefault("policy", {}), s.setdefault("site", {})])
    where[rng.choice(["concurent_users", "modle", "budget_usd", "colour", "gpus", "x"])] = 1


def _garbage_name(rng, s):
    job = _job(rng, s)
    choice = rng.randrange(6)
    if choice == 0:
        job["model"] = rng.choice(["llama-9000", "", "gpt-5", "LLAMA 3"])
    elif choice == 1:
        job["stage"] = rng.choice(["serving", "train", "", "SERVE"])
    elif choice == 2:
        s.setdefault("policy", {})["accelerators"] = ["h100-sxm-typo"]
    elif choice == 3:
        s.setdefault("policy", {})["providers"] = ["aws-typo"]
    elif choice == 4:
        s["jobs"] = s["jobs"] + [copy.deepcopy(job)]  # duplicate job name
    else:
        s["jobs"] = []


MUTATIONS = (_drop_required, _wrong_type, _bad_number, _unknown_key, _garbage_name)


def invalid_scenario(rng: random.Random) -> dict:
    """A valid scenario with one to three mutations that each make it invalid (exit 2)."""
    s = valid_scenario(rng)
    for n in range(rng.randint(1, 3)):
        if not isinstance(s.get("jobs"), list) or not s["jobs"]:
            break
        try:
            rng.choice(MUTATIONS)(rng, s)
        except (TypeError, AttributeError):  # an earlier mutation changed the shape: enough
            if n == 0:
                raise
            break
    return s


# --- running one -----------------------------------------------------------------------------------

EXPLANATION_FAULT = -2
"""run_mapping's code for a plan whose explanations its own numbers contradict (explanation_faults)"""


def explanation_faults(plan: dict) -> list[str]:
    """What a plan's explanations claim against its own numbers. Every re-planned restriction (the
    next-best fleet without the plan's main system or its acquisition mode, a forced accelerator, a raised target) is a plan
    of the scenario, so it costs at least the plan's proven lower bound, cost x (1 - gap), unless it
    says it serves fewer users (max-coverage: unserved_jobs); a lifted cap said to bind must save
    money, a raised target said to bind must cost some. Checked for one-year plans that serve every
    user (a multi-year plan's yearly average is not its objective, and max-coverage weighs users
    against dollars)."""
    if "years" in plan or any(j.get("unserved") for j in plan["jobs"]) or plan["solver"].get("gap") is None:
        return []
    base = plan["total_cost_usd_per_year"]
    floor = base * (1 - plan["solver"]["gap"]) - max(1.0, 1e-6 * base)
    out = []
    for key, what in (("next_best", "next-best fleet"), ("next_best_acquisition", "other acquisition's fleet"),
                      ("api_fleet", "all-API fleet")):
        nb = plan.get(key) or {}  # (one that serves fewer users says so: unserved_jobs)
        if nb.get("cost_usd_per_year") is not None and nb["cost_usd_per_year"] < floor and not nb.get("unserved_jobs"):
            out.append(f"{what} ${nb['cost_usd_per_year']:,.0f}/yr below the plan's bound ${floor:,.0f}")
    for a in plan.get("alternatives") or []:
        if a.get("basis") == "milp" and a.get("cost_delta_usd_per_year") is not None \
                and base + a["cost_delta_usd_per_year"] < floor and not a.get("unserved_jobs"):
            out.append(f"forced {a['accelerator']} ${base + a['cost_delta_usd_per_year']:,.0f}/yr below the plan's "
                       f"bound ${floor:,.0f}")
    for e in plan.get("explanations") or []:
        price = e.get("shadow_price")
        if e["binding"] and price is not None and e["basis"] == "re-planned" and (
                (e["family"] in ("redundancy", "target") and price <= 0)
                or (e["family"] in ("power", "budget") and price >= 0)):
            out.append(f"{e['constraint']} said to bind at price {price}: {e['message'][:200]}")
    return out


def run_mapping(data: dict, time_limit_s: float | None = TIME_LIMIT_S) -> tuple[int, str]:
    """(exit code, first line of the message or of the traceback) for one scenario, in-process,
    through YAML text, the schema, the pipeline and its verifier. Exit -1: a traceback escaped."""
    from planner.app.pipeline import plan_scenario
    from planner.data.errors import PlannerError
    from planner.data.scenario import parse_scenario
    from planner.data.yamlio import load_yaml

    try:
        text = yaml.safe_dump(data, sort_keys=False)
        parsed, lines = load_yaml(text, "<fuzz>")
        scenario = parse_scenario(parsed, lines, "<fuzz>")
        plan = plan_scenario(scenario, (), time_limit_s)
        if faults := explanation_faults(plan):
            return EXPLANATION_FAULT, "; ".join(faults) + "\n" + yaml.safe_dump(data, sort_keys=False)
        return 0, f"{plan['status']} ${plan['total_cost_usd_per_year']:,.0f}/yr"
    except PlannerError as exc:
        if exc.exit_code == 1:  # a verifier failure: keep every failed check for the bug report
            return 1, str(exc) + "\n" + yaml.safe_dump(data, sort_keys=False)
        return exc.exit_code, (str(exc).splitlines() or [type(exc).__name__])[0]
    except Exception:  # noqa: BLE001 - the point is to count what escapes
        return -1, traceback.format_exc()
