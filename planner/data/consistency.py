"""Cross-checks between a scenario and the catalog, and the catalog a scenario plans against.

Each check_* returns problems naming the offending field and the fix; `resolve` raises them all at
once (exit 2) or returns the catalog with the scenario's own models, offers and prices applied.
"""

from __future__ import annotations

from planner.data.catalog import ACQUISITIONS, Catalog, held_offer, load_catalog
from planner.data.checkpoints import catalog_model, stem
from planner.data.errors import InputError, Problem, suggest
from planner.data.export_rules import LICENSED_TARIFF, tariffed
from planner.data.jobs import kv_precision_of
from planner.data.notes import note
from planner.data.scenario import Scenario
from planner.data.scenario_words import located


def by_case(name: str, known) -> str | None:
    """The id in `known` that `name` spells with other capitals (None: none, or `name` itself)."""
    if name in known:
        return None
    lower = {k.lower(): k for k in known}
    return lower.get(str(name).lower())


def read_as(where: str, name: str, known, checkpoints: bool = False) -> str | None:
    """The id in `known` that `name` stands for, with a note saying so: the same id in other capitals,
    or (checkpoints: `known` is the models) the catalog model a Hugging Face checkpoint's name stands
    for (data.checkpoints); None: `name` is an id itself, or stands for none."""
    canonical = by_case(name, known)
    if canonical:
        note(f"note: {where} '{name}' is read as '{canonical}' (ids are lower-case)")
        return canonical
    if checkpoints and name not in known:
        canonical = catalog_model(name, known)
        if canonical:
            note(f"note: {where} '{name}' is read as '{canonical}', the catalog's architecture of that "
                 "checkpoint (the precision served is the one the job or flag names, else the one it was published in)")
            return canonical
    return None


def canonical_names(s: Scenario, cat: Catalog) -> None:
    """Ids written with capitals ('H100-SXM', 'Llama-3.1-70B') are the catalog's lower-case ids, and a
    job's model may be named by its Hugging Face checkpoint ('meta-llama/Llama-3.1-70B-Instruct':
    data.checkpoints): set them so in the scenario (in place), with a note naming the id each is read as."""
    models = {**cat.models, **{m.id: m for m in s.models}}
    accelerators = cat.accelerators
    providers = {o.provider for o in cat.offers.values()} | {o.provider for o in s.offers}
    written = [job.model for job in s.jobs]  # (a checkpoint's name may say its precision: served_precision)
    fields = [(f"jobs.{i}.model", job, "model", models) for i, job in enumerate(s.jobs)]
    fields += [(f"trends.{i}.accelerator", t, "accelerator", accelerators) for i, t in enumerate(s.trends)]
    fields += [(f"prices.{i}.offer", p, "offer", cat.offers) for i, p in enumerate(s.prices)]
    for where, obj, key, known in fields:
        canonical = read_as(where, getattr(obj, key), known, checkpoints=known is models)
        if canonical:
            setattr(obj, key, canonical)
    for i, job in enumerate(s.jobs):
        _serve_as_published(i, job, written[i], models)
    for i, held in enumerate(s.owned):
        canonical = by_case(held.system, cat.systems)
        if canonical:
            note(f"note: owned.{i}.system '{held.system}' is read as '{canonical}' (ids are lower-case)")
            held.system = canonical
    for i, offer in enumerate(s.offers):
        canonical = by_case(offer.system, cat.systems)
        if canonical:
            note(f"note: offers.{i}.system '{offer.system}' is read as '{canonical}' (ids are lower-case)")
            s.offers[i] = offer.model_copy(update={"system": canonical})
    for key, known in (("accelerators", accelerators), ("exclude_accelerators", accelerators),
                       ("export_licences", accelerators), ("providers", providers), ("exclude_providers", providers)):
        names = getattr(s.policy, key)
        for i, name in enumerate(names or ()):
            canonical = by_case(name, known)
            if canonical:
                note(f"note: policy.{key} '{name}' is read as '{canonical}' (ids are lower-case)")
                names[i] = canonical


