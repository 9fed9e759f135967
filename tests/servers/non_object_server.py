"""An MCP server (plain JSON-RPC, no SDK) whose tools answer under the right request id
with a ``result`` that is not a JSON object, beside one tool that answers as it should.

    python tests/servers/non_object_server.py               # over stdio
    python tests/servers/non_object_server.py --http json   # streamable HTTP, JSON bodies
    python tests/servers/non_object_server.py --http sse    # streamable HTTP, SSE streams
    python tests/servers/non_object_server.py --start-with-list  # initialize answered so

Over HTTP, the endpoint's URL is the first line on stdout.
"""

from __future__ import annotations

import argparse
from typing import Any

from plain_jsonrpc import serve, serve_http

RESULTS: dict[str, object] = {"as_list": [1, 2], "as_text": "done", "as_number": 5, "as_null": None}
TOOLS = [
    *({"name": name, "inputSchema": {"type": "object", "properties": {}}} for name in RESULTS),
    {
        "name": "echo",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
]


def answer(request_id: Any, params: dict[str, Any]) -> tuple[Any, object]:
    if params["name"] == "echo":
        text = params.get("arguments", {}).get("text", "")
        return request_id, {"content": [{"type": "text", "text": text}]}
    return request_id, RESULTS[params["name"]]


parser = argparse.ArgumentParser()
parser.add_argument("--http", choices=["json", "sse"])
parser.add_argument("--start-with-list", action="store_true")
given = parser.parse_args()
how = given.http
if how is None:
    serve("non-object", TOOLS, answer, start=[1, 2] if given.start_with_list else None)
else:
    serve_http("non-object", TOOLS, answer, sse=how == "sse")
