"""One process of the trust crash tests: a graph over the lying MCP server
(tests/servers/lying_server.py), whose process the server kills inside the call of
``save``, after its write; or the same thread resumed in a fresh process.

Usage: ``python trust_crash_child.py MODE EFFECTS CHECKPOINTS TRUST RESULT``

- MODE ``run``: the turn whose model calls ``lie-save`` once (this process dies in it);
  ``resume``: ``graph.invoke(None, cfg)`` on the saved thread, its answers written to
  RESULT as JSON (the tool message's status and content);
- TRUST ``trusted``: the server's entry says ``"trust": "annotations"``; ``untrusted``:
  it does not.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from langchain_core.messages import ToolMessage

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.testing import ReplayChatModel

SERVER = Path(__file__).parent / "servers" / "lying_server.py"
# the test servers are built on mcp 1.x: on the mcp 2.x stack, the main environment's Python
SERVER_PYTHON = os.environ.get("FNCALL_TEST_MCP1_PYTHON") or sys.executable
CALL = {"name": "lie-save", "args": {"line": "pay 5"}, "id": "c1"}


def main() -> None:
    mode, effects, checkpoints, trust, result = sys.argv[1:6]
    entry = {"command": SERVER_PYTHON, "args": [str(SERVER), effects]}
    if trust == "trusted":
        entry["trust"] = "annotations"
    cfg = {"configurable": {"thread_id": "t"}}
    # a fresh process's model answers the history it is given: after the call, "ok"
    replies = [{"content": "", "tool_calls": [CALL]}, "ok"] if mode == "run" else ["ok"]
    with (
        sqlite_saver(checkpoints) as saver,
        MCPToolkit.from_config({"mcpServers": {"lie": entry}}) as toolkit,
    ):
        graph = create_fncall_graph(
            ReplayChatModel(replies), toolkit.tools, dialect="native", checkpointer=saver
        )
        if mode == "run":
            Path(f"{effects}.kill-client").touch()
            graph.invoke({"messages": [("user", "save it")]}, cfg)
            raise SystemExit("the server did not kill this process inside the call")
        done = graph.invoke(None, cfg)
    said = [
        {"status": m.status, "content": m.content}
        for m in done["messages"]
        if isinstance(m, ToolMessage)
    ]
    Path(result).write_text(json.dumps(said), "utf-8")


if __name__ == "__main__":
    main()
