"""``sqlite_saver(..., store_messages_once=True, keep_checkpoints=K)``: a long thread
takes at most twice its messages' own bytes, on real SQLite files (and PostgreSQL).

Each save deletes the thread's checkpoints older than its last K and than the last full
copy of the history before them (the graph's ``messages`` is a delta channel), with
their pending writes; what stays reads back exactly as LangGraph saved it, an approval waiting on the
head resumes in a new saver, and a tool call that ran before a crash is answered from
its claim, not run again, even with K = 1.
"""

from __future__ import annotations

import logging
import signal
import sqlite3
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command
from pg_server import postgres_url  # noqa: F401  (the fixture)
from test_history_once import (
    CONFIG,
    approve,
    assert_as_saved,
    build,
    capture_puts,
    effects,  # noqa: F401  (the fixture)
    pg_bytes,
    recorded,
    serialized,
    stored_bytes,
    user,
)

from fncall_graph import bind_decisions
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver

CHILD = Path(__file__).parents[1] / "history_child.py"  # its 4th argument: keep_checkpoints


def disk_bytes(db: Path) -> int:
    """The file's size once its write-ahead log is folded in."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())


def messages_bytes(saver: Any, graph: Any, config: dict[str, Any] = CONFIG) -> int:
    """The thread's messages' own bytes, as the saver's serializer writes them."""
    messages = graph.get_state(config).values["messages"]
    return sum(len(data) for _, data in serialized(saver, messages))


def sqlite_counts(db: Path) -> tuple[int, int]:
    """(checkpoints, writes whose checkpoint is gone) of the thread ``long``."""
    with closing(sqlite3.connect(db)) as conn:
        checkpoints = conn.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE thread_id = 'long'"
        ).fetchone()[0]
        orphans = conn.execute(
            "SELECT COUNT(*) FROM writes w WHERE thread_id = 'long' AND NOT EXISTS (SELECT 1 "
            "FROM checkpoints c WHERE c.thread_id = w.thread_id "
            "AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id)"
        ).fetchone()[0]
    return checkpoints, orphans


def kept_as_promised(full_copies: list[bool], keep: int) -> int:
    """How many checkpoints are kept, checked against the promise: the last ``keep``
    and, before them, back to the newest that holds a full copy of the history (the
    graph's ``messages`` is a delta channel: the checkpoints after a copy are read back
    from it). ``full_copies``: for each kept checkpoint, newest first, whether it holds one."""
    n = len(full_copies)
    assert n >= keep, full_copies
    if any(full_copies[keep - 1 :]):  # else none is older than the copy: all are kept
        assert full_copies[-1], "the oldest kept checkpoint holds a full copy"
        assert not any(full_copies[keep - 1 : -1]), "none kept before the copy needed"
    return n


def sqlite_kept(db: Path, keep: int, thread: str = "long") -> int:
    """The thread's kept checkpoints (checked, see :func:`kept_as_promised`), and no
    pending writes whose checkpoint is gone."""
    serde = JsonPlusSerializer()
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? "
            "ORDER BY checkpoint_id DESC",
            (thread,),
        ).fetchall()
    full = ["messages" in serde.loads_typed((t, c))["channel_values"] for t, c in rows]
    checkpoints, orphans = sqlite_counts(db)
    assert orphans == 0
    assert checkpoints == len(full)
    return kept_as_promised(full, keep)


def pg_kept(url: str, thread: str, keep: int) -> int:
    import psycopg

    with psycopg.connect(url) as db:
        # LangGraph's metadata counts the updates since the last copy; none: a copy
        rows = db.execute(
            "SELECT metadata -> 'counters_since_delta_snapshot' IS NULL FROM checkpoints "
            "WHERE thread_id = %s ORDER BY checkpoint_id DESC",
            (thread,),
        ).fetchall()
    return kept_as_promised([bool(r[0]) for r in rows], keep)


