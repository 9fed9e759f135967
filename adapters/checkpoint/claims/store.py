"""Where claims live: a ``fncall_tool_calls`` table beside LangGraph's checkpoints
(SQLite or PostgreSQL, from a sync or an async saver), or a dict for the in-memory saver.

What a claim store does is said as data (the operations below): one flow
(:mod:`.flows`) drives a sync or an async store alike. Each operation is one atomic
statement: of two processes inserting the same claim, one wins.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from .owner import ClaimKey, ClaimRow, Status

__all__ = ["SWEEP_IDLE", "forget_deleted_threads", "forget_thread"]

log = logging.getLogger(__name__)

CLAIMS_TABLE = "fncall_tool_calls"

DEFAULT_BUSY_TIMEOUT = 10.0
"""Seconds one SQLite statement waits for another connection's lock (SQLite's busy
timeout)."""


# -- operations on a claim store, as data


@dataclass(frozen=True)
class _Insert:
    row: ClaimRow


@dataclass(frozen=True)
class _Get:
    key: ClaimKey


@dataclass(frozen=True)
class _Swap:  # replace the row if its owner is still ``owner``
    row: ClaimRow
    owner: str


@dataclass(frozen=True)
class _Finish:
    key: ClaimKey
    owner: str
    status: Status
    result_type: str | None
    result: bytes | None
    at: float = 0.0


@dataclass(frozen=True)
class _Renew:  # the holder's heartbeat: its running claim is still held
    key: ClaimKey
    owner: str
    at: float


@dataclass(frozen=True)
class _Release:
    key: ClaimKey
    owner: str


@dataclass(frozen=True)
class _Forget:  # every claim of a thread (the thread is being deleted)
    thread_id: str


@dataclass(frozen=True)
class _Sweep:  # the claims of threads that have no checkpoint left (deleted elsewhere)
    before: float  # only claims last active (made, renewed, finished) before this time
    live: frozenset[str] = frozenset()  # the threads there are (for the memory store)


_Op = _Insert | _Get | _Swap | _Finish | _Renew | _Release | _Forget | _Sweep


class _MemoryStore:
    """Claims in this process only: the in-memory saver's threads live no longer."""

    def __init__(self) -> None:
        self.rows: dict[ClaimKey, ClaimRow] = {}
        self.lock = threading.Lock()

    def run(self, op: _Op) -> Any:
        with self.lock:
            if isinstance(op, _Forget | _Sweep):
                gone = [
                    k
                    for k, row in self.rows.items()
                    if (
                        k.thread_id == op.thread_id
                        if isinstance(op, _Forget)
                        else k.thread_id not in op.live
                        and (row.renewed_at or row.created_at) < op.before
                    )
                ]
                for k in gone:
                    del self.rows[k]
                return len(gone)
            held = self.rows.get(op.key if not isinstance(op, _Insert | _Swap) else op.row.key)
            if isinstance(op, _Insert):
                if held is not None:
                    return False
                self.rows[op.row.key] = op.row
                return True
            if isinstance(op, _Get):
                return held
            if held is None or held.owner != op.owner:
                return False
            if isinstance(op, _Swap):
                self.rows[op.row.key] = op.row
            elif isinstance(op, _Finish):
                self.rows[op.key] = replace(
                    held,
                    status=op.status,
                    result_type=op.result_type,
                    result=op.result,
                    renewed_at=op.at,
                )
            elif isinstance(op, _Renew):
                if held.status != "running":
                    return False
                self.rows[op.key] = replace(held, renewed_at=op.at)
            else:
                del self.rows[op.key]
            return True

    async def arun(self, op: _Op) -> Any:
        return self.run(op)


_COLUMNS = (
    "thread_id, namespace, call_id, tool, owner, step, status, created_at, result_type, result, "
    "renewed_at"
)
_KEY = "thread_id = ? AND namespace = ? AND call_id = ?"


