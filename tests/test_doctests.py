"""The examples in the package's docstrings run and print what they say (python -m doctest)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "planner"
WITH_EXAMPLES = sorted(".".join(p.relative_to(PKG.parent).with_suffix("").parts)
                       for p in PKG.rglob("*.py") if ">>>" in p.read_text())


def test_some_modules_carry_examples():
    assert len(WITH_EXAMPLES) >= 3, WITH_EXAMPLES


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
