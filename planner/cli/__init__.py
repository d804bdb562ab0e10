"""The command line: typer commands, rendering (text, JSON, Markdown) and exit codes."""

import gc
import os
import sys
import time

_STARTED: list[float] = []
"""when main() began (time.monotonic()): the first plan's time limit counts from there (started)"""


def started() -> float | None:
    """When the command began, for the first plan it makes (its --time-limit covers the command's
    start-up: the imports take 0.2-0.4 s); None after that, or outside main()."""
    return _STARTED.pop() if _STARTED else None


def main(argv: list[str] | None = None) -> None:
    """The `plan` command (planner.cli.commands.main). Its imports take a second or more: a Ctrl-C
    while they load exits 130 with one line, like a Ctrl-C later on, not with a traceback.
    Pydantic's plugin discovery is off unless PYDANTIC_DISABLE_PLUGINS is set otherwise: it scans
    the metadata of every installed package when the first model class is built (0.05-0.1 s of a
    plan's start-up), and the planner's own models take no plugins. Run as the command (argv None),
    its objects are left out of the collection that ends the interpreter (gc.freeze): the process
    ends there and the system frees its memory, where that pass over the plan's models took 0.3 s:
    benchmarks/milp.py's 60 generated jobs (seed 4, limit 10 s), main's end to the process's end
    0.43 -> 0.11 s; bank.yaml's whole command 0.96 -> 0.78 s (imports alone 0.47 s)."""
    _STARTED[:] = [time.monotonic()]
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        from planner.cli.commands import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted by SIGINT (Ctrl-C) while starting: nothing was done\n")
        sys.exit(130)
    try:
        run(argv)
    finally:
        if argv is None:
            gc.freeze()


__all__ = ["main"]