class _SqlStore:
    """Claims in a SQL table beside the checkpoints (SQLite or PostgreSQL syntax)."""

    def __init__(self, conn: Any, lock: Any, *, postgres: bool) -> None:
        self.conn, self.lock, self.postgres = conn, lock, postgres
        # a PostgreSQL pool hands each claim a connection of its own: no need to queue
        # behind the saver's lock (which guards its one connection) and its checkpoints
        self.pooled = postgres and _is_pool(conn)
        self.ready = False
        blob, real = ("BYTEA", "DOUBLE PRECISION") if postgres else ("BLOB", "REAL")
        self.create = (
            f"CREATE TABLE IF NOT EXISTS {CLAIMS_TABLE} (thread_id TEXT NOT NULL, "
            "namespace TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, "
            "owner TEXT NOT NULL, step TEXT NOT NULL, status TEXT NOT NULL, "
            f"created_at {real} NOT NULL, result_type TEXT, result {blob}, renewed_at {real}, "
            "PRIMARY KEY (thread_id, namespace, call_id))"
        )
        # a table made before leases: add the column (PostgreSQL says IF NOT EXISTS)
        self.migrate = f"ALTER TABLE {CLAIMS_TABLE} ADD COLUMN " + (
            f"IF NOT EXISTS renewed_at {real}" if postgres else f"renewed_at {real}"
        )

    def statement(self, op: _Op) -> tuple[str, tuple[Any, ...]]:
        if isinstance(op, _Insert):
            r = op.row
            sql = (
                f"INSERT INTO {CLAIMS_TABLE} ({_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
            )
            params: tuple[Any, ...] = (*_key(r.key), r.tool, r.owner, r.step, r.status)
            params += (r.created_at, r.result_type, r.result, r.renewed_at)
        elif isinstance(op, _Get):
            sql, params = f"SELECT {_COLUMNS} FROM {CLAIMS_TABLE} WHERE {_KEY}", _key(op.key)
        elif isinstance(op, _Swap):
            r = op.row
            sql = (
                f"UPDATE {CLAIMS_TABLE} SET owner = ?, step = ?, status = ?, created_at = ?, "
                f"result_type = ?, result = ?, renewed_at = ? WHERE {_KEY} AND owner = ?"
            )
            params = (r.owner, r.step, r.status, r.created_at, r.result_type, r.result)
            params += (r.renewed_at, *_key(r.key), op.owner)
        elif isinstance(op, _Finish):
            sql = (
                f"UPDATE {CLAIMS_TABLE} SET status = ?, result_type = ?, result = ?, "
                f"renewed_at = ? WHERE {_KEY} AND owner = ?"
            )
            params = (op.status, op.result_type, op.result, op.at, *_key(op.key), op.owner)
        elif isinstance(op, _Renew):
            sql = (
                f"UPDATE {CLAIMS_TABLE} SET renewed_at = ? "
                f"WHERE {_KEY} AND owner = ? AND status = 'running'"
            )
            params = (op.at, *_key(op.key), op.owner)
        elif isinstance(op, _Forget):
            sql, params = f"DELETE FROM {CLAIMS_TABLE} WHERE thread_id = ?", (op.thread_id,)
        elif isinstance(op, _Sweep):
            # LangGraph's SQLite and PostgreSQL savers keep a thread in ``checkpoints``
            sql = (
                f"DELETE FROM {CLAIMS_TABLE} WHERE COALESCE(renewed_at, created_at) < ? AND "
                f"NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = {CLAIMS_TABLE}.thread_id)"
            )
            params = (op.before,)
        else:
            assert isinstance(op, _Release)
            sql = f"DELETE FROM {CLAIMS_TABLE} WHERE {_KEY} AND owner = ?"
            params = (*_key(op.key), op.owner)
        return (sql.replace("?", "%s") if self.postgres else sql), params

    @staticmethod
    def outcome(op: _Op, rowcount: int, rows: list[Any]) -> Any:
        if isinstance(op, _Get):
            if not rows:
                return None
            thread_id, ns, call_id, tool, owner, step, status, created, rtype, result, renewed = (
                rows[0]
            )
            key = ClaimKey(thread_id, ns, call_id)
            result = bytes(result) if result is not None else None
            return ClaimRow(key, tool, owner, step, status, created, rtype, result, renewed)
        if isinstance(op, _Forget | _Sweep):
            return rowcount
        return rowcount == 1


def _key(key: ClaimKey) -> tuple[str, str, str]:
    return key.thread_id, key.namespace, key.call_id


