"""Cost with and without pooled serving replicas (policy.pool_jobs) on every shipped scenario.

    python benchmarks/pooling.py [--only NAME ...]

Each scenarios/*.yaml is planned twice with explanations off: as shipped (pool_jobs true, the
default, unless the file says otherwise) and with pool_jobs false (whole replicas per serving job,
rented systems per job). Prints cost per year of each, the saving, the pools the pooled plan
formed (pool: jobs sharing replicas), whether the scenario is multi-year, and the wall time of
each plan. Scenarios without two serving demands of one model and precision have no pool, so
their two costs are equal; infeasible ones say so.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.app.pipeline import plan_scenario  # noqa: E402
from planner.data.errors import InfeasibleError  # noqa: E402
from planner.data.jobs import pools_of  # noqa: E402
from planner.data.scenario import load_scenario  # noqa: E402


def plan_cost(s) -> tuple[float | None, float, list]:
    """(cost per year or None if infeasible, seconds, the plan's pools)."""
    t = time.perf_counter()
    try:
        plan = plan_scenario(s, explain="none")
    except InfeasibleError:
        return None, time.perf_counter() - t, []
    return plan["total_cost_usd_per_year"], time.perf_counter() - t, plan.get("pools") or []


def money(x: float | None) -> str:
    return "infeasible" if x is None else f"{x:,.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="scenario file names (default: all)")
    args = ap.parse_args()
    files = sorted((ROOT / "scenarios").glob("*.yaml"))
    if args.only:
        files = [f for f in files if f.name in args.only or f.stem in args.only]
    head = (f"{'scenario':<28} {'years':>5} {'pooled $/yr':>12} {'unpooled $/yr':>13} {'saving':>8} "
            f"{'pooled s':>8} {'unpooled s':>10}  pools (demands sharing replicas)")
    print(head)
    print("-" * len(head))
    for f in files:
        s = load_scenario(f)
        off = s.model_copy(update={"policy": s.policy.model_copy(update={"pool_jobs": False})})
        pooled, t1, pools = plan_cost(s)
        alone, t2, _ = plan_cost(off)
        saving = "-" if pooled is None or alone is None or not alone else f"{1 - pooled / alone:.1%}"
        groups: dict[str, set] = {}
        for p in pools:
            groups.setdefault(p["pool"], set()).update(p["load"])
        formed = "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in sorted(groups.items()))
        possible = len(pools_of(s))
        note = formed or ("none possible" if not possible else f"{possible} demands could pool; none share")
        years = s.horizon_years if s.multi_year else 1
        print(f"{f.stem:<28} {years:>5} {money(pooled):>12} {money(alone):>13} {saving:>8} {t1:>8.1f} {t2:>10.1f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
