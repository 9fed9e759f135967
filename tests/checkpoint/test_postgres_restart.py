"""postgres_saver() and async_postgres_saver() after their PostgreSQL server restarts: the
next call reconnects, and a restart inside a tool call leaves its claim settled, not
``running``."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from pg_server import PostgresMissing  # also puts scripts/ on the path
from serve_cluster import Postgres, stop_pid

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import async_postgres_saver, postgres_saver
from fncall_graph.testing import ReplayChatModel


def call(text: str, call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "note", "args": {"text": text}, "id": call_id}]
    )


@pytest.fixture
def server() -> Any:
    """A PostgreSQL server of this test's own, which the test restarts."""
    pg = Postgres()
    try:
        pg.start()
    except PostgresMissing as exc:
        pytest.fail(str(exc))
    yield pg
    pg.stop()


def restart(pg: Postgres) -> None:
    """Stop the server (fast shutdown: its connections are cut) and start it again on
    the same data and port."""
    assert pg.pid is not None
    stop_pid(pg.pid, signal.SIGINT)
    pg.pid = None
    pg.start()


def two_turns(url: str, *, inside_first_call: Any = None, between: Any = None) -> None:
    """Two turns of one ``note`` call each on ``postgres_saver(url)``, with
    ``inside_first_call()`` run inside the first call and ``between()`` between the
    turns; both turns end as usual, each call run once."""
    runs: list[str] = []

    @tool
    def note(text: str) -> str:
        """Write a note."""
        runs.append(text)
        if len(runs) == 1 and inside_first_call:
            inside_first_call()
        return "noted"

    model = ReplayChatModel([call("one", "c1"), "done", call("two", "c2"), "done"])
    cfg = {"configurable": {"thread_id": "t"}}
    with postgres_saver(url) as saver:
        graph = create_fncall_graph(model, [note], dialect="native", checkpointer=saver)
        graph.invoke({"messages": [("user", "first")]}, cfg)
        if between:
            between()
        out = graph.invoke({"messages": [("user", "second")]}, cfg)
        assert graph.get_state(cfg).values["messages"][-1].content == "done"
    assert runs == ["one", "two"]
    answers = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answers == ["noted", "noted"]  # the thread from before the restart, and on


def test_postgres_saver_recovers_after_a_restart(server):
    port = server.port
    two_turns(server.url, between=lambda: restart(server))
    assert server.port == port


def test_a_restart_inside_a_tool_call_leaves_its_claim_settled(server):
    """The server restarts while a tool runs: the call's outcome is stored with its claim
    and the step's checkpoint written over new connections; the turn ends as usual and
    nothing is left waiting (no ToolCallInProgress for the next turn)."""
    import psycopg

    from fncall_graph.adapters.checkpoint.claims.store import CLAIMS_TABLE

    two_turns(server.url, inside_first_call=lambda: restart(server))
    with psycopg.connect(server.url) as db:
        rows = db.execute(f"SELECT call_id, status FROM {CLAIMS_TABLE} ORDER BY call_id")
        assert rows.fetchall() == [("c1", "done"), ("c2", "done")]


# a bound on each async turn, so a saver stuck on a dead connection fails the test
# instead of hanging it (the pool's own wait for a connection is 30 s)
TURN_TIMEOUT = 90.0


async def two_async_turns(url: str, *, inside_first_call: Any = None, between: Any = None) -> None:
    """:func:`two_turns` on ``async_postgres_saver(url)`` (its defaults) with ``ainvoke``;
    the restarts run in a worker thread (``pg_ctl`` blocks)."""
    runs: list[str] = []

    @tool
    async def note(text: str) -> str:
        """Write a note."""
        runs.append(text)
        if len(runs) == 1 and inside_first_call:
            await asyncio.to_thread(inside_first_call)
        return "noted"

    model = ReplayChatModel([call("one", "c1"), "done", call("two", "c2"), "done"])
    cfg = {"configurable": {"thread_id": "t"}}
    async with async_postgres_saver(url) as saver:
        graph = create_fncall_graph(model, [note], dialect="native", checkpointer=saver)
        first = graph.ainvoke({"messages": [("user", "first")]}, cfg)
        await asyncio.wait_for(first, TURN_TIMEOUT)
        if between:
            await asyncio.to_thread(between)
        second = graph.ainvoke({"messages": [("user", "second")]}, cfg)
        out = await asyncio.wait_for(second, TURN_TIMEOUT)
        state = await asyncio.wait_for(graph.aget_state(cfg), TURN_TIMEOUT)
        assert state.values["messages"][-1].content == "done"
    assert runs == ["one", "two"]
    answers = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answers == ["noted", "noted"]


async def test_async_postgres_saver_recovers_after_a_restart(server):
    await two_async_turns(server.url, between=lambda: restart(server))


async def test_a_restart_inside_an_async_tool_call_leaves_its_claim_settled(server):
    import psycopg

    from fncall_graph.adapters.checkpoint.claims.store import CLAIMS_TABLE

    await two_async_turns(server.url, inside_first_call=lambda: restart(server))
    with psycopg.connect(server.url) as db:
        rows = db.execute(f"SELECT call_id, status FROM {CLAIMS_TABLE} ORDER BY call_id")
        assert rows.fetchall() == [("c1", "done"), ("c2", "done")]


async def test_async_saver_calls_after_a_restart(server):
    """The saver's own calls (no graph) on either side of a restart."""
    cfg = {"configurable": {"thread_id": "nothing-yet"}}
    async with async_postgres_saver(server.url) as saver:
        assert await saver.aget_tuple(cfg) is None
        await asyncio.to_thread(restart, server)
        assert await asyncio.wait_for(saver.aget_tuple(cfg), TURN_TIMEOUT) is None
        assert [c async for c in saver.alist(cfg)] == []


def test_max_connections_is_checked():
    url = "postgresql://postgres@127.0.0.1:1/postgres"
    with (
        pytest.raises(ValueError, match="max_connections must be at least 1"),
        postgres_saver(url, max_connections=0),
    ):
        pass