class _SqliteStore(_SqlStore):
    def run(self, op: _Op) -> Any:
        with self.lock:
            if not self.ready:
                for ddl in (self.create, self.migrate):
                    with self.conn, _unless_done():
                        self.conn.execute(ddl)
                self.ready = True
            with self.conn:  # commits
                cur = self.conn.execute(*self.statement(op))
                return self.outcome(op, cur.rowcount, cur.fetchall())


class _AsyncStore(_SqlStore):
    """The claims of an async saver.

    A caller in another thread (the heartbeat; a sync tool under a timeout, which runs
    in a thread of its own) runs them on a connection of the store's own, never through
    the saver's event loop: a tool that blocks that loop must not stop its own claim's
    renewals (its lease would lapse while it runs). Until the store knows how to open
    that connection, they go through the loop, as the saver's own sync methods do.
    """

    def __init__(self, conn: Any, lock: Any, *, postgres: bool, loop: Any) -> None:
        super().__init__(conn, lock, postgres=postgres)
        self.loop = loop
        self.own: _SqlStore | None = None
        self.own_lock = threading.Lock()

    def run(self, op: _Op) -> Any:
        own = self.own or self.open_own()
        if own is None:
            return asyncio.run_coroutine_threadsafe(self.arun(op), self.loop).result()
        return own.run(op)

    def open_own(self) -> _SqlStore | None:
        """The store on a connection of its own (``None``: not known how to open one)."""
        return None

    async def arun(self, op: _Op) -> Any:
        raise NotImplementedError


class _AioSqliteStore(_AsyncStore):
    """An ``AsyncSqliteSaver``'s claims, on a ``sqlite3`` connection of their own to its
    file: each statement and its commit run in one call on a worker thread, so an event
    loop blocked between two awaits never keeps the file's write lock from the other
    processes. (A database in memory has no second connection: the saver's is used.)"""

    file: str | None = None
    timeout: float = DEFAULT_BUSY_TIMEOUT

    async def arun(self, op: _Op) -> Any:
        if self.file is None:
            self.file, self.timeout = await _aiosqlite_file(self.conn, self.lock)
        own = self.own or self.open_own()
        if own is not None:
            return await asyncio.to_thread(own.run, op)
        async with self.lock:
            if not self.ready:
                for ddl in (self.create, self.migrate):
                    with _unless_done():
                        await self.conn.execute(ddl)
                    await self.conn.commit()
                self.ready = True
            async with self.conn.execute(*self.statement(op)) as cur:
                rows = list(await cur.fetchall())
                count = cur.rowcount
            await self.conn.commit()
            return self.outcome(op, count, rows)

    def open_own(self) -> _SqlStore | None:
        if not self.file:
            return None
        with self.own_lock:
            if self.own is None:
                conn = sqlite3.connect(self.file, timeout=self.timeout, check_same_thread=False)
                self.own = _SqliteStore(conn, threading.Lock(), postgres=False)
        return self.own


async def _aiosqlite_file(conn: Any, lock: Any) -> tuple[str, float]:
    """The file an ``aiosqlite`` connection is on (``""``: a database in memory, which no
    other connection reaches) and its busy timeout in seconds, for a ``sqlite3``
    connection of one's own to it that writes in one call, off the event loop."""
    async with lock:
        async with conn.execute("PRAGMA database_list") as cur:
            rows = list(await cur.fetchall())
        async with conn.execute("PRAGMA busy_timeout") as cur:
            found = await cur.fetchone()
    file = next((str(r[2] or "") for r in rows if r[1] == "main"), "")
    return file, (found[0] / 1000 if found else DEFAULT_BUSY_TIMEOUT)


class _PostgresStore(_SqlStore):
    def run(self, op: _Op) -> Any:
        from psycopg.rows import tuple_row

        guard, connection = (
            (nullcontext(), self.conn.connection())
            if self.pooled
            else (self.lock, nullcontext(self.conn))
        )
        with guard, connection as conn:
            if not self.ready:
                for ddl in (self.create, self.migrate):
                    with _unless_done(), conn.transaction():
                        conn.execute(ddl)
                self.ready = True
            with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(*self.statement(op))
                rows = cur.fetchall() if isinstance(op, _Get) else []
                return self.outcome(op, cur.rowcount, rows)


