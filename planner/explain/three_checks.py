"""The physical story of each job, in words with numbers (no solver here).

- placement_reason: why one placement is sized as it is (memory, bandwidth, compute, latency...).
- three_checks: the seeds' checks before signing: the job's regime (which lever speeds it up), "run it"
  (the model, precision, parallelism and stack to benchmark), and the unit cost.
- summary: the plan in one paragraph, for a purchase memo.
"""

from __future__ import annotations

from planner.data import jobs
from planner.data.catalog import OWNED_PROVIDER, unquoted
from planner.data.fleet_words import VERBS, fleet_clauses, fleet_item
from planner.data.money import hours_text, listed, unit_cost_text
from planner.options import build as options
from planner.physics import disagg, moe

ENGINES = {"cuda": "vLLM or TensorRT-LLM", "rocm": "vLLM (ROCm) or SGLang", "xla": "vLLM-TPU or JetStream",
           "neuron": "NxD Inference (vLLM on Neuron)", "gaudi": "vLLM-gaudi", "metal": "MLX or llama.cpp"}
TRAINERS = {"lora": "Axolotl or torchtune", "qlora": "Axolotl or torchtune", "full": "torchtune or TorchTitan",
            "pretrain": "Megatron-LM or TorchTitan"}
TRAINERS_BY_STACK = {"xla": "MaxText (JAX)", "neuron": "NxD Training", "gaudi": "Optimum Habana"}
LEVERS = {"bandwidth": "memory bandwidth or a lower precision speeds it up; more FLOPs do not",
          "compute": "more FLOPs (a faster chip, FP8/FP4) speed it up; more bandwidth does not",
          "interconnect": "a faster scale-up link or less tensor parallelism speeds it up",
          "overhead": "fewer pipeline stages or larger batches amortise the fixed per-step cost",
          "capacity": "more memory per accelerator (or lower precision) lets it use fewer accelerators"}


def _part(job, key: str | None):
    """(workload, concurrent users, requests/s or None) of a serve job's part (a request_mix size)."""
    return next(((wl, users, rate) for k, wl, users, rate in jobs.serve_parts(job) if k == key), (None, 0, None))


def traffic_reason(job) -> str | None:
    """A serve job given as requests_per_s: its Little's law users per request size (data.jobs.serve_parts)."""
    if getattr(job, "requests_per_s", None) is None:
        return None
    ttft = job.max_ttft_s or 0.0
    sizes = [f"{wl.input_tokens}x{wl.output_tokens}: {rate:g} x ({ttft:g} + {wl.output_tokens:,} / "
             f"{job.min_tokens_per_s_per_user:g}) = {rate * jobs.request_seconds(job, wl.output_tokens):,.2f} -> {users:,}"
             for _, wl, users, rate in jobs.serve_parts(job)]
    return (f"traffic: {job.requests_per_s:g} requests/s at peak become concurrent users by Little's law, per "
            f"request size (in x out tokens): users = ceil(requests/s x share x (max_ttft_s "
            f"{'' if job.max_ttft_s else '(none: 0) '}+ output_tokens / min_tokens_per_s_per_user)); "
            + "; ".join(sizes))


def placement_reason(p: dict, job, alone: bool = False) -> str:
    """The physical reason for one placement, with its numbers (replica totals); a part of a request_mix
    is named, and a pooled placement (not alone in its pool) says what share of the shared replicas it uses."""
    pooled = p.get("pool") and not alone
    part = f"{p['part']}: " if pooled or (job.stage == "serve" and p.get("part") not in (None, job.name)) else ""
    shared = (f" shared in pool '{p['pool']}' ({p.get('users_served', 0):,} of this part's users, "
              f"{p.get('replica_load', 0):.2f} replica(s) of load)" if pooled else "")
    return part + _reason(p, job, shared) + _basis(p)


