"""A serving placement's basis (measured or modelled) re-derived from the scenario's measurements:
a measured placement's speed and TTFT come from the same rows by the same interpolation
(physics.measured), and a placement may not claim the physics model where rows cover it."""

from __future__ import annotations

from planner.data.measurements import load_measurements
from planner.physics import measured


def check_basis(p: dict, part, m, system, s, v, where: str) -> tuple[float, float | None] | None:
    """(TPOT ms, TTFT ms or None) of a measured placement at its users per replica, else None."""
    rows = load_measurements(tuple(s.measurements)) if s.measurements else ()
    wl = part.workload
    mine = measured.rows_for(rows, m.id, system.id, p["tensor_parallel"], p["pipeline_parallel"], wl.precision)
    covered = bool(mine) and measured.capacity(mine, wl.input_tokens, wl.output_tokens, 1e-9, None)[0] is not None
    basis = p.get("basis", "modelled")
    v.check("basis", basis == ("measured" if covered else "modelled"),
            f"{where}: reports basis {basis}, but the measurements "
            + ("cover this model, system, split, precision and request size" if covered else "do not cover it"))
    if basis != "measured" or not covered:
        return None
    got = measured.at(mine, wl.input_tokens, wl.output_tokens, p["users_per_replica"])
    v.check("basis", got is not None, f"{where}: {p['users_per_replica']} users per replica is beyond the "
                                      "largest concurrency measured")
    return got
