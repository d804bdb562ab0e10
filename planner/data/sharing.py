"""When a training run may take turns with another job on the same owned systems, and when it must
fit beside it (the MILP's batch-fit and batch-pair rows, milp/turns.py; the verifier, verify/fleet.py).

Owned capacity is a pool of accelerator-hours (the hours row), but a run with a deadline cannot wait
for every other job: a 35-hour fine-tune on the 8 GPUs that serving holds 12 hours a day meets a
48-hour deadline only if it runs beside the serving (the training review: shown as met while it
took 59 hours or more). Each job holds its systems in a cycle: `busy` hours every `period` hours (a
serving job hours_per_day every 24; a batch job a run's hours every 8,760 / runs per year). A run
of h hours that gives way to a job y (pauses while y holds the systems) finishes after

    W = h + floor(h / (period_y - busy_y)) x busy_y          started as y's stretch ends
    W = busy_y + that                                       if the run comes round more often than
                                                            y's cycle (it cannot choose its start:
                                                            a daily run waits out a 58-day one)
(infinite when y never lets go: busy_y >= period_y, serving 24 h a day), so it may give way when
it has no deadline or W <= its deadline. Serving never gives way (its users are there when they
are): a run that cannot give way to a serving job runs beside it. Two runs of different jobs where
neither may give way to the other run side by side. An RL job's rollouts and trainer take turns by
design (colocated generation and training), so the parts of one job never block each other.
"""

from __future__ import annotations

import math

from planner.data.constants import HOURS_PER_YEAR

TOLERANCE = 1e-9


def run_cycle(hours_per_run: float, runs_per_year: float) -> tuple[float, float]:
    """(busy, period) hours of a batch job's cycle: a run every 8,760 / runs per year hours."""
    return hours_per_run, HOURS_PER_YEAR / max(runs_per_year, 1e-9)


def given_way_hours(hours: float, own_period: float, busy: float, period: float) -> float:
    """Wall-clock hours of a run of `hours` (one every `own_period` hours) that pauses while another
    job holds its systems `busy` hours every `period`: the module docstring's W."""
    free = period - busy
    if free <= TOLERANCE * period:
        return math.inf
    paused = hours + math.floor(hours / free * (1 - TOLERANCE)) * busy
    return paused if own_period >= period * (1 - TOLERANCE) else busy + paused


def can_give_way(hours: float, deadline: float, own_period: float, busy: float, period: float) -> bool:
    """Whether a run of `hours` with `deadline` hours (0: none) may pause for that job and still meet it
    (never for a job that holds the systems all the time, deadline or none)."""
    wall = given_way_hours(hours, own_period, busy, period)
    return math.isfinite(wall) and (deadline <= 0 or wall <= deadline * (1 + TOLERANCE))


def beside_serving(hours: float, deadline: float, runs_per_year: float, hours_per_day: float) -> bool:
    """A run must fit beside a serving job of hours_per_day on the same systems."""
    return not can_give_way(hours, deadline, run_cycle(hours, runs_per_year)[1], hours_per_day, 24.0)


def side_by_side(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """Two runs of different jobs, each (hours per run, deadline, runs per year), must fit side by
    side: neither may give way to the other."""
    (ha, da, ra), (hb, db, rb) = a, b
    pa, pb = run_cycle(ha, ra)[1], run_cycle(hb, rb)[1]
    return not (can_give_way(ha, da, pa, hb, pb) or can_give_way(hb, db, pb, ha, pa))
