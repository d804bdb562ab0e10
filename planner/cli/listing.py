"""`plan catalog ...`: the catalog's tables (accelerators, systems, offers, models) and one row per
provider, as a table, JSON or CSV; every row keeps its source."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from planner.cli import tables
from planner.data.catalog import ACQUISITIONS, Catalog

catalog_app = typer.Typer(no_args_is_help=True, help="List what the catalog knows, with sources.")


class TableFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


CatalogOpt = typer.Option(None, "--catalog", help="a catalog folder or file overriding the bundled one "
                                                 "(repeatable; later ones win)")


CATALOG_COLUMNS = {
    "accelerators": ["id", "vendor", "memory_gb", "mem_bw_tbps", "bf16_tflops", "fp8_tflops", "fp4_tflops",
                     "tdp_w", "scaleup_kind", "scaleup_domain", "stack", "as_of"],
    "systems": ["id", "accelerator", "accelerators", "scaleup_domain", "power_kw", "cooling", "kind", "as_of"],
    "offers": ["id", "system", "acquisition", "provider", "price_usd_per_hour", "purchase_usd",
               "useful_life_years", "max_systems", "payment", "as_of"],
    "models": ["id", "params_b", "active_params_b", "layers", "hidden_size", "attention_heads", "kv_heads",
               "head_dim", "experts", "experts_per_token", "attention", "as_of"],
    "apis": ["id", "model", "provider", "region", "usd_per_m_input_tokens", "usd_per_m_output_tokens",
             "max_output_tokens_per_minute", "as_of"],
}
TABLES = {"apis": "api_offers"}
"""the catalog table a listing reads, where its name differs (plan catalog apis: api_offers.csv)"""
FOOTERS = {"apis": "\nhosted token-priced APIs: a serving job may use them where policy.acquisition lists api "
                   "(see the scenario schema); prices are list prices per million tokens."}


def _catalog_listing(kind: str, fmt: TableFormat, catalog: Optional[List[Path]]):
    from planner.data.catalog import load_catalog

    cat = load_catalog(*(str(c) for c in catalog or ()))
    rows = [r.model_dump(mode="json") for r in cat.table(TABLES.get(kind, kind)).values()]
    rows.sort(key=lambda r: r["id"])
    footer = f"{len(rows)} {kind}; every row has a source (see --format json)." + FOOTERS.get(kind, "")
    if kind == "accelerators":
        footer += ("\nmemory_gb as vendors label it: binary GB (GiB, 2^30 bytes, as nvidia-smi shows); plans, "
                   "estimates and explanations state memory in the same unit.")
    _print_rows(rows, fmt, CATALOG_COLUMNS[kind], footer)


def _print_rows(rows: list[dict], fmt: TableFormat, columns: Optional[list[str]], footer: str) -> None:
    if fmt == TableFormat.json:
        typer.echo(tables.to_json(rows), nl=False)
    elif fmt == TableFormat.csv:
        import pandas as pd

        from planner.cli.output import csv_safe

        typer.echo(pd.DataFrame(csv_safe(rows)).to_csv(index=False), nl=False)
    else:
        typer.echo(tables.table(rows, columns))
        typer.echo("\n" + footer)


def _make_catalog_command(kind: str):
    def command(fmt: TableFormat = typer.Option(TableFormat.table, "--format", "-f"),
                catalog: Optional[List[Path]] = CatalogOpt):
        _catalog_listing(kind, fmt, catalog)

    command.__doc__ = "List the catalog's hosted APIs (token prices)." if kind == "apis" else f"List the catalog's {kind}."
    catalog_app.command(kind)(command)


for _kind in CATALOG_COLUMNS:
    _make_catalog_command(_kind)


@catalog_app.command("providers")
def providers_cmd(fmt: TableFormat = typer.Option(TableFormat.table, "--format", "-f"),
                  catalog: Optional[List[Path]] = CatalogOpt):
    """List the providers: tier (where the catalog has one), regions, offers and acquisition modes."""
    from planner.data.catalog import load_catalog

    rows = provider_rows(load_catalog(*(str(c) for c in catalog or ())))
    _print_rows(rows, fmt, None, f"{len(rows)} providers: the names policy.providers and exclude_providers "
                                 "take (their prices: plan catalog offers).")


def provider_rows(cat: Catalog) -> list[dict]:
    """One row per provider: its tier where the catalog states one, the regions it sells in, how many
    offers it has and the acquisition modes they cover (in the catalog's order)."""
    by: dict[str, list] = {}
    for offer in cat.offers.values():
        by.setdefault(offer.provider, []).append(offer)
    apis: dict[str, list] = {}
    for api in cat.api_offers.values():
        apis.setdefault(api.provider, []).append(api)
    rows = []
    for provider in sorted(by.keys() | apis.keys()):
        if provider not in by:  # a hosted-API provider only (acquisition api)
            rows.append({"provider": provider, "regions": ", ".join(sorted({a.region for a in apis[provider]})),
                         "offers": len(apis[provider]), "acquisition": "api", "accelerators": 0})
            continue
        offers = by[provider]
        modes = {o.acquisition for o in offers}
        row = {"provider": provider}
        tiers = sorted({str(t) for o in offers if (t := getattr(o, "tier", None))})
        if tiers:
            row["tier"] = ", ".join(tiers)
        hosted = apis.get(provider, [])
        row.update({"regions": ", ".join(sorted({o.region for o in [*offers, *hosted]})), "offers": len(offers) + len(hosted),
                    "acquisition": ", ".join([*(m for m in ACQUISITIONS if m in modes), *(["api"] if hosted else [])]),
                    "accelerators": len({cat.systems[o.system].accelerator for o in offers if o.system in cat.systems})})
        rows.append(row)
    return rows