PUBLISHED = {"fp8": "fp8", "mxfp4": "fp4", "nvfp4": "fp4", "fp4": "fp4", "int8": "int8", "w8a8": "int8",
             "int4": "int4", "awq": "int4", "gptq": "int4", "w4a16": "int4"}
"""a checkpoint's quantisation (its name's suffix, or the catalog's native_precision) -> the serving
precision that holds those weights"""


def _serve_as_published(i: int, job, written: str, models: dict) -> None:
    """A serve or RL job that sets no precision serves its model as published: the precision its
    checkpoint's name says (Qwen/Qwen3-32B-FP8), else the catalog's native_precision (DeepSeek-R1 in
    fp8, gpt-oss in MXFP4), not bf16 (the serving review: R1 planned with 1,256 GiB of BF16 weights);
    said in a note. A bf16 model stays bf16 without one."""
    m = models.get(job.model)
    if m is None or getattr(job, "stage", None) not in ("serve", "rl") or "precision" in job.model_fields_set:
        return
    suffix = next((PUBLISHED[k] for k in PUBLISHED if written.lower().endswith(f"-{k}") or
                   written.lower().endswith(f"_{k}")), None)
    published = suffix or PUBLISHED.get((m.native_precision or "bf16").lower())
    if published is None or published == job.precision:
        return
    object.__setattr__(job, "precision", published)
    if hasattr(job, "kv_precision") and "kv_precision" not in job.model_fields_set:  # (its default follows)
        object.__setattr__(job, "kv_precision", kv_precision_of(published))
    where = f"its checkpoint's name ({written})" if suffix else f"{m.id}'s published weights ({m.native_precision})"
    note(f"note: jobs.{i}.precision ({job.name}) is not set: served at {published}, as {where}; set precision: "
         "bf16 to serve it in BF16")


def allowed_regions(s: Scenario) -> list[str]:
    """policy.regions, else the site's region and 'global' (capacity in several regions)."""
    return list(s.policy.regions) if s.policy.regions is not None else [s.site.region, "global"]


def in_regions(o, s: Scenario, regions: list[str]) -> bool:
    """Whether an offer's hardware runs in one of `regions` (policy.regions): a rented offer in its
    region; hardware bought from a vendor selling everywhere ('global') also at the site, in the
    site's region (an EU agency allowing only 'eu' may buy for its EU site); a vendor selling in
    one region only, there."""
    return o.region in regions or (o.acquisition == "buy" and o.region == "global" and s.site.region in regions)


def note_unoffered_modes(s: Scenario, cat: Catalog) -> None:
    """A warning for each acquisition mode the policy names that no offer sells for a system the
    policy allows (its accelerator, provider, software stack and region): the mode cannot be used.
    The default list (every mode the catalog may have) is not the user's choice and is not warned about."""
    p = s.policy
    if "acquisition" not in p.model_fields_set:
        return
    regions = allowed_regions(s)
    allowed = sorted(a.id for a in cat.accelerators.values()
                     if (p.accelerators is None or a.id in p.accelerators) and a.id not in p.exclude_accelerators
                     and (p.stacks is None or a.stack in p.stacks))
    modes = set()
    for o in cat.offers.values():
        system = cat.systems.get(o.system)
        if (system and system.accelerator in allowed and o.provider not in p.exclude_providers
                and (p.providers is None or o.provider in p.providers) and in_regions(o, s, regions)):
            modes.add(o.acquisition)
    for mode in p.acquisition:
        if mode in ACQUISITIONS and mode not in modes:
            which = ", ".join(allowed[:6]) + (f" and {len(allowed) - 6} more" if len(allowed) > 6 else "")
            note(f"warning: policy.acquisition allows {mode}, but no offer sells {mode} for the allowed "
                 f"accelerators ({which or 'none'}), providers and regions ({', '.join(regions)}), so the plan "
                 "cannot use it; remove it, or add "
                 "your quote under offers: (see scenarios/own-quote.yaml)")


