"""Time travel with ``keep_checkpoints=K``, on real SQLite files and a real PostgreSQL.

A write naming a checkpoint the saver deleted (``update_state``, ``bulk_update_state``,
a run whose config names it, sync and async, ``durability="exit"`` and a resume
included) or never had is refused with :class:`CheckpointNotFound` (the id, the
thread, K), before anything runs: LangGraph read it as an empty thread, made that the head, and the next
save deleted the thread's real history. Time travel to a kept checkpoint still works,
and the line a fork's head is read from is kept however old it is.

Six turns: the fifth turn's last checkpoint holds a full copy of the history (the
graph's ``messages`` is a delta channel), so with K = 1 and K = 3 the first turns'
checkpoints are deleted.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command, StateUpdate
from pg_server import postgres_url  # noqa: F401  (the fixture)
from test_history_once import (
    CONFIG,
    build,
    effects,  # noqa: F401  (the fixture)
    recorded,
    user,
)

from fncall_graph import CheckpointNotFound
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver

TURNS = 6


def turns(values: dict[str, Any]) -> list[str]:
    """The user messages of a state, the turn each began."""
    return [m.content for m in values.get("messages", []) if isinstance(m, HumanMessage)]


def ids(history: list[Any]) -> list[str]:
    return [s.config["configurable"]["checkpoint_id"] for s in history]


def six_turns(graph: Any, config: dict[str, Any] = CONFIG) -> str:
    """Runs the turns; the id of the first turn's last checkpoint (deleted by then)."""
    graph.invoke(user(1), config)
    first = graph.get_state(config).config["configurable"]["checkpoint_id"]
    for turn in range(2, TURNS + 1):
        graph.invoke(user(turn), config)
    assert first not in ids(list(graph.get_state_history(config))), "deleted"
    return first


async def asix_turns(graph: Any, config: dict[str, Any] = CONFIG) -> str:
    await graph.ainvoke(user(1), config)
    first = (await graph.aget_state(config)).config["configurable"]["checkpoint_id"]
    for turn in range(2, TURNS + 1):
        await graph.ainvoke(user(turn), config)
    assert first not in ids([s async for s in graph.aget_state_history(config)]), "deleted"
    return first


def at(config: dict[str, Any], checkpoint_id: str) -> dict[str, Any]:
    return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}}


def assert_refused(caught: Any, checkpoint_id: str, keep: int | None, thread: str = "long") -> None:
    error = caught.value
    assert (error.checkpoint_id, error.thread_id, error.keep_checkpoints) == (
        checkpoint_id,
        thread,
        keep,
    )
    text = str(error)
    assert checkpoint_id in text and repr(thread) in text
    assert (f"keep_checkpoints={keep}" in text) if keep else ("never had" in text)


def assert_nothing_lost(graph: Any, before: list[str], effects: Any, config: Any = CONFIG) -> None:  # noqa: F811
    """The head still holds every turn, the history is as it was, no tool ran."""
    assert turns(graph.get_state(config).values) == turns(user_turns())
    assert ids(list(graph.get_state_history(config))) == before
    assert recorded(effects) == list(range(1, TURNS + 1))


def user_turns() -> dict[str, Any]:
    return {"messages": [m for t in range(1, TURNS + 1) for m in user(t)["messages"]]}


SYNC_WRITES = {
    "update_state": lambda g, c: g.update_state(c, user(99)),
    "bulk_update_state": lambda g, c: g.bulk_update_state(c, [[StateUpdate(user(99), None)]]),
    "invoke": lambda g, c: g.invoke(user(99), c),
    "stream, durability=exit": lambda g, c: list(g.stream(user(99), c, durability="exit")),
    "invoke(None)": lambda g, c: g.invoke(None, c),
    "Command(resume=...)": lambda g, c: g.invoke(Command(resume={}), c),
}


