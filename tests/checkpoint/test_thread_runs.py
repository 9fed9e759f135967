"""One run at a time per thread: turns sent to one thread at once are never lost.

Two runs of one thread at once fork it, and the last writer's branch wins: the other
turn vanishes from the thread with no error. The graph holds the thread while a run goes
on; a second run waits for it (``multitask="enqueue"``, the default) or is refused
(``"reject"``: :class:`ThreadBusy`). Real SQLite files and a real PostgreSQL, several
processes; sync and async in one process.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pg_server import postgres_url  # noqa: F401  (the fixture)
from test_claims import fresh_thread

from fncall_graph import ThreadBusy, create_fncall_graph
from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.testing import ReplayChatModel

PROCESSES, TURNS = 3, 4

TURNS_CHILD = """
import sys
from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import postgres_saver, sqlite_saver
from fncall_graph.testing import ReplayChatModel

where, thread, name, turns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
model = ReplayChatModel([f"answer {i}" for i in range(100)], per_conversation=True)
opened = postgres_saver(where) if where.startswith("postgresql") else sqlite_saver(where)
with opened as saver:
    graph = create_fncall_graph(model, [], dialect="native", checkpointer=saver)
    print("ready", flush=True)
    sys.stdin.readline()  # all start together
    for k in range(turns):
        graph.invoke({"messages": [("user", f"{name} turn {k}")]},
                     {"configurable": {"thread_id": thread}})
"""


def answering_model() -> ReplayChatModel:
    return ReplayChatModel([f"answer {i}" for i in range(100)], per_conversation=True)


def user_turns(graph: Any, thread: str) -> list[str]:
    state = graph.get_state({"configurable": {"thread_id": thread}})
    return [m.content for m in state.values["messages"] if isinstance(m, HumanMessage)]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def test_turns_sent_to_one_thread_from_several_processes_are_all_kept(kind, request, tmp_path):
    where = str(tmp_path / "t.db") if kind == "sqlite" else request.getfixturevalue("postgres_url")
    thread = fresh_thread(request)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", TURNS_CHILD, where, thread, f"p{i}", str(TURNS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    try:
        for child in children:
            assert child.stdout.readline() == "ready\n"
        for child in children:  # go
            child.stdin.write("\n")
            child.stdin.flush()
        assert [child.wait(300) for child in children] == [0] * PROCESSES
    finally:
        for child in children:
            child.kill()
            child.wait()
    from fncall_graph.adapters.checkpoint import postgres_saver

    with sqlite_saver(where) if kind == "sqlite" else postgres_saver(where) as saver:
        graph = create_fncall_graph(answering_model(), [], dialect="native", checkpointer=saver)
        said = user_turns(graph, thread)
    expected = {f"p{i} turn {k}" for i in range(PROCESSES) for k in range(TURNS)}
    assert sorted(said) == sorted(expected)  # every turn once, none lost
    # each process's turns in its own order
    for i in range(PROCESSES):
        mine = [s for s in said if s.startswith(f"p{i} ")]
        assert mine == [f"p{i} turn {k}" for k in range(TURNS)]


def _blocking_graph(saver: Any, multitask: str, entered: threading.Event, go: threading.Event):
    @tool
    def slow(x: str) -> str:
        """A call that waits to be let go."""
        entered.set()
        assert go.wait(60)
        return "done"

    call = {"name": "slow", "args": {"x": "a"}, "id": "s1"}
    model = ReplayChatModel([{"content": "", "tool_calls": [call]}, "answer"] * 5)
    return create_fncall_graph(
        model, [slow], dialect="native", checkpointer=saver, multitask=multitask
    )


def test_a_second_run_is_refused_with_reject_and_waits_with_enqueue(tmp_path):
    cfg = {"configurable": {"thread_id": "t"}}
    with sqlite_saver(tmp_path / "t.db") as saver:
        entered, go = threading.Event(), threading.Event()
        graph = _blocking_graph(saver, "reject", entered, go)
        first = threading.Thread(
            target=graph.invoke, args=({"messages": [("user", "first")]}, cfg), daemon=True
        )
        first.start()
        assert entered.wait(60)
        # refused at once, running nothing; the thread holds only the first turn
        with pytest.raises(ThreadBusy, match="run in progress"):
            graph.invoke({"messages": [("user", "second")]}, cfg)
        # a run may choose to wait instead: it starts once the first run is done
        waiting_cfg = {"configurable": {"thread_id": "t", "fncall_multitask": "enqueue"}}
        result: list[Any] = []
        second = threading.Thread(
            target=lambda: result.append(
                graph.invoke({"messages": [("user", "third")]}, waiting_cfg)
            ),
            daemon=True,
        )
        second.start()
        second.join(0.5)
        assert second.is_alive()  # still waiting while the first run holds the thread
        go.set()
        first.join(60)
        second.join(60)
        said = [m.content for m in result[0]["messages"] if isinstance(m, HumanMessage)]
        assert said == ["first", "third"]


async def test_concurrent_async_runs_on_one_thread_are_all_kept():
    saver = InMemorySaver()
    graph = create_fncall_graph(answering_model(), [], dialect="native", checkpointer=saver)
    cfg = {"configurable": {"thread_id": "t"}}
    await asyncio.gather(
        *(graph.ainvoke({"messages": [("user", f"turn {i}")]}, cfg) for i in range(8))
    )
    assert sorted(user_turns(graph, "t")) == sorted(f"turn {i}" for i in range(8))


def test_a_bad_multitask_is_refused():
    with pytest.raises(ValueError, match="multitask must be"):
        create_fncall_graph(answering_model(), [], checkpointer=InMemorySaver(), multitask="x")