@pytest.mark.parametrize("kind", ["fncall", "create_agent"])
def test_a_long_thread_takes_at_most_twice_its_messages_bytes(tmp_path, effects, kind):  # noqa: F811
    """At 100, 200 and 300 tool turns: what the tables hold (claims included) is at most
    twice the messages' serialized bytes, the file too at 300, and twice the turns take
    about twice the bytes."""
    db = tmp_path / "ck.db"
    sizes = {}
    with sqlite_saver(db, store_messages_once=True, keep_checkpoints=10) as saver:
        graph = build(kind, saver)
        for turn in range(1, 301):
            graph.invoke(user(turn), CONFIG)
            if turn in (100, 200, 300):
                sizes[turn] = (disk_bytes(db), stored_bytes(db), messages_bytes(saver, graph))
        assert recorded(effects) == list(range(1, 301))
    for turn, (_, stored, messages) in sizes.items():
        assert stored <= 2 * messages, (turn, stored, messages)
    # the file's own pages (its schema, indexes, kept checkpoints) weigh less as it grows:
    # 1.94-2.02x the messages at 200 turns (SQLite's pages vary by a few from run to run,
    # as row sizes do with the claims' times), 1.81-1.85x at 300
    disk, _, messages = sizes[300]
    assert disk <= 2 * messages, (disk, messages)
    assert sizes[200][0] <= 2.15 * sizes[100][0], sizes
    sqlite_kept(db, 10)


def test_every_kept_checkpoint_reads_back_exactly(tmp_path, effects):  # noqa: F811
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True, keep_checkpoints=7) as saver:
        seen = capture_puts(saver)
        graph = build("fncall", saver)
        for turn in range(1, 13):
            graph.invoke(user(turn), CONFIG)
        history = list(graph.get_state_history(CONFIG))
        assert len(history) == sqlite_kept(db, 7)
        assert history[0].config["configurable"]["checkpoint_id"] == max(seen)
        for snapshot in history:
            assert_as_saved(saver, snapshot, seen)
        # the oldest kept checkpoint's parent is gone: it says so
        assert history[-1].parent_config is None
        assert all(s.parent_config for s in history[:-1])
    sqlite_kept(db, 7)
    # a new saver (nothing remembered) reads the same, from the file alone, and goes on
    with sqlite_saver(db, store_messages_once=True, keep_checkpoints=7) as saver:
        capture_puts(saver, seen)
        graph = build("fncall", saver)
        state = graph.get_state(CONFIG)
        assert len(state.values["messages"]) == 48
        assert_as_saved(saver, state, seen)
        graph.invoke(user(13), CONFIG)
        assert recorded(effects) == list(range(1, 14))
        history = list(graph.get_state_history(CONFIG))
        assert len(history) == sqlite_kept(db, 7)
        for snapshot in history:
            assert_as_saved(saver, snapshot, seen)


def test_without_messages_once_it_keeps_k_whole_checkpoints(tmp_path, effects):  # noqa: F811
    db = tmp_path / "ck.db"
    with sqlite_saver(db, keep_checkpoints=3) as saver:
        seen = capture_puts(saver)
        graph = build("fncall", saver)
        for turn in range(1, 6):
            graph.invoke(user(turn), CONFIG)
        history = list(graph.get_state_history(CONFIG))
        assert len(history) == sqlite_kept(db, 3)
        for snapshot in history:
            assert_as_saved(saver, snapshot, seen)
    sqlite_kept(db, 3)


@pytest.mark.parametrize("keep", [1, 3])
def test_an_approval_waiting_on_the_head_resumes_in_a_new_saver(tmp_path, effects, keep):  # noqa: F811
    db = tmp_path / "ck.db"
    options = {"store_messages_once": True, "keep_checkpoints": keep}
    with sqlite_saver(db, **options) as saver:
        graph = build("fncall", saver, interrupt_on={"record": True})
        for turn in range(1, 6):
            graph.invoke(user(turn), CONFIG)
            if turn < 5:
                graph.invoke(approve(graph), CONFIG)
        assert graph.get_state(CONFIG).interrupts, "the fifth turn waits for approval"
        assert recorded(effects) == [1, 2, 3, 4]
    sqlite_kept(db, keep)
    with sqlite_saver(db, **options) as saver:  # as a new process would
        graph = build("fncall", saver, interrupt_on={"record": True})
        result = graph.invoke(approve(graph), CONFIG)
        assert result["messages"][-1].content == "Done: recorded 5."
        assert len(result["messages"]) == 20
        assert recorded(effects) == [1, 2, 3, 4, 5]
    sqlite_kept(db, keep)


