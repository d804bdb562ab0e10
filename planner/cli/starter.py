"""`plan init`: commented starter scenarios a new user edits (planner/cli/templates/*.yaml).

Each template validates and plans against the bundled catalog (tests/test_onboarding.py)."""

from __future__ import annotations

from enum import Enum
from importlib import resources


class Template(str, Enum):
    serve = "serve"
    finetune = "finetune"
    mixed = "mixed"
    budget = "budget"


def template_text(template: Template) -> str:
    """The YAML text of one starter scenario, comments included."""
    return (resources.files("planner.cli") / "templates" / f"{template.value}.yaml").read_text(encoding="utf-8")
