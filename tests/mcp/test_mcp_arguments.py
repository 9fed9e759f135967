"""What an MCP tool call sends: the arguments as the tool's schema allows them.

A model (and an application) often writes ``null`` for a parameter it does not give.
The server gets what its schema allows: an optional parameter whose schema does not
take ``null`` is left out, while a ``null`` the schema allows is sent as given. Checked
through a graph against a real server (plain JSON-RPC over stdio, no SDK) that answers
each call with the arguments it received.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.testing import ReplayChatModel

pytestmark = pytest.mark.slow

ECHO_SERVER = """
import json
import sys

TOOL = {
    "name": "query",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string"},
            "verbose": {"type": "boolean"},
            "note": {"type": ["string", "null"]},
            "mode": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "level": {"enum": ["low", "high"]},
        },
        "required": ["region"],
    },
}
for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        received = json.dumps(message["params"].get("arguments"), sort_keys=True)
        result = {"content": [{"type": "text", "text": received}]}
    else:
        error = {"code": -32601, "message": "Method not found"}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\\n")
    sys.stdout.flush()
"""


async def test_a_null_for_an_optional_parameter_is_sent_as_its_schema_allows(
    tmp_path: Path,
) -> None:
    script = tmp_path / "echo.py"
    script.write_text(textwrap.dedent(ECHO_SERVER))
    config = {"mcpServers": {"echo": {"command": sys.executable, "args": [str(script)]}}}
    args = {"region": "us-east1", "verbose": None, "note": None, "mode": None, "level": None}
    calls = [{"name": "echo-query", "args": args, "id": "q1"}]
    async with MCPToolkit.from_config(config) as toolkit:
        graph = create_fncall_graph(
            ReplayChatModel([AIMessage(content="", tool_calls=calls), "done"]),
            toolkit.tools,
            dialect="native",
        )
        state = await graph.ainvoke({"messages": [("user", "query")]})
    [result] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert result.status == "success", result.content
    # verbose (a boolean) and level (an enum without null) are left out; the two
    # parameters whose schema takes null get it
    assert json.loads(result.content) == {"region": "us-east1", "note": None, "mode": None}