@pytest.mark.slow
def test_a_crashed_tool_call_is_answered_from_its_claim(tmp_path, effects):  # noqa: F811
    """With one checkpoint kept, the process dies after the call ran and before its
    result was saved; a new process resumes: the call is answered from its claim."""
    db = tmp_path / "ck.db"
    child = subprocess.run(
        [sys.executable, str(CHILD), str(db), str(effects), "7", "1"],
        capture_output=True,
        text=True,
        timeout=180,  # a bound for a hung child, not a synchronisation
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert recorded(effects) == list(range(1, 8))
    with sqlite_saver(db, store_messages_once=True, keep_checkpoints=1) as saver:
        graph = build("fncall", saver)
        assert graph.get_state(CONFIG).next == ("tools",)
        result = graph.invoke(None, CONFIG)
        assert recorded(effects) == list(range(1, 8)), "the call ran once"
        messages = result["messages"]
        assert len(messages) == 28
        assert [m.content for m in messages[-2:]] == ["recorded 7", "Done: recorded 7."]
    sqlite_kept(db, 1)


async def test_async_saver_keeps_the_last_checkpoints(tmp_path, effects):  # noqa: F811
    db = tmp_path / "ck.db"
    options = {"store_messages_once": True, "keep_checkpoints": 4}
    async with async_sqlite_saver(db, **options) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 6):
            await graph.ainvoke(user(turn), CONFIG)
        state = await graph.aget_state(CONFIG)
        history = [s async for s in graph.aget_state_history(CONFIG)]
        assert [len(s.values.get("messages", [])) for s in history][:4] == [20, 19, 18, 17]
        assert len(history) == sqlite_kept(db, 4)
    sqlite_kept(db, 4)
    async with async_sqlite_saver(db, **options) as saver:
        graph = build("fncall", saver)
        again = await graph.aget_state(CONFIG)
        assert serialized(saver, again.values["messages"]) == serialized(
            saver, state.values["messages"]
        )


def test_a_failed_deletion_is_left_to_the_next_save(tmp_path, effects, caplog):  # noqa: F811
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True, keep_checkpoints=2) as saver:
        graph = build("fncall", saver)
        prune = saver._prune

        def locked(*args: Any) -> None:
            raise sqlite3.OperationalError("database is locked")

        saver._prune = locked
        with caplog.at_level(logging.WARNING):
            graph.invoke(user(1), CONFIG)
        assert "older checkpoints not deleted" in caplog.text
        assert sqlite_counts(db)[0] > 2
        saver._prune = prune
        graph.invoke(user(2), CONFIG)
        assert recorded(effects) == [1, 2]
    sqlite_kept(db, 2)


@pytest.mark.parametrize(
    ("keep", "error"), [(0, ValueError), (-3, ValueError), (True, TypeError), ("5", TypeError)]
)
def test_keep_must_be_a_whole_number_of_checkpoints(tmp_path, keep, error):
    with (
        pytest.raises(error, match="keep_checkpoints"),
        sqlite_saver(tmp_path / "ck.db", keep_checkpoints=keep),
    ):
        pass


# -- PostgreSQL: checkpoints, writes and the channel blobs only deleted checkpoints named


