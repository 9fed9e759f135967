"""Checkpointers that keep threads across processes: SQLite files and PostgreSQL.

Any LangGraph saver works with ``create_fncall_graph(checkpointer=...)``; these helpers
build the usual ones ready to use (tables created, connections opened and closed):

- :func:`sqlite_saver` / :func:`async_sqlite_saver`: a SQLite file
  (``langgraph-checkpoint-sqlite``, installed with the package);
- :func:`postgres_saver` / :func:`async_postgres_saver`: a PostgreSQL URL
  (``langgraph-checkpoint-postgres``: ``pip install -e '.[postgres]' in a clone``).

Each is a context manager: the saver is usable inside the ``with`` block and its
connection is closed at the end. Their ``delete_thread`` also deletes the thread's tool
call claims (:func:`~fncall_graph.adapters.checkpoint.claims.forget_thread`).

What the savers are made of, a module each: the claims' part (:mod:`.claim_aware`),
SQLite writes that ride out a locked file (:mod:`.durable_sqlite`), and the options:
messages stored once (:mod:`.history`), older checkpoints deleted (:mod:`.keep`).

Example:
    ```python
    from fncall_graph import create_fncall_graph
    from fncall_graph.adapters.checkpoint import sqlite_saver

    with sqlite_saver("threads.db") as saver:
        graph = create_fncall_graph(model, tools, checkpointer=saver)
        graph.invoke({"messages": [("user", "数据库有几张表")]},
                     {"configurable": {"thread_id": "t1"}})
    ```
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import aiosqlite
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from .claim_aware import with_claims
from .claims import DEFAULT_BUSY_TIMEOUT
from .durable_sqlite import (
    CheckpointWriteError,
    DurableAsyncSqliteSaver,
    DurableSqliteSaver,
)
from .history import stores_messages_once
from .keep import (
    CheckpointNotFound,
    check_keep,
    keeps_checkpoints,
    refuses_missing_checkpoints,
)

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

__all__ = [
    "CheckpointNotFound",
    "CheckpointWriteError",
    "async_postgres_saver",
    "async_sqlite_saver",
    "postgres_saver",
    "sqlite_saver",
]

T = TypeVar("T")

_POSTGRES_MISSING = (
    "PostgreSQL checkpoints need the 'postgres' extra: pip install -e '.[postgres]' in a clone "
    "(langgraph-checkpoint-postgres, psycopg[binary], psycopg-pool)"
)


def _saver_class(cls: type[T], store_messages_once: bool, keep_checkpoints: int | None) -> type[T]:
    """``cls`` with the options (messages stored once, older checkpoints deleted), and a
    config naming a checkpoint it does not hold refused (:class:`CheckpointNotFound`)."""
    check_keep(keep_checkpoints)
    cls = stores_messages_once(cls) if store_messages_once else cls  # type: ignore[type-var]
    cls = keeps_checkpoints(cls) if keep_checkpoints is not None else cls  # type: ignore[type-var]
    return refuses_missing_checkpoints(cls)


def _made(saver: T, keep_checkpoints: int | None) -> T:
    if keep_checkpoints is not None:
        saver.keep_checkpoints = keep_checkpoints  # type: ignore[attr-defined]
    return saver


def _file(path: str | Path) -> str:
    path = Path(path)
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


@contextmanager
def sqlite_saver(
    path: str | Path,
    *,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    store_messages_once: bool = False,
    keep_checkpoints: int | None = None,
) -> Iterator[SqliteSaver]:
    """A ``SqliteSaver`` on the file ``path`` (created with its tables if missing).

    The connection may be used from LangGraph's worker threads; the saver serialises
    its own access to it.

    Durable (:class:`DurableSqliteSaver`): a statement waits up to ``busy_timeout``
    seconds for another connection's lock, and a checkpoint write that still finds the
    database locked is tried :data:`~.durable_sqlite.WRITE_ATTEMPTS` times in all; a step whose writes
    could not be saved stops the run before its next step (:class:`CheckpointWriteError`)
    instead of running on and failing at the end.

    ``store_messages_once=True`` stores each message of a thread once instead of in every
    checkpoint (:mod:`~fncall_graph.adapters.checkpoint.history`): the file grows with
    the thread's length instead of its square, and a step writes only its new messages;
    reading a thread in a new process loads its messages once. A file written with it
    must be opened with it.

    ``keep_checkpoints=K`` keeps each thread's last K checkpoints only
    (:mod:`~fncall_graph.adapters.checkpoint.keep`): after each save, the thread's
    older checkpoints and their pending writes are deleted. With
    ``store_messages_once=True`` a long thread then takes about its messages' own bytes
    (LangGraph's per-checkpoint bookkeeping no longer adds up); the cost is the
    thread's history: ``get_state_history`` and time travel reach back K checkpoints
    only (a tool turn makes about five). The head, and what a waiting approval or an
    interrupted step needs, are always kept, and every checkpoint a kept one is read
    from (a fork's line); the tool calls' claims are not touched.

    Every saver here refuses a config naming a checkpoint it does not hold (deleted by
    ``keep_checkpoints``, or never saved), for ``update_state``, a run and
    ``get_state`` alike: :class:`CheckpointNotFound`, before anything runs or is
    written (LangGraph would go on from an empty state).

    Args:
        path: the SQLite file (its folder is created if missing).
        busy_timeout: seconds a statement waits for another connection's lock.
        store_messages_once: store each message of a thread once.
        keep_checkpoints: how many of a thread's newest checkpoints to keep (at least
            1); ``None`` keeps them all.

    Example:
        >>> import tempfile, os
        >>> with sqlite_saver(os.path.join(tempfile.mkdtemp(), "t.db")) as saver:
        ...     isinstance(saver, SqliteSaver)
        True
        >>> path = os.path.join(tempfile.mkdtemp(), "long.db")
        >>> with sqlite_saver(path, store_messages_once=True, keep_checkpoints=20) as saver:
        ...     saver.keep_checkpoints
        20
    """
    conn = sqlite3.connect(_file(path), check_same_thread=False, timeout=busy_timeout)
    saver: DurableSqliteSaver | None = None
    try:
        saver_cls = _saver_class(DurableSqliteSaver, store_messages_once, keep_checkpoints)
        saver = _made(saver_cls(conn), keep_checkpoints)
        saver.setup()
        yield saver
    finally:
        # behind the saver's lock: a claim's heartbeat thread may be writing on the
        # connection, and sqlite3 closed under a running statement crashes the process
        with saver.lock if saver is not None else nullcontext():
            conn.close()


@asynccontextmanager
async def async_sqlite_saver(
    path: str | Path,
    *,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    store_messages_once: bool = False,
    keep_checkpoints: int | None = None,
) -> AsyncIterator[AsyncSqliteSaver]:
    """An ``AsyncSqliteSaver`` on the file ``path``, for ``ainvoke``/``astream``; durable
    as :func:`sqlite_saver` says (:class:`DurableAsyncSqliteSaver`), and with
    ``store_messages_once`` and ``keep_checkpoints`` as it says. Its checkpoint writes
    run each whole transaction in one call off the event loop: a process frozen
    mid-run never keeps the file locked for the others.

    Example:
        ```python
        async with async_sqlite_saver("threads.db") as saver:
            graph = create_fncall_graph(model, tools, checkpointer=saver)
            await graph.ainvoke({"messages": [("user", "hi")]}, cfg)
        ```
    """
    saver_cls = _saver_class(DurableAsyncSqliteSaver, store_messages_once, keep_checkpoints)
    async with aiosqlite.connect(_file(path), timeout=busy_timeout) as conn:
        saver = _made(saver_cls(conn), keep_checkpoints)
        try:
            await saver.setup()
            yield saver
        finally:
            saver.close_writes()


def _postgres_modules() -> tuple[type[PostgresSaver], type[AsyncPostgresSaver]]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError as exc:
        raise ImportError(f"{_POSTGRES_MISSING} ({exc})") from exc
    return with_claims(PostgresSaver), with_claims(AsyncPostgresSaver)


def _pool(pool_cls: Any, url: str, max_connections: int) -> Any:
    """A (not yet opened) pool of ``pool_cls`` whose connections are checked before use
    (a connection a server restart cut is replaced), with the settings
    ``PostgresSaver.from_conn_string`` uses."""
    if isinstance(max_connections, bool) or not isinstance(max_connections, int):
        raise TypeError(f"max_connections must be an int, got {max_connections!r}")
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, got {max_connections}")
    from psycopg.rows import dict_row

    return pool_cls(
        url,
        min_size=1,
        max_size=max_connections,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        check=pool_cls.check_connection,
        open=False,
    )


# any fixed number: the advisory lock that one process at a time takes to set up tables
_SETUP_LOCK = 0x66_6E_63_61_6C_6C  # "fncall"


@contextmanager
def _setting_up(url: str) -> Iterator[None]:
    """One process at a time runs LangGraph's migrations on a database: run by several
    at once (processes starting together) they deadlock or collide on their version rows.
    A session advisory lock, on a connection of its own (the saver's pool may have only
    one). It is *tried* until taken: a session waiting inside ``pg_advisory_lock`` is an
    open transaction, which the migrations' ``CREATE INDEX CONCURRENTLY`` waits for."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        pause = threading.Event()
        while not conn.execute("SELECT pg_try_advisory_lock(%s)", (_SETUP_LOCK,)).fetchone()[0]:
            pause.wait(0.05)  # another process is setting up: its migrations take moments
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))