def _basis(p: dict) -> str:
    """Where a serving placement's speed comes from, when the user gave measurements: the rows used,
    or why they do not cover it (nothing otherwise: the physics model is the default)."""
    note = p.get("basis_note")
    if not note:
        return ""
    if p.get("basis") == "measured":
        return f"; basis: measured ({note.removeprefix('measured: ')})"
    return f"; basis: modelled ({note.removesuffix('; modelled')})"


LONG_PROMPT = 4000
"""prompt tokens from which a binding loaded first-token limit says the model reads high: on NIM's
5,000-token rows (benchmarks/calibration_data.csv) it is 1.6-4.2x the measured TTFT at 25-150 clients
(8B TP1 at 50-150, 70B TP2 at 25-50); no factor yet fits those and the shorter rows together"""


def _reason(p: dict, job, shared: str) -> str:
    n = p["accelerators_per_replica"]
    if p.get("users_per_replica") is not None and job.stage in ("serve", "rl"):
        weights, kv = p["weights_gb"] * n, p["kv_gb"] * n
        used, cap = p["memory_gb_per_accelerator"] * n, p["memory_gb_capacity"] * n
        target = getattr(job, "min_tokens_per_s_per_user", None) or getattr(job, "min_tokens_per_s_per_rollout", None)
        tps = p["tokens_per_s_per_user"]
        binds = {"memory": "memory binds (the KV cache fills it)", "batch-cap": "the engine's batch limit binds",
                 "latency": "the per-user speed target binds",
                 "ttft": "the first-token limit binds (time to first token under load)",
                 "measured-range": "the largest concurrency measured binds (never extrapolated: measure higher "
                                   "for more)"}.get(p["binding"], f"{p['binding']} binds")
        ttft = f"; first token in {p['ttft_s']:.2f} s" if p.get("ttft_s") is not None else ""
        limit = f" against {job.max_ttft_s:g}" if getattr(job, "max_ttft_s", None) else ""
        if p["binding"] == "ttft" and p.get("basis") != "measured" and getattr(job, "input_tokens", 0) >= LONG_PROMPT \
                and p["users_per_replica"] >= 25:
            limit += (f" (the planner's first-token estimate for {LONG_PROMPT:,}+ token prompts at 25+ users a replica "
                      "runs up to 4x above NIM's published runs, benchmarks/fidelity.py, so this fleet may be larger "
                      "than needed: measure TTFT and give the run under the scenario's measurements)")
        note = str(p.get("basis_note", ""))
        pools = disagg.parse_note(note)
        split = (f"EP{p['tensor_parallel']} with data-parallel attention" if note.startswith(options.LAYOUT_NOTE)
                 else f"{pools[0]}x TP{pools[1]} prefill + {pools[2]}x TP{pools[3]} decode, disaggregated"
                 if pools else f"TP{p['tensor_parallel']} PP{p['pipeline_parallel']}")
        half = p.get("disaggregated")
        memory = (f"{weights:,.1f} GiB weights + {kv:,.1f} GiB KV = {used:,.1f} of {cap:,.1f} GiB" if not pools else
                  f"{p['weights_gb']:,.1f} GiB weights + {p['kv_gb']:,.1f} GiB KV = {p['memory_gb_per_accelerator']:,.1f} "
                  f"of {p['memory_gb_capacity']:,.1f} GiB on each decode accelerator (every prefill instance holds a whole "
                  "copy of the weights besides)")
        head = f"{p['replicas']} replica(s) of {n}x {p['accelerator']} ({split}){shared}: {memory}; "
        if half and half["role"] == "prefill":  # holds no users: it admits prompts for the decode half
            at_limit = bool(getattr(job, "max_ttft_s", None)) and p["ttft_s"] >= 0.99 * job.max_ttft_s
            return (f"{head}prefill half of a pair across two system types: "
                    f"{'the first-token limit' if at_limit else 'the utilisation cap'} binds at "
                    f"{half['prompts_per_s_per_replica']:,.2f} prompts/s admitted a replica, whose users decode on "
                    f"{half['decode_system']} TP{half['decode_tensor_parallel']}; KV over the network "
                    f"{half['kv_transfer_ms']:,.1f} ms{ttft}{limit}")
        if half:
            binds = (f"decode half (prompts prefilled on {half['prefill_system']} TP{half['prefill_tensor_parallel']}): "
                     + ("memory binds (the KV cache fills it)" if used >= 0.97 * cap else
                        "the per-user speed target binds"))
        return (f"{head}{binds} at {p['users_per_replica']:,} users per replica: "
                f"{1000 / tps:,.1f} ms per step = {tps:,.1f} tok/s per user against {target:g}"
                f" ({p['regime']}-bound){ttft}{limit}")
    if p.get("hours_per_run") is not None:
        deadline = getattr(job, "max_hours_per_run", None) or (getattr(job, "max_days", 0) * 24) or None
        limit = f" against a {deadline:,g} h limit" if deadline else ""
        how = "owned" if p.get("provider") == OWNED_PROVIDER else p["acquisition"]  # (held already: never bought in the plan)
        return (f"{n}x {p['accelerator']} ({how}): {p['memory_gb_per_accelerator']:.1f} of "
                f"{p['memory_gb_capacity']:.0f} GiB per accelerator, {hours_text(p['hours_per_run'])} per run{limit}; "
                f"{p['binding']} binds")
    return (f"{p['replicas']:,}x {p['accelerator']}: {p['memory_gb_per_accelerator']:.1f} of "
            f"{p['memory_gb_capacity']:.0f} GiB, {p['tokens_per_s_per_user']:.1f} tok/s per device; {p['binding']} binds")


