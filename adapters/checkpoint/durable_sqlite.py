"""SQLite savers that ride out a locked file (:class:`DurableSqliteSaver`,
:class:`DurableAsyncSqliteSaver`): each write is tried again while another connection
holds the lock, and a step whose writes could not be saved stops the run before its next
step (:class:`CheckpointWriteError`) instead of running on and failing at the end.

The async saver never holds the file's write lock across an ``await``: LangGraph's
``AsyncSqliteSaver`` runs a write's statements and its commit as separate calls on
``aiosqlite``'s thread, so a process frozen (SIGSTOP, a paused VM) or an event loop held
up (a tool that blocks it) between them kept every other process's writes waiting until
they failed with ``database is locked``. Its checkpoint writes run on a ``sqlite3``
connection of their own to the file instead, each whole transaction in one call on a
thread of their own.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from .claim_aware import ClaimAware
from .claims.store import _aiosqlite_file
from .retries import Retries

__all__ = ["CheckpointWriteError"]

# the savers' logger, whose records these were before they had a module of their own
log = logging.getLogger("fncall_graph.adapters.checkpoint.savers")

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


class DurableSqliteSaver(ClaimAware, SqliteSaver):
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


class _Writer:
    """A ``SqliteSaver`` on a ``sqlite3`` connection of its own to the file, and the one
    thread its writes run on: not the event loop's default executor, whose threads the
    step's checkpoint may all be holding while it waits for these very writes
    (:meth:`_WriteGuard.check`)."""

    def __init__(self, file: str, timeout: float, serde: Any) -> None:
        conn = sqlite3.connect(file, timeout=timeout, check_same_thread=False)
        self.saver = SqliteSaver(conn, serde=serde)
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="fncall-sqlite-writes")

    async def run(self, write: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.thread, write, *args)

    def close(self) -> None:
        self.thread.shutdown(wait=True)  # never under a write still running
        self.saver.conn.close()


class _WritesInOneCall(AsyncSqliteSaver):
    """An ``AsyncSqliteSaver`` whose writes run each whole transaction in one call on a
    thread of their own, on a ``sqlite3`` connection of their own to the file
    (LangGraph's sync ``SqliteSaver`` methods, with this saver's serializer); reads stay
    on the ``aiosqlite`` connection. A database in memory has no second connection (and
    no other process to keep waiting): its writes stay on the saver's."""

    _writer: _Writer | None = None
    _writer_looked = False

    async def _writes(self) -> _Writer | None:
        if not self._writer_looked:
            await self.setup()
            file, timeout = await _aiosqlite_file(self.conn, self.lock)
            if file and not self._writer_looked:
                self._writer = _Writer(file, timeout, self.serde)
                weakref.finalize(self, self._writer.close)
            self._writer_looked = True
        return self._writer

    def close_writes(self) -> None:
        """Close the writes' connection (the saver's own ``aiosqlite`` connection is its
        opener's to close); the next write opens it again."""
        writer, self._writer, self._writer_looked = self._writer, None, False
        if writer is not None:
            writer.close()

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        writer = await self._writes()
        if writer is None:
            return await super().aput(config, checkpoint, metadata, new_versions)
        return await writer.run(writer.saver.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        writer = await self._writes()
        if writer is None:
            return await super().aput_writes(config, writes, task_id, task_path)
        await writer.run(writer.saver.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        writer = await self._writes()
        if writer is None:
            return await super().adelete_thread(thread_id)
        await writer.run(writer.saver.delete_thread, thread_id)


class DurableAsyncSqliteSaver(ClaimAware, _WritesInOneCall):
    """:class:`DurableSqliteSaver` for ``ainvoke``/``astream``; its checkpoint writes
    never hold the file's write lock across an ``await`` (each runs in one call on a
    thread of their own, on a connection of their own to the file): a process frozen or an
    event loop held up mid-run keeps no other process from writing."""

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
