"""The rooms import downward only, and no module imports itself back through a circle.

adapters/ (formats → models, mcp, checkpoint) knows nothing of the rest; guarantees/ (what
nodes, middleware and the graph's run share) knows only adapters/; nodes/ knows nothing of
graphs/; within adapters/, formats/ knows nothing of the other rooms, and
tool_effects (whether a tool only reads, whether a call may run twice) and secrets (what
error lines mask, files only their owner reads) nothing of any.
``fncall_graph._compat`` (the one shim over library internals) may be used anywhere.
A function's own (lazy) import counts too: a circle closed at call time is still one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from product_code import PACKAGES

ROOT = Path(__file__).resolve().parents[2]
# the rooms held to the order (the face and the command may import any of them)
ROOMS = {folder: package for folder, package in PACKAGES.items() if folder != "fncall_graph"}
SHIM = "fncall_graph._compat"
# what each room may import from the product, besides itself and the shim
ALLOWED = {
    "fncall_graph.adapters.formats": (),
    "fncall_graph.adapters.models": (
        "fncall_graph.adapters.formats",
        "fncall_graph.adapters.secrets",
    ),
    "fncall_graph.adapters.tool_effects": (),
    # what is redacted in error lines, and files only their owner reads
    "fncall_graph.adapters.secrets": (),
    "fncall_graph.adapters.mcp": (
        "fncall_graph.adapters.formats",
        "fncall_graph.adapters.models",
        "fncall_graph.adapters.secrets",
        "fncall_graph.adapters.tool_effects",
    ),
    "fncall_graph.adapters.checkpoint": (),
    "fncall_graph.adapters": ("fncall_graph.adapters",),
    # what the nodes, the middleware and the graph's run share: one flow for each guarantee
    "fncall_graph.guarantees": ("fncall_graph.adapters",),
    "fncall_graph.nodes": ("fncall_graph.adapters", "fncall_graph.guarantees"),
    # the guarantees as LangChain agent middleware: the same code, not a copy
    "fncall_graph.middleware": (
        "fncall_graph.adapters",
        "fncall_graph.guarantees",
        "fncall_graph.nodes",
    ),
    # the Studio factories serve the product's examples (modules that import no product code)
    "fncall_graph.graphs": (
        "fncall_graph.adapters",
        "fncall_graph.guarantees",
        "fncall_graph.nodes",
        "fncall_graph.middleware",
        "fncall_graph.examples",
    ),
}


def modules() -> Iterator[tuple[str, Path]]:
    for folder, package in ROOMS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def imports(name: str, path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)  # `from pkg import module`
    return {f for f in found if f.startswith("fncall_graph")}


def room_of(name: str) -> str:
    for room in sorted(ALLOWED, key=len, reverse=True):
        if name == room or name.startswith(room + "."):
            return room
    raise AssertionError(f"{name} is in no room")


ALL = dict(modules())


@pytest.mark.parametrize("name", sorted(ALL))
def test_imports_run_downward(name: str) -> None:
    room = room_of(name)
    allowed = (room, SHIM, *ALLOWED[room])
    upward = sorted(
        target
        for target in imports(name, ALL[name], top_level_only=False)
        if not any(target == a or target.startswith(a + ".") for a in allowed)
    )
    assert not upward, f"{name} imports from a room above it: {upward}"


def test_no_import_circle() -> None:
    graph = {
        name: {t for t in imports(name, path, top_level_only=False) if t in ALL and t != name}
        for name, path in ALL.items()
    }
    # a package's __init__ importing its own modules is the package, not a circle
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        seen[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if seen.get(nxt) == 1:
                circle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import circle: " + " → ".join(circle))
            if nxt not in seen:
                visit(nxt)
        stack.pop()
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            visit(node)


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_module_says_what_it_exports(name: str) -> None:
    # a module lists what is imported from it outside its room (tests/house/test_exports.py)
    tree = ast.parse(ALL[name].read_text(encoding="utf-8"))
    declared = any(
        isinstance(node, ast.Assign)
        and any(getattr(t, "id", "") == "__all__" for t in node.targets)
        for node in tree.body
    )
    assert declared, f"{name} has no __all__"


# the tool call claims are a package of one module a job; each imports only those above it
CLAIMS = "fncall_graph.adapters.checkpoint.claims"
CLAIMS_ORDER = ("errors", "owner", "store", "lease", "flows", "thread_runs")


def test_claims_modules_import_in_order() -> None:
    inside = {name for name in ALL if name.startswith(CLAIMS + ".")}
    expected = {f"{CLAIMS}.{part}" for part in CLAIMS_ORDER}
    assert inside == expected, f"the claims package holds {sorted(inside)}, not {sorted(expected)}"
    for i, part in enumerate(CLAIMS_ORDER):
        name = f"{CLAIMS}.{part}"
        below = [f"{CLAIMS}.{p}" for p in CLAIMS_ORDER[:i]]
        within = {t for t in imports(name, ALL[name], top_level_only=False) if t.startswith(CLAIMS)}
        above = sorted(t for t in within if not any(t == b or t.startswith(b + ".") for b in below))
        assert not above, f"{name} imports a claims module not above it: {above}"


def test_other_rooms_use_the_claims_face() -> None:
    # outside adapters/checkpoint, the claims are reached through their package's names
    for name, path in ALL.items():
        if name.startswith("fncall_graph.adapters.checkpoint"):
            continue
        inner = sorted(
            t
            for t in imports(name, path, top_level_only=False)
            if t.startswith(CLAIMS + ".") and t[len(CLAIMS) + 1 :].split(".")[0] in CLAIMS_ORDER
        )
        assert not inner, f"{name} imports the claims' inner modules: {inner}"
