"""Checkpoints that store each message once: a thread's storage grows with its length.

A LangGraph checkpoint holds every channel's whole value, so each step of a thread
saves its whole message history again: storage grows with the square of the thread's
length (a thread of 1,000 tool turns is gigabytes) and every step serializes and writes
the whole history, so turns get slower as the thread grows.

:func:`stores_messages_once` makes a saver class that keeps message lists apart. Each
message is serialized once (by the saver's own serializer, so an encrypting serializer
still applies), stored in the table ``fncall_messages`` beside the checkpoints, keyed by
the thread and a digest of its bytes (deflated against the names every LangChain message
repeats, when that is shorter: a short message takes about a third of its serialized
bytes); a checkpoint holds only a few digests in place of the list. The list is cut into power-of-two blocks (as a binary counter cuts a number:
13 messages are blocks of 8, 4 and 1), each block a node naming its two halves, so a
checkpoint holds at most log2(n) + 1 digests of 16 bytes, a new message adds one row
and on average one node, and an edited or removed message changes only the nodes above
it. Reading a checkpoint gives back the whole list, as LangGraph stored it: ``get_state``,
``get_state_history``, resuming, forks and pending writes are as with the plain saver.

What it costs: a saver remembers, per thread, the messages it last saved or read (the
objects LangGraph hands over, and their fields), so a step serializes only the messages
it added or whose fields were assigned (a node may set ``message.content`` and write the
message back); a change *inside* a field's value (a key added to an existing
``additional_kwargs`` dict) is not seen: replace the message, as ``add_messages`` does by
id. A run going on from the checkpoint this process saved (or read) last gets the same
message objects back instead of deserializing the thread (as LangGraph hands them from
one step to the next), unless one had a field assigned since (the caller of ``invoke``
changed a message of its result): then the list is read from the table. Other reads
deserialize their messages, as the plain saver does; the first read of a thread in a
process loads its rows once. ``delete_thread`` deletes the thread's rows too.

Each of these checks looks at every message of the list once per save or read (a copy
of its fields' dict, about two microseconds a message), where the plain saver
serializes the whole list and writes its bytes again at every step.

The lists' blocks, and what a saver remembers of them, are :mod:`.message_blocks`'s; this
module is the savers over each database's table (SQLite and PostgreSQL, sync and async).

Nothing here knows about graphs; any channel whose value is a list of messages is kept
this way (``messages`` in ``create_agent`` and any ``add_messages`` channel), and so is
a delta channel's full copy of one: ``create_fncall_graph``'s history is LangGraph's
``DeltaChannel``, whose checkpoints hold only what each step added and, every so many
updates, a whole copy (stored once here, given back as the copy it was). A thread saved
whole before (its lists stored as digests) is read back from here when a delta channel
replays from it: LangGraph's fast path reads the stored bytes as they are.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from .claims.store import asaver_connection, saver_connection
from .message_blocks import MESSAGES_TABLE, Encoded, MessageHistory, Row
from .saver_mixins import SaverMixins

__all__ = []

S = TypeVar("S", bound=BaseCheckpointSaver)


def _thread(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get("thread_id"))


# -- the savers: the same steps over each database's table


def _rows_of(thread: str, encoded: Sequence[Encoded]) -> list[tuple[str, bytes, str, bytes]]:
    return [(thread, d, t, v) for enc in encoded for d, t, v in enc.rows]


def _seeds_stored_once(history: MessageHistory, found: Mapping[str, Any]) -> bool:
    """Whether a delta channel's history (LangGraph's ``DeltaChannel``, the graph's
    ``messages``) starts from a full copy this saver stored as digests: a thread saved
    before its graph's history became a delta channel."""
    seeds = {ch: entry["seed"] for ch, entry in found.items() if "seed" in entry}
    return history.refs({"channel_values": seeds})  # type: ignore[typeddict-item]


