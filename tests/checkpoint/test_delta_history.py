"""The graph's history is LangGraph's ``DeltaChannel``: a checkpoint holds the messages
its step added, not the whole history again, on any saver (LangGraph's plain
``SqliteSaver`` here, on a real file); threads saved before (a plain ``add_messages``
channel, with and without messages stored once) are read and go on.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from pg_server import postgres_url  # noqa: F401  (the fixture)
from test_history_once import (
    CONFIG,
    TurnModel,
    build,
    effects,  # noqa: F401  (the fixture)
    record,
    recorded,
    serialized,
    user,
)

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver
from fncall_graph.graphs.state import SNAPSHOT_EVERY
from fncall_graph.testing import ReplayChatModel


def hermes_turns(turns: int) -> ReplayChatModel:
    """TurnModel's replies as a Hermes model writes them, for ``turns`` turns."""
    replies: list[str] = []
    for key in range(1, turns + 1):
        call = json.dumps({"name": "record", "arguments": {"key": key}})
        replies += [f"<tool_call>\n{call}\n</tool_call>", f"Done: recorded {key}."]
    return ReplayChatModel(replies)


def checkpoint_bytes(db: Path) -> int:
    """The bytes of the thread's checkpoints and pending writes."""
    with closing(sqlite3.connect(db)) as conn:
        return sum(
            conn.execute(f"SELECT COALESCE(SUM(LENGTH({column})), 0) FROM {table}").fetchone()[0]
            for table, column in (("checkpoints", "checkpoint"), ("writes", "value"))
        )


@pytest.mark.parametrize("dialect", ["native", "hermes"])
def test_a_turn_stores_what_it_added_however_long_the_thread(tmp_path, effects, dialect):  # noqa: F811
    """On LangGraph's own SqliteSaver, the bytes a turn adds stay about the same from the
    5th turn to the 40th (the history grows eightfold); ``create_agent``'s checkpoints
    hold the whole history at every step, so its turns grow with it."""
    added: dict[str, dict[int, int]] = {}
    for kind in ("fncall", "create_agent"):
        db = tmp_path / f"{kind}.db"
        with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
            saver = SqliteSaver(conn)
            if kind == "fncall":
                model = TurnModel() if dialect == "native" else hermes_turns(40)
                graph = create_fncall_graph(model, [record], dialect=dialect, checkpointer=saver)
            else:
                graph = build(kind, saver)
            before, added[kind] = 0, {}
            for turn in range(1, 41):
                graph.invoke(user(turn), CONFIG)
                now = checkpoint_bytes(db)
                added[kind][turn] = now - before
                before = now
            assert len(graph.get_state(CONFIG).values["messages"]) == 160
    # a full copy of the history every SNAPSHOT_EVERY updates (four a turn): compare
    # turns of the same place between two copies
    period = SNAPSHOT_EVERY // 4
    early, late = 5 + period // 2, 5 + period // 2 + 6 * period
    ours, theirs = added["fncall"], added["create_agent"]
    assert ours[late] < 1.3 * ours[early], ours
    assert theirs[late] > 3 * theirs[early], theirs
    assert ours[late] < theirs[late] / 5, (ours[late], theirs[late])


@pytest.mark.parametrize("once", [False, True])
def test_a_thread_saved_whole_is_read_and_goes_on(tmp_path, effects, once):  # noqa: F811
    """A thread whose checkpoints hold the whole history (as ``create_agent`` saves it,
    and this graph did before its history became a delta channel) is read by the graph
    and goes on; a new saver reads it back the same, from the file alone (with messages
    stored once, the last whole copy is stored as digests: read as this saver reads it)."""
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=once) as saver:
        old = build("create_agent", saver)
        for turn in range(1, 4):
            old.invoke(user(turn), CONFIG)
        graph = build("fncall", saver)
        assert len(graph.get_state(CONFIG).values["messages"]) == 12
        for turn in range(4, 7):
            graph.invoke(user(turn), CONFIG)
        state = graph.get_state(CONFIG)
        assert len(state.values["messages"]) == 24
    assert recorded(effects) == list(range(1, 7))
    with sqlite_saver(db, store_messages_once=once) as saver:
        graph = build("fncall", saver)
        again = graph.get_state(CONFIG)
        assert serialized(saver, again.values["messages"]) == serialized(
            saver, state.values["messages"]
        )
        result = graph.invoke(user(7), CONFIG)
        assert result["messages"][-1].content == "Done: recorded 7."
        assert len(result["messages"]) == 28
    assert recorded(effects) == list(range(1, 8))


def test_every_checkpoint_of_a_long_thread_reads_back(tmp_path, effects):  # noqa: F811
    """Across full copies: each checkpoint's history is the one before it and what its
    step added, read back from a new saver."""
    db = tmp_path / "ck.db"
    with sqlite_saver(db) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 3 * SNAPSHOT_EVERY // 4 + 2):
            graph.invoke(user(turn), CONFIG)
    with sqlite_saver(db) as saver:
        graph = build("fncall", saver)
        history: list[Any] = list(graph.get_state_history(CONFIG))
    lengths = [len(s.values.get("messages", [])) for s in reversed(history)]
    assert lengths == sorted(lengths) and lengths[-1] == 4 * (3 * SNAPSHOT_EVERY // 4 + 1)
    for older, newer in zip(reversed(history[1:]), reversed(history[:-1]), strict=True):
        before = [m.id for m in older.values.get("messages", [])]
        assert [m.id for m in newer.values["messages"]][: len(before)] == before


async def test_a_thread_saved_whole_goes_on_with_async_savers_and_messages_once(tmp_path, effects):  # noqa: F811
    """The same, on the async SQLite saver with messages stored once."""
    db = tmp_path / "ck.db"
    async with async_sqlite_saver(db, store_messages_once=True) as saver:
        old = build("create_agent", saver)
        for turn in range(1, 4):
            await old.ainvoke(user(turn), CONFIG)
        graph = build("fncall", saver)
        for turn in range(4, 7):
            await graph.ainvoke(user(turn), CONFIG)
        state = await graph.aget_state(CONFIG)
        assert len(state.values["messages"]) == 24
    async with async_sqlite_saver(db, store_messages_once=True) as saver:
        again = await build("fncall", saver).aget_state(CONFIG)
        assert serialized(saver, again.values["messages"]) == serialized(
            saver, state.values["messages"]
        )
    assert recorded(effects) == list(range(1, 7))


def test_a_thread_saved_whole_goes_on_on_postgres_with_messages_once(postgres_url, effects):  # noqa: F811
    """The same on PostgreSQL, whose saver reads a delta channel's history from its
    blobs: the last whole copy, stored as digests, is read as the saver reads it."""
    from fncall_graph.adapters.checkpoint import postgres_saver

    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    with postgres_saver(postgres_url, store_messages_once=True) as saver:
        old = build("create_agent", saver)
        for turn in range(1, 4):
            old.invoke(user(turn), config)
        graph = build("fncall", saver)
        for turn in range(4, 7):
            graph.invoke(user(turn), config)
        state = graph.get_state(config)
        assert len(state.values["messages"]) == 24
    with postgres_saver(postgres_url, store_messages_once=True) as saver:
        graph = build("fncall", saver)
        again = graph.get_state(config)
        assert serialized(saver, again.values["messages"]) == serialized(
            saver, state.values["messages"]
        )
        assert graph.invoke(user(7), config)["messages"][-1].content == "Done: recorded 7."
    assert recorded(effects) == list(range(1, 8))
