"""An MCP server (plain JSON-RPC over stdio, no SDK) that answers every tool call with
the wrong request id: the client never gets an answer to its call.

    python tests/servers/wrong_id_server.py

It answers ``initialize``, ``tools/list`` and ``ping`` as asked; ``tools/call`` gets a
result under the call's id plus 1000.
"""

from __future__ import annotations

from typing import Any

from plain_jsonrpc import serve

TOOL = {
    "name": "echo",
    "description": "Echo a text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def wrong_id(request_id: Any, params: dict[str, Any]) -> tuple[Any, dict[str, object]]:
    text = params.get("arguments", {}).get("text", "")
    return request_id + 1000, {"content": [{"type": "text", "text": text}]}


serve("wrong-id", [TOOL], wrong_id)