def check_models(s: Scenario, cat: Catalog) -> list[Problem]:
    return [Problem(f"unknown model '{job.model}'", f"jobs.{i}.model ({job.name})",
                    _or_define(suggest_model(job.model, cat.models)))
            for i, job in enumerate(s.jobs) if job.model not in cat.models]


SERVED_CONTEXT = ("context_tokens", "rollout_context_tokens")
"""the context a served model holds per user (a serve job's, an RL job's rollouts'): one the model
cannot attend is no service at all; a training sequence longer than the model's context is how a
context is extended, and only warned about (app/advice.py)"""


def check_context(s: Scenario, cat: Catalog) -> list[Problem]:
    """A served context the user set, or one request's own tokens, beyond the model's maximum."""
    problems = []
    for i, job in enumerate(s.jobs):
        m = cat.models.get(job.model)
        if m is None or not m.max_context_tokens:
            continue
        fix = (f"lower it to at most {m.max_context_tokens:,}, or choose a model with a longer context (or define "
               f"this one under models: with the max_context_tokens its rope scaling reaches)")
        for key in SERVED_CONTEXT:
            value = getattr(job, key, None)
            if value and key in job.model_fields_set and value > m.max_context_tokens:
                problems.append(Problem(f"{value:,} tokens, above {m.id}'s maximum context of "
                                        f"{m.max_context_tokens:,}", f"jobs.{i}.{key} ({job.name})", fix))
        if getattr(job, "stage", None) == "serve":
            sizes = [(b.input_tokens, b.output_tokens) for b in job.request_mix or []] or \
                    [(job.input_tokens or 0, job.output_tokens)]
            request = max(a + b for a, b in sizes)
            if request > m.max_context_tokens:
                problems.append(Problem(f"a request of {request:,} tokens (input + output), above {m.id}'s maximum "
                                        f"context of {m.max_context_tokens:,}", f"jobs.{i} ({job.name})",
                                        "shorten the requests, or " + fix.split(", or ", 1)[1]))
    return problems


def suggest_model(name: str, models) -> str:
    """suggest() for an unknown model, also from the stem of a checkpoint's name (data.checkpoints)."""
    hint = suggest(name, models, "models")
    return hint if hint.startswith("did you mean") else suggest(stem(name), models, "models")


def _or_define(hint: str) -> str:
    """'did you mean X? Or define it ...', 'see the known names with ..., or define it ...'."""
    return hint + (" Or define it" if hint.endswith("?") else ", or define it") + " under 'models:' in the scenario."


def check_accelerators(s: Scenario, cat: Catalog) -> list[Problem]:
    problems = []
    named = [("policy.accelerators", a) for a in s.policy.accelerators or []]
    named += [("policy.exclude_accelerators", a) for a in s.policy.exclude_accelerators]
    named += [("policy.export_licences", a) for a in s.policy.export_licences]
    named += [(f"trends.{i}.accelerator", t.accelerator) for i, t in enumerate(s.trends) if t.accelerator != "*"]
    for where, acc in named:
        if acc not in cat.accelerators:
            problems.append(Problem(f"unknown accelerator '{acc}'", where,
                                    suggest(acc, cat.accelerators, "accelerators")))
    return problems


def check_providers(s: Scenario, cat: Catalog) -> list[Problem]:
    """Providers named by the policy must sell something: a catalog offer or one under 'offers:'."""
    known = ({o.provider for o in cat.offers.values()} | {o.provider for o in s.offers}
             | {a.provider for a in cat.api_offers.values()})
    named = [("policy.providers", p) for p in s.policy.providers or []]
    named += [("policy.exclude_providers", p) for p in s.policy.exclude_providers]
    return [Problem(f"unknown provider '{p}'", where, suggest(p, known, "providers"))
            for where, p in named if p not in known]


def check_prices(s: Scenario, cat: Catalog) -> list[Problem]:
    return [Problem(f"unknown offer '{p.offer}'", f"prices.{i}.offer", suggest(p.offer, cat.offers, "offers"))
            for i, p in enumerate(s.prices) if p.offer not in cat.offers]


