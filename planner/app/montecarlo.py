"""Monte-Carlo sweeps: the scenario solved under N random draws of uncertain numbers (prices, demand),
reported as cost percentiles and how often each fleet wins.

`--vary PATH=DIST` names a dotted path into the scenario file, where `*` stands for every item of a
list (offers.*.price_usd_per_hour, jobs.*.concurrent_users, prices.*.purchase_usd), and a
distribution:
    uniform(-20%,+20%)   the file's value times 1 + a uniform draw in [-0.2, 0.2]
    uniform(100,400)     a uniform draw in [100, 400] in the field's own unit
    normal(0%,10%)       the file's value times 1 + a normal draw (mean 0, sd 0.1), kept above 0
Each matching item gets its own draw. Draws come from --seed (default 0): the same command gives the
same samples and the same report.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass
from pathlib import Path

from planner.app.sweep import apply_setting, check_path, label, parse_variant
from planner.data.errors import InputError, Problem
from planner.data.scenario import Scenario, parse_scenario
from planner.data.yamlio import load_yaml, read_text

MAX_SAMPLES = 10_000
DIST = re.compile(r"^\s*(uniform|normal)\(\s*([-+]?[\d.eE+-]+)(%?)\s*,\s*([-+]?[\d.eE+-]+)(%?)\s*\)\s*$")


@dataclass(frozen=True)
class Vary:
    path: str
    kind: str  # uniform or normal
    a: float
    b: float
    relative: bool  # percentages: a factor on the file's value

    def draw(self, rng: random.Random, base, integer: bool = False):
        if self.relative and not isinstance(base, (int, float)):
            raise InputError(Problem(f"'{self.path}' has no number in the scenario to vary by a percentage",
                                     f"--vary {self.path}", "give absolute bounds, e.g. uniform(100,400)"))
        u = rng.uniform(self.a, self.b) if self.kind == "uniform" else rng.gauss(self.a, self.b)
        value = base * (1 + u) if self.relative else u
        if integer:
            return max(int(round(value)), 1) if self.kind == "normal" else int(round(value))
        return max(round(value, 6), 1e-6) if self.kind == "normal" else round(value, 6)  # (a normal draw stays positive)


def parse_vary(text: str) -> Vary:
    path, eq, dist = text.partition("=")
    m = DIST.match(dist)
    if not eq or not path.strip() or not m:
        raise InputError(Problem(f"'{text}' is not PATH=uniform(LO,HI) or PATH=normal(MEAN,SD)", "--vary",
                                 "write e.g. --vary 'offers.*.price_usd_per_hour=uniform(-20%,+20%)'"))
    kind, a, pa, b, pb = m.groups()
    if bool(pa) != bool(pb):
        raise InputError(Problem(f"'{dist}' mixes a percentage and a plain number", f"--vary {path}",
                                 "give both bounds as percentages or both as numbers"))
    a_f, b_f = float(a) / (100 if pa else 1), float(b) / (100 if pb else 1)
    if kind == "uniform" and a_f > b_f or kind == "normal" and b_f < 0:
        raise InputError(Problem(f"'{dist}': " + ("the low bound is above the high one" if kind == "uniform"
                                                  else "a negative standard deviation"),
                                 f"--vary {path}", "swap the bounds" if kind == "uniform" else "use sd >= 0"))
    return Vary(path.strip(), kind, a_f, b_f, bool(pa))


def expand(data, path: str) -> list[str]:
    """'offers.*.price_usd_per_hour' -> ['offers.0.price_usd_per_hour', 'offers.1.price_usd_per_hour']."""
    parts = path.split(".")
    out = [([], data)]
    for part in parts:
        nxt = []
        for walked, node in out:
            if part == "*":
                if not isinstance(node, list):
                    raise InputError(Problem(f"'{'.'.join(walked) or path}' is not a list in the scenario, so '*' "
                                             "matches nothing", f"--vary {path}",
                                             "add the items to the scenario first (e.g. an offers: list)"))
                nxt += [([*walked, str(i)], item) for i, item in enumerate(node)]
            else:
                child = node[int(part)] if isinstance(node, list) and part.isdigit() and int(part) < len(node) \
                    else (node.get(part) if isinstance(node, dict) else None)
                nxt.append(([*walked, part], child))
        out = nxt
    if not out:
        raise InputError(Problem(f"'{path}' matches no item of the scenario", f"--vary {path}",
                                 "check that the list it walks is not empty"))
    return [".".join(w) for w, _ in out]


def _varied(data, v: Vary) -> list[tuple[str, bool]]:
    """The concrete paths `v` varies, each with whether its field is a whole number (a count of
    users, devices or runs is drawn as one; a rate such as requests_per_s is not: the UX review's
    normal(0.5, 3) drew 0, 2 and 3 requests a second, and 0 is bad input). A '*' keeps the items
    the setting applies to, and with a percentage those that hold a number to vary:
    'jobs.*.concurrent_users' skips a fine-tune job (which has no users) and a serving job sized by
    requests_per_s (the UX review: it failed on every mixed scenario); it is an error only where no
    item is left."""
    found, refused = [], None
    for concrete in expand(data, v.path):
        try:
            annotation = check_path(data, concrete, "--vary")
        except InputError as e:
            if "*" not in v.path:
                raise
            refused = refused or e
            continue
        if "*" in v.path and v.relative and not isinstance(_get(data, concrete), (int, float)):
            continue
        found.append((concrete, _is_int(annotation)))
    if not found:
        raise refused or InputError(Problem(f"no item '{v.path}' matches holds a number to vary by a percentage",
                                            f"--vary {v.path}", "give absolute bounds, e.g. uniform(100,400), or "
                                            "set the value on the items first"))
    return found


def _is_int(annotation) -> bool:
    """Whether a schema field holds whole numbers (int, or int | None)."""
    args = getattr(annotation, "__args__", None) or (annotation,)
    return int in args and float not in args


def _get(data, path: str):
    node = data
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else (node or {}).get(part)
    return node


def samples(path: str | Path, varies: list[str], n: int, seed: int = 0) -> list[tuple[dict, Scenario]]:
    """N validated scenarios, each with its draws as its settings (sample number first)."""
    if not 1 <= n <= MAX_SAMPLES:
        raise InputError(Problem(f"--samples {n}", "--samples", f"use 1 to {MAX_SAMPLES:,} samples"))
    if not varies:
        raise InputError(Problem("--samples needs something to vary", "--vary",
                                 "add e.g. --vary 'jobs.*.concurrent_users=uniform(-20%,+20%)'"))
    path = Path(path)
    data, lines = load_yaml(read_text(path), str(path))
    if not isinstance(data, dict):
        parse_scenario(data, lines, str(path))
    plan = []
    for v in map(parse_vary, varies):
        plan += [(concrete, v, integer) for concrete, integer in _varied(data, v)]
    rng = random.Random(seed)
    out = []
    for k in range(1, n + 1):
        variant = copy.deepcopy(data)
        settings = {"sample": k}
        for concrete, v, integer in plan:
            value = v.draw(rng, _get(data, concrete), integer)
            apply_setting(variant, concrete, value)
            settings[concrete] = value
        out.append((settings, parse_variant(variant, f"{path} sample {k} ({label(settings)})", path)))
    return out


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    xs = sorted(values)
    if not xs:
        raise ValueError("no values")
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def report(entries: list[dict]) -> dict:
    """Cost percentiles over the samples with a plan and how often each fleet wins."""
    from planner.app.sweep import fleet_text

    solved = [e for e in entries if e["summary"]["status"] in ("optimal", "feasible")]
    costs = [e["summary"]["total_cost_usd_per_year"] for e in solved]
    wins: dict[str, list[float]] = {}
    for e in solved:
        wins.setdefault(fleet_text(e["summary"]["fleet"]), []).append(e["summary"]["total_cost_usd_per_year"])
    fleets = [{"fleet": f, "wins": len(c), "share": round(len(c) / len(solved), 4),
               "median_usd_per_year": round(percentile(c, 50), 2)}
              for f, c in sorted(wins.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    pct = {f"p{q}": round(percentile(costs, q), 2) for q in (5, 25, 50, 75, 95)} if costs else {}
    return {"samples": len(entries), "with_plan": len(solved), "cost_usd_per_year": pct,
            "mean_usd_per_year": round(sum(costs) / len(costs), 2) if costs else None, "fleets": fleets}