def _engine(stack: str) -> str:
    return ENGINES.get(stack, "your serving stack")


def _trainer(method: str, stack: str) -> str:
    return TRAINERS_BY_STACK.get(stack) or TRAINERS.get(method, "your training stack")


NATIVE = {"fp8": "fp8_tflops", "fp4": "fp4_tflops", "int8": "int8_tops"}
"""the catalog column of a precision's own matmul rate: where it is empty the accelerator runs
such weights weight-only (catalog.Accelerator.peak_tflops falls back to a wider format)"""
WEIGHT_ONLY_ENGINE = {"cuda": "vLLM (its Marlin weight-only kernels)"}


def _weight_only(precision: str, accelerator) -> bool:
    """Whether `precision`'s weights run weight-only on `accelerator` (dequantised to bf16 for the
    matmuls: W8A16, W4A16): 8- and 4-bit formats without their own matmul rate there (FP8 on
    Ampere); int4 always runs so."""
    if precision == "int4":
        return True
    column = NATIVE.get(precision)
    return column is not None and not getattr(accelerator, column)


def _run_it(p: dict, job, stack: str, weight_only: bool = False) -> str:
    n, acc = p["accelerators_per_replica"], p["accelerator"]
    if job.stage == "serve":
        engine = WEIGHT_ONLY_ENGINE.get(stack, _engine(stack)) if weight_only else _engine(stack)
        weights = (f"{job.precision} weights, weight-only: {acc} has no {job.precision} matmuls, so they run as "
                   f"W{8 if job.precision in ('fp8', 'int8') else 4}A16" if weight_only else f"{job.precision} weights")
        ttft = f" and first token within {job.max_ttft_s:g} s" if job.max_ttft_s else ""
        wl = _part(job, p.get("part"))[0] if p.get("part") else None
        ctx, inp, out = (wl.kv_tokens, wl.input_tokens, wl.output_tokens) if wl else (
            job.context_tokens, job.input_tokens, job.output_tokens)
        half = p.get("disaggregated")
        if half and half["role"] == "prefill":
            return (f"benchmark prefill only of {job.model} ({job.precision} weights) on {n}x {acc} ({p['system']}), "
                    f"TP{p['tensor_parallel']}, {inp:,}-token prompts arriving at "
                    f"{half['prompts_per_s_per_replica']:,.2f} a second: expect the first token{ttft.replace(' and first token', '')} "
                    f"including the KV cache's {half['kv_transfer_ms']:,.1f} ms to {half['decode_system']}")
        kv = ": on vLLM pass --kv-cache-dtype fp8, its default is 16-bit" if job.kv_precision == "fp8" else ""
        return (f"benchmark {job.model} ({weights}, {job.kv_precision} KV{kv}) with {engine} on "
                f"{n}x {acc} ({p['system']}), {_layout(p)}, "
                f"{p['users_per_replica']:,} concurrent sequences at {ctx:,}-token context "
                f"({inp:,} in, {out:,} out): expect at least "
                f"{job.min_tokens_per_s_per_user:g} tok/s per user (planned {p['tokens_per_s_per_user']:.1f}){ttft}")
    if job.stage == "rl" and p.get("users_per_replica") is not None:
        return (f"benchmark rollouts of {job.model} ({job.precision}) with {_engine(stack)} on {n}x {acc}, "
                f"{_layout(p)}, {p['users_per_replica']:,} concurrent "
                f"rollouts at {job.rollout_context_tokens:,} tokens: expect {job.min_tokens_per_s_per_rollout:g} "
                f"tok/s each (planned {p['tokens_per_s_per_user']:.1f})")
    if p.get("hours_per_run") is not None:
        method = "pretrain" if job.stage == "pretrain" else job.method
        passes = getattr(job, "logprob_passes", 0)
        what = ("pretraining" if job.stage == "pretrain" else
                f"the RL trainer ({job.method}, {passes} log-prob pass{'es' if passes != 1 else ''} over each token "
                "besides its update)" if job.stage == "rl" else f"a {method} fine-tune")
        precision = jobs.train_precision(job)
        return (f"run {what} of {job.model} in {precision} with {_trainer(method, stack)} on {n}x {acc} ({p['system']}): "
                f"expect about {hours_text(p['hours_per_run'])} per run with a tuned stack (the planner's rates are "
                f"NeMo/Megatron-class: another framework took about 4x as long for the same 8x H100 LoRA in a public "
                f"benchmark round); count the days it takes to make it work")
    return (f"run {job.model} at {job.precision} with {_engine(stack)} on one {acc} ({p['system']}): expect "
            f"{job.min_tokens_per_s:g} tok/s (planned {p['tokens_per_s_per_user']:.1f})")


