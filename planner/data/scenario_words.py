"""How a scenario's validation errors read for a person (data/scenario.py's parse_scenario): the
field, the file and line, what is wrong, and a fix worded for the field, never a raw pattern."""

from __future__ import annotations

import difflib

from pydantic import BaseModel

from planner.data.catalog import REGION_PATTERN
from planner.data.errors import Problem
from planner.data.yamlio import Lines

NAME_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9_.\- ]*[A-Za-z0-9_.\-])?$"
"""a job's name: a key in reports, files and the MILP's names"""


def _fields_at(loc: tuple, root: type[BaseModel], stages: dict) -> list[str]:
    """Field names valid where the unknown key `loc[-1]` was written (for 'did you mean')."""
    current: type[BaseModel] | None = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if part in stages:
            current = stages[part]
            continue
        field = current.model_fields.get(part) if current else None
        if field is None:
            return []
        args = getattr(field.annotation, "__args__", None) or (field.annotation,)
        current = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return list(current.model_fields) if current else []


def line_for(loc: tuple, lines: Lines, stages: dict | None = None) -> int | None:
    path = tuple(p for p in loc if p not in (stages or ()))
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())


PATTERN_WORDS = {
    NAME_PATTERN: ("use ASCII letters, digits, '_', '.', '-' and spaces, starting with a letter or digit, "
                   "not ending with a space "
                   "(a name is a key in reports and files; put any other text in description)"),
    REGION_PATTERN: "use 'global' or a two-letter region code in lower case: us, eu, uk, cn, jp, in, ...",
}
"""a validation pattern in words, for the message that refuses a value"""


def problem(err: dict, lines: Lines, where: str, root: type[BaseModel], stages: dict) -> Problem:
    """One pydantic validation error of a scenario (root: its model; stages: a job's stage -> model)
    as a person reads it: the field, the file and line, what is wrong and how to fix it."""
    loc = tuple(err["loc"])
    clean = tuple(p for p in loc if p not in stages)
    field_path = ".".join(str(p) for p in clean) or "(top level)"
    line = line_for(loc, lines, stages)
    at = f"{where}:{line}" if line else where
    kind, msg = err["type"], err["msg"]
    msg = msg.removeprefix("Value error, ")  # (pydantic's prefix to a validator's own words)
    hint = ""
    if kind == "extra_forbidden":
        choices = _fields_at(loc, root, stages)
        close = difflib.get_close_matches(str(loc[-1]), choices, n=1, cutoff=0.6)
        msg = f"unknown key '{loc[-1]}'"
        hint = f"did you mean '{close[0]}'?" if close else (
            "remove it; allowed here: " + ", ".join(choices) if choices else "remove it")
    elif kind == "missing":
        hint = f"add '{loc[-1]}' (see `plan schema`)"
    elif kind == "union_tag_invalid" or kind == "union_tag_not_found":
        msg = "job 'stage' is missing or unknown"
        hint = "set stage to one of: serve, finetune, pretrain, rl, edge"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        ctx = err.get("ctx", {})
        bound = {"greater_than": ("above", "gt"), "greater_than_equal": ("at least", "ge"),
                 "less_than": ("below", "lt"), "less_than_equal": ("at most", "le")}[kind]
        hint = f"use a value {bound[0]} {ctx.get(bound[1])}"
        if clean and clean[-1] in FRACTIONS and kind in ("less_than", "less_than_equal"):  # (an expert review wrote growth_per_year: 50 for 50%)
            hint += f" ({clean[-1]} is a fraction: 0.5 is 50%)"
    elif kind == "literal_error":
        expected = str(err.get("ctx", {}).get("expected", "")).replace(" or ", ", ")
        close = difflib.get_close_matches(str(err.get("input")), [x.strip(" '") for x in expected.split(",")], n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else f"use one of: {expected}"
    elif kind == "finite_number":
        hint = "use an ordinary number (NaN and infinity are not allowed)"
    elif kind == "int_parsing_size":
        msg = f"{err.get('input')!r} is out of range"
        hint = "use a realistic count (see `plan schema` for each field's limits)"
    elif kind in ("int_parsing", "float_parsing", "int_type", "float_type", "int_from_float"):
        hint = "write a plain number, like 200 or 1.5e6" + (" (a whole number here)" if "int" in kind else "")
        written = str(err.get("input", "")).strip()
        if (suffix := written[-1:].lower()) in SUFFIXES and (n := _is_number(written[:-1])):  # ("32K", "100k")
            tokens = suffix == "k" and clean and str(clean[-1]).endswith("tokens")  # (a context's K is 1,024)
            hint = f"write {n * SUFFIXES[suffix]:.0f}" + (f" (or {n * 1024:.0f}, {n:g} x 1,024)" if tokens else "")
            hint += f": a plain number, without the '{written[-1]}'"
    elif kind == "too_short" and clean and clean[-1] == "jobs":
        msg = "no jobs"
        hint = "add at least one job under 'jobs:' (see scenarios/bank.yaml, or `plan init`)"
    elif kind == "string_type":
        msg = f"{err.get('input')!r} is not text"
        hint = f"quote it: {clean[-1] if clean else 'value'}: '{err.get('input')}' (YAML reads bare numbers and dates as such)"
    elif kind == "string_pattern_mismatch":
        pattern = str(err.get("ctx", {}).get("pattern", ""))
        msg = f"{err.get('input')!r} is not allowed here"
        hint = PATTERN_WORDS.get(pattern, f"match the pattern {pattern}")
    elif kind in ("model_type", "dict_type"):
        hint = "write a mapping of key: value lines here"
    elif kind == "list_type":
        hint = "write a list ('- item' lines) here"
    return Problem(f"{field_path}: {msg}", at, hint)


FRACTIONS = ("growth_per_year", "discount_rate", "support_fraction_per_year", "share", "active_fraction",
             "price_decline_per_year", "resale_fraction")
"""fields whose value is a fraction (0.05 for 5%), said where a percentage written as such is refused"""
SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9}
"""thousands, millions, billions: what '32K' or '1.5M' means where a plain number is asked"""


def _is_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


def located(problems: list, source: tuple | None) -> list:
    """Problems whose `where` starts with a field path ('jobs.0.model (chat)') with the file and line
    of that field in front, for a scenario read from a file (`source`: its path and lines); a model,
    accelerator or provider unknown to the catalog is found after parsing, without its line before."""
    if source is None:
        return problems
    path, lines = source
    out = []
    for p in problems:
        key = (p.where or "").split(" ")[0]
        loc = tuple(int(k) if k.isdigit() else k for k in key.split(".")) if key else ()
        line = line_for(loc, lines) if loc and not key.startswith(str(path)) else None
        out.append(type(p)(p.message, f"{path}:{line}: {p.where}", p.hint) if line else p)
    return out
