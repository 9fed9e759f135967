"""An MCP server (plain JSON-RPC over stdio, no SDK) whose tool list holds a tool with an
input schema that is no JSON schema (a property of ``"type": "strange"``) beside a good one.

    python tests/servers/odd_schema_server.py
"""

from __future__ import annotations

import json
import sys

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


def answer(request_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        answer(
            request_id,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "odd-schema", "version": "1"},
            },
        )
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call":
        text = message["params"].get("arguments", {}).get("text", "")
        answer(request_id, {"content": [{"type": "text", "text": text}]})
    else:
        answer(request_id, {})
