"""A tool whose input schema is no JSON schema is left out at load, with where and why;
the server's other tools load and run."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from fncall_graph.adapters.mcp import MCPToolkit

SERVER = Path(__file__).parents[1] / "servers" / "odd_schema_server.py"
CONFIG = {"mcpServers": {"s": {"command": sys.executable, "args": [str(SERVER)]}}}


async def test_a_tool_with_a_broken_schema_is_left_out_saying_where(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        async with MCPToolkit.from_config(CONFIG) as toolkit:
            names = [t.name for t in toolkit.get_tools()]
            call = {"type": "tool_call", "id": "c1", "name": "s-echo", "args": {"text": "hi"}}
            answer = await toolkit.get_tool("s-echo").ainvoke(call)
    assert "s-odd" not in names and "s-echo" in names
    assert answer.content == "hi"
    said = [r.getMessage() for r in caplog.records if "'odd'" in r.getMessage()]
    assert said and "not a valid JSON schema" in said[0] and "strange" in said[0], said
