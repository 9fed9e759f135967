"""Claims on tool calls: each call of a thread runs at most once, across processes.

Before a tool call runs, its id is *claimed* in the checkpointer's own database (a
``fncall_tool_calls`` table beside LangGraph's; a dict for the in-memory saver). The
claim is one atomic ``INSERT ... ON CONFLICT DO NOTHING``: of two processes resuming the
same step, one inserts and runs the call, the other finds the claim and does not. When
the call finishes, its result is stored with the claim.

What a run finds when the call is already claimed:

- claimed by a run that is still going (the process is alive and the call running, or
  that process resumed the same approval): it stops with a :class:`ToolCallClaimed`
  error (:class:`ThreadAlreadyResumed`, :class:`ToolCallInProgress`) and runs nothing;
- finished, by a process that stopped before the thread saved the result, and nothing
  has happened in the thread since: the stored result is used, the call is not run;
- finished, and the thread has moved on (another run took over, or this is a branch of
  the thread resumed from an older checkpoint): :class:`ToolCallAlreadyRan`;
- still marked running, but its process is gone (killed inside the tool), or marked
  abandoned (its run was cancelled inside the tool, e.g. by a LangGraph server's
  ``interrupt`` or ``rollback`` multitask strategy): the outcome is unknown; it is
  answered as such, or run again if the tool is declared idempotent.

Whether a process is alive is exact on one machine (the pid, its start time, the boot);
a claim made on another machine counts as running until ``stale_after`` seconds (if
given) have passed. Nothing here knows about graphs; the nodes use it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Generator
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph._compat import CONFIG_KEY_CHECKPOINTER, task_position

__all__ = [
    "CLAIMS_TABLE",
    "CallClaims",
    "ClaimKey",
    "ClaimRow",
    "Started",
    "ThreadAlreadyResumed",
    "ToolCallAlreadyRan",
    "ToolCallClaimed",
    "ToolCallInProgress",
    "claim_in_task",
    "claims_for",
]

log = logging.getLogger(__name__)

CLAIMS_TABLE = "fncall_tool_calls"

Status = Literal["running", "done", "unknown", "abandoned"]


# -- errors: what a run that lost a claim is told


class ToolCallClaimed(RuntimeError):
    """Another run of the same thread holds this tool call; this run stopped without
    running it. Nothing was lost: read the thread with ``get_state`` once the other run
    is done."""

    def __init__(self, message: str, *, thread_id: str, call_id: str, tool: str) -> None:
        super().__init__(message)
        self.thread_id, self.call_id, self.tool = thread_id, call_id, tool


class ThreadAlreadyResumed(ToolCallClaimed):
    """The approval this run answers was already answered by another run of the thread."""


class ToolCallInProgress(ToolCallClaimed):
    """The tool call is running right now in another run of the thread."""


class ToolCallAlreadyRan(ToolCallClaimed):
    """The tool call already ran in another run of the thread; it is not run again."""


# -- who holds a claim


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), ``None`` if it is gone.

    With the pid it names one process: a pid reused by a new process has a new start.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        if not os.path.isdir("/proc/self"):  # no procfs: the pid alone
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                return ""
            return ""
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""  # field 22 of proc(5)


_HOST = f"{socket.gethostname()}/{_boot_id()}"
_PID = os.getpid()
_START = _start_time(_PID) or ""
# the claims this process is running a call for right now
_ACTIVE: set[str] = set()
_ACTIVE_LOCK = threading.Lock()


def _this_process() -> tuple[str, int, str]:
    if os.getpid() != _PID:  # a forked child is a process of its own
        return _HOST, os.getpid(), _start_time(os.getpid()) or ""
    return _HOST, _PID, _START


@dataclass(frozen=True)
class Owner:
    """A process (host and boot, pid, start time) and one attempt of it (``token``)."""

    host: str
    pid: int
    start: str
    token: str

    @classmethod
    def here(cls) -> Owner:
        return cls(*_this_process(), uuid.uuid4().hex)

    @classmethod
    def parse(cls, text: str) -> Owner:
        host, pid, start, token = text.rsplit("|", 3)
        return cls(host, int(pid), start, token)

    def __str__(self) -> str:
        return f"{self.host}|{self.pid}|{self.start}|{self.token}"

    def describe(self) -> str:
        return f"process {self.pid} on {self.host.split('/', 1)[0]}"

    def process_alive(self) -> bool | None:
        """``True``/``False`` on this machine; ``None`` (cannot tell) on another."""
        if self.host != _HOST:
            return None
        start = _start_time(self.pid)
        return start is not None and (start == self.start or not self.start or not start)

    def is_this_process(self) -> bool:
        return (self.host, self.pid, self.start) == _this_process()

    def running(self) -> bool | None:
        """Whether this attempt is still running its call (``None``: cannot tell)."""
        if self.is_this_process():
            with _ACTIVE_LOCK:
                return self.token in _ACTIVE
        return self.process_alive()


@dataclass(frozen=True)
class ClaimKey:
    """One tool call of one thread: the thread, the graph's namespace in it, the call id."""

    thread_id: str
    namespace: str
    call_id: str


