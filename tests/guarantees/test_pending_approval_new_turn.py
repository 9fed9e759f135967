"""A new message sent while an approval waits is refused with ``ApprovalPending``: it
names the pending calls and how to answer them, nothing runs and nothing is saved, and
the review can still be answered. The history is valid in every case: every tool call is
answered exactly once (or is the one the pending review asks about)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command

from fncall_graph import ApprovalPending, bind_decisions, create_fncall_graph
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver
from fncall_graph.testing import ReplayChatModel

CASES = pytest.mark.parametrize(
    ("mode", "multitask", "interrupt_mode"),
    [
        (mode, multitask, interrupt_mode)
        for mode in ("sync", "async")
        for multitask in ("enqueue", "reject")
        for interrupt_mode in ("batched", "per_call")
    ],
)


def unanswered(messages: list[Any]) -> list[str]:
    """The call ids with no ToolMessage; fails on a call answered twice or an answer to
    no call."""
    asked = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert len(answered) == len(set(answered)), answered
    assert set(answered) <= set(asked), (answered, asked)
    return [c for c in asked if c not in answered]


class Turns:
    """One thread of a graph on a real SQLite saver, driven sync or async."""

    def __init__(self, graph: Any, mode: str) -> None:
        self.graph, self.mode = graph, mode
        self.cfg = {"configurable": {"thread_id": "t"}}

    async def send(self, payload: Any) -> Any:
        if self.mode == "sync":
            return self.graph.invoke(payload, self.cfg)
        return await self.graph.ainvoke(payload, self.cfg)

    async def messages(self) -> list[Any]:
        if self.mode == "sync":
            return self.graph.get_state(self.cfg).values["messages"]
        return (await self.graph.aget_state(self.cfg)).values["messages"]

    async def answer(self, out: Any, decision: dict[str, Any]) -> Any:
        pending = out["__interrupt__"][0]
        if "action_requests" in pending.value:
            return await self.send(Command(resume=bind_decisions(pending.value, [decision])))
        return await self.send(Command(resume={pending.id: decision}))


def build(saver: Any, multitask: str, interrupt_mode: str) -> tuple[Any, list[str]]:
    written: list[str] = []

    @tool
    def append_row(value: str) -> str:
        """Append a row."""
        written.append(value)
        return f"appended {value}"

    call = {"tool_calls": [{"name": "append_row", "args": {"value": "x"}, "id": "w1"}]}
    model = ReplayChatModel([call, "appended x", "hello again"], dialect="native")
    graph = create_fncall_graph(
        model,
        [append_row],
        checkpointer=saver,
        interrupt_on={"append_row": True},
        interrupt_mode=interrupt_mode,
        multitask=multitask,
    )
    return graph, written


async def the_case(saver: Any, mode: str, multitask: str, interrupt_mode: str, decision: str):
    graph, written = build(saver, multitask, interrupt_mode)
    turns = Turns(graph, mode)
    out = await turns.send({"messages": [("user", "append x")]})
    assert out["__interrupt__"]
    before = await turns.messages()
    assert unanswered(before) == ["w1"]

    with pytest.raises(ApprovalPending) as refused:
        await turns.send({"messages": [("user", "never mind, say hello")]})
    error = refused.value
    assert error.pending == ("w1",) and error.names == ("append_row",)
    assert "append_row (w1)" in str(error) and "Command(resume=" in str(error)
    # nothing was saved: the history is as it was, the review still pending
    after = await turns.messages()
    assert [m.id for m in after] == [m.id for m in before]
    assert unanswered(after) == ["w1"]
    assert written == []

    out = await turns.answer(out, {"type": decision})
    assert written == (["x"] if decision == "approve" else [])
    out = await turns.send({"messages": [("user", "never mind, say hello")]})
    assert out["messages"][-1].content == "hello again"
    final = await turns.messages()
    assert unanswered(final) == []
    assert sum(isinstance(m, HumanMessage) for m in final) == 2


@CASES
@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_a_new_message_while_an_approval_waits_is_refused(
    tmp_path: Path, mode: str, multitask: str, interrupt_mode: str, decision: str
) -> None:
    where = tmp_path / "c.sqlite"
    if mode == "sync":
        with sqlite_saver(where) as saver:
            await the_case(saver, mode, multitask, interrupt_mode, decision)
    else:
        async with async_sqlite_saver(where) as saver:
            await the_case(saver, mode, multitask, interrupt_mode, decision)


def test_a_thread_with_nothing_pending_takes_a_new_message(tmp_path: Path) -> None:
    with sqlite_saver(tmp_path / "c.sqlite") as saver:
        graph, written = build(saver, "enqueue", "batched")
        cfg = {"configurable": {"thread_id": "t"}}
        out = graph.invoke({"messages": [("user", "append x")]}, cfg)
        answer = bind_decisions(out["__interrupt__"][0].value, [{"type": "approve"}])
        assert graph.invoke(Command(resume=answer), cfg)["messages"][-1].content == "appended x"
        out = graph.invoke({"messages": [("user", "hello")]}, cfg)
        assert out["messages"][-1].content == "hello again"
        assert written == ["x"] and unanswered(out["messages"]) == []
