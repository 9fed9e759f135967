"""One run per thread across processes, on the async savers: a hold is never judged lost
while its run goes on, and a frozen process keeps no other from writing.

Real SQLite files and a real PostgreSQL, runs in processes of their own
(tests/hold_child.py), each held inside a tool call until the test lets it go; the test
synchronises on the lines they print (the hold's log, ``running``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hold_child import replay_model
from langchain_core.messages import HumanMessage
from pg_server import postgres_url  # noqa: F401  (the fixture)
from test_claims import fresh_thread, row_of

from fncall_graph import ThreadBusy, create_fncall_graph
from fncall_graph.adapters.checkpoint import postgres_saver, sqlite_saver
from fncall_graph.adapters.checkpoint.claims import (
    THREAD_RUN_ID,
    ClaimKey,
    ClaimRow,
    Owner,
    claims_for,
)
from fncall_graph.adapters.checkpoint.claims.store import _Swap
from fncall_graph.testing import ReplayChatModel

CHILD = str(Path(__file__).parents[1] / "hold_child.py")
ASYNC_SAVERS = ["async_sqlite", pytest.param("async_postgres", marks=pytest.mark.slow)]


def _where(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if kind == "async_sqlite":
        return str(tmp_path / "threads.db")
    return request.getfixturevalue("postgres_url")


@contextmanager
def turn(kind: str, where: str, thread: str, name: str, **env: str) -> Iterator[Any]:
    """A child process running the turn ``name`` on ``thread`` (it stops in its tool)."""
    child = subprocess.Popen(
        [sys.executable, CHILD, kind, where, thread, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    try:
        yield child
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
        child.wait()


def said(child: subprocess.Popen, *parts: str) -> str:
    """The child's next line that contains every part (earlier lines are passed over)."""
    for line in child.stdout:
        if all(p in line for p in parts):
            return line
    raise AssertionError(f"the child ended (exit {child.wait()}) without saying {parts}")


def let_go(child: subprocess.Popen) -> str:
    """Let the child's tool call return; what it says of its run."""
    child.stdin.write("\n")
    child.stdin.flush()
    end = said(child, ": ")
    assert child.wait(120) == 0
    return end


@contextmanager
def saver_here(kind: str, where: str) -> Iterator[Any]:
    with sqlite_saver(where) if kind == "async_sqlite" else postgres_saver(where) as saver:
        yield saver


def user_turns(saver: Any, thread: str) -> list[str]:
    graph = create_fncall_graph(replay_model(), [], dialect="native", checkpointer=saver)
    state = graph.get_state({"configurable": {"thread_id": thread}})
    return [m.content for m in state.values["messages"] if isinstance(m, HumanMessage)]


@pytest.mark.parametrize("kind", ASYNC_SAVERS)
def test_a_hold_taken_after_a_wait_counts_from_when_it_was_taken(kind, request, tmp_path):
    """A run that waited in line for the thread holds it from the moment it takes it.

    Stamped with the time it began waiting, a hold taken after a wait longer than the
    lease (60 s by default: a queue of turns on a busy machine) looked lapsed to the next
    waiting run until its first renewal: that run took it over and both went on from
    the same head, and one of the turns vanished (15 of 400 turns on PostgreSQL)."""
    where, thread = _where(kind, request, tmp_path), fresh_thread(request)
    key = ClaimKey(thread, "", THREAD_RUN_ID)
    with turn(kind, where, thread, "first") as first:
        said(first, "running")
        with turn(kind, where, thread, "second") as second:
            said(second, "log: ", "this run waits for it")
            freed_at = time.time()
            assert let_go(first) == "finished: held 0\n"
            said(second, "running")
            with saver_here(kind, where) as saver:
                hold = row_of(saver, key)
                assert hold is not None and hold.holder.pid == second.pid
                # the hold counts from when it was taken, after the first run ended
                assert hold.created_at >= freed_at
                graph = create_fncall_graph(
                    replay_model(), [], dialect="native", checkpointer=saver, multitask="reject"
                )
                with pytest.raises(ThreadBusy, match="run in progress"):
                    graph.invoke(
                        {"messages": [("user", "third")]}, {"configurable": {"thread_id": thread}}
                    )
            assert let_go(second) == "finished: held 1\n"
    with saver_here(kind, where) as saver:
        assert user_turns(saver, thread) == ["first", "second"]
        assert row_of(saver, key) is None  # released