def _layout(p: dict) -> str:
    """How a serving replica is laid out, as its basis note has it: TP x PP, expert parallelism with
    data-parallel attention (a MoE's planned batch holds only so laid out: each rank keeps its own
    sequences' KV), or prefill and decode workers within the replica (disaggregated)."""
    note = p.get("basis_note") or ""
    if note.startswith(moe.NOTE):
        return (f"EP{p['tensor_parallel']} with data-parallel attention (the routed experts split across the "
                f"{p['accelerators_per_replica']}, each rank holding its own sequences' KV; not TP{p['tensor_parallel']})")
    pools = disagg.parse_note(note)
    if pools:
        n_p, tp_p, n_d, tp_d = pools
        return (f"disaggregated: {n_p}x TP{tp_p} prefill and {n_d}x TP{tp_d} decode workers per replica, "
                "the KV passed from one to the other")
    return f"TP{p['tensor_parallel']} PP{p['pipeline_parallel']}"


API_ONLY = " at the API's token prices"


def _included(job: dict, pooled: bool = False) -> str:
    """What the unit cost holds: capital, power and hosting; rentals' or an API's prices (pooled: bought in its N+1 pool)."""
    kinds = {"api" if p["acquisition"] == "api" else "held" if p["provider"] == OWNED_PROVIDER else
             "owned" if p["acquisition"] == "buy" else "rented"
             for p in job["placements"]} | ({"api"} if job.get("api") else set()) | ({"owned"} if pooled else set())
    words = {"owned": "capital, power and hosting", "held": "power and hosting (no capital: systems you own)",
             "rented": "the rental prices", "api": "the API's token prices"}
    if {"owned", "held"} <= kinds:  # (not "capital, power and hosting and power and hosting": the second review)
        words["owned"], kinds = "power and hosting (capital for the systems bought)", kinds - {"held"}
    if job.get("stage") == "edge":  # (the expert review: devices cost capital and support; their hosts power them)
        return ", the devices' capital and support included (their power is the robots' or hosts', not priced)"
    held = listed([words[k] for k in words if k in kinds] or ["its costs"])
    return API_ONLY if kinds == {"api"} else f" at the planned batch, {held} included"


