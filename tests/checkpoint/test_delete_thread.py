"""Deleting a thread deletes its tool call claims (and the results stored with them)
too, on the real SQLite file and PostgreSQL database; other threads keep theirs. A
thread deleted by a saver that knows nothing of claims (LangGraph's own, as a LangGraph
server's ``DELETE /threads/{id}`` uses) leaves them until they are swept."""

from __future__ import annotations

import sqlite3

from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pg_server import postgres_url  # noqa: F401  (the fixture)

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import (
    async_sqlite_saver,
    postgres_saver,
    sqlite_saver,
)
from fncall_graph.adapters.checkpoint.claims import (
    SWEEP_IDLE,
    claims_for,
    forget_deleted_threads,
    forget_thread,
)
from fncall_graph.adapters.checkpoint.claims.store import CLAIMS_TABLE, aforget_deleted_threads
from fncall_graph.testing import ReplayChatModel

CALL = '<tool_call>\n{"name": "note", "arguments": {"text": "x"}}\n</tool_call>'


@tool
def note(text: str) -> str:
    """Write a note."""
    return f"noted {text}"


def graph_on(saver):
    return create_fncall_graph(
        ReplayChatModel([CALL, "好", CALL, "好"]), [note], dialect="hermes", checkpointer=saver
    )


def claim_threads(saver) -> list[str]:
    store = claims_for(saver).store
    if hasattr(store, "rows"):
        return sorted({k.thread_id for k in store.rows})
    return sorted({r[0] for r in saver.conn.execute(f"SELECT thread_id FROM {CLAIMS_TABLE}")})


def run_two_threads(graph) -> None:
    for thread in ("keep", "drop"):
        graph.invoke({"messages": [("user", "记")]}, {"configurable": {"thread_id": thread}})


def test_sqlite_saver_delete_thread_deletes_its_claims(tmp_path):
    with sqlite_saver(tmp_path / "ck.db") as saver:
        run_two_threads(graph_on(saver))
        assert claim_threads(saver) == ["drop", "keep"]
        saver.delete_thread("drop")
        assert claim_threads(saver) == ["keep"]
    with sqlite3.connect(tmp_path / "ck.db") as db:  # on disk too
        rows = db.execute(f"SELECT DISTINCT thread_id FROM {CLAIMS_TABLE}").fetchall()
    assert rows == [("keep",)]


async def test_async_sqlite_saver_adelete_thread_deletes_its_claims(tmp_path):
    async with async_sqlite_saver(tmp_path / "ck.db") as saver:
        graph = graph_on(saver)
        for thread in ("keep", "drop"):
            await graph.ainvoke(
                {"messages": [("user", "记")]}, {"configurable": {"thread_id": thread}}
            )
        await saver.adelete_thread("drop")
    with sqlite3.connect(tmp_path / "ck.db") as db:
        rows = db.execute(f"SELECT DISTINCT thread_id FROM {CLAIMS_TABLE}").fetchall()
    assert rows == [("keep",)]


def test_postgres_saver_delete_thread_deletes_its_claims(postgres_url):  # noqa: F811
    with postgres_saver(postgres_url) as saver:
        graph = graph_on(saver)
        suffix = str(id(graph))
        for thread in ("keep", "drop"):
            graph.invoke(
                {"messages": [("user", "记")]}, {"configurable": {"thread_id": thread + suffix}}
            )
        saver.delete_thread("drop" + suffix)
    import psycopg

    with psycopg.connect(postgres_url) as db:  # what the database holds
        rows = db.execute(f"SELECT DISTINCT thread_id FROM {CLAIMS_TABLE}").fetchall()
    assert [t for (t,) in rows if t.endswith(suffix)] == ["keep" + suffix]


def test_forget_thread_for_any_saver():
    saver = InMemorySaver()
    run_two_threads(graph_on(saver))
    saver.delete_thread("drop")
    assert forget_thread(saver, "drop") == 1
    assert claim_threads(saver) == ["keep"]


def test_forgetting_a_thread_without_claims_deletes_nothing(tmp_path):
    with sqlite_saver(tmp_path / "ck.db") as saver:
        run_two_threads(graph_on(saver))
        assert forget_thread(saver, "never-ran") == 0
        assert claim_threads(saver) == ["drop", "keep"]


def test_claims_of_a_thread_langgraph_s_own_sqlite_saver_deleted_are_swept(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    def opened() -> SqliteSaver:
        return SqliteSaver(sqlite3.connect(tmp_path / "ck.db", check_same_thread=False))

    saver = opened()
    run_two_threads(graph_on(saver))
    saver.delete_thread("drop")  # LangGraph's: the claims stay
    assert claim_threads(saver) == ["drop", "keep"]
    # claims just made may belong to a thread whose first checkpoint is on its way
    assert forget_deleted_threads(saver) == 0
    assert forget_deleted_threads(saver, idle_for=0) == 1
    assert claim_threads(saver) == ["keep"]
    graph_on(saver).invoke({"messages": [("user", "记")]}, {"configurable": {"thread_id": "gone"}})
    saver.delete_thread("gone")
    # an hour on: the thread's claims have been idle past the sweep's wait
    saver.conn.execute(
        f"UPDATE {CLAIMS_TABLE} SET created_at = created_at - ?, "
        "renewed_at = renewed_at - ? WHERE thread_id = 'gone'",
        (SWEEP_IDLE + 1, SWEEP_IDLE + 1),
    )
    saver.conn.commit()
    saver.conn.close()
    # the next process (here: saver) to use the file's claims sweeps them first
    again = opened()
    assert claim_threads(again) == ["keep"]
    again.conn.close()


async def test_claims_of_a_thread_a_langgraph_server_deleted_are_swept(postgres_url):  # noqa: F811
    """A LangGraph server deletes a thread with LangGraph's AsyncPostgresSaver on a pool."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(postgres_url, kwargs=kwargs, open=False) as pool:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        graph = graph_on(saver)
        suffix = str(id(graph))
        for thread in ("keep", "drop"):
            await graph.ainvoke(
                {"messages": [("user", "记")]}, {"configurable": {"thread_id": thread + suffix}}
            )
        await saver.adelete_thread("drop" + suffix)
        assert await aforget_deleted_threads(saver, idle_for=0) >= 1
        async with pool.connection() as db:
            rows = await (
                await db.execute(f"SELECT DISTINCT thread_id FROM {CLAIMS_TABLE}")
            ).fetchall()
    assert [r["thread_id"] for r in rows if r["thread_id"].endswith(suffix)] == ["keep" + suffix]


def test_forget_deleted_threads_in_memory():
    saver = InMemorySaver()
    run_two_threads(graph_on(saver))
    saver.delete_thread("drop")
    assert forget_deleted_threads(saver) == 0  # just made: its checkpoint may be on its way
    assert forget_deleted_threads(saver, idle_for=0) == 1
    assert claim_threads(saver) == ["keep"]
