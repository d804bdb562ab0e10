"""Plain-text and Markdown tables and cell formatting: pure functions from rows (dicts) to strings."""

from __future__ import annotations

import json
import math
import textwrap


def fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    return str(value)


def table(rows: list[dict], columns: list[str] | None = None, headers: dict | None = None,
          width: int | None = None) -> str:
    """A plain-text table; columns default to the first row's keys. With `width`, a last text
    column that would run past it wraps onto continuation lines under itself."""
    if not rows:
        return "(none)"
    columns = columns or list(rows[0])
    headers = headers or {}
    cells = [[headers.get(c, c) for c in columns]] + [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    numeric = [all(_is_num(r.get(c)) for r in rows) for c in columns]
    lead = sum(widths[:-1]) + 2 * (len(widths) - 1)
    wrap_at = width - lead if width and not numeric[-1] and lead + widths[-1] > width and width - lead >= 20 else None
    if wrap_at:
        widths[-1] = min(widths[-1], wrap_at)
    lines = []
    for n, row in enumerate(cells):
        parts = [cell.rjust(w) if numeric[i] and n else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        if wrap_at and len(row[-1]) > wrap_at:
            first, *rest = textwrap.wrap(row[-1], wrap_at, break_on_hyphens=False) or [""]
            lines.append("  ".join(parts[:-1] + [first]).rstrip())
            lines += [" " * lead + part for part in rest]
        else:
            lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def wrap(text: str, width: int | None, indent: str = "") -> list[str]:
    """A paragraph as lines of at most `width` columns (None: one line), continuation lines indented
    two more than the first."""
    if not width or len(text) <= width:
        return [text]
    first = len(text) - len(text.lstrip(" "))
    hang = " " * first + ("  " if text.lstrip().startswith(("- ", "[")) else "  ")
    return textwrap.wrap(text, width, subsequent_indent=indent or hang, break_on_hyphens=False) or [text]


def markdown_table(rows: list[dict], columns: list[str], headers: dict | None = None) -> str:
    if not rows:
        return "_none_"
    headers = headers or {}
    out = ["| " + " | ".join(headers.get(c, c) for c in columns) + " |",
           "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(fmt(r.get(c)).replace("|", "/") for c in columns) + " |" for r in rows]
    return "\n".join(out)


def years(n: int) -> str:
    return f"{n} year" if n == 1 else f"{n} years"


def _is_num(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def to_json(data) -> str:
    """Deterministic JSON: sorted keys, no NaN."""
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False, default=str) + "\n"