def _unit_cost(job: dict, spec, pooled: bool = False) -> str:
    included = _included(job, pooled)
    text = (unit_cost_text(job["unit_cost"]) or "no unit cost (nothing served)") + included
    if spec.stage == "serve" and spec.active_fraction == 1 and job["unit_cost"].get("usd_per_million_tokens") \
            and included != API_ONLY:  # (an API's price per token does not change with the load)
        text += (f"; tokens counted at the peak load for all {spec.hours_per_day:g} h a day: where the average "
                 "load is lower, set active_fraction to its share of the peak (the cost per token rises as it falls)")
    return text


def _rl_loop(job: dict) -> str:
    """How the plan runs an RL job's rollouts and trainer: in turns on the systems they share (their
    accelerator-hours count together: data/sharing.py), or at once on separate ones (the reviews)."""
    shared = ({p["offer"] for p in job["placements"] if p.get("users_per_replica") is not None}
              & {p["offer"] for p in job["placements"] if p.get("hours_per_run") is not None})
    if shared:
        return (f"run the rollouts and the trainer in turns on {', '.join(sorted(shared))}, as a synchronous "
                "loop does (verl's default): the plan counts their accelerator-hours together within the day, so "
                "the rollouts spread over the systems while the trainer waits, and the trainer takes them all in its turn")
    return ("run the rollouts and the trainer at the same time on their separate systems, as an asynchronous loop "
            "does (verl's one-step-off-policy recipe); a synchronous loop would leave each idle while the other runs")


def three_checks(job: dict, spec, cat, pooled: bool = False) -> dict:
    """Regime, run it, unit cost: the seeds' checks before signing, for one job of the plan."""
    regimes, runs = [], []
    for p in job["placements"]:
        stack = cat.accelerators[p["accelerator"]].stack
        regime = p.get("regime") or p["binding"]
        text = f"on {p['accelerator']} the job is {regime}-bound: {LEVERS.get(regime, 'measure it')}"
        if text not in regimes:
            regimes.append(text)
        weight_only = spec.stage == "serve" and _weight_only(spec.precision, cat.accelerators[p["accelerator"]])
        run = _run_it(p, spec, stack, weight_only)
        if run not in runs:
            runs.append(run)
    runs += [_rl_loop(job)] if spec.stage == "rl" else []
    for a in job.get("api") or []:  # hosted token-priced APIs (options/api.py)
        regimes.append(f"on {a['provider']}'s hosted API the job is token-bound: it pays per token, so hours "
                       "without requests cost nothing; a peak above the rate limit needs capacity of its own")
        runs.append(f"send {a['users_served']:g} concurrent users' requests for {spec.model} to {a['provider']} "
                    f"({a['offer']}) and measure tok/s per user and time to first token against "
                    f"{spec.min_tokens_per_s_per_user:g} tok/s" + (f" and {spec.max_ttft_s:g} s" if spec.max_ttft_s else ""))
    return {"regime": "; ".join(regimes) or "-", "run_it": "; ".join(runs) or "-", "unit_cost": _unit_cost(job, spec, pooled)}


