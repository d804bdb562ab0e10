"""Economics a buyer acts on (issue 13), in figures: what the regions, provider tiers, capacity caps,
3-year commitments, resale, operations cost and hosted APIs changed.

    python benchmarks/economics.py [--before REF] [--skip-table]

1. Every shipped scenario planned on REF (default: the parent of the commit that added
   catalog/api_offers.csv, i.e. the tree before issue 13's economics) and on the working tree:
   yearly cost and fleet before and after, and why each changed. The reasons are derived, not
   written by hand: an offer the earlier plan used is now outside policy.regions or
   policy.provider_tiers (options/eligibility.py), above its max_systems cap, re-priced, or gone from
   the catalog; cost components that appeared or moved (ops, capital less resale, api, complexity:
   the system types in the fleet x policy.cost_per_system_type_usd_year).
2. The rent/buy break-even in hours a day for a bank-sized job (70B FP8, 200 users at 20 tok/s) and
   an 8B-sized one (8B FP8, the same traffic), production serving with an N+1 spare, on a colocation
   site that may buy or rent on demand:
   the fewest hours a day at which the cheapest plan puts most of its cost in bought systems
   (bisection on hours_per_day, 0.1 h), on REF and on the working tree, for a 3- and a 5-year horizon.
3. The idle internal tool (scenarios/internal-tool.yaml: 10 users of a 70B model, 9 h a day, active
   10%): the cheapest plan with hosted APIs allowed, and the cheapest self-hosted one.

Each plan runs `python -m planner run FILE -f json --explain none --no-timings -q` in a fresh
process on a clean export of its tree (git archive), so REF runs its own code and catalog.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from identical import export

from planner.data.catalog import load_catalog
from planner.data.consistency import resolve
from planner.data.scenario import load_scenario
from planner.options.eligibility import offer_exclusion


def default_before() -> str:
    """The tree before issue 13's economics: the parent of the commit that added api_offers.csv."""
    first = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", "catalog/api_offers.csv"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()[-1]
    return f"{first}^"