class _MessagesOnce:
    """Over a sync LangGraph saver: message lists stored once (see the module). A
    database's class says how its table is made, written, read and emptied."""

    serde: SerializerProtocol

    @property
    def history(self) -> MessageHistory:
        """What this saver remembers of its threads' messages."""
        if "_history" not in self.__dict__:
            self.__dict__["_history"] = MessageHistory(self.serde)
        return self.__dict__["_history"]

    def _store(self, rows: list[tuple[str, bytes, str, bytes]]) -> None:
        raise NotImplementedError

    def _fetch(self, thread_id: str) -> list[Row]:
        raise NotImplementedError

    def _drop(self, thread_id: str) -> None:
        raise NotImplementedError

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        stored, encoded = self.history.encode(config, checkpoint)
        if rows := _rows_of(_thread(config), encoded):
            self._store(rows)  # before the checkpoint that names them: a crash leaves rows
        saved = super().put(config, stored, metadata, new_versions)  # type: ignore[misc]
        self.history.saved(_thread(config), encoded)
        return saved

    def _load(self, tup: CheckpointTuple) -> None:
        thread = _thread(tup.config)
        if self.history.refs(tup.checkpoint) and not self.history.known(thread):
            self.history.loaded(thread, self._fetch(thread))

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        tup = super().get_tuple(config)  # type: ignore[misc]
        if tup is None:
            return None
        self._load(tup)
        return self.history.decode(tup, head=True)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        # a saver may hold its lock while it lists: read the rows once it is done
        tuples = list(super().list(config, filter=filter, before=before, limit=limit))  # type: ignore[misc]
        for tup in tuples:
            self._load(tup)
            yield self.history.decode(tup)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        found = super().get_delta_channel_history(config=config, channels=channels)  # type: ignore[misc]
        if not _seeds_stored_once(self.history, found):
            return found
        # the saver's fast path read a full copy as stored (digests): walk the checkpoints
        # as this saver reads them
        return BaseCheckpointSaver.get_delta_channel_history(
            self,  # type: ignore[arg-type]
            config=config,
            channels=channels,
        )

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)  # type: ignore[misc]
        self._drop(str(thread_id))
        self.history.forget(str(thread_id))


class _AsyncMessagesOnce:
    """:class:`_MessagesOnce` over an async LangGraph saver."""

    serde: SerializerProtocol
    history = _MessagesOnce.history

    async def _astore(self, rows: list[tuple[str, bytes, str, bytes]]) -> None:
        raise NotImplementedError

    async def _afetch(self, thread_id: str) -> list[Row]:
        raise NotImplementedError

    async def _adrop(self, thread_id: str) -> None:
        raise NotImplementedError

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        stored, encoded = self.history.encode(config, checkpoint)
        if rows := _rows_of(_thread(config), encoded):
            await self._astore(rows)
        saved = await super().aput(config, stored, metadata, new_versions)  # type: ignore[misc]
        self.history.saved(_thread(config), encoded)
        return saved

    async def _aload(self, tup: CheckpointTuple) -> None:
        thread = _thread(tup.config)
        if self.history.refs(tup.checkpoint) and not self.history.known(thread):
            self.history.loaded(thread, await self._afetch(thread))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        tup = await super().aget_tuple(config)  # type: ignore[misc]
        if tup is None:
            return None
        await self._aload(tup)
        return self.history.decode(tup, head=True)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        tuples = [
            t
            async for t in super().alist(  # type: ignore[misc]
                config, filter=filter, before=before, limit=limit
            )
        ]
        for tup in tuples:
            await self._aload(tup)
            yield self.history.decode(tup)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        found = await super().aget_delta_channel_history(config=config, channels=channels)  # type: ignore[misc]
        if not _seeds_stored_once(self.history, found):
            return found
        return await BaseCheckpointSaver.aget_delta_channel_history(
            self,  # type: ignore[arg-type]
            config=config,
            channels=channels,
        )

    async def adelete_thread(self, thread_id: str) -> None:
        await super().adelete_thread(thread_id)  # type: ignore[misc]
        await self._adrop(str(thread_id))
        self.history.forget(str(thread_id))


