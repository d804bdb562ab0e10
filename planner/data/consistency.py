"""Cross-checks between a scenario and the catalog, and the catalog a scenario plans against.

Each check_* returns problems naming the offending field and the fix; `resolve` raises them all at
once (exit 2) or returns the catalog with the scenario's own models, offers and prices applied.
"""

from __future__ import annotations

from planner.data.catalog import Catalog, load_catalog
from planner.data.errors import InputError, Problem, suggest
from planner.data.scenario import Scenario


def check_models(s: Scenario, cat: Catalog) -> list[Problem]:
    return [Problem(f"unknown model '{job.model}'", f"jobs.{i}.model ({job.name})",
                    suggest(job.model, cat.models, "models") + " Or define it under 'models:' in the scenario.")
            for i, job in enumerate(s.jobs) if job.model not in cat.models]


def check_accelerators(s: Scenario, cat: Catalog) -> list[Problem]:
    problems = []
    named = [("policy.accelerators", a) for a in s.policy.accelerators or []]
    named += [("policy.exclude_accelerators", a) for a in s.policy.exclude_accelerators]
    named += [(f"trends.{i}.accelerator", t.accelerator) for i, t in enumerate(s.trends) if t.accelerator != "*"]
    for where, acc in named:
        if acc not in cat.accelerators:
            problems.append(Problem(f"unknown accelerator '{acc}'", where,
                                    suggest(acc, cat.accelerators, "accelerators")))
    return problems


def check_providers(s: Scenario, cat: Catalog) -> list[Problem]:
    """Providers named by the policy must sell something: a catalog offer or one under 'offers:'."""
    known = {o.provider for o in cat.offers.values()} | {o.provider for o in s.offers}
    named = [("policy.providers", p) for p in s.policy.providers or []]
    named += [("policy.exclude_providers", p) for p in s.policy.exclude_providers]
    return [Problem(f"unknown provider '{p}'", where, suggest(p, known, "providers"))
            for where, p in named if p not in known]


def check_prices(s: Scenario, cat: Catalog) -> list[Problem]:
    return [Problem(f"unknown offer '{p.offer}'", f"prices.{i}.offer", suggest(p.offer, cat.offers, "offers"))
            for i, p in enumerate(s.prices) if p.offer not in cat.offers]


def check_inline_offers(s: Scenario, cat: Catalog) -> list[Problem]:
    return [Problem(f"offer '{o.id}' names unknown system '{o.system}'", f"offers.{i}.system",
                    suggest(o.system, cat.systems, "systems"))
            for i, o in enumerate(s.offers) if o.system not in cat.systems]


def apply_scenario(s: Scenario, cat: Catalog) -> Catalog:
    """A copy of the catalog with the scenario's inline models and offers and its price overrides."""
    out = Catalog(dict(cat.accelerators), dict(cat.systems), dict(cat.offers), dict(cat.models))
    out.models.update({m.id: m for m in s.models})
    out.offers.update({o.id: o for o in s.offers})
    for p in s.prices:
        if p.offer in out.offers:
            changes = {k: v for k, v in p.model_dump(exclude={"offer"}).items() if v is not None}
            changes["source"] = f"the scenario's prices: ({', '.join(changes)}) over {out.offers[p.offer].source}"
            out.offers[p.offer] = out.offers[p.offer].model_copy(update=changes)
    return out


def resolve(s: Scenario, catalog_paths: tuple[str, ...] = ()) -> Catalog:
    """The catalog this scenario plans against; every reference problem at once (exit 2)."""
    paths = tuple(catalog_paths) + ((s.catalog,) if s.catalog else ())
    base = load_catalog(*paths)
    merged = Catalog(dict(base.accelerators), dict(base.systems), dict(base.offers), dict(base.models))
    merged.models.update({m.id: m for m in s.models})
    problems = []
    for check in (check_models, check_accelerators, check_providers, check_prices, check_inline_offers):
        problems += check(s, merged)
    if problems:
        raise InputError(problems)
    cat = apply_scenario(s, base)
    problems = cat.check_references()
    if problems:
        raise InputError(problems)
    return cat