class _AsyncPostgresStore(_AsyncStore):
    def open_own(self) -> _SqlStore | None:
        """A one-connection pool (checked before use) to the saver's server."""
        with self.own_lock:
            if self.own is None:
                from psycopg.conninfo import make_conninfo
                from psycopg_pool import ConnectionPool

                if self.pooled:
                    conninfo, kwargs = self.conn.conninfo, dict(self.conn.kwargs or {})
                else:
                    info = self.conn.info
                    conninfo = make_conninfo(info.dsn, password=info.password or None)
                    kwargs = {}
                pool = ConnectionPool(
                    conninfo,
                    min_size=1,
                    max_size=1,
                    kwargs={**kwargs, "autocommit": True},
                    check=ConnectionPool.check_connection,
                    open=True,
                )
                self.own = _PostgresStore(pool, None, postgres=True)
                weakref.finalize(self, pool.close)
        return self.own

    async def arun(self, op: _Op) -> Any:
        from psycopg.rows import tuple_row

        if self.pooled:
            async with self.conn.connection() as conn:
                return await self._arun(conn, op, tuple_row)
        async with self.lock:
            return await self._arun(self.conn, op, tuple_row)

    async def _arun(self, conn: Any, op: _Op, tuple_row: Any) -> Any:
        if not self.ready:
            for ddl in (self.create, self.migrate):
                with _unless_done():
                    async with conn.transaction():
                        await conn.execute(ddl)
            self.ready = True
        async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(*self.statement(op))
            rows = list(await cur.fetchall()) if isinstance(op, _Get) else []
            return self.outcome(op, cur.rowcount, rows)


def _is_pool(conn: Any) -> bool:
    """Whether a PostgreSQL saver was given a connection pool (else one connection)."""
    return any(c.__module__.startswith("psycopg_pool") for c in type(conn).__mro__)


@contextmanager
def saver_connection(saver: Any) -> Iterator[Any]:
    """A connection of a PostgreSQL saver's: a pool lends one of its own; one shared
    connection is held under the saver's lock."""
    if _is_pool(saver.conn):
        with saver.conn.connection() as conn:
            yield conn
    else:
        with saver.lock:
            yield saver.conn


@asynccontextmanager
async def asaver_connection(saver: Any) -> AsyncIterator[Any]:
    """:func:`saver_connection` of an async PostgreSQL saver."""
    if _is_pool(saver.conn):
        async with saver.conn.connection() as conn:
            yield conn
    else:
        async with saver.lock:
            yield saver.conn


@contextmanager
def _unless_done() -> Iterator[None]:
    """Run a table change unless it is already done: another process made it at the same
    time (``IF NOT EXISTS`` can still race in PostgreSQL), or SQLite, which has no ``ADD
    COLUMN IF NOT EXISTS``, finds the column there."""
    try:
        yield
    except Exception as exc:
        if not any(s in str(exc) for s in ("already exists", "duplicate key", "duplicate column")):
            raise


_STORES: weakref.WeakKeyDictionary[BaseCheckpointSaver, Any] = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def _store_for(saver: BaseCheckpointSaver) -> Any:
    kinds = {c.__module__ + "." + c.__name__ for c in type(saver).__mro__}
    if "langgraph.checkpoint.sqlite.SqliteSaver" in kinds:
        return _SqliteStore(saver.conn, saver.lock, postgres=False)  # type: ignore[attr-defined]
    if "langgraph.checkpoint.sqlite.aio.AsyncSqliteSaver" in kinds:
        return _AioSqliteStore(saver.conn, saver.lock, postgres=False, loop=saver.loop)  # type: ignore[attr-defined]
    if "langgraph.checkpoint.postgres.PostgresSaver" in kinds:
        return _PostgresStore(saver.conn, saver.lock, postgres=True)  # type: ignore[attr-defined]
    if "langgraph.checkpoint.postgres.aio.AsyncPostgresSaver" in kinds:
        return _AsyncPostgresStore(saver.conn, saver.lock, postgres=True, loop=saver.loop)  # type: ignore[attr-defined]
    if not isinstance(saver, InMemorySaver):
        log.warning(
            "%s: tool call claims are kept in this process only; at-most-once across "
            "processes holds for the SQLite and PostgreSQL savers",
            type(saver).__name__,
        )
    return _MemoryStore()


