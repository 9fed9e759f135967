"""A minimal MCP server without the SDK, for servers that misbehave on purpose.

It answers ``initialize``, ``tools/list`` and ``ping``; each ``tools/call`` is answered by
the caller's ``call`` function, which returns the response's id and result; ``initialize``
is answered with ``start`` instead, when given. It speaks over stdio (:func:`serve`) or
streamable HTTP (:func:`serve_http`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Call = Callable[[Any, dict[str, Any]], tuple[Any, object]]


def response(request_id: object, result: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def reply(
    message: dict[str, Any],
    name: str,
    tools: Sequence[dict[str, Any]],
    call: Call,
    start: object = None,
) -> dict[str, object] | None:
    """The response to ``message``; ``None`` for a notification."""
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return None
    if method == "initialize" and start is not None:
        return response(request_id, start)
    if method == "initialize":
        return response(
            request_id,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": name, "version": "1"},
            },
        )
    if method == "tools/list":
        return response(request_id, {"tools": list(tools)})
    if method == "tools/call":
        return response(*call(request_id, message["params"]))
    return response(request_id, {})


def serve(name: str, tools: Sequence[dict[str, Any]], call: Call, start: object = None) -> None:
    """Serve ``tools`` as server ``name`` over stdio until stdin ends; ``call(id, params)``
    answers each ``tools/call`` with ``(response id, result)``."""
    for line in sys.stdin:
        answer = reply(json.loads(line), name, tools, call, start)
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


def serve_http(name: str, tools: Sequence[dict[str, Any]], call: Call, *, sse: bool) -> None:
    """As :func:`serve`, over streamable HTTP on a free loopback port, each response as a
    JSON body or (``sse``) as one event of an SSE stream, without a session id. The
    endpoint's URL is the first line written on stdout."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            answer = reply(json.loads(body), name, tools, call)
            if answer is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if sse:
                kind, data = "text/event-stream", f"event: message\ndata: {json.dumps(answer)}\n\n"
            else:
                kind, data = "application/json", json.dumps(answer)
            sent = data.encode()
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(sent)))
            self.end_headers()
            self.wfile.write(sent)

        def do_GET(self) -> None:  # no stream the server opens on its own
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    server.serve_forever()