@pytest.mark.parametrize("write", list(SYNC_WRITES))
@pytest.mark.parametrize("keep", [1, 3])
def test_a_write_naming_a_deleted_checkpoint_is_refused(tmp_path, effects, keep, write):  # noqa: F811
    with sqlite_saver(tmp_path / "ck.db", store_messages_once=True, keep_checkpoints=keep) as saver:
        graph = build("fncall", saver)
        first = six_turns(graph)
        before = ids(list(graph.get_state_history(CONFIG)))
        with pytest.raises(CheckpointNotFound) as caught:
            SYNC_WRITES[write](graph, at(CONFIG, first))
        assert_refused(caught, first, keep)
        assert_nothing_lost(graph, before, effects)
        graph.invoke(user(TURNS + 1), CONFIG)  # the thread goes on from its head
        assert len(turns(graph.get_state(CONFIG).values)) == TURNS + 1


async def _astream(graph: Any, config: Any) -> None:
    async for _ in graph.astream(user(99), config):
        pass


ASYNC_WRITES = {
    "aupdate_state": lambda g, c: g.aupdate_state(c, user(99)),
    "abulk_update_state": lambda g, c: g.abulk_update_state(c, [[StateUpdate(user(99), None)]]),
    "ainvoke": lambda g, c: g.ainvoke(user(99), c),
    "astream": _astream,
}


@pytest.mark.parametrize("write", list(ASYNC_WRITES))
@pytest.mark.parametrize("keep", [1, 3])
async def test_async_a_write_naming_a_deleted_checkpoint_is_refused(tmp_path, effects, keep, write):  # noqa: F811
    options = {"store_messages_once": True, "keep_checkpoints": keep}
    async with async_sqlite_saver(tmp_path / "ck.db", **options) as saver:
        graph = build("fncall", saver)
        first = await asix_turns(graph)
        before = ids([s async for s in graph.aget_state_history(CONFIG)])
        with pytest.raises(CheckpointNotFound) as caught:
            await ASYNC_WRITES[write](graph, at(CONFIG, first))
        assert_refused(caught, first, keep)
        assert turns((await graph.aget_state(CONFIG)).values) == turns(user_turns())
        assert ids([s async for s in graph.aget_state_history(CONFIG)]) == before
        assert recorded(effects) == list(range(1, TURNS + 1))


def test_create_agent_is_refused_too(tmp_path, effects):  # noqa: F811
    """The saver refuses: a graph it did not build is covered as well."""
    with sqlite_saver(tmp_path / "ck.db", keep_checkpoints=1) as saver:
        graph = build("create_agent", saver)
        first = six_turns(graph)
        before = ids(list(graph.get_state_history(CONFIG)))
        for write in ("update_state", "invoke"):
            with pytest.raises(CheckpointNotFound) as caught:
                SYNC_WRITES[write](graph, at(CONFIG, first))
            assert_refused(caught, first, 1)
        assert_nothing_lost(graph, before, effects)


@pytest.mark.parametrize("keep", [None, 3])
def test_a_checkpoint_the_saver_never_had_is_refused(tmp_path, effects, keep):  # noqa: F811
    with sqlite_saver(tmp_path / "ck.db", keep_checkpoints=keep) as saver:
        graph = build("fncall", saver)
        six_turns(graph) if keep else [graph.invoke(user(t), CONFIG) for t in range(1, TURNS + 1)]
        other = {"configurable": {"thread_id": "other"}}
        graph.invoke(user(1), other)
        elsewhere = graph.get_state(other).config["configurable"]["checkpoint_id"]
        before = ids(list(graph.get_state_history(CONFIG)))
        # a random UUID, a typo, a newer id of another thread: never this thread's
        for named in (str(uuid.uuid4()), "not-an-id", elsewhere):
            with pytest.raises(CheckpointNotFound) as caught:
                graph.update_state(at(CONFIG, named), user(99))
            assert_refused(caught, named, None)
        with pytest.raises(CheckpointNotFound):
            graph.get_state(at(CONFIG, "not-an-id"))  # a read says so too
        assert turns(graph.get_state(CONFIG).values) == turns(user_turns())
        assert ids(list(graph.get_state_history(CONFIG))) == before
        assert recorded(effects) == [*range(1, TURNS + 1), 1]


# -- time travel to a checkpoint still kept


def assert_head_readable(graph: Any, config: Any = CONFIG) -> list[Any]:
    """Every checkpoint the head is read from is kept: its parent chain runs through
    listed checkpoints to one that holds a full copy of the history, and each listed
    checkpoint reads back."""
    history = list(graph.get_state_history(config))
    listed = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    snapshot = history[0]
    while snapshot.parent_config is not None:
        parent = snapshot.parent_config["configurable"]["checkpoint_id"]
        assert parent in listed, "a checkpoint the head needs is gone"
        snapshot = listed[parent]
    assert "counters_since_delta_snapshot" not in snapshot.metadata, "the line ends at a copy"
    for s in history:
        assert graph.get_state(s.config).values == s.values
    return history


