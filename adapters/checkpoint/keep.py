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

What it costs: the history of a thread goes back ``keep`` checkpoints only:
``get_state_history`` lists those, and time travel (a fork or replay from an older
checkpoint) is no longer possible beyond them. Like LangGraph's ``prune``, it assumes
one run at a time on a thread, going on from its head: a run forking from a checkpoint
that another process deletes meanwhile saves a checkpoint whose parent is gone.

A deletion that fails (a database locked past its busy timeout) is logged and left to
the next save, which deletes what this one left: a run never fails because of it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)

from .claims.store import asaver_connection, saver_connection
from .saver_mixins import SaverMixins

__all__ = ["check_keep", "keeps_checkpoints"]

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


# The newest checkpoint to delete, and every one older, with the writes of their steps
# (writes left by a step whose checkpoint is already gone included): those older than
# the oldest kept one, and older than the newest checkpoint at or before it that holds
# every channel's value. A ``DeltaChannel`` (the graph's ``messages``) stores a full copy
# only now and then; the checkpoints after one hold no value and are read back by
# replaying the writes since: that copy, and those writes, must stay. LangGraph's
# metadata counts the updates since each delta channel's last copy: a checkpoint with
# no counts holds them all (a copy, a thread's first, or one saved before delta
# channels).
def _cutoff(thread: str, ns: str, keep: str, holds_all: str) -> str:
    """The query for that newest checkpoint to delete, in a database's own placeholders
    (each named, used more than once) and its own test of a checkpoint's metadata."""
    where = f"FROM checkpoints WHERE thread_id = {thread} AND checkpoint_ns = {ns}"
    newest = "ORDER BY checkpoint_id DESC LIMIT 1"
    oldest_kept = f"SELECT checkpoint_id {where} {newest} OFFSET {keep} - 1"
    copy = f"SELECT checkpoint_id {where} AND {holds_all} AND checkpoint_id <= ({oldest_kept}) {newest}"
    return f"SELECT checkpoint_id {where} AND checkpoint_id < ({copy}) {newest}"


_SQLITE_CUTOFF = _cutoff(
    "?1",
    "?2",
    "?3",
    "json_extract(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot') IS NULL",
)
_SQLITE_PRUNE = (
    "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id <= ?",
    "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id <= ?",
    "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = ? "
    "AND checkpoint_ns = ? AND parent_checkpoint_id <= ?",
)


class _SqliteKeeps(_Keeps):
    cursor: Any

    def _prune(self, thread_id: str, ns: str, keep: int) -> None:
        with self.cursor() as cur:  # one transaction, under the saver's lock
            row = cur.execute(_SQLITE_CUTOFF, (thread_id, ns, keep)).fetchone()
            if row is not None:
                for sql in _SQLITE_PRUNE:
                    cur.execute(sql, (thread_id, ns, row[0]))


class _AsyncSqliteKeeps(_AsyncKeeps):
    conn: Any
    lock: asyncio.Lock

    async def _aprune(self, thread_id: str, ns: str, keep: int) -> None:
        async with self.lock:
            async with self.conn.execute(_SQLITE_CUTOFF, (thread_id, ns, keep)) as cur:
                row = await cur.fetchone()
            if row is not None:
                for sql in _SQLITE_PRUNE:
                    await self.conn.execute(sql, (thread_id, ns, row[0]))
                await self.conn.commit()


# -- PostgreSQL: checkpoints, writes, and the channel blobs only deleted checkpoints name

_PG_CUTOFF = _cutoff(
    "%(t)s", "%(ns)s", "%(keep)s", "metadata -> 'counters_since_delta_snapshot' IS NULL"
)
_PG_DELETE = (
    "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s "
    "AND checkpoint_id <= %s RETURNING checkpoint -> 'channel_versions'"
)
_PG_AFTER = (
    "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s "
    "AND checkpoint_id <= %s",
    "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = %s "
    "AND checkpoint_ns = %s AND parent_checkpoint_id <= %s",
)
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


def _pg_statements(
    thread_id: str, ns: str, cutoff: str, deleted: list[Any]
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    for sql in _PG_AFTER:
        yield sql, (thread_id, ns, cutoff)
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
            row = cur.execute(_PG_CUTOFF, {"t": thread_id, "ns": ns, "keep": keep}).fetchone()
            if row is None:
                return
            deleted = cur.execute(_PG_DELETE, (thread_id, ns, row[0])).fetchall()
            for sql, params in _pg_statements(thread_id, ns, row[0], deleted):
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
            await cur.execute(_PG_CUTOFF, {"t": thread_id, "ns": ns, "keep": keep})
            row = await cur.fetchone()
            if row is None:
                return
            await cur.execute(_PG_DELETE, (thread_id, ns, row[0]))
            deleted = await cur.fetchall()
            for sql, params in _pg_statements(thread_id, ns, row[0], deleted):
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

    After each checkpoint it saves, the checkpoints of that thread and namespace older
    than the newest ``keep_checkpoints`` (an attribute of the saver, 1 unless set) are
    deleted with their pending writes (see the module); ``saver_cls``'s own ``put``
    (its retries, its messages stored once) runs first, whole.

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
