"""``AtMostOnceMiddleware`` on LangChain's own ``create_agent`` (SQLite checkpoints), in one
process; tests/e2e/test_middleware_race.py races two processes. A call whose run stopped
inside it is not run again when the thread is resumed: it is answered "outcome
unknown", unless its tool is idempotent."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from fncall_graph import AtMostOnceMiddleware
from fncall_graph.testing import ReplayChatModel

CFG = {"configurable": {"thread_id": "t"}}
CALL = {"name": "log", "args": {"entry": "x"}, "id": "c1"}


def failing_once(written: list[str]):
    @tool
    def log(entry: str) -> str:
        """Append an entry to the log."""
        written.append(entry)
        if len(written) == 1:  # the write happened; then the run stops inside the call
            raise ConnectionResetError("connection lost after the write")
        return "logged"

    return log


def agent_on(saver, written, **options):
    model = ReplayChatModel([{"content": "", "tool_calls": [CALL]}, "done"])
    return create_agent(
        model,
        [failing_once(written)],
        middleware=[AtMostOnceMiddleware(**options)],
        checkpointer=saver,
    )


def test_a_call_whose_run_stopped_inside_it_is_not_run_again(tmp_path):
    written: list[str] = []
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        agent = agent_on(saver, written)
        with pytest.raises(ConnectionResetError):
            agent.invoke({"messages": [("user", "log x")]}, CFG)
        out = agent.invoke(None, CFG)  # the thread resumed
    assert written == ["x"]
    [answer] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error" and answer.content.startswith("Outcome unknown: ")
    assert answer.artifact["outcome"] == "unknown"
    assert out["messages"][-1].content == "done"


async def test_an_idempotent_tool_runs_again(tmp_path):
    written: list[str] = []
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        agent = agent_on(saver, written, idempotent_tools=["log"])
        with pytest.raises(ConnectionResetError):
            await agent.ainvoke({"messages": [("user", "log x")]}, CFG)
        out = await agent.ainvoke(None, CFG)
    assert written == ["x", "x"]
    [answer] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.content == "logged"


def test_without_a_checkpointer_calls_just_run():
    written: list[str] = []
    agent = agent_on(None, written)
    with pytest.raises(ConnectionResetError):
        agent.invoke({"messages": [("user", "log x")]})
    assert written == ["x"]


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(TypeError, match="list of tool names"):
        AtMostOnceMiddleware(idempotent_tools="log")
    with pytest.raises(ValueError, match="lease"):
        AtMostOnceMiddleware(lease=0)
