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

Nothing here knows about graphs; any channel whose value is a list of messages is kept
this way (``messages`` in ``create_fncall_graph`` and ``create_agent``).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import operator
import threading
import zlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage
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

__all__ = ["MESSAGES_TABLE", "MessageHistory", "StoredMessageMissing", "stores_messages_once"]

MESSAGES_TABLE = "fncall_messages"

_REF = "__fncall_messages__"  # the key of the value that stands for a list in a checkpoint
_PAIR = "fncall-pair"  # the type of a node row: the digests of its two halves
_THREADS_KEPT = 32  # threads whose messages a saver remembers (least recently used go)
_PACKED = "z1:"  # the type of a message row stored compressed: this prefix, then its own


def _msgpack_str(text: str) -> bytes:
    data = text.encode()
    return (bytes([0xA0 | len(data)]) if len(data) < 32 else bytes([0xD9, len(data)])) + data


# What every serialized LangChain message repeats (its class, its fields' names), as
# msgpack writes them: a short message compresses to a third of its bytes against it,
# where compressed alone it barely shrinks. Rows written with it are read with it: this
# list never changes (another list would be another prefix than ``z1:``).
_ZDICT = b"".join(
    _msgpack_str(word)
    for word in (
        "langchain_core.messages.human", "HumanMessage", "langchain_core.messages.ai",
        "AIMessage", "langchain_core.messages.tool", "ToolMessage",
        "langchain_core.messages.system", "SystemMessage", "content", "additional_kwargs",
        "response_metadata", "type", "human", "ai", "tool", "name", "id", "example",
        "tool_calls", "invalid_tool_calls", "usage_metadata", "tool_call_id", "artifact",
        "status", "success", "tool_call", "args", "model_validate_json", "lc_run--",
        "input_tokens", "output_tokens", "total_tokens", "finish_reason", "model_name",
        "stop",
    )
)  # fmt: skip


