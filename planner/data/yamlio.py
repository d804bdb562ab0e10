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


def read_text(path: Path, what: str = "scenario") -> str:
    """The text of a regular file (or of stdin for `-`), reading at most MAX_BYTES + 1 bytes whatever
    the file system says its size is (/dev/zero, /dev/urandom and /proc files report 0). FIFOs,
    devices, sockets and folders are refused before anything is read; a UTF-8 byte-order mark is
    dropped."""
    import os
    import stat
    import sys

    where, size = str(path), 0
    if where == "-":
        raw = sys.stdin.buffer.read(MAX_BYTES + 1)
    else:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block us
        except FileNotFoundError:
            hint = "check the path" + ("; scenario files end in .yaml" if what == "scenario" else "")
            raise InputError(Problem("file not found", where, hint))
        except IsADirectoryError:
            raise InputError(Problem("is a folder, not a file", where, f"name a {what} file"))
        except OSError as exc:
            raise InputError(Problem(f"cannot read the file: {exc.strerror}", where,
                                     "check the path and its permissions"))
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise InputError(Problem("is a folder, not a file", where, f"name a {what} file"))
            if not stat.S_ISREG(mode):
                raise InputError(Problem("is not a regular file (a device, pipe or socket)", where,
                                         f"name a {what} file, or pass - to read it from stdin"))
            size = os.fstat(fd).st_size
            with os.fdopen(fd, "rb") as fh:
                fd = -1
                raw = fh.read(MAX_BYTES + 1)
        except OSError as exc:
            raise InputError(Problem(f"cannot read the file: {exc.strerror}", where,
                                     "check the path and its permissions"))
        finally:
            if fd >= 0:
                os.close(fd)
    if len(raw) > MAX_BYTES:
        mb = MAX_BYTES // (1024 * 1024)
        said = f"file is {size / 1e6:.1f} MB; {what}s are limited to {mb} MB" if size > MAX_BYTES else \
            f"file is larger than {mb} MB, the limit for a {what}"
        raise InputError(Problem(said, where, f"a {what} lists settings and rows; keep bulk data out of it"))
    if b"\x00" in raw:
        kind = "YAML text" if what == "scenario" else "text"
        raise InputError(Problem(f"file holds binary data, not {kind}", where, f"name a {what} text file"))
    if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark (spreadsheet exports)
        raw = raw[3:]
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
    except yaml.MarkedYAMLError as exc:  # a value the safe loader will not build (a merge key '<<', a tag)
        line = exc.problem_mark.line + 1 if exc.problem_mark else 0
        merge = "tag:yaml.org,2002:merge" in str(exc.problem)
        raise InputError(Problem("YAML merge keys ('<<: *anchor') are not read" if merge else
                                 f"malformed YAML value: {exc.problem}", f"{where}:{line}" if line else where,
                                 "write the keys out in each entry" if merge else "check the value's syntax"))
    except yaml.YAMLError as exc:
        raise InputError(Problem(f"malformed YAML value: {' '.join(str(exc).split())}", where, "check the value's syntax"))
    return data, lines
