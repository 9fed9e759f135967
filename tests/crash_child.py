"""One process of the crash-resume tests: run, resume or approve the database assistant's serial task.

The task "查询韩梅梅的年龄,然后在log表里记录下" runs through create_fncall_graph with the
real mcp-server-sqlite (MCPToolkit), the Hermes dialect, a SqliteSaver on a file and a
ReplayChatModel holding the seed's round-3 outputs. The model starts at the output that
follows the replies already in the checkpointed thread, as a real model would answer
the history it is given.

Usage: ``python crash_child.py MODE DB CHECKPOINTS THREAD RESULT``

- MODE ``run``: start the task; ``resume``: ``graph.invoke(None, cfg)``;
  ``pause``: start the task with ``interrupt_on`` on write_query (stops at the
  interrupt); ``approve``: a new graph resumes that thread with an approval.
- ``FNCALL_KILL_AT`` (``run`` only) chooses where the process kills itself with SIGKILL:

  ``a``       right after the SQLite saver committed the checkpoint that holds the
              read_query result, before the next step starts;
  ``b``       inside the write_query call, in the MCP client, just before the
              ``tools/call`` request is handed to the transport: the server never
              receives it;
  ``b_after`` inside the write_query call, just after the server's answer arrived
              (the row is committed) and before the tool returns: the effect happened
              but the result was never stored;
  ``c``       right after the saver committed the checkpoint that holds the
              write_query result, before the next step (and the final model call).

``FNCALL_IDEMPOTENT=1`` declares write_query idempotent (``idempotent_tools``).

With the graph's default ``durability="sync"`` the run waits for each checkpoint to be
saved before its next step, so a kill inside ``put`` stops the thread exactly there.

The kill comes from the process itself at that exact point, so no timing is involved.
RESULT receives a JSON summary (final answer, tools run by this process, interrupt).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command
from mcp import types
from mcp.client.session import ClientSession

sys.path.insert(0, str(Path(__file__).parent))
from seed_db import sqlite_config

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.testing import ReplayChatModel

FIXTURES = Path(__file__).parent / "fixtures"
SYSTEM = "你扮演一个数据库助手,你具有查询数据库的能力"
TASK = "查询韩梅梅的年龄,然后在log表里记录下"
# seed 000, round 3: read_query call, write_query call, final answer
OUTPUTS = [
    c["raw_output"]
    for c in json.loads((FIXTURES / "seed000_hermes.json").read_text("utf-8"))["calls"][4:]
]


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install_kill_point(kill_at: str, saver: Any) -> None:
    if kill_at in ("a", "c"):
        tool = "sqlite-read_query" if kill_at == "a" else "sqlite-write_query"
        put, put_writes = saver.put, saver.put_writes
        answered: list[bool] = []

        def put_writes_and_watch(config: Any, writes: Any, task_id: str, *args: Any) -> Any:
            for channel, value in writes:
                added = value if isinstance(value, list) else [value]
                if channel == "messages" and any(
                    isinstance(m, ToolMessage) and m.name == tool for m in added
                ):
                    answered.append(True)
            return put_writes(config, writes, task_id, *args)

        def put_then_die(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
            saved = put(config, checkpoint, metadata, versions)  # committed when this returns
            if answered:
                # the checkpoint of the step that answered the call: the graph
                # (durability="sync") waits for this put before its next step
                die()
            return saved

        saver.put_writes = put_writes_and_watch
        saver.put = put_then_die
    elif kill_at in ("b", "b_after"):
        send_request = ClientSession.send_request

        async def send_request_with_kill(self: ClientSession, request: Any, *args: Any, **kw: Any):
            root = request.root
            is_write = isinstance(root, types.CallToolRequest) and root.params.name == "write_query"
            if is_write and kill_at == "b":
                die()  # the request never reaches the server
            result = await send_request(self, request, *args, **kw)
            if is_write:
                die()  # the server answered: the row is committed, the result is not stored
            return result

        ClientSession.send_request = send_request_with_kill  # type: ignore[method-assign]
    elif kill_at:
        raise SystemExit(f"unknown FNCALL_KILL_AT {kill_at!r}")


class ToolsRun(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, **kwargs: Any) -> None:
        self.names.append(serialized.get("name") or kwargs.get("name") or "?")


def replies_this_turn(messages: list[Any]) -> int:
    count = 0
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            break
        count += isinstance(m, AIMessage)
    return count


def main() -> None:
    mode, db, checkpoints, thread, result_path = sys.argv[1:6]
    kill_at = os.environ.get("FNCALL_KILL_AT", "") if mode == "run" else ""
    cfg: dict[str, Any] = {"configurable": {"thread_id": thread}}
    gated = {"sqlite-write_query": True} if mode in ("pause", "approve") else None
    tools_run = ToolsRun()
    with sqlite_saver(checkpoints) as saver, MCPToolkit.from_config(sqlite_config(db)) as toolkit:
        install_kill_point(kill_at, saver)
        probe = create_fncall_graph(
            ReplayChatModel(OUTPUTS), toolkit.tools, dialect="hermes", checkpointer=saver
        )
        history = probe.get_state(cfg).values.get("messages", [])
        model = ReplayChatModel(OUTPUTS[replies_this_turn(history) :])
        graph = create_fncall_graph(
            model,
            toolkit.tools,
            dialect="hermes",
            system_prompt=SYSTEM,
            checkpointer=saver,
            interrupt_on=gated,
            idempotent_tools=["sqlite-write_query"] if os.environ.get("FNCALL_IDEMPOTENT") else (),
        )
        run_cfg = {**cfg, "callbacks": [tools_run]}
        if mode in ("run", "pause"):
            out = graph.invoke({"messages": [("user", TASK)]}, run_cfg)
        elif mode == "resume":
            out = graph.invoke(None, run_cfg)
        elif mode == "approve":
            out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), run_cfg)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    interrupts = out.get("__interrupt__") or []
    Path(result_path).write_text(
        json.dumps(
            {
                "final": out["messages"][-1].content,
                "tools_run": tools_run.names,
                "model_calls": len(model.inputs),
                "interrupt": interrupts[0].value if interrupts else None,
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