RENTED_ONLY = ("cloud-instance", "tpu-slice")
"""system kinds that are a cloud's shapes (one GPU of an 8-GPU host, a slice of a TPU pod), which no one
holds as owned hardware (the N+1 review listed an owned h100-sxm-x1 without a word)"""


def check_inline_offers(s: Scenario, cat: Catalog) -> list[Problem]:
    return [Problem(f"offer '{o.id}' names unknown system '{o.system}'", f"offers.{i}.system",
                    suggest(o.system, cat.systems, "systems"))
            for i, o in enumerate(s.offers) if o.system not in cat.systems] + [
        Problem(f"owned names unknown system '{h.system}'", f"owned.{i}.system", suggest(h.system, cat.systems, "systems"))
        for i, h in enumerate(s.owned) if h.system not in cat.systems] + [
        Problem(f"owned lists system '{h.system}' twice", f"owned.{i}.system", "merge the entries (add their counts)")
        for i, h in enumerate(s.owned) if any(g.system == h.system for g in s.owned[:i])] + [
        Problem(f"owned lists '{h.system}', a {cat.systems[h.system].kind}: capacity rented from a cloud, not hardware "
                "one holds", f"owned.{i}.system", "list the servers you hold (plan catalog systems), or reserve the "
                "capacity with policy.acquisition: [reserved-1y] or [reserved-3y]")
        for i, h in enumerate(s.owned) if h.system in cat.systems and cat.systems[h.system].kind in RENTED_ONLY]


def apply_scenario(s: Scenario, cat: Catalog) -> Catalog:
    """A copy of the catalog with the scenario's inline models and offers and its price overrides."""
    out = Catalog(dict(cat.accelerators), dict(cat.systems), dict(cat.offers), dict(cat.models), dict(cat.api_offers))
    out.models.update({m.id: m for m in s.models})
    out.offers.update({o.id: o for o in s.offers})
    newest = max((o.as_of for o in cat.offers.values()), default=None)
    for held in s.owned:
        if held.system in out.systems and newest is not None:
            o = held_offer(held.system, held.count, newest)
            out.offers[o.id] = o
    for p in s.prices:
        if p.offer in out.offers:
            changes = {k: v for k, v in p.model_dump(exclude={"offer"}).items() if v is not None}
            changes["source"] = f"the scenario's prices: ({', '.join(changes)}) over {out.offers[p.offer].source}"
            out.offers[p.offer] = out.offers[p.offer].model_copy(update=changes)
    taxed = []
    for oid, o in sorted(out.offers.items()):
        system = out.systems.get(o.system)
        if o.acquisition == "buy" and system is not None and o.purchase_usd and \
                tariffed(system.accelerator, s.site.region, s.policy.export_licences):
            taxed.append(oid)
            out.offers[oid] = o.model_copy(update={
                "purchase_usd": o.purchase_usd * (1 + LICENSED_TARIFF),
                "source": f"{o.source}; +{LICENSED_TARIFF:.0%} US tariff on a licensed export to {s.site.region} "
                          "(economics.md s5c, E22-E23)"})
    if taxed:
        note(f"note: {', '.join(taxed)} priced {LICENSED_TARIFF:.0%} above the catalog for a site in {s.site.region}: "
             "the US tariff on a licensed H200-class export (economics.md s5c)")
    return out


def resolve(s: Scenario, catalog_paths: tuple[str, ...] = ()) -> Catalog:
    """The catalog this scenario plans against; every reference problem at once (exit 2)."""
    paths = tuple(catalog_paths) + ((s.catalog,) if s.catalog else ())
    base = load_catalog(*paths)
    merged = Catalog(dict(base.accelerators), dict(base.systems), dict(base.offers), dict(base.models),
                     dict(base.api_offers))
    merged.models.update({m.id: m for m in s.models})
    canonical_names(s, merged)
    problems = []
    for check in (check_models, check_accelerators, check_providers, check_prices, check_inline_offers, check_context):
        problems += check(s, merged)
    if problems:
        raise InputError(located(problems, s._source))
    cat = apply_scenario(s, base)
    problems = cat.check_references()
    if problems:
        raise InputError(problems)
    note_unoffered_modes(s, cat)
    return cat
