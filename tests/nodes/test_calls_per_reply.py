"""``max_calls_per_reply``: a reply's calls past the bound never run (nor are asked
about); each becomes an unreadable call answered with an error saying why, so the
history stays valid: every call answered once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command

from fncall_graph import bind_decisions, create_fncall_graph
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver
from fncall_graph.nodes.model import DEFAULT_MAX_CALLS_PER_REPLY
from fncall_graph.testing import ReplayChatModel

CALLS = 1_000


def every_call_answered_once(messages: list[Any]) -> None:
    asked = [
        c["id"]
        for m in messages
        if isinstance(m, AIMessage)
        for c in [*m.tool_calls, *m.invalid_tool_calls]
    ]
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert len(set(asked)) == len(asked)
    assert sorted(answered) == sorted(asked)


def thousand_writes() -> tuple[Any, list[str]]:
    written: list[str] = []

    @tool
    def append_row(value: str) -> str:
        """Append a row to the table."""
        written.append(value)
        return f"appended {value}"

    reply = {
        "tool_calls": [
            {"name": "append_row", "args": {"value": f"v{i}"}, "id": f"call_{i}"}
            for i in range(CALLS)
        ]
    }
    return (ReplayChatModel([reply, "done"], dialect="native"), append_row), written


def check_the_turn(messages: list[Any], written: list[str]) -> None:
    bound = DEFAULT_MAX_CALLS_PER_REPLY
    assert sorted(written) == sorted(f"v{i}" for i in range(bound))  # run concurrently
    reply = next(m for m in messages if isinstance(m, AIMessage) and m.invalid_tool_calls)
    assert len(reply.tool_calls) == bound and len(reply.invalid_tool_calls) == CALLS - bound
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    over = results[f"call_{bound}"]
    assert over.status == "error"
    assert f"made {CALLS:,} tool calls" in over.content
    assert f"at most {bound} run per reply (max_calls_per_reply)" in over.content
    assert results["call_0"].content == "appended v0"
    every_call_answered_once(messages)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_thousand_writes_in_one_reply_run_thirty_two(mode: str, tmp_path: Path) -> None:
    (model, append_row), written = thousand_writes()
    cfg = {"configurable": {"thread_id": "t"}}
    question = {"messages": [("user", "append a thousand rows")]}
    if mode == "sync":
        with sqlite_saver(tmp_path / "c.sqlite") as saver:
            graph = create_fncall_graph(model, [append_row], checkpointer=saver)
            out = graph.invoke(question, cfg)
            saved = graph.get_state(cfg).values["messages"]
    else:
        async with async_sqlite_saver(tmp_path / "c.sqlite") as saver:
            graph = create_fncall_graph(model, [append_row], checkpointer=saver)
            out = await graph.ainvoke(question, cfg)
            saved = (await graph.aget_state(cfg)).values["messages"]
    check_the_turn(out["messages"], written)
    every_call_answered_once(saved)
    assert out["messages"][-1].content == "done"
    # the model was told: its next call saw every answer
    assert len(model.inputs) == 2


def test_only_the_calls_that_run_are_asked_about(tmp_path: Path) -> None:
    (model, append_row), written = thousand_writes()
    cfg = {"configurable": {"thread_id": "t"}}
    with sqlite_saver(tmp_path / "c.sqlite") as saver:
        graph = create_fncall_graph(
            model, [append_row], checkpointer=saver, interrupt_on={"append_row": True}
        )
        out = graph.invoke({"messages": [("user", "append a thousand rows")]}, cfg)
        review = out["__interrupt__"][0].value
        assert len(review["action_requests"]) == DEFAULT_MAX_CALLS_PER_REPLY
        answer = bind_decisions(review, [{"type": "approve"}] * DEFAULT_MAX_CALLS_PER_REPLY)
        out = graph.invoke(Command(resume=answer), cfg)
    check_the_turn(out["messages"], written)


def test_the_bound_is_a_parameter_and_is_checked() -> None:
    (model, append_row), written = thousand_writes()
    graph = create_fncall_graph(model, [append_row], max_calls_per_reply=3)
    out = graph.invoke({"messages": [("user", "q")]})
    assert sorted(written) == ["v0", "v1", "v2"]
    every_call_answered_once(out["messages"])

    (model, append_row), written = thousand_writes()
    graph = create_fncall_graph(model, [append_row], max_calls_per_reply=None)
    graph.invoke({"messages": [("user", "q")]})
    assert len(written) == CALLS
    with pytest.raises(ValueError, match="max_calls_per_reply must be at least 1 or None, got 0"):
        create_fncall_graph(model, [append_row], max_calls_per_reply=0)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_create_agent_with_the_dialect_middleware_runs_thirty_two(mode: str) -> None:
    from langchain.agents import create_agent

    from fncall_graph import DialectMiddleware

    (model, append_row), written = thousand_writes()
    agent = create_agent(model, [append_row], middleware=[DialectMiddleware("native")])
    question = {"messages": [("user", "append a thousand rows")]}
    out = agent.invoke(question) if mode == "sync" else await agent.ainvoke(question)
    assert sorted(written) == sorted(f"v{i}" for i in range(DEFAULT_MAX_CALLS_PER_REPLY))
    reply = next(m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls)
    assert len(reply.invalid_tool_calls) == CALLS - DEFAULT_MAX_CALLS_PER_REPLY
    # the history holds an answer for every call, and the model was told why
    every_call_answered_once(out["messages"])
    every_call_answered_once(model.inputs[1])
    told = [m for m in model.inputs[1] if isinstance(m, ToolMessage) and "Not run" in m.content]
    assert len(told) == CALLS - DEFAULT_MAX_CALLS_PER_REPLY
    assert out["messages"][-1].content == "done"