def test_a_frozen_async_sqlite_run_keeps_no_other_process_from_writing(request, tmp_path):
    """A process frozen mid-run (SIGSTOP) holds no write lock on the SQLite file.

    LangGraph's ``AsyncSqliteSaver`` runs a write's statement and its commit as two
    calls on aiosqlite's thread, with an ``await`` between: a process frozen there kept
    the file locked, and another process's writes failed with ``database is locked``.
    The child pauses at the first commit it would await with a transaction open, if
    any; it is frozen there, or else inside its tool (its checkpoint writes done or in
    flight, its claims and the thread hold taken), and this process runs a turn on
    another thread of the same file."""
    where = str(tmp_path / "threads.db")
    thread = fresh_thread(request)
    with turn(
        "async_sqlite", where, thread, "frozen", FNCALL_TEST_PAUSE_IN_TRANSACTION="1"
    ) as child:
        where_it_stopped = said(child, "")
        os.kill(child.pid, signal.SIGSTOP)
        with sqlite_saver(where, busy_timeout=1.0) as saver:
            model = ReplayChatModel(["fine"])
            graph = create_fncall_graph(model, [], dialect="native", checkpointer=saver)
            # a turn on another thread: the thread held and let go, checkpoints written
            other = {"configurable": {"thread_id": f"{thread}-other"}}
            assert (
                graph.invoke({"messages": [("user", "other")]}, other)["messages"][-1].content
                == "fine"
            )
            assert user_turns(saver, f"{thread}-other") == ["other"]
        # and the child never awaited a commit with its transaction open
        assert where_it_stopped == "running\n", where_it_stopped
        os.kill(child.pid, signal.SIGCONT)
        assert let_go(child) == "finished: held 0\n"


async def test_many_threads_of_one_async_sqlite_saver_at_once(tmp_path):
    """Every thread's turns are saved when many threads of one async SQLite saver run
    at once: a step's checkpoint waits for its writes in flight, off the event loop, and
    the writes run on a thread of their own, never queued behind those waits (in the
    loop's default executor, as many waits as it has threads kept the writes from ever
    running)."""
    from fncall_graph.adapters.checkpoint import async_sqlite_saver

    threads = 4 * (os.cpu_count() or 1) + 8  # more than the default executor's threads
    async with async_sqlite_saver(tmp_path / "threads.db") as saver:
        model = ReplayChatModel([f"answer {i}" for i in range(10)], per_conversation=True)
        graph = create_fncall_graph(model, [], dialect="native", checkpointer=saver)

        async def thread(j: int) -> None:
            for k in range(2):
                cfg = {"configurable": {"thread_id": f"t{j}"}}
                await graph.ainvoke({"messages": [("user", f"t{j} turn {k}")]}, cfg)

        # a bound against a hung suite, not a synchronisation
        await asyncio.wait_for(asyncio.gather(*(thread(j) for j in range(threads))), 300)
        for j in range(threads):
            state = await graph.aget_state({"configurable": {"thread_id": f"t{j}"}})
            said = [m.content for m in state.values["messages"] if isinstance(m, HumanMessage)]
            assert said == [f"t{j} turn 0", f"t{j} turn 1"]


@pytest.mark.parametrize("kind", ASYNC_SAVERS)
def test_a_run_whose_hold_was_taken_over_does_not_end_as_if_its_turn_were_kept(
    kind, request, tmp_path
):
    """A run whose hold another run took over (here: the test, as a process that judged
    it lapsed) and that ends before its heartbeat learned of it is told at its end:
    another run may have started from the same checkpoint, and its turn may be lost."""
    where, thread = _where(kind, request, tmp_path), fresh_thread(request)
    key = ClaimKey(thread, "", THREAD_RUN_ID)
    with turn(kind, where, thread, "first") as first, saver_here(kind, where) as saver:
        said(first, "running")
        store = claims_for(saver).store
        held = row_of(saver, key)
        other = ClaimRow(key, "run", str(Owner.here()), "", "running", time.time())
        assert store.run(_Swap(other, held.owner))
        end = let_go(first)
        assert end.startswith("stopped: ToolCallTakenOver"), end
        assert "may be missing from the thread" in end
        assert row_of(saver, key) == other  # the other run's hold is left as it was


@pytest.mark.parametrize("kind", ASYNC_SAVERS)
async def test_concurrent_runs_on_one_thread_in_one_process_are_all_kept(kind, request, tmp_path):
    """Runs of one thread at once in one process, on an async saver whose hold is taken
    and let go across awaits: a hold between its insert and its first renewal, or
    between its last renewal and its release, is this process's run's all the same
    (never taken over as lapsed, and its run never told it lost it)."""
    from fncall_graph.adapters.checkpoint import async_postgres_saver, async_sqlite_saver

    where, thread = _where(kind, request, tmp_path), fresh_thread(request)
    opened = async_sqlite_saver(where) if kind == "async_sqlite" else async_postgres_saver(where)
    async with opened as saver:
        model = ReplayChatModel([f"answer {i}" for i in range(20)], per_conversation=True)
        graph = create_fncall_graph(model, [], dialect="native", checkpointer=saver)
        cfg = {"configurable": {"thread_id": thread}}
        await asyncio.gather(
            *(graph.ainvoke({"messages": [("user", f"turn {i}")]}, cfg) for i in range(8))
        )
        state = await graph.aget_state(cfg)
    said = [m.content for m in state.values["messages"] if isinstance(m, HumanMessage)]
    assert sorted(said) == sorted(f"turn {i}" for i in range(8))
