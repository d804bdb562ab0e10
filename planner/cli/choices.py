"""The fixed choices of the `plan` command's options (typer refuses any other value with exit 2 and
lists these)."""

from __future__ import annotations

from enum import Enum


class Explain(str, Enum):
    none = "none"
    brief = "brief"
    full = "full"


class SolverName(str, Enum):
    cbc = "cbc"
    highs = "highs"


class Format(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"
    csv = "csv"


BY_SUFFIX = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
             ".csv": "csv"}
"""the format an --output file's extension implies where --format is not given"""


def format_for(fmt, output, allowed: type[Enum] = Format) -> str:
    """--format's value; unset, the one --output's extension implies (-o plan.json writes JSON: the
    UX review's plan.json held the text table, which plan verify could not read), else table."""
    if fmt is not None:
        return fmt.value
    implied = BY_SUFFIX.get(output.suffix.lower()) if output is not None else None
    return implied if implied in {f.value for f in allowed} else "table"


class CompareFormat(str, Enum):
    """What `plan compare` renders (no HTML report of a comparison)."""
    table = "table"
    json = "json"
    markdown = "markdown"


class EstimateFormat(str, Enum):
    table = "table"
    json = "json"