def _store_of(saver: BaseCheckpointSaver) -> Any:
    """The claim store of ``saver``'s threads: one per saver (the first use in a process
    also sweeps the claims of deleted threads)."""
    with _STORES_LOCK:
        store = _STORES.get(saver)
        if store is None:
            store = _STORES[saver] = _store_for(saver)
            _sweep_soon(store)
    return store


#: Seconds a claim of a thread without checkpoints must have been idle before a sweep
#: deletes it: long past any checkpoint write still on its way.
SWEEP_IDLE = 3600.0


def _sweep_soon(store: Any) -> None:
    """Delete the claims of threads deleted by a saver that does not know of claims (a
    LangGraph server deletes a thread with its own saver); once per process and saver,
    without holding up the caller (an async saver's loop does it when it can)."""
    if isinstance(store, _MemoryStore):
        return  # new and empty
    if isinstance(store, _AsyncStore):
        sweep = _Sweep(time.time() - SWEEP_IDLE)
        done = asyncio.run_coroutine_threadsafe(store.arun(sweep), store.loop)
        done.add_done_callback(_swept)
        return
    try:
        store.run(_Sweep(time.time() - SWEEP_IDLE))
    except Exception as exc:
        _not_swept(exc)


def _swept(done: Any) -> None:
    if not done.cancelled() and done.exception() is not None:
        _not_swept(done.exception())


def _not_swept(exc: BaseException) -> None:
    # a saver that has saved nothing yet has no checkpoints table: no thread to miss
    if "no such table: checkpoints" in str(exc) or type(exc).__name__ == "UndefinedTable":
        log.debug("no checkpoints yet, no claims to sweep: %s", exc)
    else:
        log.warning("could not delete the claims of deleted threads: %s", exc)


def forget_thread(saver: BaseCheckpointSaver, thread_id: str) -> int:
    """Delete the claims (and the results stored with them) of ``thread_id``; the number
    deleted. The savers of :mod:`fncall_graph.adapters.checkpoint` do it in their
    ``delete_thread``; call it beside ``delete_thread`` of any other saver."""
    return _store_of(saver).run(_Forget(thread_id))


async def aforget_thread(saver: BaseCheckpointSaver, thread_id: str) -> int:
    """:func:`forget_thread` for an async saver."""
    return await _arun(_store_of(saver), _Forget(thread_id))


async def _arun(store: Any, op: _Op) -> Any:
    arun = getattr(store, "arun", None)  # a sync saver's store has none
    return await arun(op) if arun else store.run(op)


def forget_deleted_threads(saver: BaseCheckpointSaver, *, idle_for: float = SWEEP_IDLE) -> int:
    """Delete the claims (and stored results) of the threads ``saver`` no longer has;
    the number deleted. For threads deleted by code that does not call
    :func:`forget_thread` (a LangGraph server's ``DELETE /threads/{id}`` uses its own
    saver). The first use of a saver's claims in a process does it too.

    Only claims idle (not made, renewed or finished) for ``idle_for`` seconds go: a
    thread whose first checkpoint is still being written (``durability="async"`` or
    ``"exit"``) has no checkpoint yet either, and its claims must stay.
    """
    store = _store_of(saver)
    return store.run(_sweep_for(saver, store, saver.list(None), idle_for))


async def aforget_deleted_threads(
    saver: BaseCheckpointSaver, *, idle_for: float = SWEEP_IDLE
) -> int:
    """:func:`forget_deleted_threads` for an async saver."""
    store = _store_of(saver)
    listed = [c async for c in saver.alist(None)] if isinstance(store, _MemoryStore) else []
    return await _arun(store, _sweep_for(saver, store, listed, idle_for))


def _sweep_for(saver: BaseCheckpointSaver, store: Any, listed: Any, idle_for: float) -> _Sweep:
    before = time.time() - idle_for
    if not isinstance(store, _MemoryStore):
        return _Sweep(before)  # the database looks its threads up itself
    return _Sweep(before, frozenset(c.config["configurable"]["thread_id"] for c in listed))
