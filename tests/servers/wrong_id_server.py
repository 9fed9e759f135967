"""An MCP server (plain JSON-RPC over stdio, no SDK) that answers every tool call with
the wrong request id: the client never gets an answer to its call.

    python tests/servers/wrong_id_server.py

It answers ``initialize``, ``tools/list`` and ``ping`` as asked; ``tools/call`` gets a
result under the call's id plus 1000.
"""

from __future__ import annotations

import json
import sys

TOOL = {
    "name": "echo",
    "description": "Echo a text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


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
                "serverInfo": {"name": "wrong-id", "version": "1"},
            },
        )
    elif method == "tools/list":
        answer(request_id, {"tools": [TOOL]})
    elif method == "tools/call":
        text = message["params"].get("arguments", {}).get("text", "")
        answer(request_id + 1000, {"content": [{"type": "text", "text": text}]})
    else:
        answer(request_id, {})
