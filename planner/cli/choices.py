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


class CompareFormat(str, Enum):
    """What `plan compare` renders (no HTML report of a comparison)."""
    table = "table"
    json = "json"
    markdown = "markdown"


class EstimateFormat(str, Enum):
    table = "table"
    json = "json"