def fork_point(graph: Any, config: Any = CONFIG) -> Any:
    """The oldest kept checkpoint that ends a turn and holds no full copy of the history:
    read from its ancestors' writes, as a fork from it is."""
    history = list(graph.get_state_history(config))
    ends = [
        s
        for s in history[1:]
        if not s.next and "counters_since_delta_snapshot" in s.metadata and turns(s.values)
    ]
    assert ends, [(s.next, s.metadata) for s in history]
    return ends[-1]


def copy_fork(graph: Any, point: Any, config: Any = CONFIG) -> list[str]:
    """Forks the thread at ``point`` as LangGraph's ``__copy__`` does (the copy has
    ``point``'s parent), runs three turns on; the turns the head should hold."""
    graph.update_state(point.config, None, as_node="__copy__")
    for turn in range(101, 104):
        graph.invoke(user(turn), config)
    return [*turns(point.values), *(turns(user(t))[0] for t in range(101, 104))]


@pytest.mark.parametrize("keep", [3, 10])
def test_a_fork_keeps_the_line_its_head_is_read_from(tmp_path, effects, keep):  # noqa: F811
    """Fifteen turns, a ``__copy__`` fork from an old kept checkpoint, three turns on:
    the head holds every turn of its line (it lost all but the new three before)."""
    with sqlite_saver(tmp_path / "ck.db", store_messages_once=True, keep_checkpoints=keep) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 16):
            graph.invoke(user(turn), CONFIG)
        point = fork_point(graph)
        expected = copy_fork(graph, point)
        assert turns(graph.get_state(CONFIG).values) == expected
        history = assert_head_readable(graph)
        assert any(s.metadata.get("source") == "fork" for s in history), "the new branch"
    with sqlite_saver(tmp_path / "ck.db", store_messages_once=True, keep_checkpoints=keep) as saver:
        graph = build("fncall", saver)  # a new process reads the same from the file
        assert turns(graph.get_state(CONFIG).values) == expected