@asynccontextmanager
async def _asetting_up(url: str) -> AsyncIterator[None]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        while True:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (_SETUP_LOCK,))
            if (await cur.fetchone())[0]:
                break
            await asyncio.sleep(0.05)
        try:
            yield
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))


@contextmanager
def postgres_saver(
    url: str,
    *,
    max_connections: int = 4,
    store_messages_once: bool = False,
    keep_checkpoints: int | None = None,
) -> Iterator[PostgresSaver]:
    """A ``PostgresSaver`` on ``url`` (``postgresql://user@host:port/db``), tables set up.

    It draws its connections from a pool (``psycopg_pool``) that checks each one before
    use, so after the server restarts (or drops a connection) the next call reconnects
    instead of failing on a dead connection until the process rebuilds the saver.

    Args:
        url: a PostgreSQL connection URL.
        max_connections: the pool's size (at least 1); the saver writes one checkpoint
            at a time, the tool-call claims beside it use connections of their own.
        store_messages_once: store each message of a thread once, as
            :func:`sqlite_saver` says.
        keep_checkpoints: keep each thread's newest K checkpoints only, as
            :func:`sqlite_saver` says (the channel blobs only deleted checkpoints
            named go with them); ``None`` keeps them all.

    Needs the ``postgres`` extra; without it, ``ImportError`` says what to install.

    Example:
        ```python
        with postgres_saver("postgresql://postgres@127.0.0.1:5432/postgres") as saver:
            graph = create_fncall_graph(model, tools, checkpointer=saver)
        ```
    """
    saver_cls, _ = _postgres_modules()
    saver_cls = _saver_class(saver_cls, store_messages_once, keep_checkpoints)
    from psycopg_pool import ConnectionPool

    with _pool(ConnectionPool, url, max_connections) as pool:
        saver = _made(saver_cls(pool), keep_checkpoints)  # type: ignore[arg-type]
        with _setting_up(url):
            saver.setup()
        yield saver


