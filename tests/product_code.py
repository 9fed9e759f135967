"""The product's source, parsed: for tests that count where something is done."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["PACKAGES", "PRODUCT", "ROOT", "called", "sources"]

ROOT = Path(__file__).resolve().parents[1]
# source folder -> the package its modules install as (pyproject's package-dir)
PACKAGES = {
    "adapters": "fncall_graph.adapters",
    "guarantees": "fncall_graph.guarantees",
    "nodes": "fncall_graph.nodes",
    "middleware": "fncall_graph.middleware",
    "graphs": "fncall_graph.graphs",
    "fncall_graph": "fncall_graph",
}
PRODUCT = tuple(PACKAGES)


def sources(folders: tuple[str, ...] = PRODUCT) -> dict[str, ast.Module]:
    """Each module of ``folders``, by its path from the repository's root."""
    return {
        str(path.relative_to(ROOT)): ast.parse(path.read_text(encoding="utf-8"))
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
    }


def called(node: ast.AST) -> str | None:
    """The name a call calls (``f(...)`` or ``x.f(...)``); ``None`` for anything else."""
    func = node.func if isinstance(node, ast.Call) else None
    return getattr(func, "id", None) or getattr(func, "attr", None)
