"""Whether a tool call may run twice is one rule (``adapters/tool_effects``), used by both
places a call could run again: the tools node (a call whose process died inside it) and
the MCP toolkit (a call whose server died during it)."""

from __future__ import annotations

import ast
import os
import signal
from pathlib import Path

import pytest
from product_code import sources
from seed_db import SEED_LIST_TABLES, make_database, sqlite_config
from test_mcp import pid_gone, server_pids

from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.adapters.tool_effects import is_idempotent

PRODUCT = ("adapters", "guarantees", "nodes", "graphs", "fncall_graph")
# what a tool says of its effects, in its metadata
MARKS = {"idempotent", "idempotentHint", "readOnlyHint"}
HOME = "adapters/tool_effects.py"


def reads_a_mark(node: ast.AST) -> bool:
    """``x.get("readOnlyHint")`` or ``x["readOnlyHint"]`` (a dict's key is not a read)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        key = node.args[0] if node.func.attr == "get" and node.args else None
    elif isinstance(node, ast.Subscript):
        key = node.slice
    else:
        return False
    return isinstance(key, ast.Constant) and key.value in MARKS


def test_a_tools_effects_are_read_in_one_place() -> None:
    readers = sorted(
        f"{path}:{node.lineno}"
        for path, tree in sources(PRODUCT).items()
        for node in ast.walk(tree)
        if reads_a_mark(node) and path != HOME
    )
    assert not readers, f"read outside {HOME}: {readers}"


def test_both_places_a_call_could_run_again_ask_the_rule() -> None:
    callers: dict[str, int] = {}
    for path, tree in sources(PRODUCT).items():
        for node in ast.walk(tree):
            func = node.func if isinstance(node, ast.Call) else None
            name = getattr(func, "id", None) or getattr(func, "attr", None)
            if name == "is_idempotent":
                callers[path] = callers.get(path, 0) + 1
    assert callers == {"adapters/mcp/tools.py": 1, "nodes/tools.py": 1}


# how a tool is marked: names given to the toolkit, metadata set on the tool once made
MARKINGS = {
    "unmarked": ([], {}),
    "named": (["sqlite-list_tables"], {}),
    "marked idempotent": ([], {"idempotent": True}),
    "annotated read-only": ([], {"readOnlyHint": True}),
    "annotated idempotent": ([], {"idempotentHint": True}),
}


@pytest.mark.parametrize("marking", sorted(MARKINGS))
async def test_the_toolkit_retries_exactly_the_calls_the_rule_allows(
    tmp_path: Path, marking: str
) -> None:
    """A real ``mcp-server-sqlite`` killed before a call: the restarted server runs the
    call again only for a tool the rule says may run twice, however it was marked (the
    marks are read when the call is made, as the tools node reads them)."""
    names, metadata = MARKINGS[marking]
    config = sqlite_config(make_database(tmp_path / "test.db"))
    async with MCPToolkit.from_config(config, idempotent_tools=names) as toolkit:
        tool = toolkit.get_tool("sqlite-list_tables")
        tool.metadata = {**(tool.metadata or {}), **metadata}
        [old] = server_pids("mcp-server-sqlite")
        os.kill(old, signal.SIGKILL)
        answer = await tool.ainvoke({})
        assert pid_gone(old)
    retried = answer == SEED_LIST_TABLES
    assert retried == is_idempotent(tool, names) == (marking != "unmarked")
    if not retried:
        assert answer.startswith("Outcome unknown: MCP server 'sqlite' stopped answering")
