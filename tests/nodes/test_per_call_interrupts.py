"""``interrupt_mode="per_call"``: every gated call of a reply is asked about at once.

One interrupt per gated call, all pending together after one ``invoke``, each with its
own id, as ``HumanInTheLoopMiddleware(interrupt_mode="per_call")`` raises them on
``create_agent``: LangChain's per-call client loop (read every pending interrupt,
resume them together keyed by id) finishes a reply in one resume. A resume may answer
some of them; the others stay pending with the same ids. Answers stay bound: one that is
stale or names another call is refused, and nothing of that resume is taken or run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import ValidationError

from fncall_graph import StaleApproval, create_fncall_graph
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver
from fncall_graph.guarantees import review_token
from fncall_graph.testing import ReplayChatModel

CFG = {"configurable": {"thread_id": "t"}}
GATED = ("a", "b", "c")


def call(name: str, entry: str) -> dict[str, Any]:
    return {"name": name, "args": {"entry": entry}, "id": f"call_{entry}"}


# three gated writes and one ungated read, in one reply
REPLY = {
    "content": "",
    "tool_calls": [call("write", "a"), call("read", "x"), call("write", "b"), call("write", "c")],
}


class Tools:
    """A gated ``write`` and an ungated ``read`` that record every run."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

        @tool
        def write(entry: str) -> str:
            """Write an entry."""
            self.ran.append(("write", entry))
            return f"wrote {entry}"

        @tool
        def read(entry: str) -> str:
            """Read an entry."""
            self.ran.append(("read", entry))
            return f"read {entry}"

        self.tools = [write, read]


def graph(checkpointer: Any, outputs: list[Any] | None = None) -> tuple[Any, Tools]:
    tools = Tools()
    built = create_fncall_graph(
        ReplayChatModel(outputs or [REPLY, "done"]),
        tools.tools,
        dialect="native",
        checkpointer=checkpointer,
        interrupt_on={"write": True},
        interrupt_mode="per_call",
    )
    return built, tools


class Runner:
    """``invoke`` or ``ainvoke``, the same test either way."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __call__(self, graph: Any, value: Any, **kwargs: Any) -> Any:
        if self.mode == "sync":
            return graph.invoke(value, CFG, **kwargs)
        return asyncio.run(graph.ainvoke(value, CFG, **kwargs))

    def state(self, graph: Any) -> Any:
        if self.mode == "sync":
            return graph.get_state(CFG)
        return asyncio.run(graph.aget_state(CFG))


@pytest.fixture(params=["sync", "async"])
def run(request) -> Runner:
    return Runner(request.param)


@pytest.fixture(params=["memory", "sqlite"])
def saver(request, tmp_path, run):
    if request.param == "memory":
        yield InMemorySaver()
    elif run.mode == "sync":
        with sqlite_saver(tmp_path / "ck.db") as s:
            yield s
    else:
        yield tmp_path / "ck.db"  # an async saver lives in one event loop: one per run


class AsyncSqliteGraph:
    """The graph over LangGraph's ``AsyncSqliteSaver`` on ``path``, opened for each run
    (each ``asyncio.run`` is a new event loop), its model and tools kept across runs."""

    def __init__(self, path: Any) -> None:
        self.path, self.model, self.tools = path, ReplayChatModel([REPLY, "done"]), Tools()

    def _graph(self, saver: Any) -> Any:
        return create_fncall_graph(
            self.model,
            self.tools.tools,
            dialect="native",
            checkpointer=saver,
            interrupt_on={"write": True},
            interrupt_mode="per_call",
        )

    async def ainvoke(self, value: Any, config: Any, **kwargs: Any) -> Any:
        async with async_sqlite_saver(self.path) as saver:
            return await self._graph(saver).ainvoke(value, config, **kwargs)

    async def aget_state(self, config: Any) -> Any:
        async with async_sqlite_saver(self.path) as saver:
            return await self._graph(saver).aget_state(config)


def build(saver: Any) -> tuple[Any, Tools]:
    if isinstance(saver, InMemorySaver) or not hasattr(saver, "is_dir"):
        return graph(saver)
    compiled = AsyncSqliteGraph(saver)
    return compiled, compiled.tools


def answers_in_the_history(messages: list[Any]) -> dict[str, tuple[str, str]]:
    return {
        m.tool_call_id: (m.status, str(m.content)) for m in messages if isinstance(m, ToolMessage)
    }


# ---------------------------------------------------------------- all asked at once


def test_every_gated_call_of_a_reply_is_asked_about_in_one_invoke(saver, run):
    compiled, tools = build(saver)
    result = run(compiled, {"messages": [("user", "write a, b and c; read x")]})
    pending = result["__interrupt__"]
    assert [i.value["tool_call_id"] for i in pending] == [f"call_{e}" for e in GATED]
    assert len({i.id for i in pending}) == 3
    first = pending[0].value
    assert first == {
        "type": "tool_approval",
        "tool_call_id": "call_a",
        "name": "write",
        "args": {"entry": "a"},
        "description": "Tool execution requires approval\n\nTool: write\nArgs: {'entry': 'a'}",
        "review_token": review_token([call("write", "a")]),
    }
    assert all(i.response_schema["discriminator"]["propertyName"] == "type" for i in pending)
    # the thread shows the same interrupts, and nothing ran, the ungated read included
    assert [i.id for i in run.state(compiled).interrupts] == [i.id for i in pending]
    assert tools.ran == []


def _langchain_s_loop(agent: Any, config: dict) -> Any:
    """LangChain's per-call client loop, as its HumanInTheLoopMiddleware docs write it."""
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "write a, b and c; read x"}]},
        config,
        version="v2",
    )
    answers = {}
    for interrupt in result.interrupts:
        if interrupt.value["args"]["entry"] == "b":
            answers[interrupt.id] = {"type": "reject", "message": "Keep b."}
        elif interrupt.value["args"]["entry"] == "c":
            answers[interrupt.id] = {
                "type": "edit",
                "edited_action": {"name": "write", "args": {"entry": "c2"}},
            }
        else:
            answers[interrupt.id] = {"type": "approve"}
    return agent.invoke(Command(resume=answers), config, version="v2")