@dataclass(frozen=True)
class ClaimRow:
    key: ClaimKey
    tool: str
    owner: str
    step: str  # the checkpoint the call's step ran from
    status: Status
    created_at: float
    result_type: str | None = None
    result: bytes | None = None


@dataclass(frozen=True)
class Started:
    """What :meth:`CallClaims.start` decided.

    ``run``: this attempt holds the claim and runs the call (``holder`` for ``finish``).
    ``output``: the stored outcome to use instead (the call ran and its result was stored).
    ``unknown``: the call's process died inside it; this attempt holds the claim and
    answers it (``unknown`` is the stale claim).
    """

    run: bool = False
    output: Any = None
    unknown: ClaimRow | None = None
    holder: str | None = None


# -- operations on a claim store, as data: one flow drives a sync or an async store


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


@dataclass(frozen=True)
class _Release:
    key: ClaimKey
    owner: str


@dataclass(frozen=True)
class _Head:  # the thread's latest checkpoint id (from the saver)
    key: ClaimKey


_Op = _Insert | _Get | _Swap | _Finish | _Release | _Head
_Flow = Generator[_Op, Any, Any]


class _MemoryStore:
    """Claims in this process only: the in-memory saver's threads live no longer."""

    def __init__(self) -> None:
        self.rows: dict[ClaimKey, ClaimRow] = {}
        self.lock = threading.Lock()

    def run(self, op: _Op) -> Any:
        with self.lock:
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
                    held, status=op.status, result_type=op.result_type, result=op.result
                )
            else:
                del self.rows[op.key]
            return True

    async def arun(self, op: _Op) -> Any:
        return self.run(op)


_COLUMNS = (
    "thread_id, namespace, call_id, tool, owner, step, status, created_at, result_type, result"
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
            f"created_at {real} NOT NULL, result_type TEXT, result {blob}, "
            "PRIMARY KEY (thread_id, namespace, call_id))"
        )

    def statement(self, op: _Op) -> tuple[str, tuple[Any, ...]]:
        if isinstance(op, _Insert):
            r = op.row
            sql = (
                f"INSERT INTO {CLAIMS_TABLE} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING"
            )
            params: tuple[Any, ...] = (*_key(r.key), r.tool, r.owner, r.step, r.status)
            params += (r.created_at, r.result_type, r.result)
        elif isinstance(op, _Get):
            sql, params = f"SELECT {_COLUMNS} FROM {CLAIMS_TABLE} WHERE {_KEY}", _key(op.key)
        elif isinstance(op, _Swap):
            r = op.row
            sql = (
                f"UPDATE {CLAIMS_TABLE} SET owner = ?, step = ?, status = ?, created_at = ?, "
                f"result_type = ?, result = ? WHERE {_KEY} AND owner = ?"
            )
            params = (r.owner, r.step, r.status, r.created_at, r.result_type, r.result)
            params += (*_key(r.key), op.owner)
        elif isinstance(op, _Finish):
            sql = (
                f"UPDATE {CLAIMS_TABLE} SET status = ?, result_type = ?, result = ? "
                f"WHERE {_KEY} AND owner = ?"
            )
            params = (op.status, op.result_type, op.result, *_key(op.key), op.owner)
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
            thread_id, ns, call_id, tool, owner, step, status, created, rtype, result = rows[0]
            key = ClaimKey(thread_id, ns, call_id)
            result = bytes(result) if result is not None else None
            return ClaimRow(key, tool, owner, step, status, created, rtype, result)
        return rowcount == 1


def _key(key: ClaimKey) -> tuple[str, str, str]:
    return key.thread_id, key.namespace, key.call_id


