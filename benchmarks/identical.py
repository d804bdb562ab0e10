"""Byte-identical plans between two versions of the planner, for every shipped scenario.

    python benchmarks/identical.py REF_A [REF_B]     (REF_B defaults to the working tree)

Each side plans its own scenarios/*.yaml (those both sides ship) with `--format json --no-timings`
in a fresh process, from a clean export of its git ref, and the outputs are compared byte for byte. A refactoring must print "identical" for every scenario;
a change of behaviour lists the JSON paths that differ. Exit 1 if any scenario differs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def export(ref: str, into: Path) -> Path:
    """A clean copy of the package at a git ref (git archive), to run with PYTHONPATH."""
    data = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def plan(src: Path, scenario: Path) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", "planner", str(scenario), "--format", "json", "--no-timings"],
                       capture_output=True, text=True, cwd=src, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})
    return r.returncode, r.stdout


def differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "."]


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        a = export(sys.argv[1], Path(tmp) / "a")
        b = export(sys.argv[2], Path(tmp) / "b") if len(sys.argv) > 2 else ROOT
        same = True
        names = sorted({p.name for p in (a / "scenarios").glob("*.yaml")}
                       & {p.name for p in (b / "scenarios").glob("*.yaml")})
        for name in names:
            scenario = Path(name)
            (ca, oa), (cb, ob) = plan(a, Path("scenarios") / name), plan(b, Path("scenarios") / name)
            if ca == cb and oa == ob:
                print(f"{scenario.name:<32} identical (exit {ca})")
                continue
            same = False
            try:
                paths = differences(json.loads(oa), json.loads(ob))
            except json.JSONDecodeError:
                paths = ["(not JSON)"]
            print(f"{scenario.name:<32} DIFFERS (exit {ca} vs {cb}): {', '.join(paths[:8])}"
                  + (f" and {len(paths) - 8} more" if len(paths) > 8 else ""))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
