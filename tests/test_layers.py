"""The architecture's import rules: pulp only in the optimisation layers, typer only in the CLI,
physics free of the solver."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "planner"
PULP_ALLOWED = {"model.py", "solve.py", "explain.py", "multiyear.py", "whynot.py", "shadow.py"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
            if node.module.startswith("planner."):
                names.add(node.module)
    return names


def test_pulp_only_in_optimisation_layers():
    offenders = [p.name for p in PKG.rglob("*.py") if "pulp" in imports(p) and p.name not in PULP_ALLOWED]
    assert offenders == []


def test_typer_only_in_cli():
    offenders = [p.name for p in PKG.rglob("*.py") if "typer" in imports(p) and p.name != "cli.py"]
    assert offenders == []


def test_physics_knows_nothing_of_the_solver():
    for p in (PKG / "perf").glob("*.py"):
        names = imports(p)
        assert "pulp" not in names
        assert not {n for n in names if n.startswith("planner.") and not n.startswith(("planner.perf", "planner.catalog"))}, p