def promised(db: Path, keep: int, thread: str = "long") -> tuple[set[str], set[str], int]:
    """(the checkpoints the file holds, those the promise keeps, writes whose checkpoint
    is gone): the ``keep`` newest, and each kept one's parent while it holds no full
    copy of the history, computed here from the rows, apart from the saver's query."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT checkpoint_id, parent_checkpoint_id, CAST(metadata AS TEXT) "
            "FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC",
            (thread,),
        ).fetchall()
        orphans = conn.execute(
            "SELECT COUNT(*) FROM writes w WHERE thread_id = ? AND NOT EXISTS (SELECT 1 "
            "FROM checkpoints c WHERE c.thread_id = w.thread_id "
            "AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id)",
            (thread,),
        ).fetchone()[0]
    parent = {cid: p for cid, p, _ in rows}
    copy = {cid: "counters_since_delta_snapshot" not in json.loads(m) for cid, _, m in rows}
    kept, todo = set(), [cid for cid, _, _ in rows[:keep]]
    while todo:
        cid = todo.pop()
        kept.add(cid)
        if not copy[cid] and parent[cid] is not None:
            todo.append(parent[cid])
    return set(parent), kept, orphans


@pytest.mark.parametrize("keep", [3, 10])
def test_a_forked_thread_keeps_what_its_kept_checkpoints_are_read_from(tmp_path, effects, keep):  # noqa: F811
    """After a fork, the file holds exactly the promise: no checkpoint the K newest are
    read from is gone, none other stays, no write of a deleted checkpoint stays."""
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True, keep_checkpoints=keep) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 16):
            graph.invoke(user(turn), CONFIG)
        expected = copy_fork(graph, fork_point(graph))
        held, kept, orphans = promised(db, keep)
        assert (held, orphans) == (kept, 0)
        assert turns(graph.get_state(CONFIG).values) == expected


@pytest.mark.parametrize("keep", [1, 3])
def test_time_travel_to_a_kept_checkpoint_still_works(tmp_path, effects, keep):  # noqa: F811
    with sqlite_saver(tmp_path / "ck.db", store_messages_once=True, keep_checkpoints=keep) as saver:
        graph = build("fncall", saver)
        six_turns(graph)
        old = list(graph.get_state_history(CONFIG))[-1]  # the oldest kept: a full copy
        assert turns(old.values)
        # edit it (a fork), then run on from the fork
        forked = graph.update_state(old.config, {"messages": [HumanMessage("edited")]})
        assert turns(graph.get_state(forked).values) == [*turns(old.values), "edited"]
        graph.invoke(user(7), CONFIG)
        head = graph.get_state(CONFIG).values
        assert turns(head) == [*turns(old.values), "edited", turns(user(7))[0]]
        assert head["messages"][-1].content == "Done: recorded 7."
        history = assert_head_readable(graph)
        assert any(s.metadata.get("source") == "update" for s in history), "the new branch"
        # run on from a kept checkpoint straight away, as invoke(input, config) does
        again = history[-1]
        graph.invoke(user(8), again.config)
        assert turns(graph.get_state(CONFIG).values) == [*turns(again.values), turns(user(8))[0]]
        assert_head_readable(graph)


async def test_async_fork_keeps_the_line_its_head_is_read_from(tmp_path, effects):  # noqa: F811
    options = {"store_messages_once": True, "keep_checkpoints": 3}
    async with async_sqlite_saver(tmp_path / "ck.db", **options) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 16):
            await graph.ainvoke(user(turn), CONFIG)
        history = [s async for s in graph.aget_state_history(CONFIG)]
        ends = [
            s for s in history[1:] if not s.next and "counters_since_delta_snapshot" in s.metadata
        ]
        point = ends[-1]
        await graph.aupdate_state(point.config, None, as_node="__copy__")
        for turn in range(101, 104):
            await graph.ainvoke(user(turn), CONFIG)
        expected = [*turns(point.values), *(turns(user(t))[0] for t in range(101, 104))]
        assert turns((await graph.aget_state(CONFIG)).values) == expected


# -- PostgreSQL


@pytest.mark.slow
@pytest.mark.parametrize("keep", [1, 3])
def test_postgres_refuses_a_deleted_checkpoint(postgres_url, effects, keep):  # noqa: F811
    from fncall_graph.adapters.checkpoint import postgres_saver

    thread = uuid.uuid4().hex
    config = {"configurable": {"thread_id": thread}}
    with postgres_saver(postgres_url, store_messages_once=True, keep_checkpoints=keep) as saver:
        graph = build("fncall", saver)
        first = six_turns(graph, config)
        before = ids(list(graph.get_state_history(config)))
        for write in ("update_state", "invoke"):
            with pytest.raises(CheckpointNotFound) as caught:
                SYNC_WRITES[write](graph, at(config, first))
            assert_refused(caught, first, keep, thread)
        assert_nothing_lost(graph, before, effects, config)
        if keep == 3:  # a fork from an old kept checkpoint keeps its line
            for turn in range(TURNS + 1, 16):
                graph.invoke(user(turn), config)
            expected = copy_fork(graph, fork_point(graph, config), config)
            assert turns(graph.get_state(config).values) == expected
            assert_head_readable(graph, config)


@pytest.mark.slow
async def test_async_postgres_refuses_a_deleted_checkpoint(postgres_url, effects):  # noqa: F811
    from fncall_graph.adapters.checkpoint import async_postgres_saver

    thread = uuid.uuid4().hex
    config = {"configurable": {"thread_id": thread}}
    options = {"store_messages_once": True, "keep_checkpoints": 3}
    async with async_postgres_saver(postgres_url, **options) as saver:
        graph = build("fncall", saver)
        first = await asix_turns(graph, config)
        before = ids([s async for s in graph.aget_state_history(config)])
        for write in ("aupdate_state", "ainvoke"):
            with pytest.raises(CheckpointNotFound) as caught:
                await ASYNC_WRITES[write](graph, at(config, first))
            assert_refused(caught, first, 3, thread)
        assert turns((await graph.aget_state(config)).values) == turns(user_turns())
        assert ids([s async for s in graph.aget_state_history(config)]) == before
        assert recorded(effects) == list(range(1, TURNS + 1))
