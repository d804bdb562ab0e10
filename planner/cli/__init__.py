"""The command line: typer commands, rendering (text, JSON, Markdown) and exit codes."""

from planner.cli.commands import main

__all__ = ["main"]