def pg_counts(url: str, thread: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as db:
        counts = {
            table: db.execute(
                f"SELECT COUNT(*) FROM {table} WHERE thread_id = %s", (thread,)
            ).fetchone()[0]
            for table in ("checkpoints", "checkpoint_writes", "checkpoint_blobs")
        }
        # every blob is named by a kept checkpoint
        counts["unnamed blobs"] = db.execute(
            "SELECT COUNT(*) FROM checkpoint_blobs b WHERE thread_id = %s AND NOT EXISTS "
            "(SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id "
            "AND c.checkpoint_ns = b.checkpoint_ns "
            "AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)",
            (thread,),
        ).fetchone()[0]
    return counts


@pytest.mark.slow
def test_postgres_keeps_the_last_checkpoints(postgres_url, effects):  # noqa: F811
    from fncall_graph.adapters.checkpoint import postgres_saver

    thread = uuid.uuid4().hex
    config = {"configurable": {"thread_id": thread}}
    options = {"store_messages_once": True, "keep_checkpoints": 5}
    sizes = {}
    with postgres_saver(postgres_url, **options) as saver:
        seen = capture_puts(saver)
        graph = build("fncall", saver, interrupt_on={"record": True})
        for turn in range(1, 61):
            graph.invoke(user(turn), config)
            graph.invoke(Command(resume=_approval(graph, config)), config)
            if turn in (30, 60):
                sizes[turn] = (pg_bytes(postgres_url, thread), messages_bytes(saver, graph, config))
        history = list(graph.get_state_history(config))
        assert len(history) == pg_kept(postgres_url, thread, 5)
        for snapshot in history:
            assert_as_saved(saver, snapshot, seen)
        graph.invoke(user(61), config)  # waits for approval
    assert recorded(effects) == list(range(1, 61))
    counts = pg_counts(postgres_url, thread)
    assert (
        counts["checkpoints"] == pg_kept(postgres_url, thread, 5) and counts["unnamed blobs"] == 0
    ), counts
    # at 60 turns at most twice the messages; at 30 the kept checkpoints back to the last
    # full copy of the history (up to 20 updates' writes) still weigh a little more
    for turn, bound in ((30, 2.25), (60, 2)):
        stored, messages = sizes[turn]
        assert stored <= bound * messages, (turn, stored, messages)
    with postgres_saver(postgres_url, **options) as saver:  # nothing cached
        graph = build("fncall", saver, interrupt_on={"record": True})
        result = graph.invoke(Command(resume=_approval(graph, config)), config)
        assert result["messages"][-1].content == "Done: recorded 61."
        assert len(result["messages"]) == 244
    assert recorded(effects) == list(range(1, 62))


@pytest.mark.slow
@pytest.mark.parametrize("max_connections", [None, 3])
async def test_async_postgres_keeps_the_last_checkpoints(postgres_url, effects, max_connections):  # noqa: F811
    from fncall_graph.adapters.checkpoint import async_postgres_saver

    thread = uuid.uuid4().hex
    config = {"configurable": {"thread_id": thread}}
    options = {
        "max_connections": max_connections,
        "store_messages_once": True,
        "keep_checkpoints": 3,
    }
    async with async_postgres_saver(postgres_url, **options) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 8):
            await graph.ainvoke(user(turn), config)
        state = await graph.aget_state(config)
        history = [s async for s in graph.aget_state_history(config)]
        assert len(history) == pg_kept(postgres_url, thread, 3)
    counts = pg_counts(postgres_url, thread)
    assert (
        counts["checkpoints"] == pg_kept(postgres_url, thread, 3) and counts["unnamed blobs"] == 0
    ), counts
    async with async_postgres_saver(postgres_url, **options) as saver:
        graph = build("fncall", saver)
        again = await graph.aget_state(config)
        assert serialized(saver, again.values["messages"]) == serialized(
            saver, state.values["messages"]
        )
    assert recorded(effects) == list(range(1, 8))


@pytest.mark.slow
def test_a_failed_deletion_on_postgres_is_left_to_the_next_save(postgres_url, effects, caplog):  # noqa: F811
    # psycopg loads with the saver, not with the package: its errors must still be caught
    import psycopg

    from fncall_graph.adapters.checkpoint import postgres_saver

    thread = uuid.uuid4().hex
    config = {"configurable": {"thread_id": thread}}
    with postgres_saver(postgres_url, keep_checkpoints=2) as saver:
        graph = build("fncall", saver)
        prune = saver._prune

        def locked(*args: Any) -> None:
            raise psycopg.errors.LockNotAvailable("could not obtain lock")

        saver._prune = locked
        with caplog.at_level(logging.WARNING):
            graph.invoke(user(1), config)
        assert "older checkpoints not deleted" in caplog.text
        assert pg_counts(postgres_url, thread)["checkpoints"] > 2
        saver._prune = prune
        graph.invoke(user(2), config)
        assert recorded(effects) == [1, 2]
    assert pg_counts(postgres_url, thread)["checkpoints"] == pg_kept(postgres_url, thread, 2)


def _approval(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    [pending] = graph.get_state(config).interrupts
    return bind_decisions(pending.value, [{"type": "approve"}])
