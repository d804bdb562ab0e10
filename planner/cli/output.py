"""Writing --output safely: checked before any solving, written whole or not at all.

Refused (exit 2, with the path, the reason and what to do): an existing file without --force; a
folder, FIFO, device, socket or symbolic link (dangling or not) whatever --force says, since replacing
one would destroy something that is not our output; a file that is an input of the same run (the
scenario, a catalog); a missing or unwritable folder. A write that fails on the way (a full disk) is
exit 2 too, and leaves no partial file: the text goes to a temporary file in the same folder, renamed
over the target only when complete. New files get the permissions the umask allows (0666 & ~umask).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import typer

from planner.data.errors import InputError, Problem, printable

_inputs: list[Path] = []


def _folder(output: Path) -> Path:
    return output.parent if str(output.parent) else Path(".")


def _same_file(a: Path, st: os.stat_result) -> bool:
    try:
        other = os.stat(a)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _refuse(output: Path, message: str, hint: str) -> InputError:
    return InputError(Problem(f"{printable(str(output), newlines=False)} {message}", "--output", hint))


STDOUT = "-"
"""--output - is standard output, as a scenario path - is standard input"""


def check_output(output: Path | None, force: bool, inputs: Iterable = ()) -> None:
    """Refuse an --output that would replace something it must not, or that cannot be written;
    `inputs` are this run's input files (remembered for the write that follows)."""
    given = [Path(str(p)) for p in inputs if p is not None and str(p) != "-"]
    if given:
        _inputs[:] = given
    if output is None or str(output) == STDOUT:
        return
    try:
        st = os.lstat(output)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _refuse(output, f"cannot look at it: {exc.strerror}", "choose another path")
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            dangling = not os.path.exists(output)
            raise _refuse(output, "is a symbolic link" + (" to nothing (dangling)" if dangling else ""),
                          "write to the path it points to, or remove the link first")
        if stat.S_ISDIR(st.st_mode):
            raise _refuse(output, "is a folder", "name a file inside it, e.g. " + str(output / "plan.json"))
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(output, "is not a regular file (a device, FIFO or socket); it is never replaced",
                          "name a regular file")
        if any(_same_file(p, st) for p in _inputs):
            raise _refuse(output, "is an input of this run; writing there would destroy it",
                          "choose another name for the output")
        if not force:
            raise _refuse(output, "already exists", "pass --force to replace it, or choose another name")
    folder = _folder(output)
    if not folder.is_dir():
        raise _refuse(output, f"folder {folder} does not exist", "create it first")
    try:  # can we create a file there at all (read-only file system, permissions)?
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{output.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise _refuse(output, f"cannot write in folder {folder}: {exc.strerror}",
                      "choose a folder you can write to")


def _mode(replacing: Path | None = None) -> int:
    """The new file's permissions: those of the file it replaces (--force keeps a private file
    private), else what the umask gives a new file."""
    try:
        if replacing is not None:
            return stat.S_IMODE(os.stat(replacing).st_mode)
    except OSError:
        pass
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


FORMULA = ("=", "+", "-", "@", "\t", "\r")
"""A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK, =cmd|...)."""


def csv_safe(rows: list[dict]) -> list[dict]:
    """Rows for CSV export with every text cell that a spreadsheet would run as a formula prefixed by
    an apostrophe (the OWASP rule); numbers, negative ones included, are left alone."""
    return [{k: "'" + v if isinstance(v, str) and v.startswith(FORMULA) else v for k, v in r.items()}
            for r in rows]


def csv_text(rows: list[dict], columns: list[str] | None = None) -> str:
    """Rows as CSV (csv_safe: no cell a spreadsheet would run as a formula), the columns in order."""
    import pandas as pd

    rows = [{k: None if v == "-" else v for k, v in r.items()} for r in rows]  # (a table's "none" is an empty cell)
    frame = pd.DataFrame(csv_safe(rows), columns=columns) if columns else pd.DataFrame(csv_safe(rows))
    return frame.to_csv(index=False)


PLAN_CSV = ["system", "accelerator", "acquisition", "provider", "region", "tier", "offer", "systems", "accelerators",
            "cost_usd_per_year", "purchase_usd", "power_kw", "price_source", "price_as_of", "residual_value_usd",
            "term_years", "contract_usd_per_year", "sold_after_years", "paid_upfront_usd", "year"]
"""the columns of `plan --format csv`: one row per fleet row (a multi-year plan's final year), the
catalog's source and date of each price; purchase_usd and residual_value_usd are the row's (all its
systems'), term_years and contract_usd_per_year a reservation's (the finance review: a spreadsheet
could not rebuild a reservation's invoices or the resale the yearly cost nets off), sold_after_years
the age a bought row's systems are sold at, paid_upfront_usd a reservation's whole term paid when it
starts, year the year of a multi-year plan's row: its CSV holds every year's fleet, each row at that
year's annuitised cost, so that the rows add up to the plan's annuitised total (the UX review summed
the final year's rows alone to a figure found nowhere else); empty for a one-period plan"""


def emit(text: str, output: Path | None, force: bool) -> None:
    """Write to stdout, or atomically to --output (checked again just before the write). Control
    characters from names in the scenario (terminal escape sequences, carriage returns) are shown
    escaped; JSON escapes them itself, so JSON is unchanged."""
    text = printable(text)
    if output is None or str(output) == STDOUT:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            raise  # (the reader closed early, as `| head` does: commands.main ends quietly)
        except OSError as exc:  # a full disk or a broken device behind a redirection: not a bug
            raise InputError(Problem(f"standard output could not be written: {exc.strerror}", "stdout",
                                     "free space where the output is redirected, or write a file with --output"))
        return
    check_output(output, force)
    folder = _folder(output)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{output.name}.", suffix=".tmp")
        os.fchmod(fd, _mode(output))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, output)
        tmp = None
    except OSError as exc:
        raise _refuse(output, f"could not be written: {exc.strerror}",
                      "free space or choose another folder; nothing was written")
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    typer.echo(f"wrote {printable(str(output), newlines=False)}", err=True)