# -- SQLite

_SQLITE_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {MESSAGES_TABLE} (thread_id TEXT NOT NULL, "
    "digest BLOB NOT NULL, type TEXT NOT NULL, value BLOB NOT NULL, "
    "PRIMARY KEY (thread_id, digest)) WITHOUT ROWID"
)
_SQLITE_INSERT = (
    f"INSERT OR IGNORE INTO {MESSAGES_TABLE} (thread_id, digest, type, value) VALUES (?, ?, ?, ?)"
)
_SELECT = f"SELECT digest, type, value FROM {MESSAGES_TABLE} WHERE thread_id = ?"
_DELETE = f"DELETE FROM {MESSAGES_TABLE} WHERE thread_id = ?"


class _SqliteMessagesOnce(_MessagesOnce):
    conn: Any
    cursor: Callable[..., Any]

    def setup(self) -> None:
        super().setup()  # type: ignore[misc]
        if not self.__dict__.get("_history_ready"):
            # called under the saver's lock, on its connection
            self.conn.execute(_SQLITE_CREATE)
            self.conn.commit()
            self.__dict__["_history_ready"] = True

    def _store(self, rows: list[tuple[str, bytes, str, bytes]]) -> None:
        with self.cursor() as cur:
            cur.executemany(_SQLITE_INSERT, rows)

    def _fetch(self, thread_id: str) -> list[Row]:
        with self.cursor(transaction=False) as cur:
            return cur.execute(_SELECT, (thread_id,)).fetchall()

    def _drop(self, thread_id: str) -> None:
        with self.cursor() as cur:
            cur.execute(_DELETE, (thread_id,))


class _AsyncSqliteMessagesOnce(_AsyncMessagesOnce):
    conn: Any
    lock: asyncio.Lock

    async def setup(self) -> None:
        await super().setup()  # type: ignore[misc]
        if not self.__dict__.get("_history_ready"):
            async with self.lock:
                await self.conn.execute(_SQLITE_CREATE)
                await self.conn.commit()
            self.__dict__["_history_ready"] = True

    async def _write(self, sql: str, params: Any, *, many: bool = False) -> None:
        await self.setup()
        async with self.lock:
            await (self.conn.executemany if many else self.conn.execute)(sql, params)
            await self.conn.commit()

    async def _astore(self, rows: list[tuple[str, bytes, str, bytes]]) -> None:
        await self._write(_SQLITE_INSERT, rows, many=True)

    async def _afetch(self, thread_id: str) -> list[Row]:
        async with self.lock, self.conn.execute(_SELECT, (thread_id,)) as cur:
            return list(await cur.fetchall())

    async def _adrop(self, thread_id: str) -> None:
        await self._write(_DELETE, (thread_id,))


# -- PostgreSQL

_PG_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {MESSAGES_TABLE} (thread_id TEXT NOT NULL, "
    "digest BYTEA NOT NULL, type TEXT NOT NULL, value BYTEA NOT NULL, "
    "PRIMARY KEY (thread_id, digest))"
)
_PG_INSERT = (
    f"INSERT INTO {MESSAGES_TABLE} (thread_id, digest, type, value) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT DO NOTHING"
)
_PG_SELECT = _SELECT.replace("?", "%s")
_PG_DELETE = _DELETE.replace("?", "%s")


