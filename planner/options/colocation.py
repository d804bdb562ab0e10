"""An RL job's trainer and rollouts at one place (data/colocation.py): each part keeps the offers at
the places, (site, stack), where the other part can run too; a configuration left with no offer is
dropped, and an accelerator left with none says why (the why-not table, the diagnosis). Which one
place of those is the MILP's choice (milp/colocation.py)."""

from __future__ import annotations

from planner.data.colocation import MARKETPLACE, colocated, place_in, words
from planner.options.eligibility import batch_offer_exclusion
from planner.options.types import Options


def place(opts: Options, cat, oid: str) -> tuple[str, str]:
    return place_in(opts.offers[oid], cat)


def _places(opts: Options, cat, dk: str) -> set[tuple[str, str]]:
    """The places some configuration of demand dk can run at (a run only on offers that can host it)."""
    d = opts.demands[dk]
    found = set()
    for opt in (opts.serve if d.kind == "serve" else opts.batch).get(dk, []):
        system = cat.systems[opt.system]
        for oid in opts.offers_for(dk, opt.system):
            if d.kind == "serve" or not batch_offer_exclusion(d, opt, opts.offers[oid], system):
                found.add(place(opts, cat, oid))
    return found


def colocate(s, cat, opts: Options) -> None:
    """Narrow each colocated RL job's parts to the places both can use (the module docstring)."""
    for job, parts in sorted(colocated(s).items()):
        if not all(dk in opts.demands for dk in parts):
            continue
        places = {dk: _places(opts, cat, dk) for dk in parts}
        if not all(places.values()):
            continue  # (a part that runs nowhere is the diagnosis's to explain, not colocation's)
        common = {p for p in places[parts[0]] & places[parts[1]] if p[0] != MARKETPLACE}
        for dk, other in ((parts[0], "rollouts"), (parts[1], "trainer")):
            kept = [oid for oid in opts.eligible[dk] if place(opts, cat, oid) in common]
            for oid in opts.eligible[dk]:
                if oid not in kept:
                    where = place(opts, cat, oid)
                    opts.ineligible[dk][oid] = (
                        "colocate: a marketplace rents separate third-party hosts, not one site" if where[0] == MARKETPLACE
                        else f"colocate: the job's {other} cannot run at {words(where)}")
            opts.eligible[dk] = kept  # (a new list: offers_for's index follows it)
            lists = opts.serve if opts.demands[dk].kind == "serve" else opts.batch
            before = lists.get(dk, [])
            lists[dk] = [o for o in before if opts.offers_for(dk, o.system)]
            have = {o.accelerator for o in lists[dk]}
            theirs = sorted(words(p) for p in common)
            for acc in sorted({o.accelerator for o in before} - have):
                opts.note(dk, acc, (f"colocate: the trainer and rollouts share a site only at {'; '.join(theirs)}, "
                                    "where this part has no offer of it" if theirs else
                                    "colocate: no site serves both the trainer and the rollouts (a marketplace rents "
                                    "separate third-party hosts, not one site)")
                          + "; set colocate: false to let them sit apart")
