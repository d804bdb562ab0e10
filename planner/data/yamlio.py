"""Safe YAML loading that remembers where every value came from (file:line).

Guards against hostile files: size cap, depth cap, node-count cap (alias bombs), binary data,
non-UTF-8 text, duplicate keys.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from planner.data.errors import InputError, Problem

MAX_BYTES = 5 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 64

Lines = dict[tuple, int]


class _Loader(yaml.SafeLoader):
    """YAML 1.1's safe loader, but `1e8` and `2.5E+6` are numbers as people (and YAML 1.2) mean them,
    not strings: YAML 1.1 wants a dot in a float's mantissa."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def read_text(path: Path) -> str:
    where = str(path)
    if not path.exists():
        raise InputError(Problem("file not found", where, "check the path; scenario files end in .yaml"))
    if path.is_dir():
        raise InputError(Problem("is a folder, not a file", where, "name a scenario .yaml file"))
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise InputError(Problem(f"file is {size / 1e6:.1f} MB; scenarios are limited to "
                                 f"{MAX_BYTES // (1024 * 1024)} MB", where,
                                 "a scenario lists jobs and settings; keep data out of it"))
    raw = path.read_bytes()
    if b"\x00" in raw:
        raise InputError(Problem("file holds binary data, not YAML text", where, "name a YAML text file"))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(Problem(f"not UTF-8 text (byte {exc.start})", where, "save the file as UTF-8"))


def _build(node: yaml.Node, path: tuple, lines: Lines, budget: list[int], where: str):
    budget[0] += 1
    if budget[0] > MAX_NODES:
        raise InputError(Problem(f"document expands to more than {MAX_NODES} values "
                                 "(an alias bomb or a far too large file)", where,
                                 "remove repeated YAML aliases (*name) or split the file"))
    if len(path) > MAX_DEPTH:
        raise InputError(Problem(f"nesting deeper than {MAX_DEPTH} levels", where,
                                 "a scenario needs only a few levels of nesting"))
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            key = _build(key_node, path, {}, budget, where)
            if isinstance(key, (list, dict)):
                raise InputError(Problem("a mapping key must be a plain value",
                                         f"{where}:{key_node.start_mark.line + 1}"))
            if key == "<<":
                raise InputError(Problem("YAML merge keys (<<) are not supported",
                                         f"{where}:{key_node.start_mark.line + 1}", "write the keys out"))
            if key in out:
                raise InputError(Problem(f"duplicate key '{key}'", f"{where}:{key_node.start_mark.line + 1}",
                                         "remove one of the two entries"))
            out[key] = _build(value_node, path + (key,), lines, budget, where)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(v, path + (i,), lines, budget, where) for i, v in enumerate(node.value)]
    return yaml.constructor.SafeConstructor().construct_object(node)


def load_yaml(text: str, where: str) -> tuple[object, Lines]:
    """Parse one YAML document; return the data and a map from field path to line number."""
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 0
        raise InputError(Problem(f"malformed YAML: {exc.problem}", f"{where}:{line}",
                                 "check indentation and quoting on that line"))
    except yaml.YAMLError as exc:
        raise InputError(Problem(f"malformed YAML: {exc}", where, "check the YAML syntax"))
    except RecursionError:
        raise InputError(Problem(f"nesting deeper than {MAX_DEPTH} levels", where,
                                 "a scenario needs only a few levels of nesting"))
    if node is None:
        raise InputError(Problem("file is empty", where, "start from scenarios/bank.yaml"))
    lines: Lines = {}
    try:
        data = _build(node, (), lines, [0], where)
    except RecursionError:
        raise InputError(Problem(f"nesting deeper than {MAX_DEPTH} levels", where,
                                 "a scenario needs only a few levels of nesting"))
    except yaml.YAMLError as exc:
        raise InputError(Problem(f"malformed YAML value: {exc}", where, "check the value's syntax"))
    return data, lines
