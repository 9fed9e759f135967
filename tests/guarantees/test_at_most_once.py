"""At most once per call id, inside the graph: ids, pauses inside tools, options.

The cross-process cases are in test_concurrent_resume.py (two processes approving at
once) and test_crash_resume.py (a process killed inside a tool).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from contextlib import closing
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver
from fncall_graph.guarantees.daemon_workers import wait_for_running_calls
from fncall_graph.testing import ReplayChatModel


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def note_tool(runs: list[str]) -> Any:
    @tool
    def note(text: str) -> str:
        """Write a note."""
        runs.append(text)
        return "noted"

    return note


def test_a_model_that_repeats_call_ids_gets_each_call_run(tmp_path):
    """Models that number calls call_0, call_1 in every reply: ids are made unique in the
    thread, so the second turn's call is a new call, not a claimed one."""
    runs: list[str] = []

    note = note_tool(runs)
    outputs = [
        call("note", {"text": "one"}, "call_0"),
        "done",
        call("note", {"text": "two"}, "call_0"),
        "done",
    ]
    with sqlite_saver(tmp_path / "c.db") as saver:
        graph = create_fncall_graph(
            ReplayChatModel(outputs), [note], dialect="native", checkpointer=saver
        )
        cfg = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [("user", "first")]}, cfg)
        out = graph.invoke({"messages": [("user", "second")]}, cfg)
    assert runs == ["one", "two"]
    ids = [c["id"] for m in out["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert ids[0] == "call_0" and ids[1] != "call_0" and len(set(ids)) == 2
    answered = [m.tool_call_id for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answered == ids


def confirming_tool(runs: list[str]) -> Any:
    @tool
    def transfer(amount: int) -> str:
        """Transfer money, after the user confirms."""
        answer = interrupt(f"transfer {amount}?")  # the tool runs again from the top on resume
        runs.append(f"{amount}:{answer}")
        return f"transferred {amount}" if answer == "yes" else "cancelled"

    return transfer


def test_a_tool_that_pauses_runs_when_resumed(tmp_path):
    """A claim is given up when the tool pauses with interrupt(): on resume it runs."""
    runs: list[str] = []
    outputs = [call("transfer", {"amount": 5}, "c1"), "ok"]
    with sqlite_saver(tmp_path / "c.db") as saver:
        graph = create_fncall_graph(
            ReplayChatModel(outputs), [confirming_tool(runs)], dialect="native", checkpointer=saver
        )
        cfg = {"configurable": {"thread_id": "t"}}
        paused = graph.invoke({"messages": [("user", "send 5")]}, cfg)
        assert paused["__interrupt__"][0].value == "transfer 5?"
        assert runs == []
        out = graph.invoke(Command(resume="yes"), cfg)
    assert runs == ["5:yes"]
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["transferred 5"]


def test_async_graphs_claim_calls_too(tmp_path):
    runs: list[str] = []
    outputs = [call("transfer", {"amount": 7}, "c1"), "ok"]

    async def scenario() -> list[Any]:
        async with async_sqlite_saver(tmp_path / "c.db") as saver:
            graph = create_fncall_graph(
                ReplayChatModel(outputs),
                [confirming_tool(runs)],
                dialect="native",
                checkpointer=saver,
            )
            cfg = {"configurable": {"thread_id": "t"}}
            await graph.ainvoke({"messages": [("user", "send 7")]}, cfg)
            out = await graph.ainvoke(Command(resume="yes"), cfg)
            return out["messages"]

    messages = asyncio.run(scenario())
    assert runs == ["7:yes"]
    assert isinstance(messages[-1], AIMessage) and messages[-1].content == "ok"


def test_idempotent_tools_must_name_tools():
    @tool
    def write_query(query: str) -> str:
        """Run a write."""
        return "ok"

    with pytest.raises(
        ValueError, match=r"idempotent_tools names 'write'.*did you mean 'write_query'"
    ):
        create_fncall_graph(
            ReplayChatModel(["x"]),
            [write_query],
            checkpointer=InMemorySaver(),
            idempotent_tools=["write"],
        )


def test_without_a_checkpointer_nothing_is_claimed():
    runs: list[str] = []

    note = note_tool(runs)
    outputs = [call("note", {"text": "a"}, "c1"), "done"]
    graph = create_fncall_graph(ReplayChatModel(outputs), [note], dialect="native")
    graph.invoke({"messages": [("user", "go")]})
    graph2 = create_fncall_graph(ReplayChatModel(outputs), [note], dialect="native")
    graph2.invoke({"messages": [("user", "go")]})
    assert runs == ["a", "a"]  # two separate runs, no thread: two calls


def claim_status(path: Any, call_id: str) -> tuple[str, int]:
    """(status, pid of the claiming process) of ``call_id``'s claim in SQLite file ``path``."""
    with closing(sqlite3.connect(path)) as db:
        status, owner = db.execute(
            "SELECT status, owner FROM fncall_tool_calls WHERE call_id = ?", (call_id,)
        ).fetchone()
    return status, int(owner.split("|")[1])


def test_a_run_cancelled_inside_a_tool_settles_its_claim(tmp_path):
    """The claim is not left running while this process lives on: it is marked
    abandoned, and the resumed run answers the call's outcome as unknown."""
    outputs = [call("hold", {}, "c1"), "ok"]

    async def scenario() -> list[Any]:
        entered, never = asyncio.Event(), asyncio.Event()

        @tool
        async def hold() -> str:
            """Wait for ever."""
            entered.set()
            await never.wait()
            return "held"

        async with async_sqlite_saver(tmp_path / "c.db") as saver:
            graph = create_fncall_graph(
                ReplayChatModel(outputs), [hold], dialect="native", checkpointer=saver
            )
            cfg = {"configurable": {"thread_id": "t"}}
            run = asyncio.create_task(graph.ainvoke({"messages": [("user", "go")]}, cfg))
            await entered.wait()
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert claim_status(tmp_path / "c.db", "c1") == ("abandoned", os.getpid())
            out = await graph.ainvoke(None, cfg)
            return out["messages"]

    messages = asyncio.run(scenario())
    answer = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(answer) == 1 and answer[0].content.startswith("Outcome unknown")


def test_a_sync_tool_under_a_timeout_in_an_async_run_is_claimed(tmp_path):
    """It runs in a thread of its own, off the event loop; its claim is kept through the
    async saver all the same."""
    runs: list[str] = []

    note = note_tool(runs)
    outputs = [call("note", {"text": "a"}, "c1"), "done"]

    async def scenario() -> None:
        async with async_sqlite_saver(tmp_path / "c.db") as saver:
            graph = create_fncall_graph(
                ReplayChatModel(outputs),
                [note],
                dialect="native",
                checkpointer=saver,
                tool_timeout=30,
            )
            await graph.ainvoke(
                {"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}}
            )

    asyncio.run(scenario())
    assert runs == ["a"]
    assert claim_status(tmp_path / "c.db", "c1") == ("done", os.getpid())


def join_tool_threads() -> None:
    """Wait for the sync calls left running past their timeout to end and settle."""
    # the bound is against a hung suite, not a synchronisation
    assert wait_for_running_calls(timeout=60)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_sync_tool_past_its_timeout_is_still_running_and_keeps_its_claim(tmp_path, mode):
    """The model is told the call is still running and not to retry it; the claim stays
    ``running`` while the tool runs on, then is settled with the call's real result."""
    entered, release = threading.Event(), threading.Event()
    runs: list[str] = []

    @tool
    def send(text: str) -> str:
        """Send a message."""
        entered.set()
        release.wait()
        runs.append(text)
        return "sent"

    outputs = [call("send", {"text": "hi"}, "c1"), "ok"]
    model = ReplayChatModel(outputs)
    cfg = {"configurable": {"thread_id": "t"}}
    db = tmp_path / "c.db"

    def check_then_release() -> None:
        assert entered.is_set() and runs == []
        assert claim_status(db, "c1") == ("running", os.getpid())
        release.set()
        join_tool_threads()
        assert runs == ["hi"]
        assert claim_status(db, "c1") == ("done", os.getpid())

    if mode == "sync":
        with sqlite_saver(db) as saver:
            graph = create_fncall_graph(
                model, [send], dialect="native", checkpointer=saver, tool_timeout=0.2
            )
            out = graph.invoke({"messages": [("user", "go")]}, cfg)
            check_then_release()
    else:

        async def scenario() -> dict[str, Any]:
            async with async_sqlite_saver(db) as saver:
                graph = create_fncall_graph(
                    model, [send], dialect="native", checkpointer=saver, tool_timeout=0.2
                )
                out = await graph.ainvoke({"messages": [("user", "go")]}, cfg)
                # the claim is settled through the saver's loop: keep it running meanwhile
                await asyncio.to_thread(check_then_release)
                return out

        out = asyncio.run(scenario())
    [answer] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error"
    assert answer.content.startswith("Outcome unknown: tool 'send' did not finish within 0.2 s")
    assert "still running" in answer.content and "Do not retry" in answer.content
    assert "try again" not in answer.content.lower()
    assert answer.artifact == {"outcome": "unknown", "still_running": True}
    assert out["messages"][-1].content == "ok"


def test_tool_timeout_has_a_default_and_none_is_allowed():
    import inspect

    from fncall_graph.nodes.tools import DEFAULT_TOOL_TIMEOUT

    default = inspect.signature(create_fncall_graph).parameters["tool_timeout"].default
    assert default == DEFAULT_TOOL_TIMEOUT and default is not None and default > 0
    graph = create_fncall_graph(ReplayChatModel(["ok"]), [], tool_timeout=None)
    assert graph.invoke({"messages": [("user", "hi")]})["messages"][-1].content == "ok"


def test_a_sync_tool_that_outlives_its_event_loop_settles_its_claim(tmp_path):
    """Under ``ainvoke`` with an async saver, a sync tool past its timeout runs on in a
    thread of its own; its run, the saver and the event loop end before it does. Its
    claim is settled with its real outcome all the same (the async saver's claims are
    written on a connection of their own, not through the closed loop: the claim stayed
    ``running`` until its lease lapsed, "Event loop is closed")."""
    entered, release = threading.Event(), threading.Event()

    @tool
    def send(text: str) -> str:
        """Send a message."""
        entered.set()
        release.wait()
        return "sent"

    model = ReplayChatModel([call("send", {"text": "hi"}, "c1"), "ok"])
    db = tmp_path / "c.db"

    async def scenario() -> None:
        async with async_sqlite_saver(db) as saver:
            graph = create_fncall_graph(
                model, [send], dialect="native", checkpointer=saver, tool_timeout=0.2
            )
            await graph.ainvoke(
                {"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}}
            )

    asyncio.run(scenario())  # the loop is closed now; the tool still runs
    assert entered.is_set() and claim_status(db, "c1") == ("running", os.getpid())
    release.set()
    join_tool_threads()
    assert claim_status(db, "c1") == ("done", os.getpid())