class _SqliteStore(_SqlStore):
    def run(self, op: _Op) -> Any:
        with self.lock:
            if not self.ready:
                self.conn.execute(self.create)
                self.conn.commit()
                self.ready = True
            with self.conn:  # commits
                cur = self.conn.execute(*self.statement(op))
                return self.outcome(op, cur.rowcount, cur.fetchall())


class _AioSqliteStore(_SqlStore):
    async def arun(self, op: _Op) -> Any:
        async with self.lock:
            if not self.ready:
                await self.conn.execute(self.create)
                await self.conn.commit()
                self.ready = True
            async with self.conn.execute(*self.statement(op)) as cur:
                rows = list(await cur.fetchall())
                count = cur.rowcount
            await self.conn.commit()
            return self.outcome(op, count, rows)


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
                _create_pg_table(conn, self.create)
                self.ready = True
            with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(*self.statement(op))
                rows = cur.fetchall() if isinstance(op, _Get) else []
                return self.outcome(op, cur.rowcount, rows)


class _AsyncPostgresStore(_SqlStore):
    async def arun(self, op: _Op) -> Any:
        from psycopg.rows import tuple_row

        if self.pooled:
            async with self.conn.connection() as conn:
                return await self._arun(conn, op, tuple_row)
        async with self.lock:
            return await self._arun(self.conn, op, tuple_row)

    async def _arun(self, conn: Any, op: _Op, tuple_row: Any) -> Any:
        if not self.ready:
            try:
                async with conn.transaction():
                    await conn.execute(self.create)
            except Exception as exc:  # two processes creating it at once
                if "already exists" not in str(exc) and "duplicate key" not in str(exc):
                    raise
            self.ready = True
        async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(*self.statement(op))
            rows = list(await cur.fetchall()) if isinstance(op, _Get) else []
            return self.outcome(op, cur.rowcount, rows)


def _is_pool(conn: Any) -> bool:
    """Whether a PostgreSQL saver was given a connection pool (else one connection)."""
    return any(c.__module__.startswith("psycopg_pool") for c in type(conn).__mro__)


def _create_pg_table(conn: Any, create: str) -> None:
    try:
        with conn.transaction():
            conn.execute(create)
    except Exception as exc:  # CREATE TABLE IF NOT EXISTS can still race in PostgreSQL
        if "already exists" not in str(exc) and "duplicate key" not in str(exc):
            raise


_STORES: weakref.WeakKeyDictionary[BaseCheckpointSaver, Any] = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def _store_for(saver: BaseCheckpointSaver) -> Any:
    kinds = {c.__module__ + "." + c.__name__ for c in type(saver).__mro__}
    if "langgraph.checkpoint.sqlite.SqliteSaver" in kinds:
        return _SqliteStore(saver.conn, saver.lock, postgres=False)  # type: ignore[attr-defined]
    if "langgraph.checkpoint.sqlite.aio.AsyncSqliteSaver" in kinds:
        return _AioSqliteStore(saver.conn, saver.lock, postgres=False)  # type: ignore[attr-defined]
    if "langgraph.checkpoint.postgres.PostgresSaver" in kinds:
        return _PostgresStore(saver.conn, saver.lock, postgres=True)  # type: ignore[attr-defined]
    if "langgraph.checkpoint.postgres.aio.AsyncPostgresSaver" in kinds:
        return _AsyncPostgresStore(saver.conn, saver.lock, postgres=True)  # type: ignore[attr-defined]
    if not isinstance(saver, InMemorySaver):
        log.warning(
            "%s: tool call claims are kept in this process only; at-most-once across "
            "processes holds for the SQLite and PostgreSQL savers",
            type(saver).__name__,
        )
    return _MemoryStore()


def claim_in_task(
    config: Any, call_id: str | None, *, stale_after: float | None = None
) -> tuple[CallClaims, ClaimKey, str] | None:
    """The claims, the key of ``call_id`` and the step of the graph task ``config`` runs
    (``None`` outside a thread with a checkpointer)."""
    position = task_position(config)
    saver = ((config or {}).get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)
    if position is None or saver is None or not call_id:
        return None
    thread_id, namespace, step = position
    return claims_for(saver, stale_after=stale_after), ClaimKey(thread_id, namespace, call_id), step


def claims_for(saver: BaseCheckpointSaver, *, stale_after: float | None = None) -> CallClaims:
    """The tool call claims kept with ``saver``'s threads (one store per saver)."""
    with _STORES_LOCK:
        store = _STORES.get(saver)
        if store is None:
            store = _STORES[saver] = _store_for(saver)
    return CallClaims(store, saver, stale_after=stale_after)


