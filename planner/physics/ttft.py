"""Time to first token, alone and under load.

Convention (the one benchmark clients use: vLLM `benchmark_serving --max-concurrency B`,
genai-perf `--concurrency B`, reference/serving-benchmarks.md §A-B): a closed loop of B clients,
each sending its next request as soon as the previous one ends; TTFT is the mean from sending a
request to its first token, queueing in the engine included (vLLM issue #4252).

Within the engine's batch (B <= the memory/engine cap), with chunked prefill (§C):
    admit   = step.admission_wait_s: the clients that finished together send together, and the
              serving front end admits their prompts one after another, admission_us_per_prompt_token
              x s_in x (B - 1) (the wait in seconds per other client's prompt token is the same on
              the NIM Llama 8B TP1 and 70B TP2 rows although their GPU prefill rates differ
              five-fold, so it is not the GPU's queue: reference/serving-benchmarks.md §B)
    budget  = prompt tokens per step beside the B - 1 running decodes (step.prompt_budget)
    n       = max(1, s_in / budget) steps of prefill, each a mixed step of one stage carrying
              min(budget, s_in) prompt tokens beside (B - 1)/PP decodes (admitted one at a time,
              a request's prompt does not queue behind the others' at the GPU)
    TTFT    = admit + (B - 1)/B x half a decode step (the step in flight when it arrives)
              + (n + PP - 1) x that mixed stage time
A prompt never splits across pipeline stages: its chunks pass the stages in turn, so one chunk
takes PP stage times (the whole model on TP accelerators), and n chunks pipeline behind it.
Alone (B = 1) this is the prefill of one prompt on an idle replica.

Requests that arrive at a rate (a job given as requests_per_s: Workload.open_loop) come one by one,
not in waves: no admission wave; instead a prompt waits for those ahead of it at the replica's
prefill, an M/D/1 queue (open_loop_wait_s):
    S       = n x that mixed stage time (the replica's prefill time per prompt)
    lambda  = B / (T0 + (s_out - 1) x TPOT(B)) prompts a second (Little's law; T0 the TTFT without
              the wait)
    rho     = min(lambda x S, RHO_MAX);  wait = rho x S / (2 (1 - rho))
On the open-loop rows of reference/serving-benchmarks.md (vLLM, Llama-3.2-3B on 4 L40S replicas,
1000/500 tokens): 10 qps (17 in flight per replica) 55 ms measured, 43 ms modelled (the closed
loop's 138); 30 qps (89 per replica) 73 ms measured, 58 ms modelled (the closed loop's 581).

Above the cap (B > cap), requests wait for a slot: the engine completes X = cap / cycle requests
per second, cycle = TTFT(cap) + (s_out - 1) x TPOT(cap), and by Little's law
    TTFT(B) = B / X - (s_out - 1) x TPOT(cap)      (serving-benchmarks.md §C4, derived there)
which the NIM rows show as TTFT linear in B with flat TPOT and throughput.
"""

from __future__ import annotations

from planner.data.catalog import Accelerator, Model
from planner.data.jobs import Workload
from planner.physics import step
from planner.physics.calibration import Calibration


def _within(r: step.Replica, batch: int) -> float:
    wl, pp = r.wl, r.pp
    others = (batch - 1) / pp
    ahead = float(wl.input_tokens)
    budget = r.budget(others)
    n = max(1.0, ahead / budget)
    chunk = min(budget, ahead)
    beside = 0.0 if r.eng.prefill_first else others  # SGLang: a pass of its own
    mixed = r.time(beside, chunk)
    wait = 0.0
    if batch > 1:
        pure = r.time(batch / pp, 0.0)
        wait = 0.5 * (batch - 1) / batch * pp * pure
    first = wait + (n + pp - 1) * mixed
    if wl.open_loop:
        return first + open_loop_wait_s(r, batch, first, n * mixed)
    return step.admission_wait_s(wl, batch, r.cal) + first


RHO_MAX = 0.95
"""the prefill's utilisation at most (open_loop_wait_s): at it a prompt waits 9.5 prefills, which
no TTFT limit of a real service allows"""


def open_loop_wait_s(r: step.Replica, batch: int, first: float, service: float) -> float:
    """A prompt's wait for those ahead of it at the prefill when requests arrive at a rate (the
    module docstring): M/D/1 at the rate `batch` users in flight send, each prefill `service`
    seconds, the first token `first` seconds after admission."""
    if batch <= 1:
        return 0.0
    rate = batch / (first + (r.wl.output_tokens - 1) * r.tpot(batch))
    rho = min(rate * service, RHO_MAX)
    return rho * service / (2 * (1 - rho))


def ttft_s(m: Model, acc: Accelerator, wl: Workload, tp: int, pp: int, batch: int = 1,
           link=None, cal: Calibration | None = None, engine: str | None = None) -> float:
    """Mean seconds to the first token in a closed loop of `batch` clients on one replica (see
    the module docstring); batch 1 is one prompt on an idle replica."""
    return of(step.replica(m, acc, wl, tp, pp, link, cal, engine), batch)


def of(r: step.Replica, batch: int = 1) -> float:
    """ttft_s of one replica (step.replica), kept per batch."""
    batch = max(1, int(batch))
    got = r.ttfts.get(batch)
    if got is not None:
        return got
    cap = r.users_cap
    if cap < 1 or batch <= cap:
        got = _within(r, batch)
    else:
        t_cap = _within(r, cap)
        cycle = t_cap + (r.wl.output_tokens - 1) * r.tpot(cap)
        got = t_cap + (batch - cap) / cap * cycle
    r.ttfts[batch] = got
    return got