class _PostgresMessagesOnce(_MessagesOnce):
    conn: Any
    lock: threading.Lock

    def _execute(self, sql: str, params: Any = (), *, many: bool = False) -> list[Any]:
        from psycopg.rows import tuple_row

        with (
            saver_connection(self) as conn,
            conn.transaction(),
            conn.cursor(row_factory=tuple_row) as cur,
        ):
            if many:
                cur.executemany(sql, params)
                return []
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def setup(self) -> None:
        super().setup()  # type: ignore[misc]
        self._execute(_PG_CREATE)

    def _store(self, rows: list[tuple[str, bytes, str, bytes]]) -> None:
        self._execute(_PG_INSERT, rows, many=True)

    def _fetch(self, thread_id: str) -> list[Row]:
        return self._execute(_PG_SELECT, (thread_id,))

    def _drop(self, thread_id: str) -> None:
        self._execute(_PG_DELETE, (thread_id,))


class _AsyncPostgresMessagesOnce(_AsyncMessagesOnce):
    conn: Any
    lock: asyncio.Lock

    async def _execute(self, sql: str, params: Any = (), *, many: bool = False) -> list[Any]:
        from psycopg.rows import tuple_row

        async with (
            asaver_connection(self) as conn,
            conn.transaction(),
            conn.cursor(row_factory=tuple_row) as cur,
        ):
            if many:
                await cur.executemany(sql, params)
                return []
            await cur.execute(sql, params)
            return list(await cur.fetchall()) if cur.description else []

    async def setup(self) -> None:
        await super().setup()  # type: ignore[misc]
        await self._execute(_PG_CREATE)

    async def _astore(self, rows: list[tuple[str, bytes, str, bytes]]) -> None:
        await self._execute(_PG_INSERT, rows, many=True)

    async def _afetch(self, thread_id: str) -> list[Row]:
        return await self._execute(_PG_SELECT, (thread_id,))

    async def _adrop(self, thread_id: str) -> None:
        await self._execute(_PG_DELETE, (thread_id,))


_MIXINS: dict[str, type] = {
    "langgraph.checkpoint.sqlite.aio.AsyncSqliteSaver": _AsyncSqliteMessagesOnce,
    "langgraph.checkpoint.sqlite.SqliteSaver": _SqliteMessagesOnce,
    "langgraph.checkpoint.postgres.aio.AsyncPostgresSaver": _AsyncPostgresMessagesOnce,
    "langgraph.checkpoint.postgres.PostgresSaver": _PostgresMessagesOnce,
}


def _under_own_put(saver_cls: type, family: str, mixin: type) -> type:
    module, _, cls_name = family.rpartition(".")
    base = getattr(importlib.import_module(module), cls_name)
    # under saver_cls's own put (its retries and errors), over the LangGraph saver's
    under = type(saver_cls.__name__, (mixin, base), {"__doc__": base.__doc__})
    if saver_cls is base:
        return under
    return type(saver_cls.__name__, (saver_cls, under), {"__doc__": saver_cls.__doc__})


_MADE = SaverMixins("store_messages_once", _MIXINS, _under_own_put)


def stores_messages_once(saver_cls: type[S]) -> type[S]:
    """A subclass of ``saver_cls`` (a LangGraph SQLite or PostgreSQL saver, sync or
    async, or a subclass of one) that stores each message of a thread once.

    Its checkpoints hold a few digests in place of each message list; the messages are
    in the table ``fncall_messages`` beside the checkpoints (see the module). It reads
    and writes the same checkpoints and writes as ``saver_cls`` otherwise, and the
    subclass sits under ``saver_cls``'s own ``put``, so what ``saver_cls`` does around a
    save (retries, errors) covers the messages' rows too.

    Use it through ``sqlite_saver(path, store_messages_once=True)`` (and
    ``async_sqlite_saver``, ``postgres_saver``, ``async_postgres_saver``); a database
    written with it must be read with it.

    Example:
        >>> import sqlite3
        >>> from langgraph.checkpoint.sqlite import SqliteSaver
        >>> saver = stores_messages_once(SqliteSaver)(sqlite3.connect(":memory:"))
        >>> isinstance(saver, SqliteSaver)
        True
    """
    return _MADE(saver_cls)  # type: ignore[return-value]
