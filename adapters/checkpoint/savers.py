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
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from .claims import DEFAULT_BUSY_TIMEOUT, aforget_thread, forget_thread, lost_run
from .history import stores_messages_once
from .keep import check_keep, keeps_checkpoints
from .retries import Retries

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "CheckpointWriteError",
    "DurableAsyncSqliteSaver",
    "DurableSqliteSaver",
    "async_postgres_saver",
    "async_sqlite_saver",
    "postgres_saver",
    "sqlite_saver",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

WRITE_ATTEMPTS = 3
"""How many times a checkpoint write that found the database locked is tried."""


class CheckpointWriteError(RuntimeError):
    """A step's writes could not be saved: the run stopped before its next step (or
    after it, when the write started only once the step's checkpoint was saved).

    The thread is as its last saved checkpoint left it; once the database takes writes
    again, ``invoke(None, config)`` runs the unsaved step again (a tool call in it that
    had started is answered from its claim, not run twice).
    """


_POSTGRES_MISSING = (
    "PostgreSQL checkpoints need the 'postgres' extra: pip install -e '.[postgres]' in a clone "
    "(langgraph-checkpoint-postgres, psycopg[binary], psycopg-pool)"
)


class _ClaimAware:
    """What the product's savers add for tool call claims, which live in a table of
    their own beside the checkpoints:

    - ``delete_thread`` also deletes the thread's claims (and the results stored with
      them);
    - a graph run that lost a claim (:class:`~.claims.ToolCallTakenOver`: another run
      took its call over and the thread moved on) writes nothing more: each of its
      checkpoints and step writes is refused with that error, so its stale branch never
      becomes the thread's head (``durability="exit"`` saves at the end of a failed run).
    """

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)  # type: ignore[misc]
        forget_thread(self, thread_id)  # type: ignore[arg-type]

    async def adelete_thread(self, thread_id: str) -> None:
        await super().adelete_thread(thread_id)  # type: ignore[misc]
        await aforget_thread(self, thread_id)  # type: ignore[arg-type]

    def put(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> RunnableConfig:
        _refuse_lost(config)
        return super().put(config, *args, **kwargs)  # type: ignore[misc]

    async def aput(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> RunnableConfig:
        _refuse_lost(config)
        return await super().aput(config, *args, **kwargs)  # type: ignore[misc]

    def put_writes(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> None:
        _refuse_lost(config)
        super().put_writes(config, *args, **kwargs)  # type: ignore[misc]

    async def aput_writes(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> None:
        _refuse_lost(config)
        await super().aput_writes(config, *args, **kwargs)  # type: ignore[misc]


def _refuse_lost(config: RunnableConfig) -> None:
    lost = lost_run(config)
    if lost is not None:
        raise lost


_WITH_CLAIMS: dict[type, type] = {}


def _with_claims(cls: type[T]) -> type[T]:
    """``cls`` (a LangGraph saver class), its ``delete_thread`` deleting claims too."""
    if cls not in _WITH_CLAIMS:
        _WITH_CLAIMS[cls] = type(cls.__name__, (_ClaimAware, cls), {"__doc__": cls.__doc__})
    return _WITH_CLAIMS[cls]  # type: ignore[return-value]


def _saver_class(cls: type[T], store_messages_once: bool, keep_checkpoints: int | None) -> type[T]:
    """``cls`` with the options: messages stored once, older checkpoints deleted."""
    check_keep(keep_checkpoints)
    cls = stores_messages_once(cls) if store_messages_once else cls  # type: ignore[type-var]
    return keeps_checkpoints(cls) if keep_checkpoints is not None else cls  # type: ignore[type-var]


def _made(saver: T, keep_checkpoints: int | None) -> T:
    if keep_checkpoints is not None:
        saver.keep_checkpoints = keep_checkpoints  # type: ignore[attr-defined]
    return saver


def _file(path: str | Path) -> str:
    path = Path(path)
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


def _locked(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


# a checkpoint write that found the file locked is tried again (the connection's busy
# timeout already waited within each try)
_LOCKED = Retries(WRITE_ATTEMPTS, log, "SQLite checkpoint %s: database locked", _locked)


class _WriteGuard:
    """What the durable savers share: writes retried while the database is locked, and
    a step's write that failed for good remembered, so the checkpoint that ends the step
    fails too.

    Why the checkpoint: LangGraph saves a task's writes in the background and raises
    their error only when the run ends, but it waits for each step's checkpoint before
    the next step starts (``durability="sync"``); failing that checkpoint stops the run
    there, before another task (and its side effects) starts.

    A write waiting in the executor's queue is not yet counted, so the step's checkpoint
    can be saved before it starts and fails: the next step's checkpoint fails then (the
    run stops one step later, and that step runs again on resume).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: dict[tuple[str, str], int] = {}
        self._failed: dict[tuple[str, str], tuple[str, BaseException]] = {}
        # per thread: the last checkpoint saved and the one it followed
        self._saved: dict[tuple[str, str], tuple[str, str]] = {}

    @staticmethod
    def key(config: RunnableConfig) -> tuple[str, str]:
        conf = config.get("configurable") or {}
        return str(conf.get("thread_id")), str(conf.get("checkpoint_ns", ""))

    @contextmanager
    def writing(self, config: RunnableConfig) -> Iterator[None]:
        """Around a step's write: the checkpoint that ends the step waits for it, and a
        write that fails is remembered for that checkpoint."""
        key = self.key(config)
        with self._cond:
            self._pending[key] = self._pending.get(key, 0) + 1
        try:
            yield
        except BaseException as exc:
            log.error("SQLite checkpoint write failed; the run stops after this step: %s", exc)
            with self._cond:
                step = str((config.get("configurable") or {}).get("checkpoint_id"))
                self._failed[key] = (step, exc)
            if isinstance(exc, sqlite3.OperationalError):  # this error may surface first
                raise _step_unsaved(key, step, exc) from exc
            raise
        finally:
            with self._cond:
                self._pending[key] -= 1
                if not self._pending[key]:
                    del self._pending[key]
                self._cond.notify_all()

    def check(self, config: RunnableConfig) -> None:
        """Before a checkpoint is saved: wait for the thread's writes in flight, and
        raise if a write of the step this checkpoint ends failed."""
        key = self.key(config)
        step = str((config.get("configurable") or {}).get("checkpoint_id"))
        with self._cond:
            self._cond.wait_for(lambda: key not in self._pending)
            failed = self._failed.pop(key, None)
            saved, after = self._saved.get(key, ("", ""))
        # this step's write, or the step before's (it started after that step's
        # checkpoint was saved)
        earlier = after if saved == step else None
        if failed is not None and failed[0] in (step, earlier):
            raise _step_unsaved(key, failed[0], failed[1]) from failed[1]

    def run_starts(self, config: RunnableConfig) -> None:
        """A run on the thread starts: what earlier runs' writes left is theirs (a run
        returns once its writes are done, so a write that failed after its last
        checkpoint was already said by that run's error)."""
        key = self.key(config)
        with self._cond:
            self._failed.pop(key, None)
            self._saved.pop(key, None)

    @contextmanager
    def saving(self, config: RunnableConfig, checkpoint: Checkpoint) -> Iterator[None]:
        """Around a checkpoint's save: one locked through every attempt is the
        :class:`CheckpointWriteError` that stops the run; one saved is remembered with
        the checkpoint it followed."""
        step = str((config.get("configurable") or {}).get("checkpoint_id"))
        try:
            yield
        except sqlite3.OperationalError as exc:
            raise CheckpointWriteError(
                f"thread {self.key(config)[0]!r}: the checkpoint after {step} could not be "
                f"saved ({exc}); the run stopped. Run invoke(None, config) once the "
                "database takes writes again."
            ) from exc
        with self._cond:
            self._saved[self.key(config)] = (str(checkpoint["id"]), step)

    @staticmethod
    def retried(what: str, write: Callable[[], T]) -> T:
        return _LOCKED.run(write, what)

    @staticmethod
    async def aretried(what: str, write: Callable[[], Awaitable[T]]) -> T:
        return await _LOCKED.arun(write, what)


def _step_unsaved(key: tuple[str, str], step: str, exc: BaseException) -> CheckpointWriteError:
    return CheckpointWriteError(
        f"thread {key[0]!r}: a write of the step after checkpoint {step} could not be "
        f"saved ({exc}); the run stopped before saving another checkpoint. Run "
        "invoke(None, config) once the database takes writes again."
    )


class DurableSqliteSaver(_ClaimAware, SqliteSaver):
    """A ``SqliteSaver`` whose writes ride out a locked database (each statement waits
    up to the connection's busy timeout, a write is tried :data:`WRITE_ATTEMPTS` times)
    and whose failed step writes stop the run before its next step
    (:class:`CheckpointWriteError`)."""

    def __init__(self, conn: sqlite3.Connection, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self.guard = _WriteGuard()

    def run_starts(self, config: RunnableConfig) -> None:
        """Called by the graph as a run on ``config``'s thread starts (see
        :meth:`_WriteGuard.run_starts`)."""
        self.guard.run_starts(config)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.guard.check(config)
        with self.guard.saving(config, checkpoint):
            return self.guard.retried(
                "save",
                lambda: super(DurableSqliteSaver, self).put(
                    config, checkpoint, metadata, new_versions
                ),
            )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self.guard.writing(config):
            self.guard.retried(
                "write",
                lambda: super(DurableSqliteSaver, self).put_writes(
                    config, writes, task_id, task_path
                ),
            )


class DurableAsyncSqliteSaver(_ClaimAware, AsyncSqliteSaver):
    """:class:`DurableSqliteSaver` for ``ainvoke``/``astream``."""

    def __init__(self, conn: aiosqlite.Connection, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self.guard = _WriteGuard()

    def run_starts(self, config: RunnableConfig) -> None:
        """As :meth:`DurableSqliteSaver.run_starts`."""
        self.guard.run_starts(config)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        # the writes in flight run on this loop: wait for them off it
        await asyncio.to_thread(self.guard.check, config)
        with self.guard.saving(config, checkpoint):
            return await self.guard.aretried(
                "save",
                lambda: super(DurableAsyncSqliteSaver, self).aput(
                    config, checkpoint, metadata, new_versions
                ),
            )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self.guard.writing(config):
            await self.guard.aretried(
                "write",
                lambda: super(DurableAsyncSqliteSaver, self).aput_writes(
                    config, writes, task_id, task_path
                ),
            )


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
    database locked is tried :data:`WRITE_ATTEMPTS` times in all; a step whose writes
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
    interrupted step needs, are always kept; the tool calls' claims are not touched.

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
    ``store_messages_once`` and ``keep_checkpoints`` as it says.

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
        await saver.setup()
        yield saver


def _postgres_modules() -> tuple[type[PostgresSaver], type[AsyncPostgresSaver]]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError as exc:
        raise ImportError(f"{_POSTGRES_MISSING} ({exc})") from exc
    return _with_claims(PostgresSaver), _with_claims(AsyncPostgresSaver)


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