def summary(plan: dict, s) -> str:
    """The recommendation in one paragraph."""
    clauses = fleet_clauses(plan["fleet"])  # ("Keep 2x ... you own (...); buy 2x ...": one sentence)
    text = "; ".join(clauses[:1] + [c[0].lower() + c[1:] for c in clauses[1:]]) or "Nothing to acquire"
    text += f": ${plan['total_cost_usd_per_year']:,.0f} per year all-in"
    if plan.get("years"):  # the final year's fleet; purchases paid when made
        paid = [f"${y['capex_usd']:,.0f} in year {y['year']}" for y in plan["years"] if y["capex_usd"] > 0]
        text += f" on average over {len(plan['years'])} years (the fleet named is year {plan['years'][-1]['year']}'s"
        text += f"; purchases paid {listed(paid)})" if paid else ")"
    elif purchase := sum((f["purchase_usd"] or 0.0) + f.get("paid_upfront_usd", 0.0) for f in plan["fleet"]):
        text += f" (${purchase:,.0f} up front)"  # (purchases and reservations paid up front)
    text += "." + (_earlier(plan) if plan.get("years") else "")
    rate = s.policy.cost_per_system_type_usd_year
    if rate:
        types = sorted({f["system"] for f in plan["fleet"] if f["acquisition"] != "api"})
        text += (f" Fleet complexity: {len(types)} system type{'s' if len(types) != 1 else ''}"
                 + (f" ({', '.join(types)})" if types else "") + f" at ${rate:,.0f} per type per year "
                 f"(policy.cost_per_system_type_usd_year) = ${len(types) * rate:,.0f} per year, spread over "
                 "each type's fleet rows by systems.")
    nb = plan.get("next_best")
    if nb and nb.get("unserved_jobs"):  # (max-coverage: cheaper only by serving fewer)
        text += (f" Without {', '.join(nb['excluded_systems'])} the next-best fleet ({_fleet(nb['fleet']) or 'nothing'}) "
                 f"leaves {', '.join(nb['unserved_jobs'])} {'more ' if any(j['unserved'] for j in plan['jobs']) else ''}"
                 "unserved.")
    elif nb and nb.get("cost_delta_usd_per_year") is not None:
        delta = nb["cost_delta_usd_per_year"]
        within = max(1.0, (plan["solver"].get("gap") or 0.0) * plan["total_cost_usd_per_year"])
        least = nb.get("cost_delta_at_least_usd_per_year")
        more = f"${delta:,.0f}" if least is None or least >= delta - 0.5 else f"${max(least, 0.0):,.0f} to ${delta:,.0f}"
        more = f"up to {more}" if least is None and nb.get("cost_is_upper_bound") else more  # (a re-plan stopped short)
        text += (f" The next-best fleet, {_fleet(nb['fleet'])}, costs {more} more per year." if delta > 0 else
                 f" The next-best fleet, {_fleet(nb['fleet'])}, costs the same per year, within the solver's gap."
                 if -delta <= within else
                 f" The next-best fleet, {_fleet(nb['fleet'])}, costs ${-delta:,.0f} less per year: the plan above "
                 "is not the cheapest its model holds (report the scenario).")
    for other in (plan.get("next_best_acquisition") or {}, plan.get("api_fleet") or {}):  # (rent or buy; API or not)
        if (other.get("cost_delta_usd_per_year") or 0) > 0 and not other.get("unserved_jobs"):
            text += f" The {other['message']}."
    text += _idle_owned(plan, s) + _part_day_rentals(plan, s) + _estimated(plan)
    binding = [e for e in plan.get("explanations", []) if e["binding"] and e["family"] in ("power", "budget", "redundancy")]
    if binding:
        text += " Binding: " + "; ".join(e["message"] for e in binding) + "."
    return text


ESTIMATED_SHARE = 0.1
"""a fleet row whose price is a catalog estimate is named in the summary from this share of the plan's cost"""


def _estimated(plan: dict) -> str:
    """' It rests on estimated prices, not quotes: ...' for the fleet rows carrying a tenth or more of
    the cost whose price is a catalog estimate (the finance review: a buy decision rested on an
    estimated used-node price and only a note below the fleet said so)."""
    total = plan["total_cost_usd_per_year"] or 0.0
    rows = [f"{f['offer']} ({f['acquisition']})" for f in plan["fleet"]
            if unquoted(f.get("price_source")) and total > 0 and f["cost_usd_per_year"] >= ESTIMATED_SHARE * total]
    if not rows:
        return ""
    return (f" It rests on estimated prices, not quotes: {listed(rows)}; get a quote before acting on it "
            "(--catalog takes yours).")


