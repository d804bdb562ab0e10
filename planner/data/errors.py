"""One exception root; each class maps to a documented exit code.

Exit codes (a contract): 0 plan found, 1 internal error, 2 bad input, 3 infeasible,
4 solver failed or no solution within limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def printable(text: str, limit: int | None = None, newlines: bool = True) -> str:
    """`text` safe to print on a terminal or in a spreadsheet-free text file: control characters
    (escape sequences, carriage returns, bidi overrides) shown as \\xNN or \\uNNNN escapes, tabs and
    newlines kept (escaped too unless `newlines`), and cut to `limit` characters with an ellipsis."""
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "..."
    pattern = _CONTROL if newlines else re.compile(_CONTROL.pattern[:-1] + "\t\n]")
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


@dataclass
class Problem:
    """One thing wrong with the user's input: what, where, and how to fix it."""

    message: str
    where: str = ""
    hint: str = ""

    def render(self) -> str:
        where, message = printable(self.where, newlines=False), printable(self.message, newlines=False)
        text = f"{where}: {message}" if where else message
        if self.hint:
            text += f"\n    To fix: {printable(self.hint, newlines=False)}"
        return text


class PlannerError(Exception):
    exit_code = 1

    def render(self) -> str:
        return str(self)


class InputError(PlannerError):
    """Bad input: a file, YAML, schema or unknown name. Exit 2."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | Problem | str, *, source: str = ""):
        if isinstance(problems, str):
            problems = [Problem(problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = problems
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        head = f"{self.source}: " if self.source else ""
        if len(self.problems) == 1:
            return head + self.problems[0].render()
        lines = [f"{head}{len(self.problems)} problems:"]
        lines += ["  - " + p.render().replace("\n", "\n  ") for p in self.problems]
        return "\n".join(lines)


@dataclass
class Diagnosis:
    """Why a scenario has no plan, and what to relax by how much."""

    summary: str
    relaxations: list[dict] = field(default_factory=list)
    cut_short: bool = False
    """the time limit stopped the elastic model before it proved its relaxations the least: relaxing
    by them admits a plan, smaller ones may too"""


class InfeasibleError(PlannerError):
    """No plan meets the scenario. Exit 3, with a diagnosis."""

    exit_code = 3

    def __init__(self, diagnosis: Diagnosis):
        self.diagnosis = diagnosis
        super().__init__(diagnosis.summary)


class SolverError(PlannerError):
    """The solver failed or found no solution within its limits. Exit 4."""

    exit_code = 4


class VerificationError(PlannerError):
    """A plan failed independent verification: a bug in the planner. Exit 1."""

    exit_code = 1


def suggest(name: str, choices, listing: str = "", otherwise: str = "") -> str:
    """'did you mean' text for an unknown name (names containing it first, then close spellings);
    with none close, `otherwise`, or the `plan catalog LISTING` command that lists the known names."""
    import difflib

    choices = sorted(choices)
    low = str(name).lower()
    close = [c for c in choices if low and c.startswith(low)]
    close += [c for c in choices if low and low in c and c not in close]
    close += [c for c in difflib.get_close_matches(low, choices, n=3, cutoff=0.5) if c not in close]
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close[:3]) + "?"
    if otherwise:
        return otherwise
    return f"see the known names with `plan catalog {listing}`" if listing else "check the spelling"
