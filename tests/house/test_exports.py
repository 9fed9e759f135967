"""A module's ``__all__`` lists what the product offers from it: a name another room of the
product imports, the notebooks import or the docs show (a code block, a doctest, or a name
in backticks); a name a package offers is listed by the package alone. The tests, the
scripts and the benchmarks are no such user: they import what they need by its module
path, which needs no listing. So each list says what the module offers, and all of them
together stay short enough to read (``MOST_EXPORTED``).

The public face (``fncall_graph/__init__.py``) lists its public names whoever uses them.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

from product_code import PACKAGES

ROOT = Path(__file__).resolve().parents[2]
# the rooms whose lists are held to it
CHECKED = (
    "adapters/__init__.py",
    "adapters/tool_effects.py",
    "adapters/secrets.py",
    "adapters/formats/",
    "adapters/models/",
    "adapters/mcp/",
    "adapters/checkpoint/",
    "guarantees/",
    "nodes/",
    "middleware/",
    "graphs/",
    "fncall_graph/",
)
# the MCP seam: both SDK generations offer the same names, which the seam hands on
SEAM = ("adapters/mcp/stack.py", "adapters/mcp/_sdk1.py", "adapters/mcp/_sdk2.py")
FACE = "fncall_graph/__init__.py"
# the replay model under its earlier name, listed for those who import it from there
EARLIER = ("fncall_graph/testing.py",)
# still listed though only the tests import them; each goes from here when its list drops it
# the names all the product's lists hold together, at most
MOST_EXPORTED = 300


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGES[parts[0]], *parts[1:]])


def room(rel: str) -> str:
    """adapters/ has a room a folder (claims/ one of its own) and one for tool_effects;
    the command (cli/) and the examples are rooms apart from the rest of fncall_graph/."""
    parts = rel.split("/")
    if parts[0] == "adapters" and len(parts) > 2:
        return "/".join(parts[:3] if parts[2] == "claims" and len(parts) > 3 else parts[:2])
    if parts[0] == "fncall_graph" and len(parts) > 2 and parts[1] in ("cli", "examples"):
        return "/".join(parts[:2])
    return rel if parts[0] == "adapters" else parts[0]


MODULES = {
    module_name(path.relative_to(ROOT)): str(path.relative_to(ROOT))
    for top in PACKAGES
    for path in sorted((ROOT / top).rglob("*.py"))
}


def resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if not level:
        return target or ""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - level + 1]
    return ".".join([*parts, target] if target else parts)


def by_path(dotted: str) -> tuple[str, str] | None:
    """``package.module.name`` as (module, name), the longest module that fits."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:i]) in MODULES:
            return ".".join(parts[:i]), parts[i]
    return None


def used_names(tree: ast.AST, module: str = "", is_package: bool = False) -> set[tuple[str, str]]:
    """(module, name) pairs a source uses: imported, read off an imported module, named
    in a string (``"fncall_graph.x.y:name"``, a patch target, code for a child process)
    or in a lazy map."""
    found: set[tuple[str, str]] = set()
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = resolve(module, is_package, node.level, node.module)
            for alias in node.names:
                found.add((target, alias.name))
                if f"{target}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, base = [], node
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                hit = by_path(".".join([aliases[base.id], *reversed(chain)]))
                found.update([hit] if hit else [])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # code run in a child process: ``python -c "from fncall_graph.x import y"``
            for match in re.finditer(r"from (fncall_graph[\w.]*) import ([\w, ()]+)", node.value):
                found.update((match.group(1), name) for name in re.findall(r"\w+", match.group(2)))
            for match in re.finditer(r"fncall_graph(?:\.\w+)+(?::\w+)?", node.value):
                hit = by_path(match.group(0).replace(":", "."))
                found.update([hit] if hit else [])
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                    if not (isinstance(key.value, str) and isinstance(value.value, str)):
                        continue
                    level = len(value.value) - len(value.value.lstrip("."))
                    target = resolve(module, is_package, level, value.value.lstrip(".") or None)
                    found.add((target, key.value))
    return found


def parsed(code: str) -> ast.Module:
    try:
        return ast.parse(code)
    except SyntaxError:  # a docs block with an ellipsis or a prompt: line by line
        body: list[ast.stmt] = []
        for line in code.splitlines():
            with contextlib.suppress(SyntaxError):
                body += ast.parse(line.strip()).body
        return ast.Module(body=body, type_ignores=[])