# -- the flows: what to do with a claim, whatever the store


class CallClaims:
    """Claims on the tool calls of ``saver``'s threads.

    Args:
        store: where claims live (see :func:`claims_for`).
        saver: the threads' checkpointer (its serializer stores results, and it tells
            whether a thread moved on).
        stale_after: seconds after which a claim made on another machine counts as
            abandoned; ``None``: never (a claim there counts as running until it ends).
    """

    def __init__(
        self, store: Any, saver: BaseCheckpointSaver, *, stale_after: float | None
    ) -> None:
        self.store, self.saver, self.stale_after = store, saver, stale_after

    # sync and async entry points drive the same flows

    def start(self, key: ClaimKey, tool: str, step: str, *, idempotent: bool) -> Started:
        """Claim the call before it runs (see :class:`Started`); raises :class:`ToolCallClaimed`."""
        return self._drive(self._start(key, tool, step, idempotent))

    async def astart(self, key: ClaimKey, tool: str, step: str, *, idempotent: bool) -> Started:
        return await self._adrive(self._start(key, tool, step, idempotent))

    def finish(self, key: ClaimKey, holder: str, output: Any, status: Status = "done") -> None:
        """Store the outcome of a call this attempt ran (or answered)."""
        self._drive(self._finish(key, holder, output, status))

    async def afinish(
        self, key: ClaimKey, holder: str, output: Any, status: Status = "done"
    ) -> None:
        await self._adrive(self._finish(key, holder, output, status))

    def release(self, key: ClaimKey, holder: str) -> None:
        """Give the claim up: the call did not happen (it paused for an interrupt)."""
        self._drive(self._release(key, holder))

    async def arelease(self, key: ClaimKey, holder: str) -> None:
        await self._adrive(self._release(key, holder))

    def abandon(self, key: ClaimKey, holder: str) -> None:
        """The call stopped without an outcome (its run was cancelled, or the process is
        stopping): the claim stays, marked ``abandoned``, and a later run of the thread,
        in any process, answers the call's outcome as unknown instead of waiting for it."""
        _forget(holder)
        self._quietly(self._abandon(key, holder), f"mark tool call {key.call_id} abandoned")

    async def aabandon(self, key: ClaimKey, holder: str) -> None:
        _forget(holder)
        # shielded: it runs while the run's task is being cancelled
        what = f"mark tool call {key.call_id} abandoned"
        await asyncio.shield(self._aquietly(self._abandon(key, holder), what))

    def review(self, key: ClaimKey, step: str) -> None:
        """Claim the answer to an approval; raises :class:`ThreadAlreadyResumed` if taken.

        Interrupted while claiming (its run cancelled, the process stopping), it gives
        the claim up again, so the run that follows can answer the approval."""
        me = Owner.here()
        try:
            self._drive(self._review(key, step, me))
        except ToolCallClaimed:
            raise
        except BaseException:
            self._quietly(self._release(key, str(me)), f"give up approval {key.call_id}")
            raise

    async def areview(self, key: ClaimKey, step: str) -> None:
        me = Owner.here()
        try:
            await self._adrive(self._review(key, step, me))
        except ToolCallClaimed:
            raise
        except BaseException:
            what = f"give up approval {key.call_id}"
            await asyncio.shield(self._aquietly(self._release(key, str(me)), what))
            raise

    # what runs while a run is being torn down must not hide why it is

    def _quietly(self, flow: _Flow, what: str) -> None:
        try:
            self._drive(flow)
        except Exception as exc:
            log.warning("could not %s: %s", what, exc)

    async def _aquietly(self, flow: _Flow, what: str) -> None:
        try:
            await self._adrive(flow)
        except Exception as exc:
            log.warning("could not %s: %s", what, exc)

    def _drive(self, flow: _Flow) -> Any:
        answer = None
        try:
            while True:
                op = flow.send(answer)
                answer = self._head(op) if isinstance(op, _Head) else self.store.run(op)
        except StopIteration as done:
            return done.value

    async def _adrive(self, flow: _Flow) -> Any:
        answer = None
        try:
            while True:
                op = flow.send(answer)
                answer = await (self._ahead(op) if isinstance(op, _Head) else self.store.arun(op))
        except StopIteration as done:
            return done.value

    @staticmethod
    def _head_config(key: ClaimKey) -> dict[str, Any]:
        return {"configurable": {"thread_id": key.thread_id, "checkpoint_ns": key.namespace}}

    def _head(self, op: _Head) -> str | None:
        found = self.saver.get_tuple(self._head_config(op.key))  # type: ignore[arg-type]
        return found.checkpoint["id"] if found else None

    async def _ahead(self, op: _Head) -> str | None:
        found = await self.saver.aget_tuple(self._head_config(op.key))  # type: ignore[arg-type]
        return found.checkpoint["id"] if found else None

    # the flows

    def _running(self, owner: Owner, row: ClaimRow) -> bool:
        running = owner.running()
        if running is None:  # another machine: running until stale
            return self.stale_after is None or time.time() - row.created_at < self.stale_after
        return running

    def _start(self, key: ClaimKey, tool: str, step: str, idempotent: bool) -> _Flow:
        me = Owner.here()
        mine = ClaimRow(key, tool, str(me), step, "running", time.time())
        for _ in range(8):  # a claim that changes hands while we look: look again
            if (yield _Insert(mine)):
                return self._began(me)
            held: ClaimRow | None = yield _Get(key)
            if held is None:
                continue
            owner = Owner.parse(held.owner)
            if held.status in ("running", "abandoned"):
                if held.status == "running" and self._running(owner, held):
                    raise ToolCallInProgress(
                        f"thread {key.thread_id!r}: tool call {key.call_id} ({tool}) is running "
                        f"in another run of this thread ({owner.describe()}); this run stopped "
                        "without running it. Read the thread with get_state when that run is done.",
                        thread_id=key.thread_id,
                        call_id=key.call_id,
                        tool=tool,
                    )
                if (yield _Swap(mine, held.owner)):
                    return self._began(me) if idempotent else Started(unknown=held, holder=str(me))
                continue
            moved_on = (yield _Head(key)) != step
            if moved_on or owner.process_alive() is not False:
                raise ToolCallAlreadyRan(
                    f"thread {key.thread_id!r}: tool call {key.call_id} ({tool}) already ran in "
                    f"another run of this thread ({owner.describe()}) and is not run again; "
                    "this run stopped. Read the thread with get_state.",
                    thread_id=key.thread_id,
                    call_id=key.call_id,
                    tool=tool,
                )
            # its process died after the call, before the thread saved the result
            return Started(output=self.saver.serde.loads_typed((held.result_type, held.result)))
        raise RuntimeError(f"tool call claim {key} kept changing hands")

    @staticmethod
    def _began(me: Owner) -> Started:
        with _ACTIVE_LOCK:
            _ACTIVE.add(me.token)
        return Started(run=True, holder=str(me))

    def _finish(self, key: ClaimKey, holder: str, output: Any, status: Status) -> _Flow:
        _forget(holder)
        rtype, data = self.saver.serde.dumps_typed(output)
        yield _Finish(key, holder, status, rtype, data)
        return None

    @staticmethod
    def _abandon(key: ClaimKey, holder: str) -> _Flow:
        yield _Finish(key, holder, "abandoned", None, None)
        return None

    def _release(self, key: ClaimKey, holder: str) -> _Flow:
        _forget(holder)
        yield _Release(key, holder)
        return None

    def _review(self, key: ClaimKey, step: str, me: Owner) -> _Flow:
        mine = ClaimRow(key, "approval", str(me), step, "done", time.time())
        for _ in range(8):
            if (yield _Insert(mine)):
                return None
            held: ClaimRow | None = yield _Get(key)
            if held is None:
                continue
            owner = Owner.parse(held.owner)
            alive = owner.process_alive()
            same_process = (owner.host, owner.pid, owner.start) == (me.host, me.pid, me.start)
            # a resume that died (or failed in this process) before the thread moved on
            taken_over = (
                (alive is False or same_process)
                and (yield _Head(key)) == step
                and (yield _Swap(mine, held.owner))
            )
            if taken_over:
                return None
            raise ThreadAlreadyResumed(
                f"thread {key.thread_id!r}: this approval was already answered by another run "
                f"of the thread ({owner.describe()}); this run stopped and ran nothing. Read "
                "the thread with get_state to see what that run did.",
                thread_id=key.thread_id,
                call_id=key.call_id,
                tool="approval",
            )
        raise RuntimeError(f"approval claim {key} kept changing hands")


def _forget(holder: str) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE.discard(Owner.parse(holder).token)
