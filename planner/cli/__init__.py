"""The command line: typer commands, rendering (text, JSON, Markdown) and exit codes."""

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
    plan's start-up), and the planner's own models take no plugins."""
    _STARTED[:] = [time.monotonic()]
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        from planner.cli.commands import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted by SIGINT (Ctrl-C) while starting: nothing was done\n")
        sys.exit(130)
    run(argv)


__all__ = ["main"]