def _earlier(plan: dict) -> str:
    """A multi-year plan's purchases and reservations that are not in its final year's fleet (the
    fleet above), with the year each was signed (the finance review: a 3-year reservation of years
    1-3 vanished from a headline that named the year-4 rental only)."""
    final = {f["offer"] for f in plan["fleet"]}
    done = []
    for y in plan["years"]:
        providers = {f["offer"]: f["provider"] for f in y["fleet"]}
        for p in y.get("purchases") or []:
            if p["offer"] not in final:
                paid = (f"${p['paid_upfront_usd']:,.0f} paid up front)" if p.get("paid_upfront_usd") else
                        f"${p['total_usd']:,.0f}" + (" a year)" if p["acquisition"] != "buy" else ")"))
                done.append(f"year {y['year']}: {VERBS.get(p['acquisition'], p['acquisition']).lower()} {p['systems']:,}x "
                            f"{p['system']} ({providers.get(p['offer'], '?')}, {paid}")
    return f" Signed before the final year and ended by it: {'; '.join(done)}." if done else ""


def _idle_owned(plan: dict, s) -> str:
    """' Of the systems you own, 1x h100-sxm-x8 is not needed: ...' for the scenario's owned systems
    the plan leaves idle (their power and hosting cost more than the work they would do saves)."""
    kept = {f["system"]: f["systems"] for f in plan["fleet"] if f["provider"] == OWNED_PROVIDER}
    idle = [f"{h.count - kept.get(h.system, 0):,}x {h.system}" for h in s.owned if h.count > kept.get(h.system, 0)]
    if not idle:
        return ""
    spare = ("; under N+1 a system serves only beside an idle one of its type at your site" + (
        "" if "buy" in s.policy.acquisition else ", and the policy buys none") if s.policy.redundancy == "n+1" else "")
    return (f" Of the systems you own, {listed(idle)} {'is' if len(idle) == 1 and idle[0].startswith('1x') else 'are'} "
            f"not needed: the plan is cheaper without their power and hosting{spare} (sell or repurpose them).")


PART_DAY_NODE = 8
"""accelerators per system from which a part-day on-demand rental is flagged: whole 8-GPU nodes are
the capacity a GPU cloud most often has none of on demand (economics.md s5a)"""


def _part_day_rentals(plan: dict, s) -> str:
    """' On demand 1x h100-sxm-x8 (nebius) is rented only 12 h a day: ...' for on-demand rentals of
    whole nodes, or of any marketplace host (no capacity promise at all: the finance review), that only
    part-day jobs use: their cost assumes the capacity is given back each day and won again the next."""
    hours = {j.name: getattr(j, "hours_per_day", 24.0) for j in s.jobs}
    busy: dict[str, float] = {}
    for job in plan["jobs"]:
        for p in job["placements"]:
            busy[p["offer"]] = max(busy.get(p["offer"], 0.0), hours.get(job["name"], 24.0))
    rows = [f"{f['systems']}x {f['system']} ({f['provider']}) only {busy[f['offer']]:g} h a day"
            for f in plan["fleet"] if f["acquisition"] == "on-demand" and f["offer"] in busy
            and busy[f["offer"]] < 24 and (f["accelerators"] >= PART_DAY_NODE * f["systems"]
                                             or f.get("tier") == "marketplace")]
    if not rows:
        return ""
    market = any(f.get("tier") == "marketplace" for f in plan["fleet"] if f["offer"] in busy)
    return (f" Rented on demand {listed(rows)}: that assumes the capacity is given back each day and won again "
            "the next; reserve it (or set the jobs' hours_per_day to 24) where it may not be"
            + (", and a marketplace host promises no capacity at all (policy.provider_tiers can leave them out)."
               if market else "."))


def _fleet(fleet: list[dict]) -> str:
    return " + ".join(fleet_item(f) for f in fleet)


# --- when no accelerator can run a job ----------------------------------------------------------
