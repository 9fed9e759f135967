"""An MCP server (plain JSON-RPC over stdio, no SDK) whose tool list holds a tool with an
input schema that is no JSON schema (a property of ``"type": "strange"``) beside a good one.

    python tests/servers/odd_schema_server.py
"""

from __future__ import annotations

from typing import Any

from plain_jsonrpc import serve

TOOLS = [
    {
        "name": "echo",
        "description": "Echo a text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {
        "name": "odd",
        "description": "A tool whose schema is broken.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "strange"}}},
    },
]


def echo(request_id: Any, params: dict[str, Any]) -> tuple[Any, dict[str, object]]:
    text = params.get("arguments", {}).get("text", "")
    return request_id, {"content": [{"type": "text", "text": text}]}


serve("odd-schema", TOOLS, echo)
