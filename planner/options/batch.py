"""Training configurations (fine-tuning, pretraining, RL trainers): on each system type, the
fewest accelerators that fit a run and meet its deadline (physics.training), as BatchOptions."""

from __future__ import annotations

from planner.data.catalog import System
from planner.options.eligibility import kind_phrase
from planner.options.slots import replica_slots, scales_out
from planner.options.types import BatchOption
from planner.physics import training

BATCH_COUNTS = tuple(2 ** k for k in range(18))  # accelerators per training run: 1 .. 131072
QLORA_STACKS = ("cuda", "rocm")
"""where QLoRA runs: its NF4 base is bitsandbytes' (CUDA, and ROCm builds); a TPU, Trainium or Gaudi
recipe fine-tunes with LoRA on a bf16 base instead (the training review: QLoRA placed on TPU v7)"""


def batch_counts(system: System) -> list[int]:
    """Accelerator counts a run may use on this system type: powers of two up to one system, then
    whole systems in powers of two (72, 144, ... 4,608 GPUs of NVL72 racks; 144-chip UltraServers)."""
    per = system.accelerators
    whole = {per * 2 ** k for k in range(18) if per * 2 ** k <= BATCH_COUNTS[-1]}
    return sorted({n for n in BATCH_COUNTS if n <= per} | whole)


def batch_configs(m, acc, system: System, method: str, tokens: float, seq: int, rank: int,
                  precision: str, deadline_h: float, demand: str, forward_passes: int = 0) -> tuple[list[BatchOption], str]:
    """The fewest accelerators on this system type that fit and meet the deadline, and a larger
    count if it uses whole systems better. A run spans several systems only if they scale out; on
    several, the fewest whole systems (_fewest_systems: 24 nodes where 16 are too slow and 32 more
    than needed, not 32), and the next count of batch_counts beside it."""
    if acc.vendor == "aws" and "inferentia" in acc.name.lower():
        return [], ("AWS Inferentia runs inference: AWS Neuron trains on Trainium (PyTorch NeuronX: training on "
                    "Trn1 and Trn2, inference on Inf2; awsdocs-neuron pytorch-setup)")
    if method == "qlora" and acc.stack not in QLORA_STACKS:
        return [], (f"qlora's NF4 base needs bitsandbytes, which runs on {' and '.join(QLORA_STACKS)}, not "
                    f"{acc.stack}; use method: lora there")
    need = training.accelerators_min(m, acc, method, seq, rank)
    if need == 0:
        return [], f"{method} of {m.id} does not fit on any number of {acc.id} ({acc.memory_gb:g} GiB)"
    out: list[BatchOption] = []
    last = None
    slow = 0  # the largest count tried that missed the deadline

    def estimate(n: int):
        return training.estimate(m, acc, method, tokens, n, seq, rank, precision, scaleout_gbps=system.scaleout_gbps,
                                 forward_passes=forward_passes)

    for n in batch_counts(system):
        if n < need or replica_slots(n, system) is None:
            continue
        if n > system.accelerators and not scales_out(system):
            if last is None:
                return [], (f"needs {need}+ accelerators but a run may not span several {system.id} "
                            f"({system.kind}, no scale-out fabric)")
            break
        est = estimate(n)
        last = est
        if est.hours <= deadline_h:
            if not out and slow >= system.accelerators and n > slow + system.accelerators:
                fewest, at = _fewest_systems(estimate, system.accelerators, slow, n, est, deadline_h)
                if fewest < n:
                    out.append(BatchOption(demand, system.id, acc.id, fewest, at.hours, at.memory_gb_per_accelerator,
                                           acc.memory_gb, "deadline"))
            # the first count that meets the deadline: memory sized it where no smaller count that
            # holds the run was too slow (whole systems round it up: 144 GPUs for 128), else the deadline
            binding = ("deadline" if slow else "memory" if need > 1 else "compute") if out == [] else "compute"
            out.append(BatchOption(demand, system.id, acc.id, n, est.hours, est.memory_gb_per_accelerator,
                                   acc.memory_gb, binding))
            if len(out) >= 2 or n >= system.accelerators:
                break
        else:
            slow = n
    if not out:
        if last is not None and last.accelerators >= system.accelerators and not scales_out(system):
            return [], (f"too slow: {last.hours:,.0f} h on {last.accelerators}x {acc.id} (one {system.id}; "
                        f"{kind_phrase(system.kind)} does not scale out), deadline {deadline_h:g} h per run")
        hours = f"{last.hours:,.0f} h on {last.accelerators}" if last else "no count fits"
        return [], f"too slow: {hours}x {acc.id}, deadline {deadline_h:g} h per run"
    return out, ""


def _fewest_systems(estimate, per: int, slow: int, fast: int, at_fast, deadline_h: float):
    """(accelerators, estimate) of the fewest whole systems of `per` accelerators between `slow`
    accelerators (too slow) and `fast` (meets the deadline at `at_fast`) that meet it: bisection on
    the count of systems, the run's hours falling as systems are added (training.estimate: the same
    tokens over more accelerators, at a scale-out efficiency that falls slowly)."""
    lo, hi, best = slow // per, fast // per, at_fast
    while hi - lo > 1:
        mid = (lo + hi) // 2
        est = estimate(mid * per)
        if est.hours <= deadline_h:
            hi, best = mid, est
        else:
            lo = mid
    return hi * per, best