def _pack(type_: str, data: bytes) -> tuple[str, bytes]:
    """A message's row: its serialized bytes deflated (against :data:`_ZDICT`) when
    that is shorter (an encrypting serializer's bytes are not)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=_ZDICT)
    packed = packer.compress(data) + packer.flush()
    if len(packed) + len(_PACKED) < len(data):
        return _PACKED + type_, packed
    return type_, data


def _unpack(row: tuple[str, bytes]) -> tuple[str, bytes]:
    type_, data = row
    if not type_.startswith(_PACKED):
        return type_, data  # stored as the serializer wrote it (rows of earlier versions)
    unpacker = zlib.decompressobj(-15, zdict=_ZDICT)
    return type_[len(_PACKED) :], unpacker.decompress(data) + unpacker.flush()


S = TypeVar("S", bound=BaseCheckpointSaver)

Row = tuple[bytes, str, bytes]  # digest, type, value


class StoredMessageMissing(LookupError):
    """A checkpoint names a stored message (or node) that its table does not hold: the
    rows were deleted without the checkpoint, or the database was copied in part."""


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


@dataclass
class _Lineage:
    """What one thread's (and namespace's) last saved or read list was: its message
    objects, their digests, and the digest of each whole block ``(start, level)``
    (``2**level`` messages from ``start``) inside it."""

    items: list[BaseMessage] = field(default_factory=list)
    shapes: list[dict[str, Any]] = field(default_factory=list)
    leaves: list[bytes] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)  # what the checkpoint holds
    blocks: dict[tuple[int, int], bytes] = field(default_factory=dict)


@dataclass
class _Encoded:
    lineage_key: tuple[str, str]
    lineage: _Lineage
    rows: list[Row]
    added: dict[tuple[int, int], bytes]


class MessageHistory:
    """Message lists as blocks of stored messages: what a saver of
    :func:`stores_messages_once` does to checkpoints before saving and after reading.

    Args:
        serde: the saver's serializer (each message is stored as it serializes it).
    """

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde
        self._lock = threading.Lock()
        self._lineages: OrderedDict[tuple[str, str], _Lineage] = OrderedDict()
        self._rows: OrderedDict[str, dict[bytes, tuple[str, bytes]]] = OrderedDict()

    # -- saving

    def encode(
        self, config: RunnableConfig, checkpoint: Checkpoint
    ) -> tuple[Checkpoint, list[_Encoded]]:
        """``checkpoint`` with each list of messages replaced by its blocks' digests, and
        the rows to store first (call :meth:`saved` once they are)."""
        values = checkpoint.get("channel_values") or {}
        lists = [
            k
            for k, v in values.items()
            if isinstance(v, list) and v and all(isinstance(m, BaseMessage) for m in v)
        ]
        if not lists:
            return checkpoint, []
        conf = config.get("configurable") or {}
        thread, ns = str(conf.get("thread_id")), str(conf.get("checkpoint_ns", ""))
        fresh = not conf.get("checkpoint_id")  # a thread's first checkpoint
        encoded, new_values = [], dict(values)
        for channel in lists:
            ref, enc = self._encode((thread, f"{ns}\0{channel}"), values[channel], fresh)
            new_values[channel] = ref
            encoded.append(enc)
        return {**checkpoint, "channel_values": new_values}, encoded

    def _encode(
        self, key: tuple[str, str], messages: list[BaseMessage], fresh: bool
    ) -> tuple[dict[str, Any], _Encoded]:
        with self._lock:
            old = None if fresh else self._lineages.get(key)
        old = old or _Lineage()
        # the messages saved before, as the same objects with the same fields, need not
        # be serialized again (LangChain's approval middleware assigns an AI message's
        # tool_calls in place and writes the same object back)
        shapes = [_shape(m) for m in messages]
        same = list(
            map(
                operator.and_,
                map(operator.is_, old.items, messages),
                map(operator.eq, old.shapes, shapes),
            )
        )
        prefix = same.index(False) if False in same else len(same)
        leaves = old.leaves[:prefix]
        rows: list[Row] = []
        for message in messages[prefix:]:
            type_, data = self.serde.dumps_typed(message)
            digest = _digest(type_.encode(), data)  # of the bytes, however they are stored
            leaves.append(digest)
            rows.append((digest, *_pack(type_, data)))
        if prefix == len(old.items):  # messages were only added: every block holds
            blocks = old.blocks
        else:
            blocks = {
                (start, level): h
                for (start, level), h in old.blocks.items()
                if start + (1 << level) <= prefix
            }
        added: dict[tuple[int, int], bytes] = {}  # remembered once their rows are stored

        def block(start: int, level: int) -> bytes:
            if level == 0:
                return leaves[start]
            h = blocks.get((start, level)) or added.get((start, level))
            if h is None:
                half = 1 << (level - 1)
                left, right = block(start, level - 1), block(start + half, level - 1)
                h = added[(start, level)] = _digest(_PAIR.encode(), left, right)
                rows.append((h, _PAIR, left + right))
            return h

        heads, start, n = [], 0, len(messages)
        for level in reversed(range(n.bit_length())):
            if n >> level & 1:
                heads.append(block(start, level))
                start += 1 << level
        lineage = _Lineage(list(messages), shapes, leaves, heads=heads, blocks=blocks)
        return {_REF: heads, "n": n}, _Encoded(key, lineage, rows, added)

    def saved(self, thread_id: str, encoded: Sequence[_Encoded]) -> None:
        """The rows of ``encoded`` are stored: remember them, and the lists they made."""
        with self._lock:
            rows = self._rows.get(thread_id)
            for enc in encoded:
                enc.lineage.blocks.update(enc.added)
                self._remember(enc.lineage_key, enc.lineage)
                if rows is not None:
                    rows.update((d, (t, v)) for d, t, v in enc.rows)

    def _remember(self, key: tuple[str, str], lineage: _Lineage) -> None:
        self._lineages[key] = lineage
        self._lineages.move_to_end(key)
        while len(self._lineages) > _THREADS_KEPT:
            self._lineages.popitem(last=False)

    # -- reading

    def refs(self, checkpoint: Checkpoint) -> bool:
        """Whether ``checkpoint`` names stored messages."""
        return any(_is_ref(v) for v in (checkpoint.get("channel_values") or {}).values())

    def known(self, thread_id: str) -> bool:
        """Whether this process holds ``thread_id``'s rows (or has nothing to look up)."""
        with self._lock:
            return thread_id in self._rows

    def loaded(self, thread_id: str, rows: Sequence[Row]) -> None:
        """All of ``thread_id``'s rows, as read from the table."""
        with self._lock:
            known = self._rows.setdefault(thread_id, {})
            known.update((bytes(d), (t, bytes(v))) for d, t, v in rows)
            self._rows.move_to_end(thread_id)
            while len(self._rows) > _THREADS_KEPT:
                self._rows.popitem(last=False)

    def decode(self, tup: CheckpointTuple, *, head: bool = False) -> CheckpointTuple:
        """``tup`` with its stored lists read back; with ``head`` (the checkpoint a run
        goes on from), the lists are remembered for the next save."""
        values = tup.checkpoint.get("channel_values") or {}
        refs = {k: v for k, v in values.items() if _is_ref(v)}
        if not refs:
            return tup
        conf = tup.config["configurable"]
        thread, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        with self._lock:
            rows = self._rows.get(thread, {})
        new_values = dict(values)
        for channel, ref in refs.items():
            key = (thread, f"{ns}\0{channel}")
            if head and (same := self._unchanged(key, ref)) is not None:
                new_values[channel] = same
                continue
            lineage = _Lineage()
            new_values[channel] = self._decode(thread, conf, ref, rows, lineage)
            if head:
                with self._lock:
                    self._remember(key, lineage)
        return tup._replace(checkpoint={**tup.checkpoint, "channel_values": new_values})

    def _unchanged(self, key: tuple[str, str], ref: dict[str, Any]) -> list[BaseMessage] | None:
        """The messages this process last saved or read as ``ref``, if none of them has a
        field assigned since: the run goes on with them, as LangGraph goes on from one
        step to the next with the same objects, without deserializing the thread."""
        with self._lock:
            known = self._lineages.get(key)
        if known is None or len(known.items) != int(ref["n"]):
            return None
        if known.heads != [bytes(d) for d in ref[_REF]]:
            return None
        if known.shapes != [_shape(m) for m in known.items]:
            return None  # changed in place (by whoever was handed them): read them again
        return list(known.items)

    def _decode(
        self,
        thread: str,
        conf: dict[str, Any],
        ref: dict[str, Any],
        rows: dict[bytes, tuple[str, bytes]],
        lineage: _Lineage,
    ) -> list[BaseMessage]:
        def row(digest: bytes) -> tuple[str, bytes]:
            found = rows.get(digest)
            if found is None:
                raise StoredMessageMissing(
                    f"thread {thread!r}, checkpoint {conf.get('checkpoint_id')}: stored "
                    f"message {digest.hex()} is missing from table {MESSAGES_TABLE}"
                )
            return found

        def expand(digest: bytes, start: int, level: int) -> None:
            if level == 0:
                lineage.leaves.append(digest)
                message = self.serde.loads_typed(_unpack(row(digest)))
                lineage.items.append(message)
                lineage.shapes.append(_shape(message))
                return
            lineage.blocks[(start, level)] = digest
            type_, value = row(digest)
            if type_ != _PAIR or len(value) != 32:
                raise StoredMessageMissing(
                    f"thread {thread!r}: row {digest.hex()} of {MESSAGES_TABLE} is not a "
                    f"block of {1 << level} messages"
                )
            half = 1 << (level - 1)
            expand(value[:16], start, level - 1)
            expand(value[16:], start + half, level - 1)

        n, start = int(ref["n"]), 0
        levels = [level for level in reversed(range(n.bit_length())) if n >> level & 1]
        for digest, level in zip(ref[_REF], levels, strict=True):
            expand(bytes(digest), start, level)
            start += 1 << level
        lineage.heads = [bytes(d) for d in ref[_REF]]
        return list(lineage.items)

    def forget(self, thread_id: str) -> None:
        """The thread was deleted: drop what this process remembers of it."""
        with self._lock:
            self._rows.pop(thread_id, None)
            for key in [k for k in self._lineages if k[0] == thread_id]:
                del self._lineages[key]