def uses() -> tuple[dict[tuple[str, str], set[str]], set[str]]:
    """Who uses each (module, name): a product module (by its path), ``"docs"``,
    ``"notebooks"`` or ``"install"`` (the command and the Studio graphs); and the names the
    docs' prose shows."""
    users: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sorted(p for top in PACKAGES for p in (ROOT / top).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        module = module_name(path.relative_to(ROOT))
        for pair in used_names(parsed(text), module, path.name == "__init__.py"):
            users[pair].add(rel)
        doctest = "\n".join(
            line.strip()[4:]
            for line in text.splitlines()
            if line.strip().startswith((">>> ", "... "))
        )
        for pair in used_names(parsed(doctest)):
            users[pair].add("docs")
    prose: set[str] = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        blocks = re.findall(r"```(?:python|py)?\n(.*?)```", text, re.S)
        for pair in used_names(parsed("\n\n".join(blocks))):
            users[pair].add("docs")
        prose.update(re.findall(r"`(?:[\w.]+\.)?(\w+)`", text))
        # a call the prose shows in backticks: `MCPToolkit(parse_mcp_config(connections))`
        for span in re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
            prose.update(re.findall(r"(\w+)\(", span) if "\n\n" not in span else ())
    # what the install and a LangGraph server run: the command, the Studio graphs
    for path in (ROOT / "pyproject.toml", ROOT / "langgraph.json"):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"fncall_graph(?:\.\w+)+:\w+", text):
            if hit := by_path(match.group(0).replace(":", ".")):
                users[hit].add("install")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        code = "\n".join(line for line in code.splitlines() if not line.startswith(("%", "!")))
        for pair in used_names(parsed(code)):
            users[pair].add("notebooks")
    return users, prose


def literal_list(rel: str) -> list[str] | None:
    """A module's ``__all__`` when it is written out (a list or tuple of strings)."""
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(getattr(t, "id", "") == "__all__" for t in targets):
            with contextlib.suppress(ValueError):
                return list(ast.literal_eval(node.value))  # type: ignore[arg-type]
    return None


@cache
def listed(rel: str) -> list[str]:
    return literal_list(rel) or []


def exported_count() -> dict[str, int]:
    """How many names each of the product's written-out ``__all__`` lists holds, by path.

    The face's list is built from its lazy map (``sorted(_EXPORTS)``), so it is not
    counted: each of its names is listed again by the module it comes from.
    """
    counts = {rel: len(names) for rel in MODULES.values() if (names := literal_list(rel))}
    return dict(sorted(counts.items()))


def test_every_listed_name_is_offered_to_the_product_docs_or_notebooks() -> None:
    users, prose = uses()

    def offered(module: str, name: str) -> bool:
        rel = MODULES[module]
        for user in users.get((module, name), ()):
            if user == rel:
                continue
            if room(user) != room(rel):  # another room, the docs, the notebooks
                return True
        return name in prose  # the docs tell users of it

    unused = sorted(
        f"{rel}: {name}"
        for module, rel in MODULES.items()
        if rel.startswith(CHECKED) and rel not in (*SEAM, FACE, *EARLIER)
        for name in listed(rel)
        if not offered(module, name)
    )
    assert not unused, (
        "listed, but not used by another room, the docs or the notebooks (the tests import "
        "it by its module path):\n" + "\n".join(unused)
    )


def test_the_lists_hold_at_most_the_names_the_product_offers() -> None:
    counts = exported_count()
    biggest = sorted(counts.items(), key=lambda item: -item[1])[:10]
    assert sum(counts.values()) <= MOST_EXPORTED, (
        f"{sum(counts.values())} names listed, at most {MOST_EXPORTED}; the longest lists: "
        + ", ".join(f"{rel} {n}" for rel, n in biggest)
    )


def test_the_rooms_are_the_layouts() -> None:
    assert room("adapters/models/chat_model.py") == "adapters/models"
    assert room("adapters/checkpoint/claims/store.py") == "adapters/checkpoint/claims"
    assert room("adapters/checkpoint/savers.py") == "adapters/checkpoint"
    assert room("adapters/tool_effects.py") == "adapters/tool_effects.py"
    assert room("fncall_graph/cli/main.py") == "fncall_graph/cli"
    assert room("fncall_graph/trace.py") == "fncall_graph"
    assert room("tests/graphs/test_graph.py") == "tests"