def test_langchain_s_per_call_loop_ends_the_reply_in_one_resume_as_on_create_agent():
    ours, tools = graph(InMemorySaver())
    done = _langchain_s_loop(ours, {"configurable": {"thread_id": "t"}})
    assert done.interrupts == ()
    assert done.value["messages"][-1].content == "done"

    theirs = Tools()
    agent = create_agent(
        ReplayChatModel([REPLY, "done"]),
        theirs.tools,
        middleware=[HumanInTheLoopMiddleware({"write": True}, interrupt_mode="per_call")],
        checkpointer=InMemorySaver(),
    )
    expected = _langchain_s_loop(agent, {"configurable": {"thread_id": "t"}})
    assert expected.interrupts == ()
    # the same calls ran, once each; the rejected one did not run on either
    assert (
        sorted(tools.ran) == sorted(theirs.ran) == [("read", "x"), ("write", "a"), ("write", "c2")]
    )
    ours_answers = answers_in_the_history(done.value["messages"])
    theirs_answers = answers_in_the_history(expected.value["messages"])
    assert {k: s for k, (s, _) in ours_answers.items()} == {
        k: s for k, (s, _) in theirs_answers.items()
    }
    assert ours_answers["call_b"] == ("error", "Keep b.")  # the reason as written (documented)


def test_the_loop_over_get_state_interrupts_and_the_v1_result(saver, run):
    compiled, tools = build(saver)
    result = run(compiled, {"messages": [("user", "write a, b and c; read x")]})
    assert [i.id for i in result["__interrupt__"]] == [i.id for i in run.state(compiled).interrupts]
    interrupts = run.state(compiled).interrupts
    done = run(compiled, Command(resume={i.id: {"type": "approve"} for i in interrupts}))
    assert "__interrupt__" not in done
    assert done["messages"][-1].content == "done"
    assert sorted(tools.ran) == [("read", "x"), ("write", "a"), ("write", "b"), ("write", "c")]


# ---------------------------------------------------------------- some answered


def test_a_resume_answering_some_calls_leaves_the_rest_pending_with_their_ids(saver, run):
    compiled, tools = build(saver)
    a, b, c = run(compiled, {"messages": [("user", "write a, b and c; read x")]})["__interrupt__"]
    left = run(compiled, Command(resume={b.id: {"type": "reject"}}))["__interrupt__"]
    assert [(i.id, i.value["tool_call_id"]) for i in left] == [
        (a.id, "call_a"),
        (c.id, "call_c"),
    ]
    assert tools.ran == []  # nothing runs before every gated call is decided
    # b's answer is kept: answered again, its id is no longer pending, and nothing runs
    with pytest.raises(StaleApproval, match="not pending"):
        run(compiled, Command(resume={b.id: {"type": "approve"}}))
    [last] = run(compiled, Command(resume={c.id: {"type": "approve"}}))["__interrupt__"]
    assert last.id == a.id
    done = run(compiled, Command(resume={a.id: {"type": "approve", "tool_call_id": "call_a"}}))
    assert done["messages"][-1].content == "done"
    assert sorted(tools.ran) == [("read", "x"), ("write", "a"), ("write", "c")]
    assert answers_in_the_history(done["messages"])["call_b"][0] == "error"


