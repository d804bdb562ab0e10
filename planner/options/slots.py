"""How a serving replica or a training run occupies the systems it runs on: the accelerators a
replica takes (a part of one system, or whole systems), and whether a run may span several
systems (a scale-out fabric)."""

from __future__ import annotations

from planner.data.catalog import System


def replica_slots(replica: int, system: System) -> float | None:
    """Owned accelerators one replica occupies: a replica inside a system wastes the remainder
    of the system's accelerators it cannot use; a larger replica takes whole systems."""
    n = system.accelerators
    if replica <= n:
        per_system = n // replica
        return n / per_system
    if replica % n:
        return None
    return float(replica)


SCALE_OUT_KINDS = ("server", "rack", "tpu-slice")
SCALE_OUT_MIN_ACCELERATORS = 8


def scales_out(system: System) -> bool:
    """May one training run span several of these systems? Only data-center nodes built for a
    scale-out fabric (InfiniBand/RoCE/EFA/ICI: servers, racks, TPU slices, and cloud instances of
    8 or more accelerators); not workstations, edge boxes or 1-4-GPU cloud instances."""
    if system.kind in SCALE_OUT_KINDS:
        return True
    return system.kind == "cloud-instance" and system.accelerators >= SCALE_OUT_MIN_ACCELERATORS
