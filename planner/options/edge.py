"""Edge options: one device per unit for an edge job (robots, desks, phones), the device classes
of the catalog's systems that may carry each, and why an accelerator no device of a job's class
carries cannot run it (options/build.py asks both)."""

from __future__ import annotations

from planner.data.catalog import Catalog, System
from planner.data.jobs import edge_workload
from planner.data.scenario import EdgeJob
from planner.options.eligibility import kind_phrase
from planner.options.types import EdgeOption
from planner.physics import serving

EDGE_KINDS = {"robot": ("edge",), "desk": ("workstation",), "phone": (), "any": ("edge", "workstation")}


def device_reasons(device: str, cat: Catalog) -> dict[str, str]:
    """accelerator -> why an edge job of device class `device` cannot run on it, for each catalog
    accelerator no one-accelerator system of that class (EDGE_KINDS) carries."""
    kinds = EDGE_KINDS[device]
    carried = {sy.accelerator for sy in cat.systems.values() if sy.accelerators == 1 and sy.kind in kinds}
    want = (f"{device} jobs run on {' or '.join(kind_phrase(k) for k in kinds)}" if kinds
            else f"the catalog has no {device}")
    return {a: f"no {device}-class device carries it ({want})" for a in sorted(cat.accelerators) if a not in carried}


def edge_config(job: EdgeJob, m, acc, system: System, demand: str) -> tuple[EdgeOption | None, str]:
    if system.accelerators != 1 or system.kind not in EDGE_KINDS[job.device]:
        return None, ""
    wl = edge_workload(job)
    est = serving.estimate(m, acc, wl, 1, 1, 1)
    power_w = acc.tdp_w or system.power_kw * 1000
    if not est.fits:
        return None, est.reason
    if est.tokens_per_s_per_user < job.min_tokens_per_s:
        return None, f"{est.tokens_per_s_per_user:.1f} tok/s ({est.regime}-bound), below {job.min_tokens_per_s:g}"
    if job.max_power_w and power_w > job.max_power_w:
        return None, (f"draws {power_w:.0f} W at its rated power, above the {job.max_power_w:g} W limit (a module with "
                      "lower power modes is planned at its top one: what a lower mode costs in speed is not modelled; "
                      "measure it there, or raise max_power_w)")
    return EdgeOption(demand, system.id, acc.id, est.tokens_per_s_per_user, est.memory_gb_per_accelerator,
                      est.memory_gb_capacity, power_w, est.regime), ""
