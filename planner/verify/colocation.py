"""An RL job that colocates has its trainer and rollouts at one place (data/colocation.py): every
placement of either part on offers of one site and one software stack, re-derived from the offers
the plan names."""

from __future__ import annotations

from planner.data.catalog import Catalog
from planner.data.colocation import MARKETPLACE, colocated, placed_at, words
from planner.data.scenario import Scenario
from planner.verify.common import Verification


def check_colocation(plan: dict, s: Scenario, cat: Catalog, v: Verification) -> None:
    jobs = {j["name"]: j for j in plan["jobs"]}
    for job, parts in sorted(colocated(s).items()):
        places = placed_at([p for p in jobs.get(job, {}).get("placements", []) if p["part"] in parts], cat)
        v.check("colocation", len(places) <= 1 and not any(p[0] == MARKETPLACE for p in places),
                f"RL job '{job}' has its trainer and rollouts at {len(places)} places "
                f"({'; '.join(sorted(words(p) for p in places))}); colocate asks for one site on one stack")