def plan(tree: Path, scenario: Path) -> tuple[int, dict | None]:
    r = subprocess.run([sys.executable, "-m", "planner", "run", str(scenario), "-f", "json", "--explain", "none",
                        "--no-timings", "-q"], capture_output=True, text=True, cwd=tree, check=False,
                       env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    try:
        return r.returncode, json.loads(r.stdout) if r.returncode == 0 else None
    except json.JSONDecodeError:
        return r.returncode, None


def plan_doc(tree: Path, doc: dict, tmp: Path) -> dict | None:
    path = tmp / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return plan(tree, path)[1]


def money(x: float | None) -> str:
    if x is None:
        return "-"
    return f"${x / 1e6:,.2f}M" if abs(x) >= 1e6 else f"${x:,.0f}"


def fleet_text(p: dict | None) -> str:
    if p is None:
        return "no plan"
    rows = sorted(p["fleet"], key=lambda f: -f["cost_usd_per_year"])
    parts = [f"API {f['provider']}" if f["acquisition"] == "api"
             else f"{f['systems']}x {f['system']} {f['acquisition']} {f['provider']}" for f in rows[:3]]
    return ", ".join(parts) + (f" +{len(rows) - 3} more" if len(rows) > 3 else "")


def old_offers(tree: Path) -> dict[str, dict]:
    lines = [ln for ln in (tree / "catalog" / "offers.csv").read_text().splitlines() if not ln.startswith("#")]
    return {r["id"]: r for r in csv.DictReader(lines)}


def reasons(name: str, before: dict | None, after: dict | None, old_cat: dict[str, dict]) -> list[str]:
    """Why the plan changed, from the rules and the catalog (module docstring)."""
    if before is None or after is None:
        return ["no plan on one side"]
    s = load_scenario(ROOT / "scenarios" / name)
    cat = resolve(s)
    out = []
    now = {f["offer"]: f for f in after["fleet"]}
    for f in before["fleet"]:
        oid, o = f["offer"], cat.offers.get(f["offer"])
        if oid in now and now[oid]["systems"] >= f["systems"]:
            continue
        if o is None:
            out.append(f"{oid} is no longer in the catalog")
        elif offer_exclusion(o, s, cat):
            out.append(f"{oid}: {offer_exclusion(o, s, cat)}")
        elif o.max_systems is not None and f["systems"] > o.max_systems:
            out.append(f"{oid}: {f['systems']} systems before, now capped at {o.max_systems} (max_systems)")
        elif o.tier == "marketplace" and s.policy.provider_tiers is None and (
                s.policy.redundancy == "n+1" or any(getattr(j, "latency_critical", False) for j in s.jobs)):
            out.append(f"{oid}: marketplace, not used for latency-critical or N+1 serving")
    bundled = load_catalog()  # catalog against catalog: a scenario's own prices are not a re-pricing
    for oid in dict.fromkeys([f["offer"] for f in before["fleet"]] + list(now)):
        o, old = bundled.offers.get(oid), old_cat.get(oid, {})
        if o is None or not old or o.acquisition == "api":
            continue
        price = o.purchase_usd if o.acquisition == "buy" else o.price_usd_per_hour
        was = old.get("purchase_usd" if o.acquisition == "buy" else "price_usd_per_hour")
        if was and abs(float(was) - price) > 1e-9:
            out.append(f"{oid} re-priced {float(was):,.6g} -> {price:,.6g} (catalog check, source column)")
    for f in after["fleet"]:
        if f["acquisition"] == "api":
            out.append(f"hosted API {f['offer']} (new) at {money(f['cost_usd_per_year'])}/yr")
        elif f["acquisition"] == "reserved-3y":
            out.append(f"3-year commitment {f['offer']} (new)")
    b, a = before.get("cost_breakdown_usd_per_year") or {}, after.get("cost_breakdown_usd_per_year") or {}
    scale = max(before["total_cost_usd_per_year"], 1.0)
    moved = [f"{k} {'+' if a.get(k, 0) >= b.get(k, 0) else '-'}{money(abs(a.get(k, 0) - b.get(k, 0)))}"
             for k in sorted(set(a) | set(b)) if abs(a.get(k, 0) - b.get(k, 0)) > 0.01 * scale]
    if moved:
        out.append("cost moved: " + ", ".join(moved))
    if "years" in after and "years" in before:  # multi-year: no breakdown; the years' running costs
        d = sum(y["opex_usd"] for y in after["years"]) - sum(y["opex_usd"] for y in before["years"])
        if abs(d) > 1:
            out.append(f"opex over the horizon {'+' if d > 0 else '-'}{money(abs(d))} (ops staff per owned "
                       f"system: site.ops_usd_per_system_year ${s.site.ops_usd_per_system_year:,.0f}"
                       + (", and fleet complexity per system type" if s.policy.cost_per_system_type_usd_year else "")
                       + ")")
    if rate := s.policy.cost_per_system_type_usd_year:  # fleet complexity: an opex component per system type
        types = sorted({f["system"] for f in after["fleet"] if f["acquisition"] != "api"})
        out.append(f"fleet complexity: {len(types)} system types x ${rate:,.0f} a year "
                   f"(policy.cost_per_system_type_usd_year) = {money(len(types) * rate)}/yr")
    resale = sum(f.get("residual_value_usd") or 0 for f in after["fleet"])
    if resale:
        out.append(f"bought systems resold at the end of the {s.horizon_years}-year horizon (before their "
                   f"useful life ends): {money(resale)} credited; capital annuitised over {s.horizon_years} years")
    return out or ["unchanged"]


def table(before_tree: Path, after_tree: Path) -> None:
    print("1. Shipped scenarios: yearly cost and fleet before and after issue 13's economics\n")
    old_cat = old_offers(before_tree)
    names = sorted({p.name for p in (before_tree / "scenarios").glob("*.yaml")}
                   & {p.name for p in (after_tree / "scenarios").glob("*.yaml")})
    for name in names:
        (cb, pb), (ca, pa) = plan(before_tree, Path("scenarios") / name), plan(after_tree, Path("scenarios") / name)
        cost = lambda p, c: money(p["total_cost_usd_per_year"]) if p else f"exit {c}"
        print(f"{name:<28} {cost(pb, cb):>10} -> {cost(pa, ca):>10}")
        if pb is None and pa is None:
            print("    no plan either side (the scenario shows a diagnosis)\n")
            continue
        print(f"    before: {fleet_text(pb)}\n    after:  {fleet_text(pa)}")
        for r in reasons(name, pb, pa, old_cat):
            print(f"    - {r}")
        print()


def breakeven_doc(model: str, hours: float, horizon: int, modes: tuple[str, ...] = ("buy", "on-demand")) -> dict:
    return {"name": f"be-{model}-{hours:.2f}-{horizon}-{len(modes)}", "horizon_years": horizon,
            "site": {"ownership": "colo", "cooling": "air"},
            "policy": {"acquisition": list(modes), "stacks": ["cuda"], "redundancy": "n+1"},
            "jobs": [{"name": "assistant", "stage": "serve", "model": model, "precision": "fp8",
                      "context_tokens": 8192, "concurrent_users": 200, "min_tokens_per_s_per_user": 20,
                      "max_ttft_s": 2, "hours_per_day": round(hours, 2)}]}


def bought_share(p: dict | None) -> float:
    if not p or not p["total_cost_usd_per_year"]:
        return 0.0
    return sum(f["cost_usd_per_year"] for f in p["fleet"] if f["acquisition"] == "buy") / p["total_cost_usd_per_year"]


def breakeven(tree: Path, model: str, horizon: int, tmp: Path) -> tuple[float | None, dict | None]:
    """Fewest hours a day (0.1 h) at which most of the plan's cost is in bought systems."""
    top = plan_doc(tree, breakeven_doc(model, 24, horizon), tmp)
    if bought_share(top) <= 0.5:
        return None, top
    lo, hi, at = 0.5, 24.0, top
    while hi - lo > 0.1:
        mid = (lo + hi) / 2
        p = plan_doc(tree, breakeven_doc(model, mid, horizon), tmp)
        if bought_share(p) > 0.5:
            hi, at = mid, p
        else:
            lo = mid
    return hi, at


def breakevens(before_tree: Path, after_tree: Path, tmp: Path) -> None:
    print("2. Rent/buy break-even: hours a day above which buying is cheaper (colo site, buy or on-demand, N+1)\n")
    for model, label in (("llama-3.1-70b", "bank-sized 70B FP8, 200 users x 20 tok/s"),
                         ("llama-3.1-8b", "8B FP8, 200 users x 20 tok/s")):
        for horizon in (3, 5):
            cells = []
            for tag, tree in (("before", before_tree), ("after", after_tree)):
                h, p = breakeven(tree, model, horizon, tmp)
                if h is None:  # renting wins all day: by how much, against the cheapest bought fleet
                    own = plan_doc(tree, breakeven_doc(model, 24, horizon, ("buy",)), tmp)
                    cells.append(f"{tag} never: at 24 h/day renting {money(p and p['total_cost_usd_per_year'])}/yr "
                                 f"[{fleet_text(p)}], buying {money(own and own['total_cost_usd_per_year'])}/yr "
                                 f"[{fleet_text(own)}]")
                    continue
                cells.append(f"{tag} {h:.1f} h/day ({h / 24:.0%}) [buys {fleet_text(p)}]")
            print(f"  {label}, {horizon}-year horizon:\n    " + "\n    ".join(cells))
    print()


def internal_tool(tree: Path, tmp: Path) -> None:
    print("3. Idle internal tool: 10 users of a 70B model, 9 h/day, active 10% (scenarios/internal-tool.yaml)\n")
    doc = yaml.safe_load((ROOT / "scenarios" / "internal-tool.yaml").read_text())
    api = plan_doc(tree, doc, tmp)
    doc["policy"]["acquisition"] = [a for a in doc["policy"]["acquisition"] if a != "api"]
    doc["name"] = "internal-tool-self-hosted"
    own = plan_doc(tree, doc, tmp)
    for label, p in (("hosted API allowed", api), ("self-hosted only", own)):
        unit = p["jobs"][0]["unit_cost"] if p else {}
        print(f"  {label:<20} {money(p['total_cost_usd_per_year'] if p else None):>8}/yr  {fleet_text(p)}"
              f"  (${unit.get('usd_per_million_output_tokens', 0):,.2f}/M output tokens)")
    if api and own:
        print(f"  self-hosted costs {own['total_cost_usd_per_year'] / api['total_cost_usd_per_year']:,.0f}x the API")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default=None, help="git ref of the earlier tree (default: before issue 13)")
    ap.add_argument("--skip-table", action="store_true", help="skip the shipped-scenario table (the slowest part)")
    args = ap.parse_args()
    before = args.before or default_before()
    short = subprocess.run(["git", "rev-parse", "--short", before], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.strip()
    print(f"before: {before} ({short}); after: the working tree\n")
    with tempfile.TemporaryDirectory() as tmp:
        before_tree = export(before, Path(tmp) / "before")
        work = Path(tmp) / "work"
        work.mkdir()
        if not args.skip_table:
            table(before_tree, ROOT)
        breakevens(before_tree, ROOT, work)
        internal_tool(ROOT, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