def test_a_review_half_answered_is_finished_by_a_new_process(tmp_path):
    with sqlite_saver(tmp_path / "ck.db") as saver:
        first, tools = graph(saver)
        a, b, c = first.invoke({"messages": [("user", "write a, b and c")]}, CFG)["__interrupt__"]
        first.invoke(Command(resume={a.id: {"type": "approve"}, c.id: {"type": "reject"}}), CFG)
    # another process: its own connection to the file, its own graph
    with sqlite_saver(tmp_path / "ck.db") as saver:
        second, again = graph(saver, ["done"])  # the model is past its first reply
        [pending] = second.get_state(CFG).interrupts
        assert (pending.id, pending.value["tool_call_id"]) == (b.id, "call_b")
        done = second.invoke(Command(resume={b.id: {"type": "approve"}}), CFG)
    assert done["messages"][-1].content == "done"
    assert tools.ran == []
    assert sorted(again.ran) == [("read", "x"), ("write", "a"), ("write", "b")]


# ---------------------------------------------------------------- refused


def test_a_stale_per_call_answer_is_refused_and_nothing_of_its_resume_is_taken(saver, run):
    compiled, tools = build(saver)
    a, b, c = run(compiled, {"messages": [("user", "write a, b and c; read x")]})["__interrupt__"]
    # b's decision sent to a's interrupt: it names another call
    with pytest.raises(StaleApproval, match="call_b"):
        run(
            compiled,
            Command(
                resume={
                    a.id: {"type": "approve", "tool_call_id": "call_b"},
                    c.id: {"type": "approve"},
                }
            ),
        )
    # an interrupt id that is no one's
    with pytest.raises(StaleApproval, match="not pending"):
        run(compiled, Command(resume={"0" * 32: {"type": "approve"}, a.id: {"type": "approve"}}))
    # a decision the tool does not take, beside a good one: neither is saved
    with pytest.raises(ValidationError):
        run(compiled, Command(resume={a.id: {"type": "approve"}, c.id: {"type": "respond"}}))
    assert tools.ran == []
    assert [i.id for i in run.state(compiled).interrupts] == [a.id, b.id, c.id]
    done = run(compiled, Command(resume={i.id: {"type": "approve"} for i in (a, b, c)}))
    assert done["messages"][-1].content == "done"
    assert len(tools.ran) == 4


def test_an_answer_to_an_earlier_review_is_refused_on_the_next(run):
    second_reply = {"content": "", "tool_calls": [call("write", "d"), call("write", "e")]}
    compiled, tools = graph(InMemorySaver(), [REPLY, "more", second_reply, "done again"])
    old = run(compiled, {"messages": [("user", "write a, b and c; read x")]})["__interrupt__"]
    run(compiled, Command(resume={i.id: {"type": "approve"} for i in old}))
    new = run(compiled, {"messages": [("user", "and d, e")]})["__interrupt__"]
    assert len(new) == 2
    # the earlier answers sent again (a client's retry): none of their ids is pending
    with pytest.raises(StaleApproval, match="not pending"):
        run(compiled, Command(resume={i.id: {"type": "approve"} for i in old}))
    assert [e for _, e in tools.ran if e in "de"] == []
    run(compiled, Command(resume={i.id: {"type": "reject"} for i in new}))
    assert [e for _, e in tools.ran if e in "de"] == []


def test_a_plain_answer_while_several_calls_are_asked_runs_nothing(run):
    compiled, tools = graph(InMemorySaver())
    pending = run(compiled, {"messages": [("user", "write a, b and c; read x")]})["__interrupt__"]
    # LangGraph's own rule: with several interrupts pending, an answer names its interrupt
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        run(compiled, Command(resume={"type": "approve"}))
    assert tools.ran == []
    assert [i.id for i in run.state(compiled).interrupts] == [i.id for i in pending]
