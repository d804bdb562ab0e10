"""The architecture's import rules, function-level imports included: sub-packages in a fixed layer
order with imports pointing downward only, no import cycle between modules, pulp only in the
optimisation layers, typer/rich only in the CLI, small modules, few modules at the top."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "planner"
LAYERS = ["data", "physics", "options", "milp", "explain", "verify", "app", "cli"]
"""Bottom to top; a module may import its own layer and the ones below it (verify never imports
milp or explain: it re-derives the plan on its own)."""
FORBIDDEN = {"verify": {"milp", "explain", "options"}}
PULP_ALLOWED = {"milp", "explain"}
CLI_ONLY = {"typer", "rich"}
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for f in sorted(PKG.rglob("*.py")):
        parts = f.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        out[name] = f
    return out


def _imports(name: str, path: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """(external top-level packages, planner modules) imported anywhere in the file."""
    tree = ast.parse(path.read_text())
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    ext, deps = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                ext.add(a.name.split(".")[0])
                deps.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            ext.add(base.split(".")[0])
            for a in node.names:
                deps.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return ext, {d for d in deps if d in known and d != name and not name.startswith(d + ".")}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


GRAPH = {}
EXTERNAL = {}
for _name, _path in _modules().items():
    EXTERNAL[_name], GRAPH[_name] = _imports(_name, _path, set(_modules()))


def test_every_module_lives_in_a_layer():
    loose = [m for m in GRAPH if m.count(".") == 1 and _layer(m) is None and m not in ("planner.__main__",)]
    assert loose == [], "modules directly in planner/ outside a layer"
    assert sum(1 for p in PKG.glob("*.py")) <= 6


def test_imports_point_downward_only():
    upward = []
    for mod, deps in GRAPH.items():
        mine = _layer(mod)
        if mine is None:
            continue
        for d in deps:
            theirs = _layer(d)
            if theirs is None:
                continue
            if LAYERS.index(theirs) > LAYERS.index(mine) or theirs in FORBIDDEN.get(mine, ()):
                upward.append(f"{mod} -> {d}")
    assert upward == []


def test_no_import_cycles():
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            strong(v)
    assert cycles == []


def test_pulp_only_in_optimisation_layers():
    assert [m for m, ext in EXTERNAL.items() if "pulp" in ext and _layer(m) not in PULP_ALLOWED] == []


def test_typer_and_rich_only_in_cli():
    assert [m for m, ext in EXTERNAL.items() if ext & CLI_ONLY and _layer(m) != "cli"] == []


def test_physics_knows_nothing_of_the_solver_or_the_options():
    for mod, deps in GRAPH.items():
        if _layer(mod) == "physics":
            assert {_layer(d) for d in deps} <= {"data", "physics"}, mod


def test_modules_are_small():
    big = {m: p.read_text().count("\n") for m, p in _modules().items() if p.read_text().count("\n") > MAX_LINES}
    assert big == {}