def _shape(message: BaseMessage) -> dict[str, Any]:
    """A message's field values (held, so compared by identity first, then by value)."""
    fields = message.__dict__.copy()
    if extra := getattr(message, "__pydantic_extra__", None):
        fields["\0extra"] = extra.copy()
    return fields


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and _REF in value


def _thread(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get("thread_id"))


# -- the savers: the same steps over each database's table


def _rows_of(thread: str, encoded: Sequence[_Encoded]) -> list[tuple[str, bytes, str, bytes]]:
    return [(thread, d, t, v) for enc in encoded for d, t, v in enc.rows]


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
_MADE: dict[type, type] = {}
_MADE_LOCK = threading.Lock()


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
    names = {c.__module__ + "." + c.__name__ for c in saver_cls.__mro__}
    with _MADE_LOCK:
        made = _MADE.get(saver_cls)
        if made is not None:
            return made  # type: ignore[return-value]
        found = next(((q, m) for q, m in _MIXINS.items() if q in names), None)
        if found is None:
            raise TypeError(
                f"store_messages_once: {saver_cls.__name__} is not a LangGraph SQLite or "
                "PostgreSQL saver (SqliteSaver, AsyncSqliteSaver, PostgresSaver, "
                "AsyncPostgresSaver)"
            )
        qualname, mixin = found
        module, _, cls_name = qualname.rpartition(".")
        base = getattr(importlib.import_module(module), cls_name)
        # under saver_cls's own put (its retries and errors), over the LangGraph saver's
        under = type(saver_cls.__name__, (mixin, base), {"__doc__": base.__doc__})
        if saver_cls is not base:
            made = type(saver_cls.__name__, (saver_cls, under), {"__doc__": saver_cls.__doc__})
        else:
            made = under
        _MADE[saver_cls] = made
        return made  # type: ignore[return-value]
