"""One exception root; each class maps to a documented exit code.

Exit codes (a contract): 0 plan found, 1 internal error, 2 bad input, 3 infeasible,
4 solver failed or no solution within limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Problem:
    """One thing wrong with the user's input: what, where, and how to fix it."""

    message: str
    where: str = ""
    hint: str = ""

    def render(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f"\n    To fix: {self.hint}"
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


def suggest(name: str, choices) -> str:
    """'did you mean' text for an unknown name (names containing it first, then close spellings)."""
    import difflib

    choices = sorted(choices)
    low = str(name).lower()
    close = [c for c in choices if low and c.startswith(low)]
    close += [c for c in choices if low and low in c and c not in close]
    close += [c for c in difflib.get_close_matches(low, choices, n=3, cutoff=0.5) if c not in close]
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close[:3]) + "?"
    return "see the known names with `plan catalog`"
