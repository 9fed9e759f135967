"""A minimal MCP server over stdio without the SDK, for servers that misbehave on purpose.

It answers ``initialize``, ``tools/list`` and ``ping``; each ``tools/call`` is answered by
the caller's ``call`` function, which returns the response's id and result.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any


def answer(request_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def serve(
    name: str,
    tools: Sequence[dict[str, Any]],
    call: Callable[[Any, dict[str, Any]], tuple[Any, dict[str, object]]],
) -> None:
    """Serve ``tools`` as server ``name`` until stdin ends; ``call(id, params)`` answers
    each ``tools/call`` with ``(response id, result)``."""
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
                    "serverInfo": {"name": name, "version": "1"},
                },
            )
        elif method == "tools/list":
            answer(request_id, {"tools": list(tools)})
        elif method == "tools/call":
            answer(*call(request_id, message["params"]))
        else:
            answer(request_id, {})
