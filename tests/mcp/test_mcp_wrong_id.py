"""A server that answers a tool call under another request id: with the default
``call_timeout`` the call ends in a timeout that says the server may still finish it,
not in a hang."""

from __future__ import annotations

import sys
from pathlib import Path

from fncall_graph.adapters.mcp import MCPToolkit

SERVER = Path(__file__).parents[1] / "servers" / "wrong_id_server.py"
CONFIG = {"mcpServers": {"w": {"command": sys.executable, "args": [str(SERVER)]}}}


async def test_an_answer_under_another_request_id_times_out() -> None:
    from fncall_graph.adapters.mcp.toolkit import DEFAULT_CALL_TIMEOUT

    assert MCPToolkit.from_config(CONFIG).call_timeout == DEFAULT_CALL_TIMEOUT
    async with MCPToolkit.from_config(CONFIG, call_timeout=0.5) as toolkit:
        call = {"type": "tool_call", "id": "c1", "name": "w-echo", "args": {"text": "hi"}}
        message = await toolkit.get_tool("w-echo").ainvoke(call)
    assert message.status == "error"
    assert "tool 'echo' timed out after 0.5 s" in message.content
    assert "may still finish the call" in message.content
