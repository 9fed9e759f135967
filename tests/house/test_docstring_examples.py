"""Every docstring example in the product runs as written (``>>>`` lines, with their output).

Examples that need what a test machine lacks say so with ``# doctest: +SKIP``.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest
from product_code import PACKAGES

ROOT = Path(__file__).resolve().parents[2]


def module_names() -> list[str]:
    names = []
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if ">>>" in path.read_text(encoding="utf-8"):
                names.append(".".join((package, *parts)))
    return names


@pytest.mark.parametrize("name", module_names())
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_the_examples_are_found() -> None:
    assert len(module_names()) > 15
