"""Checkpoints kept per thread: a saver that deletes a thread's older checkpoints.

LangGraph keeps every checkpoint of a thread, each with its bookkeeping (the channels'
versions, what each node has seen, the step's metadata, about 1 KB) and the pending
writes of its step (which hold each new message once more). With messages stored once
(:mod:`.history`) that bookkeeping is most of a long thread's bytes: several times the
messages' own.

:func:`keeps_checkpoints` makes a saver class that, after each checkpoint it saves,
deletes the checkpoints of that thread (and namespace) older than its last ``keep``
ones, with their pending writes (and, on PostgreSQL, the channel blobs only they named),
back to the last full copy of every delta channel before them: a ``DeltaChannel`` (the
history of ``create_fncall_graph``) saves its whole value only every so many updates,
and a checkpoint after such a copy is read back from it and the writes since, so those
stay (at most the channel's ``snapshot_frequency`` updates more). The newest checkpoint
(the head a run goes on from, with the pending writes an interrupted step or a waiting
approval holds) is always among those kept; nothing in the tool-call claims' own tables
is touched. The oldest kept checkpoint loses its parent
(``parent_config`` is ``None``), as LangGraph's own ``prune`` leaves it.

What is kept, precisely: the thread's ``keep`` newest checkpoints (by id, whichever
branch each is on), and every older checkpoint one of them is read from: a checkpoint
that holds no full copy of a delta channel is read from its parent's writes, back along
its own parent chain to the last copy. A fork (time travel to a kept checkpoint, then
new turns, or LangGraph's ``as_node="__copy__"``, whose copy has the original's parent)
therefore keeps the line its head is read from, however old; what no kept checkpoint
needs, an abandoned branch's older part included, is deleted.

What it costs: the history of a thread goes back ``keep`` checkpoints only:
``get_state_history`` lists those (and the ones they need), and time travel (a fork or
replay from an older checkpoint) is no longer possible beyond them. A config naming a
checkpoint the saver does not hold is refused (:class:`CheckpointNotFound`, see
:func:`refuses_missing_checkpoints`): LangGraph would read it as an empty thread, make
that the head, and the next save would delete the real history. Like LangGraph's
``prune``, it assumes one run at a time on a thread, going on from its head: a run
forking from a checkpoint that another process deletes meanwhile saves a checkpoint
whose parent is gone.

A deletion that fails (a database locked past its busy timeout) is logged and left to
the next save, which deletes what this one left: a run never fails because of it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from .claims.store import asaver_connection, saver_connection
from .saver_mixins import SaverMixins

__all__ = ["CheckpointNotFound"]

log = logging.getLogger(__name__)

S = TypeVar("S", bound=BaseCheckpointSaver)


def check_keep(keep: int | None) -> int | None:
    """``keep`` if it is ``None`` or a whole number of checkpoints (at least 1)."""
    if keep is None:
        return None
    if isinstance(keep, bool) or not isinstance(keep, int):
        raise TypeError(f"keep_checkpoints must be an int or None, got {keep!r}")
    if keep < 1:
        raise ValueError(f"keep_checkpoints must be at least 1 (the thread's head), got {keep}")
    return keep


def _where(config: RunnableConfig) -> tuple[str, str]:
    conf = config.get("configurable") or {}
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))


def _warn(where: tuple[str, str], exc: BaseException) -> None:
    log.warning(
        "thread %r: older checkpoints not deleted (the next save deletes them): %s",
        where[0],
        exc,
    )


class CheckpointNotFound(LookupError):
    """A config names a checkpoint its saver does not hold: deleted by
    ``keep_checkpoints`` (:attr:`keep_checkpoints` says K), or never saved there
    (:attr:`keep_checkpoints` is ``None``). Nothing was read, run or written.

    LangGraph reads a missing checkpoint as an empty thread: ``update_state`` or a run
    from it would make an empty state the thread's head, and a saver that keeps the
    last K checkpoints would then delete the real ones. ``get_state_history`` lists the
    checkpoints a config may name.

    Attributes:
        thread_id: the thread the config names.
        checkpoint_ns: its namespace (``""`` for the graph itself).
        checkpoint_id: the checkpoint it names.
        keep_checkpoints: K when the saver deleted the checkpoint (an id LangGraph made
            before the thread's head, on a saver that keeps the last K); ``None`` when
            it never had it.
    """

    def __init__(
        self,
        message: str,
        *,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        keep_checkpoints: int | None,
    ) -> None:
        super().__init__(message)
        self.thread_id, self.checkpoint_ns = thread_id, checkpoint_ns
        self.checkpoint_id, self.keep_checkpoints = checkpoint_id, keep_checkpoints

    def __str__(self) -> str:  # LookupError's own repr-quotes a single argument
        return str(self.args[0])


def _named(config: RunnableConfig) -> str | None:
    return (config.get("configurable") or {}).get("checkpoint_id") or None


def _not_found(
    saver: Any, config: RunnableConfig, head: CheckpointTuple | None
) -> CheckpointNotFound:
    """The error for a config naming a checkpoint ``saver`` does not hold, ``head`` the
    thread's newest checkpoint: one older than it, on a saver that keeps the last K,
    was deleted (a checkpoint id sorts by the time it was made)."""
    thread, ns = _where(config)
    named = str(_named(config))
    keep = getattr(saver, "keep_checkpoints", None)  # a saver that keeps the last K
    where = f"thread {thread!r}" + (f" (namespace {ns!r})" if ns else "")
    if keep is not None and head is not None and _is_id(named) and named < head.checkpoint["id"]:
        message = (
            f"checkpoint {named!r} of {where} was deleted: this saver keeps each thread's "
            f"last {keep} checkpoints (keep_checkpoints={keep}). Nothing was read or "
            "written; get_state_history lists the checkpoints a config may name."
        )
    else:
        keep = None
        message = (
            f"this saver never had checkpoint {named!r} of {where}. Nothing was read or "
            "written; get_state_history lists the checkpoints a config may name."
        )
    return CheckpointNotFound(
        message, thread_id=thread, checkpoint_ns=ns, checkpoint_id=named, keep_checkpoints=keep
    )


def _is_id(named: str) -> bool:
    """Whether ``named`` is an id LangGraph makes: a UUID of version 6, which sorts by
    the time it was made (a UUID of another kind, a typo, was never a checkpoint's)."""
    try:
        return uuid.UUID(named).version == 6
    except ValueError:
        return False


def _head_of(config: RunnableConfig) -> RunnableConfig:
    conf = config.get("configurable") or {}
    return {"configurable": {k: conf[k] for k in ("thread_id", "checkpoint_ns") if k in conf}}


class _RefusesMissing:
    """Over a saver: ``get_tuple``/``aget_tuple`` of a config naming a checkpoint it
    does not hold raises :class:`CheckpointNotFound` (see
    :func:`refuses_missing_checkpoints`)."""

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = super().get_tuple(config)  # type: ignore[misc]
        if found is None and _named(config):
            raise _not_found(self, config, super().get_tuple(_head_of(config)))  # type: ignore[misc]
        return found

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = await super().aget_tuple(config)  # type: ignore[misc]
        if found is None and _named(config):
            head = await super().aget_tuple(_head_of(config))  # type: ignore[misc]
            raise _not_found(self, config, head)
        return found


_REFUSING: dict[type, type] = {}
_REFUSING_LOCK = threading.Lock()


def refuses_missing_checkpoints(saver_cls: type[S]) -> type[S]:
    """A subclass of ``saver_cls`` (any LangGraph saver class) whose ``get_tuple`` and
    ``aget_tuple`` raise :class:`CheckpointNotFound` for a config naming a checkpoint
    (``checkpoint_id``) the saver does not hold, instead of returning ``None``.

    Every write LangGraph makes from a named checkpoint reads it that way first
    (``update_state``, ``bulk_update_state``, a run whose config names one: ``invoke``,
    ``stream`` and their async forms, in every ``durability``), and reads ``None`` as
    an empty thread to go on from: refused there, nothing is run or written.
    ``get_state`` of such a config raises the same error (LangGraph's own savers
    return an empty state). A config naming no checkpoint reads the thread's newest, or
    ``None`` for a new thread, as before.

    The savers of :mod:`.savers` (``sqlite_saver`` and the others) are made with it.

    Example:
        >>> import sqlite3
        >>> from langgraph.checkpoint.sqlite import SqliteSaver
        >>> saver = refuses_missing_checkpoints(SqliteSaver)(sqlite3.connect(":memory:"))
        >>> saver.get_tuple({"configurable": {"thread_id": "t"}}) is None
        True
        >>> saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_id": "x"}})
        Traceback (most recent call last):
        ...
        fncall_graph.adapters.checkpoint.keep.CheckpointNotFound: this saver never had checkpoint 'x' of thread 't'. Nothing was read or written; get_state_history lists the checkpoints a config may name.
    """
    with _REFUSING_LOCK:
        made = _REFUSING.get(saver_cls)
        if made is None:
            made = _REFUSING[saver_cls] = type(
                saver_cls.__name__, (_RefusesMissing, saver_cls), {"__doc__": saver_cls.__doc__}
            )
        return made  # type: ignore[return-value]


class _Keeps:
    """Over a sync saver: after each ``put``, the thread's checkpoints beyond the last
    ``keep_checkpoints`` are deleted (see the module)."""

    keep_checkpoints: int = 1

    def _prune(self, thread_id: str, ns: str, keep: int) -> None:
        raise NotImplementedError

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = super().put(config, checkpoint, metadata, new_versions)  # type: ignore[misc]
        where = _where(saved)
        try:
            self._prune(*where, self.keep_checkpoints)
        except _db_errors() as exc:
            _warn(where, exc)
        return saved


class _AsyncKeeps:
    """:class:`_Keeps` over an async saver."""

    keep_checkpoints: int = 1

    async def _aprune(self, thread_id: str, ns: str, keep: int) -> None:
        raise NotImplementedError

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = await super().aput(config, checkpoint, metadata, new_versions)  # type: ignore[misc]
        where = _where(saved)
        try:
            await self._aprune(*where, self.keep_checkpoints)
        except _db_errors() as exc:
            _warn(where, exc)
        return saved


def _db_errors() -> tuple[type[BaseException], ...]:
    """SQLite's errors, and PostgreSQL's once psycopg is loaded: a PostgreSQL saver loads
    it before it can fail, and a graph that never uses one does not pay for its import."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.Error,) if psycopg is None else (sqlite3.Error, psycopg.Error)


# -- SQLite: checkpoints and writes (a checkpoint's row holds its channel values)


# The checkpoints kept: the ``keep`` newest, and each one's parent while it holds no full
# copy of every delta channel: a ``DeltaChannel`` (the graph's ``messages``) stores a full
# copy only now and then, and a checkpoint after one is read back from that copy and the
# writes stored on its ancestors since, along its own parent chain (a fork's line runs
# through checkpoints older than the newest ``keep``). LangGraph's metadata counts the
# updates since each delta channel's last copy: a checkpoint with no counts holds them
# all (a copy, a thread's first, or one saved before delta channels).
def _kept(thread: str, ns: str, keep: str, holds_all: str) -> str:
    """The ``kept(id)`` CTE, in a database's own placeholders (each named, used more
    than once) and its own test of a checkpoint ``c``'s metadata."""
    newest = (
        f"SELECT checkpoint_id FROM (SELECT checkpoint_id FROM checkpoints "
        f"WHERE thread_id = {thread} AND checkpoint_ns = {ns} "
        f"ORDER BY checkpoint_id DESC LIMIT {keep}) AS n"
    )
    parents = (
        f"SELECT c.parent_checkpoint_id FROM kept JOIN checkpoints c "
        f"ON c.thread_id = {thread} AND c.checkpoint_ns = {ns} AND c.checkpoint_id = kept.id "
        f"WHERE c.parent_checkpoint_id IS NOT NULL AND NOT ({holds_all})"
    )
    return f"WITH RECURSIVE kept(id) AS ({newest} UNION {parents}) "


def _gone(thread: str, ns: str) -> tuple[str, str]:
    """After checkpoints were deleted: the writes of steps whose checkpoint is gone
    (older than the thread's newest, whose writes may be saved before it is), and the
    parent of a kept checkpoint whose parent is gone, ``NULL`` as LangGraph's ``prune``
    leaves it."""
    ids = (
        f"SELECT checkpoint_id FROM checkpoints WHERE thread_id = {thread} AND checkpoint_ns = {ns}"
    )
    mine = f"thread_id = {thread} AND checkpoint_ns = {ns}"
    return (
        f"DELETE FROM {{writes}} WHERE {mine} AND checkpoint_id NOT IN ({ids}) "
        f"AND checkpoint_id < (SELECT MAX(checkpoint_id) FROM checkpoints WHERE {mine})",
        f"UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE {mine} "
        f"AND parent_checkpoint_id IS NOT NULL AND parent_checkpoint_id NOT IN ({ids})",
    )


_SQLITE_DELETE = _kept(
    "?1",
    "?2",
    "?3",
    "json_extract(CAST(c.metadata AS TEXT), '$.counters_since_delta_snapshot') IS NULL",
) + (
    "DELETE FROM checkpoints WHERE thread_id = ?1 AND checkpoint_ns = ?2 "
    "AND checkpoint_id NOT IN (SELECT id FROM kept)"
)
_SQLITE_AFTER = tuple(sql.format(writes="writes") for sql in _gone("?1", "?2"))


class _SqliteKeeps(_Keeps):
    cursor: Any

    def _prune(self, thread_id: str, ns: str, keep: int) -> None:
        with self.cursor() as cur:  # one transaction, under the saver's lock
            if cur.execute(_SQLITE_DELETE, (thread_id, ns, keep)).rowcount:
                for sql in _SQLITE_AFTER:
                    cur.execute(sql, (thread_id, ns))


class _AsyncSqliteKeeps(_AsyncKeeps):
    conn: Any
    lock: asyncio.Lock

    async def _aprune(self, thread_id: str, ns: str, keep: int) -> None:
        async with self.lock:
            async with self.conn.execute(_SQLITE_DELETE, (thread_id, ns, keep)) as cur:
                deleted = cur.rowcount
            for sql in _SQLITE_AFTER if deleted else ():
                await self.conn.execute(sql, (thread_id, ns))
            await self.conn.commit()


# -- PostgreSQL: checkpoints, writes, and the channel blobs only deleted checkpoints name

_PG_DELETE = _kept(
    "%(t)s", "%(ns)s", "%(keep)s", "c.metadata -> 'counters_since_delta_snapshot' IS NULL"
) + (
    "DELETE FROM checkpoints WHERE thread_id = %(t)s AND checkpoint_ns = %(ns)s "
    "AND checkpoint_id NOT IN (SELECT id FROM kept) RETURNING checkpoint -> 'channel_versions'"
)
_PG_AFTER = tuple(sql.format(writes="checkpoint_writes") for sql in _gone("%(t)s", "%(ns)s"))
# a blob a deleted checkpoint named that no kept checkpoint names
_PG_BLOBS = (
    "DELETE FROM checkpoint_blobs b WHERE b.thread_id = %s AND b.checkpoint_ns = %s "
    "AND b.channel = %s AND b.version = ANY(%s) AND NOT EXISTS (SELECT 1 FROM checkpoints c "
    "WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns "
    "AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)"
)


def _freed(rows: list[Any]) -> dict[str, list[str]]:
    """The channel versions the deleted checkpoints named, by channel."""
    freed: dict[str, set[str]] = {}
    for (versions,) in rows:
        for channel, version in (versions or {}).items():
            freed.setdefault(channel, set()).add(str(version))
    return {channel: sorted(versions) for channel, versions in freed.items()}


def _pg_statements(thread_id: str, ns: str, deleted: list[Any]) -> Iterator[tuple[str, Any]]:
    if not deleted:
        return
    for sql in _PG_AFTER:
        yield sql, {"t": thread_id, "ns": ns}
    for channel, versions in _freed(deleted).items():
        yield _PG_BLOBS, (thread_id, ns, channel, versions)


class _PostgresKeeps(_Keeps):
    conn: Any
    lock: threading.Lock

    def _prune(self, thread_id: str, ns: str, keep: int) -> None:
        from psycopg.rows import tuple_row

        with (
            saver_connection(self) as conn,
            conn.transaction(),
            conn.cursor(row_factory=tuple_row) as cur,
        ):
            deleted = cur.execute(_PG_DELETE, {"t": thread_id, "ns": ns, "keep": keep}).fetchall()
            for sql, params in _pg_statements(thread_id, ns, deleted):
                cur.execute(sql, params)


class _AsyncPostgresKeeps(_AsyncKeeps):
    conn: Any
    lock: asyncio.Lock

    async def _aprune(self, thread_id: str, ns: str, keep: int) -> None:
        from psycopg.rows import tuple_row

        async with (
            asaver_connection(self) as conn,
            conn.transaction(),
            conn.cursor(row_factory=tuple_row) as cur,
        ):
            await cur.execute(_PG_DELETE, {"t": thread_id, "ns": ns, "keep": keep})
            deleted = await cur.fetchall()
            for sql, params in _pg_statements(thread_id, ns, deleted):
                await cur.execute(sql, params)


_MIXINS: dict[str, type] = {
    "langgraph.checkpoint.sqlite.aio.AsyncSqliteSaver": _AsyncSqliteKeeps,
    "langgraph.checkpoint.sqlite.SqliteSaver": _SqliteKeeps,
    "langgraph.checkpoint.postgres.aio.AsyncPostgresSaver": _AsyncPostgresKeeps,
    "langgraph.checkpoint.postgres.PostgresSaver": _PostgresKeeps,
}
# over saver_cls's whole put: the checkpoint is saved before older ones go
_MADE = SaverMixins(
    "keep_checkpoints",
    _MIXINS,
    lambda saver_cls, _, mixin: type(
        saver_cls.__name__, (mixin, saver_cls), {"__doc__": saver_cls.__doc__}
    ),
)


def keeps_checkpoints(saver_cls: type[S]) -> type[S]:
    """A subclass of ``saver_cls`` (a LangGraph SQLite or PostgreSQL saver, sync or
    async, or a subclass of one) that keeps each thread's last ``keep_checkpoints``
    checkpoints only.

    After each checkpoint it saves, the checkpoints of that thread and namespace that
    are neither among the newest ``keep_checkpoints`` (an attribute of the saver, 1
    unless set) nor read from by one of those (its line back to a full copy of the
    history) are deleted with their pending writes (see the module); ``saver_cls``'s
    own ``put`` (its retries, its messages stored once) runs first, whole.

    Use it through ``sqlite_saver(path, keep_checkpoints=K)`` (and
    ``async_sqlite_saver``, ``postgres_saver``, ``async_postgres_saver``).

    Example:
        >>> import sqlite3
        >>> from langgraph.checkpoint.sqlite import SqliteSaver
        >>> saver = keeps_checkpoints(SqliteSaver)(sqlite3.connect(":memory:"))
        >>> saver.keep_checkpoints = 10
        >>> isinstance(saver, SqliteSaver)
        True
    """
    return _MADE(saver_cls)  # type: ignore[return-value]