@asynccontextmanager
async def async_postgres_saver(
    url: str,
    *,
    max_connections: int | None = 4,
    store_messages_once: bool = False,
    keep_checkpoints: int | None = None,
) -> AsyncIterator[AsyncPostgresSaver]:
    """An ``AsyncPostgresSaver`` on ``url``, tables set up.

    Args:
        url: a PostgreSQL connection URL.
        max_connections: the size of its pool of checked connections (at least 1;
            ``None``, one shared connection in earlier versions, means 1): like
            :func:`postgres_saver`, it reconnects after the server restarts or drops a
            connection, instead of failing with "the connection is closed" until the
            process builds the saver again. The tool-call claims beside it take
            connections of their own; a pool of 1 queues them with the checkpoints.
        store_messages_once: store each message of a thread once, as
            :func:`sqlite_saver` says.
        keep_checkpoints: keep each thread's newest K checkpoints only, as
            :func:`sqlite_saver` says (the channel blobs only deleted checkpoints
            named go with them); ``None`` keeps them all.

    Example:
        ```python
        async with async_postgres_saver(url, max_connections=10) as saver:
            graph = create_fncall_graph(model, tools, checkpointer=saver)
            await asyncio.gather(*(graph.ainvoke(q, cfg(i)) for i, q in enumerate(qs)))
        ```
    """
    _, saver_cls = _postgres_modules()
    saver_cls = _saver_class(saver_cls, store_messages_once, keep_checkpoints)
    from psycopg_pool import AsyncConnectionPool

    # one shared connection (from_conn_string) is never replaced once the server cuts it
    size = 1 if max_connections is None else max_connections
    async with _pool(AsyncConnectionPool, url, size) as pool:
        saver = _made(saver_cls(pool), keep_checkpoints)  # type: ignore[arg-type]
        async with _asetting_up(url):
            await saver.setup()
        yield saver
