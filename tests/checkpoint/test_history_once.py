"""``sqlite_saver(..., store_messages_once=True)``: each message stored once, on a real
SQLite file.

A thread reads back exactly what LangGraph saved (every checkpoint of its history, byte
for byte as the saver's serializer writes the messages), resumes after an approval and
after a crash in a new saver (no cache), answers a tool call from its claim without
running it again, grows linearly on disk, and leaves no stored message behind when it
is deleted. ``create_agent`` gets the same.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.types import Command
from pg_server import postgres_url  # noqa: F401  (the fixture)

from fncall_graph import bind_decisions, create_fncall_graph
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver
from fncall_graph.adapters.checkpoint.message_blocks import (
    MESSAGES_TABLE,
    StoredMessageMissing,
    _unpack,
)
from fncall_graph.graphs.state import MESSAGES

CONFIG: dict[str, Any] = {"configurable": {"thread_id": "long"}}
CHILD = Path(__file__).parents[1] / "history_child.py"
FILLER = "较早的消息让历史变长。" * 4 + "The thread goes on."


class TurnModel(BaseChatModel):
    """After a user message: one ``record`` call whose key is the number of user messages
    so far; after a tool result: an answer quoting it. The reply depends on the history
    only, so a new process goes on where the thread is."""

    @property
    def _llm_type(self) -> str:
        return "turn-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[getattr(t, "name", str(t)) for t in tools])

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage(f"Done: {messages[-1].content}.")
        else:
            key = sum(isinstance(m, HumanMessage) for m in messages)
            reply = AIMessage(
                "", tool_calls=[{"name": "record", "args": {"key": key}, "id": f"c{key}"}]
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def record(key: int) -> str:
    """Record a key (a line in the effects file)."""
    with open(os.environ["FNCALL_HISTORY_EFFECTS"], "a", encoding="utf-8") as f:
        f.write(f"{key}\n")
    return f"recorded {key}"


def build(kind: str, saver: Any, **options: Any) -> Any:
    if kind == "create_agent":
        from langchain.agents import create_agent

        return create_agent(TurnModel(), [record], checkpointer=saver)
    return create_fncall_graph(
        TurnModel(), [record], dialect="native", checkpointer=saver, **options
    )


def user(turn: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"turn {turn}: {FILLER}")]}


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.txt"
    path.touch()
    monkeypatch.setenv("FNCALL_HISTORY_EFFECTS", str(path))
    return path


def recorded(effects: Path) -> list[int]:
    return [int(line) for line in effects.read_text().split()]


def messages_at(saver: Any, config: Any) -> list[BaseMessage]:
    """A saved checkpoint's messages as LangGraph reads them back from ``saver``: the
    value the checkpoint holds, else (the graph's ``messages`` is a ``DeltaChannel``)
    the last full copy before it with the writes since replayed."""
    tup = saver.get_tuple(config)
    values = tup.checkpoint["channel_values"]
    if "messages" in values:
        return MESSAGES.from_checkpoint(values["messages"]).get()
    found = saver.get_delta_channel_history(config=tup.config, channels=["messages"])
    channel = MESSAGES.from_checkpoint(found["messages"].get("seed"))
    channel.replay_writes(found["messages"]["writes"])
    return channel.get()


def capture_puts(
    saver: Any, seen: dict[str, list[tuple[str, bytes]]] | None = None
) -> dict[str, list[tuple[str, bytes]]]:
    """Every checkpoint's messages as the saver's serializer writes them, by id, read
    back from the saver as soon as it saved the checkpoint (into ``seen``)."""
    seen = {} if seen is None else seen
    put = saver.put

    def recording_put(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        saved = put(config, checkpoint, metadata, versions)
        values = checkpoint["channel_values"]
        messages = (
            values["messages"]
            if isinstance(values.get("messages"), list)
            else messages_at(saver, saved)
        )
        seen[checkpoint["id"]] = [saver.serde.dumps_typed(m) for m in messages]
        return saved

    saver.put = recording_put
    return seen


def serialized(saver: Any, messages: list[BaseMessage]) -> list[tuple[str, bytes]]:
    return [saver.serde.dumps_typed(m) for m in messages]


def assert_as_saved(saver: Any, snapshot: Any, seen: dict[str, list[tuple[str, bytes]]]) -> None:
    messages = snapshot.values.get("messages", [])
    assert serialized(saver, messages) == seen[snapshot.config["configurable"]["checkpoint_id"]]


def stored_bytes(db: Path) -> int:
    """The bytes of every value the savers keep (checkpoints, writes, messages, claims)."""
    with closing(sqlite3.connect(db)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        total = 0
        for table in tables:
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            total += conn.execute(
                f"SELECT COALESCE(SUM({' + '.join(f'COALESCE(LENGTH({c}), 0)' for c in columns)}), 0)"
                f" FROM {table}"
            ).fetchone()[0]
        return total


def message_rows(db: Path, thread: str = "long") -> int:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(
            f"SELECT COUNT(*) FROM {MESSAGES_TABLE} WHERE thread_id = ?", (thread,)
        ).fetchone()[0]


@pytest.mark.parametrize("kind", ["fncall", "create_agent"])
def test_every_checkpoint_reads_back_as_it_was_saved(tmp_path, effects, kind):
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True) as saver:
        seen = capture_puts(saver)
        graph = build(kind, saver)
        for turn in range(1, 13):  # 48 messages: blocks of 32 and 16, every level met
            graph.invoke(user(turn), CONFIG)
        assert recorded(effects) == list(range(1, 13))
        history = list(graph.get_state_history(CONFIG))
        assert len(history) == len(seen)
        for snapshot in history:
            assert_as_saved(saver, snapshot, seen)
    # a new saver (nothing remembered) reads the same, from the file alone
    with sqlite_saver(db, store_messages_once=True) as saver:
        graph = build(kind, saver)
        state = graph.get_state(CONFIG)
        assert len(state.values["messages"]) == 48
        assert_as_saved(saver, state, seen)
        # each message is stored once: the leaves are exactly the thread's messages
        # (deflated where that is shorter)
        with closing(sqlite3.connect(db)) as conn:
            leaves = conn.execute(
                f"SELECT type, value FROM {MESSAGES_TABLE} WHERE type != 'fncall-pair'"
            ).fetchall()
        # (create_fncall_graph's history is a delta channel: its checkpoints hold a full
        # copy of it every 20 updates, the messages of the last copy are stored)
        stored = state.values["messages"][: len(leaves)]
        assert len(leaves) >= (40 if kind == "fncall" else 48)
        assert sorted(_unpack(row) for row in leaves) == sorted(serialized(saver, stored))
        assert sum(len(value) for _, value in leaves) < sum(
            len(data) for _, data in serialized(saver, stored)
        )


def test_storage_grows_linearly_with_the_thread(tmp_path, effects):
    """Twice the turns take about twice the bytes (the default saver takes about four
    times: every checkpoint holds the whole history)."""
    sizes = {}
    for turns in (30, 60):
        db = tmp_path / f"ck{turns}.db"
        with sqlite_saver(db, store_messages_once=True) as saver:
            graph = build("fncall", saver)
            for turn in range(1, turns + 1):
                graph.invoke(user(turn), CONFIG)
        sizes[turns] = stored_bytes(db)
    assert sizes[60] <= 2.15 * sizes[30], sizes


def approve(graph: Any) -> Command:
    [pending] = graph.get_state(CONFIG).interrupts
    return Command(resume=bind_decisions(pending.value, [{"type": "approve"}]))


def test_an_approval_resumes_in_a_new_saver(tmp_path, effects):
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True) as saver:
        seen = capture_puts(saver)
        graph = build("fncall", saver, interrupt_on={"record": True})
        for turn in range(1, 6):
            graph.invoke(user(turn), CONFIG)
            if turn < 5:
                graph.invoke(approve(graph), CONFIG)
        assert graph.get_state(CONFIG).interrupts, "the fifth turn waits for approval"
        assert recorded(effects) == [1, 2, 3, 4]
    with sqlite_saver(db, store_messages_once=True) as saver:  # as a new process would
        capture_puts(saver, seen)
        graph = build("fncall", saver, interrupt_on={"record": True})
        result = graph.invoke(approve(graph), CONFIG)
        assert result["messages"][-1].content == "Done: recorded 5."
        assert recorded(effects) == [1, 2, 3, 4, 5]
        for snapshot in graph.get_state_history(CONFIG):
            assert_as_saved(saver, snapshot, seen)


@pytest.mark.slow
def test_a_crashed_tool_call_is_answered_from_its_claim(tmp_path, effects):
    """The process dies after the call ran and before its result was saved; a new
    process resumes the thread: the call is answered from its claim, not run again."""
    db = tmp_path / "ck.db"
    child = subprocess.run(
        [sys.executable, str(CHILD), str(db), str(effects), "7"],
        capture_output=True,
        text=True,
        timeout=180,  # a bound for a hung child, not a synchronisation
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert recorded(effects) == list(range(1, 8))
    with sqlite_saver(db, store_messages_once=True) as saver:
        graph = build("fncall", saver)
        assert graph.get_state(CONFIG).next == ("tools",)
        result = graph.invoke(None, CONFIG)
        assert recorded(effects) == list(range(1, 8)), "the call ran once"
        messages = result["messages"]
        assert len(messages) == 28
        assert [m.content for m in messages[-2:]] == ["recorded 7", "Done: recorded 7."]
        assert messages[-2].tool_call_id == messages[-3].tool_calls[0]["id"]
    with sqlite_saver(db, store_messages_once=True) as saver:
        again = build("fncall", saver).get_state(CONFIG).values["messages"]
        assert serialized(saver, again) == serialized(saver, messages)


def test_edits_and_forks_read_back(tmp_path, effects):
    """Not only appends: a message replaced by id, one removed, and a fork from an
    older checkpoint each read back as LangGraph made them."""
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True) as saver:
        seen = capture_puts(saver)
        graph = build("fncall", saver)
        for turn in range(1, 6):
            graph.invoke(user(turn), CONFIG)
        messages = graph.get_state(CONFIG).values["messages"]
        edited = messages[3].model_copy(update={"content": "an edited answer"})
        graph.update_state(CONFIG, {"messages": [edited, RemoveMessage(id=messages[7].id)]})
        after = graph.get_state(CONFIG).values["messages"]
        assert len(after) == 19 and after[3].content == "an edited answer"
        assert messages[7].id not in {m.id for m in after}
        # fork from the checkpoint after turn 2, and go on from there
        fork = next(
            s for s in graph.get_state_history(CONFIG) if len(s.values.get("messages", [])) == 8
        )
        graph.invoke(user(9), fork.config)
        assert len(graph.get_state(CONFIG).values["messages"]) == 12
    with sqlite_saver(db, store_messages_once=True) as saver:
        graph = build("fncall", saver)
        for snapshot in graph.get_state_history(CONFIG):
            assert_as_saved(saver, snapshot, seen)


def test_deleting_a_thread_deletes_its_messages(tmp_path, effects):
    db = tmp_path / "ck.db"
    keep = {"configurable": {"thread_id": "keep"}}
    with sqlite_saver(db, store_messages_once=True) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 7):  # a full copy of the history is saved every 20 updates
            graph.invoke(user(turn), CONFIG)
            graph.invoke(user(turn), keep)
        assert message_rows(db) > 12 and message_rows(db, "keep") > 12
        saver.delete_thread("long")
        assert message_rows(db) == 0
        assert message_rows(db, "keep") > 12
        assert graph.get_state(CONFIG).values == {}
        # the same thread id starts again from nothing
        graph.invoke(user(1), CONFIG)
        assert len(graph.get_state(CONFIG).values["messages"]) == 4
    with sqlite_saver(db, store_messages_once=True) as saver:
        assert len(build("fncall", saver).get_state(keep).values["messages"]) == 24
        assert len(build("fncall", saver).get_state(CONFIG).values["messages"]) == 4


def test_a_missing_message_row_is_said(tmp_path, effects):
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 7):  # a full copy of the history is saved every 20 updates
            graph.invoke(user(turn), CONFIG)
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(f"DELETE FROM {MESSAGES_TABLE} WHERE type != 'fncall-pair'")
        conn.commit()
    missing = f"thread 'long'.*missing from table {MESSAGES_TABLE}"
    with (
        sqlite_saver(db, store_messages_once=True) as saver,
        pytest.raises(StoredMessageMissing, match=missing),
    ):
        build("fncall", saver).get_state(CONFIG)


async def test_async_saver_round_trips_and_deletes(tmp_path, effects):
    db = tmp_path / "ck.db"
    async with async_sqlite_saver(db, store_messages_once=True) as saver:
        graph = build("fncall", saver)
        for turn in range(1, 6):
            await graph.ainvoke(user(turn), CONFIG)
        state = await graph.aget_state(CONFIG)
        assert len(state.values["messages"]) == 20
        history = [s async for s in graph.aget_state_history(CONFIG)]
        assert [len(s.values.get("messages", [])) for s in history][:3] == [20, 19, 18]
    async with async_sqlite_saver(db, store_messages_once=True) as saver:
        graph = build("fncall", saver)
        again = await graph.aget_state(CONFIG)
        assert serialized(saver, again.values["messages"]) == serialized(
            saver, state.values["messages"]
        )
        await graph.ainvoke(user(6), CONFIG)
        assert recorded(effects) == [1, 2, 3, 4, 5, 6]
        await saver.adelete_thread("long")
    assert message_rows(db) == 0


# -- PostgreSQL: the same saver over langgraph-checkpoint-postgres, on a real server


def pg_bytes(url: str, thread: str) -> int:
    """The bytes PostgreSQL keeps for ``thread`` (checkpoints, channel blobs, writes,
    messages)."""
    import psycopg

    with psycopg.connect(url) as db:
        return sum(
            db.execute(
                f"SELECT COALESCE(SUM({size}), 0) FROM {table} WHERE thread_id = %s", (thread,)
            ).fetchone()[0]
            for table, size in (
                ("checkpoints", "pg_column_size(checkpoint) + pg_column_size(metadata)"),
                ("checkpoint_blobs", "COALESCE(LENGTH(blob), 0)"),
                ("checkpoint_writes", "LENGTH(blob)"),
                (MESSAGES_TABLE, "LENGTH(value)"),
            )
        )


def pg_message_rows(url: str, thread: str) -> int:
    import psycopg

    with psycopg.connect(url) as db:
        return db.execute(
            f"SELECT COUNT(*) FROM {MESSAGES_TABLE} WHERE thread_id = %s", (thread,)
        ).fetchone()[0]


@pytest.mark.slow
def test_postgres_round_trips_grows_linearly_and_deletes(postgres_url, effects):  # noqa: F811
    from fncall_graph.adapters.checkpoint import postgres_saver

    suffix = uuid.uuid4().hex
    sizes = {}
    for turns in (15, 30):
        config = {"configurable": {"thread_id": f"t{turns}-{suffix}"}}
        with postgres_saver(postgres_url, store_messages_once=True) as saver:
            seen = capture_puts(saver)
            graph = build("fncall", saver)
            for turn in range(1, turns + 1):
                graph.invoke(user(turn), config)
            for snapshot in graph.get_state_history(config):
                assert_as_saved(saver, snapshot, seen)
        with postgres_saver(postgres_url, store_messages_once=True) as saver:  # nothing cached
            state = build("fncall", saver).get_state(config)
            assert len(state.values["messages"]) == 4 * turns
            assert_as_saved(saver, state, seen)
        sizes[turns] = pg_bytes(postgres_url, config["configurable"]["thread_id"])
    assert sizes[30] <= 2.15 * sizes[15], sizes
    with postgres_saver(postgres_url, store_messages_once=True) as saver:
        saver.delete_thread(f"t15-{suffix}")
        assert pg_message_rows(postgres_url, f"t15-{suffix}") == 0
        assert pg_message_rows(postgres_url, f"t30-{suffix}") > 120
        graph = build("fncall", saver)
        assert (
            len(
                graph.get_state({"configurable": {"thread_id": f"t30-{suffix}"}}).values["messages"]
            )
            == 120
        )


@pytest.mark.slow
@pytest.mark.parametrize("max_connections", [None, 3])
async def test_async_postgres_round_trips_and_deletes(postgres_url, effects, max_connections):  # noqa: F811
    from fncall_graph.adapters.checkpoint import async_postgres_saver

    thread = uuid.uuid4().hex
    config = {"configurable": {"thread_id": thread}}
    options = {"max_connections": max_connections, "store_messages_once": True}
    async with async_postgres_saver(postgres_url, **options) as saver:
        graph = build("fncall", saver, interrupt_on={"record": True})
        for turn in range(1, 7):  # a full copy every 20 updates
            await graph.ainvoke(user(turn), config)
            [pending] = (await graph.aget_state(config)).interrupts
            decision = bind_decisions(pending.value, [{"type": "approve"}])
            await graph.ainvoke(Command(resume=decision), config)
        state = await graph.aget_state(config)
        history = [s async for s in graph.aget_state_history(config)]
    assert recorded(effects) == [1, 2, 3, 4, 5, 6]
    async with async_postgres_saver(postgres_url, **options) as saver:
        graph = build("fncall", saver, interrupt_on={"record": True})
        again = await graph.aget_state(config)
        assert serialized(saver, again.values["messages"]) == serialized(
            saver, state.values["messages"]
        )
        again_history = [s async for s in graph.aget_state_history(config)]
        assert [serialized(saver, s.values.get("messages", [])) for s in again_history] == [
            serialized(saver, s.values.get("messages", [])) for s in history
        ]
        assert pg_message_rows(postgres_url, thread) > 16
        await saver.adelete_thread(thread)
    assert pg_message_rows(postgres_url, thread) == 0


def test_a_message_changed_in_place_and_written_back_is_stored_again(tmp_path):
    """A node that assigns a field of a message in place and writes the same object
    back (its id replaces it, as ``add_messages`` does): the checkpoints hold the
    change."""
    from langgraph.graph import START, MessagesState, StateGraph

    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"answer {len(state['messages'])}")]}

    def amend(state: MessagesState) -> dict[str, Any]:
        first = state["messages"][0]
        first.content = f"{first.content} (amended)"
        return {"messages": [first]}

    builder = StateGraph(MessagesState)
    builder.add_node(answer)
    builder.add_node(amend)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", "amend")
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True) as saver:
        seen = capture_puts(saver)
        graph = builder.compile(checkpointer=saver)
        for turn in range(1, 4):
            # each checkpoint saved before the next step changes the message it holds
            graph.invoke(user(turn), CONFIG, durability="sync")
    with sqlite_saver(db, store_messages_once=True) as saver:
        graph = builder.compile(checkpointer=saver)
        messages = graph.get_state(CONFIG).values["messages"]
        assert messages[0].content.endswith("(amended) (amended) (amended)")
        for snapshot in graph.get_state_history(CONFIG):
            assert_as_saved(saver, snapshot, seen)


def test_a_message_its_reader_changed_is_read_again(tmp_path, effects):
    """The saver hands a run the messages it saved last (no deserializing); one whose
    field the caller assigned since is read from the table again."""
    db = tmp_path / "ck.db"
    with sqlite_saver(db, store_messages_once=True) as saver:
        graph = build("fncall", saver)
        result = graph.invoke(user(1), CONFIG)
        result["messages"][0].content = "changed by the reader"
        assert graph.get_state(CONFIG).values["messages"][0].content.startswith("turn 1:")
        result = graph.invoke(user(2), CONFIG)
        assert result["messages"][0].content.startswith("turn 1:")
        assert len(result["messages"]) == 8
