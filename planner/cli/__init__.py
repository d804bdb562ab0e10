"""The command line: typer commands, rendering (text, JSON, Markdown) and exit codes."""

import sys


def main(argv: list[str] | None = None) -> None:
    """The `plan` command (planner.cli.commands.main). Its imports take a second or more: a Ctrl-C
    while they load exits 130 with one line, like a Ctrl-C later on, not with a traceback."""
    try:
        from planner.cli.commands import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted by SIGINT (Ctrl-C) while starting: nothing was done\n")
        sys.exit(130)
    run(argv)


__all__ = ["main"]
