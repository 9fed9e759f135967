"""Claims on tool calls: each call of a thread runs at most once, across processes.

Before a tool call runs, its id is *claimed* in the checkpointer's own database (a
``fncall_tool_calls`` table beside LangGraph's; a dict for the in-memory saver). The
claim is one atomic ``INSERT ... ON CONFLICT DO NOTHING``: of two processes resuming the
same step, one inserts and runs the call, the other finds the claim and does not. When
the call finishes, its result is stored with the claim.

What a run finds when the call is already claimed:

- claimed by a run that is still going (the call is running, or that run resumed the
  same approval): it stops with a :class:`ToolCallClaimed` error
  (:class:`ThreadAlreadyResumed`, :class:`ToolCallInProgress`) and runs nothing;
- finished, by a run that has ended without the thread saving the result (its process
  died, or its checkpoint write failed while the process lives on — this process
  included), and nothing has happened in the thread since: the stored result is used,
  the call is not run;
- finished, and the thread has moved on (another run took over, or this is a branch of
  the thread resumed from an older checkpoint), or the finishing run may still be
  saving it: :class:`ToolCallAlreadyRan`;
- still marked running, but nobody runs it any more (its process is gone, killed inside
  the tool; or its holder stopped renewing it), or marked abandoned (its run was
  cancelled inside the tool, e.g. by a LangGraph server's ``interrupt`` or ``rollback``
  multitask strategy): the outcome is unknown; it is answered as such, or run again if
  the tool is declared idempotent.

Whether a claim is still held is known exactly by the process holding it (it knows
which of its calls are running). Any other process goes by a *lease*: while a call
runs, its process renews its claim every ``stale_after / 4`` seconds (a heartbeat);
a claim not renewed for ``stale_after`` seconds (:data:`DEFAULT_LEASE`) has lost its
holder — unless that holder is on this machine and known to be gone, which is said at
once (the pid, its start time, the boot).

A claim's whole life (claim, run the call, store its outcome) is one flow,
:meth:`CallClaims.once`: however an attempt stops once it made the claim (an error, a
cancel, an outcome that could not be stored), the claim is settled (given up, finished
or marked abandoned) and not left ``running`` while its process lives on. Nothing here
knows about graphs beyond LangGraph's pause (``GraphBubbleUp``); the nodes use it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphBubbleUp

from fncall_graph._compat import CONFIG_KEY_CHECKPOINTER, task_position

__all__ = [
    "CLAIMS_TABLE",
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_LEASE",
    "RUN_KEY",
    "SWEEP_IDLE",
    "CallClaims",
    "ClaimKey",
    "ClaimRow",
    "Owner",
    "TaskClaim",
    "ThreadAlreadyResumed",
    "ToolCallAlreadyRan",
    "ToolCallClaimed",
    "ToolCallInProgress",
    "ToolCallTakenOver",
    "aforget_deleted_threads",
    "aforget_thread",
    "claim_in_task",
    "claims_for",
    "forget_deleted_threads",
    "forget_thread",
    "lost_run",
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


class ToolCallTakenOver(ToolCallClaimed):
    """This run lost its claim on a tool call while the call ran: it stopped renewing
    the claim for longer than the lease (its process was frozen, or the tool blocked
    the event loop and the heartbeat), another run took the call over and answered it,
    and the thread moved on. This run stops without writing anything to the thread:
    what it would write would fork the thread and hide the run that took over."""


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
# the claims this process is running a call for right now: token -> its heartbeat
_ACTIVE: dict[str, _Heartbeat] = {}
_ACTIVE_LOCK = threading.Lock()
# outcomes this process had but could not store with their claims: holder -> (status,
# outcome); its next run of the call stores it then, instead of calling it unknown
_UNSAVED: dict[str, tuple[Status, Any]] = {}

#: The ``configurable`` key under which a graph run carries a token of its own
#: (``create_fncall_graph``'s graphs set it): the claims a run makes remember it, so a
#: run that lost a claim is known, and the savers refuse what it would still write.
RUN_KEY = "fncall_run"

#: The claim id of a thread's run hold (:mod:`.thread_runs`); no tool call id a model
#: writes looks like it.
THREAD_RUN_ID = "fncall:run"

# runs (their RUN_KEY token) that lost a claim while their call ran -> why
_LOST_RUNS: dict[str, ToolCallTakenOver] = {}
_LOST_LOCK = threading.Lock()


def lost_run(config: Any) -> ToolCallTakenOver | None:
    """Why the run of ``config`` may write nothing more to its thread (a claim of its
    was taken over by another run), or ``None``: the savers ask before each write."""
    token = ((config or {}).get("configurable") or {}).get(RUN_KEY)
    if not token:
        return None
    with _LOST_LOCK:
        why = _LOST_RUNS.get(token)
    if why is None:
        return None
    return ToolCallTakenOver(str(why), thread_id=why.thread_id, call_id=why.call_id, tool=why.tool)


def run_ended(config: Any) -> None:
    """The run of ``config`` is over: forget whether it lost a claim."""
    token = ((config or {}).get("configurable") or {}).get(RUN_KEY)
    if token:
        with _LOST_LOCK:
            _LOST_RUNS.pop(token, None)


def _lose(run: str | None, why: ToolCallTakenOver) -> None:
    if run:
        with _LOST_LOCK:
            _LOST_RUNS[run] = why


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
    renewed_at: float | None = None  # the holder's last heartbeat (or its finish)

    @property
    def holder(self) -> Owner:
        """Who made the claim: the process and its attempt (``owner``, parsed)."""
        return Owner.parse(self.owner)

    def lapsed(self, lease: float | None, now: float) -> bool:
        """Whether the holder let its lease of ``lease`` seconds run out (``None``: it never does)."""
        return lease is not None and now - (self.renewed_at or self.created_at) >= lease


@dataclass(frozen=True)
class _Started:
    """What claiming a call decided.

    ``run``: this attempt holds the claim and runs the call.
    ``output``: the stored outcome to use instead (the call ran and its result was stored).
    ``unknown``: an earlier attempt stopped inside the call; this attempt holds the claim
    and answers it (``unknown`` is that attempt's claim).
    """

    run: bool = False
    output: Any = None
    unknown: ClaimRow | None = None


@dataclass
class _Attempt:
    """One attempt at a call: who claims it, for which graph run (its :data:`RUN_KEY`
    token), and whether its claim replaced an earlier attempt's (whose outcome is
    unknown, so giving the claim up would forget that)."""

    me: Owner
    run: str | None = None
    replacing: bool = False

    @property
    def holder(self) -> str:
        return str(self.me)


# -- the heartbeat: while a call runs, its process renews its claim


DEFAULT_BUSY_TIMEOUT = 10.0
"""Seconds one SQLite statement waits for another connection's lock (SQLite's busy
timeout)."""

DEFAULT_LEASE = 60.0
"""Seconds a claim counts as held after its holder last renewed it; the holder renews it
four times as often while its call runs."""


@dataclass
class _Heartbeat:
    """One running call's claim, renewed every ``every`` seconds (next at ``due``), made
    by graph run ``run``."""

    store: Any
    key: ClaimKey
    owner: str
    every: float
    due: float
    tool: str = ""
    run: str | None = None
    lease: float | None = None


_WAKE = threading.Event()  # a claim joined: look again when the next renewal is due
_HEART: list[threading.Thread] = []


def _hold(me: Owner, beat: _Heartbeat) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE[me.token] = beat
        # one heartbeat thread per process (a forked child starts its own)
        if not any(t.is_alive() for t in _HEART):
            _HEART[:] = [threading.Thread(target=_heart, name="fncall-claims", daemon=True)]
            _HEART[0].start()
    _WAKE.set()


def _heart() -> None:
    while True:
        _WAKE.clear()
        with _ACTIVE_LOCK:
            beats = list(_ACTIVE.values())
        now = time.time()
        for beat in beats:
            if beat.due > now:
                continue
            with _ACTIVE_LOCK:  # its call may have ended since (and its saver closed)
                if all(b is not beat for b in _ACTIVE.values()):
                    continue
            beat.due = now + beat.every
            try:
                # an async saver's store renews on a connection of its own, never
                # through the event loop, which the running tool may be blocking
                if beat.store.run(_Renew(beat.key, beat.owner, time.time())) is False:
                    _check_taken_over(beat)
            except Exception as exc:  # the next beat tries again; a lapse is the worst
                log.warning("could not renew the claim on tool call %s: %s", beat.key.call_id, exc)
        _WAKE.wait(min((b.due for b in beats), default=now + 3600) - time.time())


def _check_taken_over(beat: _Heartbeat) -> None:
    """A renewal matched no running claim of ours: if another run holds the claim now
    (or it is gone), this run lost it: its writes are refused from here on."""
    held = beat.store.run(_Get(beat.key))
    if held is not None and held.owner == beat.owner:
        return  # ours still: the call finished between the look and the renewal
    error = _taken_over(beat.key, beat.tool, held, beat.lease)
    log.error("%s", error)
    _lose(beat.run, error)
    _forget(Owner.parse(beat.owner))


def _taken_over(
    key: ClaimKey, tool: str, held: ClaimRow | None, lease: float | None
) -> ToolCallTakenOver:
    if held is None:
        by = "its claim was deleted (the thread was deleted)"
    else:
        by = f"{held.holder.describe()} took the call over (it is now {held.status!r} there)"
    lapse = f"for over {lease:g} s" if lease is not None else "too long"
    what = (
        "this run's hold on the thread was taken over while the run went on"
        if key.call_id == THREAD_RUN_ID
        else f"tool call {key.call_id} ({tool}) was taken over while this run ran it"
    )
    return ToolCallTakenOver(
        f"thread {key.thread_id!r}: {what}: the run had not renewed its claim {lapse} (its process was "
        f"frozen, or the tool blocked the event loop), and {by}. This run stopped and "
        "writes nothing more to the thread; read the thread with get_state. The call may "
        "have taken effect here: the thread's answer to it says its outcome is unknown.",
        thread_id=key.thread_id,
        call_id=key.call_id,
        tool=tool,
    )


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


@dataclass(frozen=True)
class _Head:  # the thread's latest checkpoint id (from the saver)
    key: ClaimKey


@dataclass(frozen=True)
class _Run:  # run the call itself (what the caller of the flow gave)
    pass


_Op = _Insert | _Get | _Swap | _Finish | _Renew | _Release | _Forget | _Sweep | _Head | _Run
_Flow = Generator[_Op, Any, Any]


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

    async def arun(self, op: _Op) -> Any:
        if self.file is None:
            async with self.lock, self.conn.execute("PRAGMA database_list") as cur:
                rows = list(await cur.fetchall())
            self.file = next((str(r[2] or "") for r in rows if r[1] == "main"), "")
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
                conn = sqlite3.connect(
                    self.file, timeout=DEFAULT_BUSY_TIMEOUT, check_same_thread=False
                )
                self.own = _SqliteStore(conn, threading.Lock(), postgres=False)
        return self.own


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


def claim_in_task(
    config: Any, call_id: str | None, *, stale_after: float | None = DEFAULT_LEASE
) -> TaskClaim | None:
    """The claim on ``call_id`` in the graph task ``config`` runs (``None`` outside a
    thread with a checkpointer)."""
    position = task_position(config)
    saver = ((config or {}).get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)
    if position is None or saver is None or not call_id:
        return None
    thread_id, namespace, step = position
    claims = claims_for(saver, stale_after=stale_after)
    run = ((config or {}).get("configurable") or {}).get(RUN_KEY)
    return TaskClaim(claims, ClaimKey(thread_id, namespace, call_id), step, run)


def claims_for(
    saver: BaseCheckpointSaver, *, stale_after: float | None = DEFAULT_LEASE
) -> CallClaims:
    """The tool call claims kept with ``saver``'s threads (one store per saver)."""
    with _STORES_LOCK:
        store = _STORES.get(saver)
        if store is None:
            store = _STORES[saver] = _store_for(saver)
            _sweep_soon(store)
    return CallClaims(store, saver, stale_after=stale_after)


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
        log.warning("could not delete the claims of deleted threads: %s", exc)


def _swept(done: Any) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.warning("could not delete the claims of deleted threads: %s", done.exception())


def forget_thread(saver: BaseCheckpointSaver, thread_id: str) -> int:
    """Delete the claims (and the results stored with them) of ``thread_id``; the number
    deleted. The savers of :mod:`fncall_graph.adapters.checkpoint` do it in their
    ``delete_thread``; call it beside ``delete_thread`` of any other saver."""
    return claims_for(saver).store.run(_Forget(thread_id))


async def aforget_thread(saver: BaseCheckpointSaver, thread_id: str) -> int:
    """:func:`forget_thread` for an async saver."""
    return await _arun(claims_for(saver).store, _Forget(thread_id))


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
    store = claims_for(saver).store
    return store.run(_sweep_for(saver, store, saver.list(None), idle_for))


async def aforget_deleted_threads(
    saver: BaseCheckpointSaver, *, idle_for: float = SWEEP_IDLE
) -> int:
    """:func:`forget_deleted_threads` for an async saver."""
    store = claims_for(saver).store
    listed = [c async for c in saver.alist(None)] if isinstance(store, _MemoryStore) else []
    return await _arun(store, _sweep_for(saver, store, listed, idle_for))


def _sweep_for(saver: BaseCheckpointSaver, store: Any, listed: Any, idle_for: float) -> _Sweep:
    before = time.time() - idle_for
    if not isinstance(store, _MemoryStore):
        return _Sweep(before)  # the database looks its threads up itself
    return _Sweep(before, frozenset(c.config["configurable"]["thread_id"] for c in listed))


# -- the flows: what to do with a claim, whatever the store

T = TypeVar("T")


class _Driving:
    """A flow being driven: its next operation, then that operation's answer, or its
    error, which goes back into the flow (where it settles the claim)."""

    def __init__(self, flow: _Flow) -> None:
        self.flow = flow
        self.answer: Any = None
        self.error: BaseException | None = None
        self.value: Any = None  # what the flow returned

    def next(self) -> _Op | None:
        """The next operation; ``None`` once the flow returned."""
        try:
            if self.error is not None:
                return self.flow.throw(self.error)
            return self.flow.send(self.answer)
        except StopIteration as done:
            self.value = done.value
            return None

    @contextmanager
    def answering(self) -> Iterator[None]:
        self.answer, self.error = None, None
        try:
            yield
        except BaseException as exc:
            self.error = exc


FINISH_ATTEMPTS = 3
"""How many times storing a call's outcome is tried before its claim is abandoned."""


class CallClaims:
    """Claims on the tool calls of ``saver``'s threads.

    Args:
        store: where claims live (see :func:`claims_for`).
        saver: the threads' checkpointer (its serializer stores results, and it tells
            whether a thread moved on).
        stale_after: the lease: seconds after its holder last renewed it (or finished
            its call) that another process counts a claim as held; this process renews
            the claims of its running calls every ``stale_after / 4`` seconds. ``None``:
            a claim is held until its process is known to be gone, which only this
            machine can tell (a claim made on another machine waits for its holder).
    """

    def __init__(
        self, store: Any, saver: BaseCheckpointSaver, *, stale_after: float | None
    ) -> None:
        self.store, self.saver, self.stale_after = store, saver, stale_after

    # sync and async entry points drive the same flows

    def once(
        self,
        key: ClaimKey,
        step: str,
        run: Callable[[], T],
        *,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], T],
        graph_run: str | None = None,
    ) -> T:
        """Run the call ``key`` at most once: claim it, ``run()`` it, store its outcome.

        The whole life of the claim is one protected flow: however the attempt stops
        once the claim is made (an error, a cancel, a failed store), the claim is
        settled, never left ``running``:

        - the call paused inside (``GraphBubbleUp``, e.g. ``interrupt``), or the attempt
          stopped before the call ran: the claim is given up, and the call runs on resume;
        - the call raised, or the attempt stopped inside it or before its outcome was
          stored: the claim is marked ``abandoned`` (its outcome is unknown);
        - the outcome could not be stored: tried :data:`FINISH_ATTEMPTS` times, then the
          claim is abandoned and the error raised;
        - the claim was taken over while the call ran (this process stopped renewing it
          for longer than the lease, and another run answered the call):
          :class:`ToolCallTakenOver` is raised, the outcome is not stored, and the graph
          run ``graph_run`` is marked lost, so the savers refuse its further writes.

        Already claimed: the stored outcome is returned if the call ran and the thread
        did not save it; ``unknown(claim)`` answers a call whose earlier attempt stopped
        inside it (unless ``idempotent``: then it runs again); otherwise
        :class:`ToolCallClaimed` is raised and nothing runs.

        Args:
            key: the call.
            step: the checkpoint the call's step runs from.
            run: runs the call and returns its outcome (stored with the claim).
            tool: the tool's name (said in errors).
            idempotent: whether the call may run again when its outcome is unknown.
            unknown: the answer to a call whose outcome is unknown.
            graph_run: the graph run making the call (its :data:`RUN_KEY` token).
        """
        flow = self._once(key, step, tool, idempotent, unknown, graph_run)
        return self._drive(flow, run)

    async def aonce(
        self,
        key: ClaimKey,
        step: str,
        run: Callable[[], Awaitable[T]],
        *,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], T],
        graph_run: str | None = None,
    ) -> T:
        """:meth:`once` for an async ``run``."""
        flow = self._once(key, step, tool, idempotent, unknown, graph_run)
        return await self._adrive(flow, run)

    def stored(self, key: ClaimKey) -> Any:
        """The outcome stored with call ``key``'s claim; ``None`` if none is stored."""
        return self._loads(self.store.run(_Get(key)))

    async def astored(self, key: ClaimKey) -> Any:
        return self._loads(await self.store.arun(_Get(key)))

    def _loads(self, held: ClaimRow | None) -> Any:
        if held is None or held.result_type is None or held.result is None:
            return None
        return self.saver.serde.loads_typed((held.result_type, held.result))

    def review(self, key: ClaimKey, step: str) -> None:
        """Claim the answer to an approval; raises :class:`ThreadAlreadyResumed` if taken.

        Interrupted while claiming (its run cancelled, the process stopping), it gives
        the claim up again, so the run that follows can answer the approval."""
        self._drive(self._review(key, step))

    async def areview(self, key: ClaimKey, step: str) -> None:
        await self._adrive(self._review(key, step))

    # drivers: an operation's error goes back into the flow, which settles the claim

    def _drive(self, flow: _Flow, run: Callable[[], Any] | None = None) -> Any:
        driving = _Driving(flow)
        while (op := driving.next()) is not None:
            with driving.answering():
                driving.answer = self._perform(op, run)
        return driving.value

    async def _adrive(self, flow: _Flow, run: Callable[[], Awaitable[Any]] | None = None) -> Any:
        driving = _Driving(flow)
        while (op := driving.next()) is not None:
            with driving.answering():
                driving.answer = await self._aperform(op, run)
        return driving.value

    def _perform(self, op: _Op, run: Callable[[], Any] | None) -> Any:
        if isinstance(op, _Run):
            assert run is not None
            return run()
        if isinstance(op, _Head):
            return self._head(op)
        return self.store.run(op)

    async def _aperform(self, op: _Op, run: Callable[[], Awaitable[Any]] | None) -> Any:
        if isinstance(op, _Run):
            assert run is not None
            return await run()
        if isinstance(op, _Head):
            return await self._ahead(op)
        if isinstance(op, _Finish | _Release):
            # settling a claim is not cut short by a (further) cancel of the run
            return await asyncio.shield(self.store.arun(op))
        return await self.store.arun(op)

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

    def _once(
        self,
        key: ClaimKey,
        step: str,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], Any],
        graph_run: str | None = None,
    ) -> _Flow:
        attempt = _Attempt(Owner.here(), graph_run)
        try:
            try:
                started = yield from self._start(key, tool, step, idempotent, attempt)
            except (ToolCallClaimed, GeneratorExit):
                raise
            except BaseException:
                # stopped while claiming: the call did not run in this attempt
                yield from self._settle(key, attempt.holder, abandon=attempt.replacing)
                raise
            if not started.run and started.unknown is None:
                return started.output  # it ran; its process stopped before the thread saved it
            status: Status = "done"
            try:
                if started.unknown is None:
                    output = yield _Run()
                else:
                    output, status = unknown(started.unknown), "unknown"
            except GraphBubbleUp:  # paused inside the call: it runs again on resume
                yield from self._settle(key, attempt.holder, abandon=False)
                raise
            except GeneratorExit:
                raise
            except BaseException:
                yield from self._settle(key, attempt.holder, abandon=True)
                raise
            yield from self._store(key, attempt, output, status, tool)
            return output
        finally:
            _forget(attempt.me)

    def held(self, row: ClaimRow) -> bool:
        """Whether the attempt that made claim ``row`` may still be going: running its
        call, or (a finished call) saving the result in its thread."""
        owner = row.holder
        if owner.is_this_process():  # known exactly
            with _ACTIVE_LOCK:
                return owner.token in _ACTIVE
        if owner.process_alive() is False:
            return False
        return not row.lapsed(self.stale_after, time.time())

    def _start(
        self, key: ClaimKey, tool: str, step: str, idempotent: bool, attempt: _Attempt
    ) -> _Flow:
        mine = ClaimRow(key, tool, attempt.holder, step, "running", time.time())
        for _ in range(8):  # a claim that changes hands while we look: look again
            if (yield _Insert(mine)):
                return self._began(attempt, key, tool)
            held: ClaimRow | None = yield _Get(key)
            if held is None:
                continue
            owner = held.holder
            unsaved = _UNSAVED.get(held.owner) if owner.is_this_process() else None
            if unsaved is not None and held.status in ("running", "abandoned"):
                # this process had the outcome: store it now (the retry of its finish)
                status, output = unsaved
                rtype, data = self.saver.serde.dumps_typed(output)
                if (yield _Finish(key, held.owner, status, rtype, data, time.time())):
                    _UNSAVED.pop(held.owner, None)
                    return _Started(output=output)
                continue
            if held.status in ("running", "abandoned"):
                if held.status == "running" and self.held(held):
                    raise ToolCallInProgress(
                        f"thread {key.thread_id!r}: tool call {key.call_id} ({tool}) is running "
                        f"in another run of this thread ({owner.describe()}); this run stopped "
                        "without running it. Read the thread with get_state when that run is done.",
                        thread_id=key.thread_id,
                        call_id=key.call_id,
                        tool=tool,
                    )
                attempt.replacing = True  # from here on, the claim may be ours
                if (yield _Swap(mine, held.owner)):
                    return self._began(attempt, key, tool) if idempotent else _Started(unknown=held)
                attempt.replacing = False
                continue
            moved_on = (yield _Head(key)) != step
            if moved_on or self.held(held):
                raise ToolCallAlreadyRan(
                    f"thread {key.thread_id!r}: tool call {key.call_id} ({tool}) already ran in "
                    f"another run of this thread ({owner.describe()}) and is not run again; "
                    "this run stopped. Read the thread with get_state.",
                    thread_id=key.thread_id,
                    call_id=key.call_id,
                    tool=tool,
                )
            # its run ended (its process died, or its checkpoint write failed) after the
            # call, before the thread saved the result: the result stored with the claim
            return _Started(output=self.saver.serde.loads_typed((held.result_type, held.result)))
        raise RuntimeError(f"tool call claim {key} kept changing hands")

    def _began(self, attempt: _Attempt, key: ClaimKey, tool: str) -> _Started:
        every = (self.stale_after if self.stale_after is not None else DEFAULT_LEASE) / 4
        beat = _Heartbeat(self.store, key, attempt.holder, every, time.time() + every)
        beat.tool, beat.run, beat.lease = tool, attempt.run, self.stale_after
        _hold(attempt.me, beat)
        return _Started(run=True)

    def _store(
        self, key: ClaimKey, attempt: _Attempt, output: Any, status: Status, tool: str
    ) -> _Flow:
        """Store the outcome with the claim; the last failure abandons it and is raised.
        A claim that is no longer this attempt's (taken over) raises
        :class:`ToolCallTakenOver` and marks the graph run lost."""
        holder = attempt.holder
        for tries in range(1, FINISH_ATTEMPTS + 1):
            try:
                rtype, data = self.saver.serde.dumps_typed(output)
                stored = yield _Finish(key, holder, status, rtype, data, time.time())
            except Exception as exc:
                if tries < FINISH_ATTEMPTS:
                    log.warning(
                        "could not store the outcome of tool call %s (attempt %d of %d): %s",
                        key.call_id,
                        tries,
                        FINISH_ATTEMPTS,
                        exc,
                    )
                    continue
                _UNSAVED[holder] = (status, output)  # its next run here stores it
                # another process that asks first answers "outcome unknown": say here
                # what the outcome was, so a person can still find it
                log.error(
                    "the outcome of tool call %s (%s, thread %r) could not be stored: %s. "
                    "This process stores it when its thread is resumed here; elsewhere the "
                    "call is answered 'outcome unknown'. Its outcome was: %.2000s",
                    key.call_id,
                    tool,
                    key.thread_id,
                    exc,
                    getattr(output, "content", output),
                )
                yield from self._settle(key, holder, abandon=True)
                raise
            except GeneratorExit:
                raise
            except BaseException:  # stopped while storing: the outcome may not be stored
                yield from self._settle(key, holder, abandon=True)
                raise
            if stored is False:  # matched no row of ours: another run took the call
                yield from self._taken(key, attempt, output, tool)
            return None
        return None

    def _taken(self, key: ClaimKey, attempt: _Attempt, output: Any, tool: str) -> _Flow:
        """This attempt's claim was taken over: say so and stop the graph run's writes.
        (The outcome it had is logged: the thread holds the other run's answer.)"""
        try:
            held: ClaimRow | None = yield _Get(key)
        except Exception:
            held = None
        error = _taken_over(key, tool, held, self.stale_after)
        _lose(attempt.run, error)
        shown = getattr(output, "content", output)
        log.error("%s Its outcome in this run was: %.300s", error, shown)
        raise error

    @staticmethod
    def _settle(key: ClaimKey, holder: str, *, abandon: bool) -> _Flow:
        """Mark the claim abandoned, or give it up; what goes wrong here is logged, not
        raised: it runs while a run stops, and must not hide why it stops."""
        op: _Op = (
            _Finish(key, holder, "abandoned", None, None, time.time())
            if abandon
            else _Release(key, holder)
        )
        try:
            yield op
        except Exception as exc:
            what = "mark tool call %s abandoned" if abandon else "give up the claim on %s"
            log.warning("could not " + what + ": %s", key.call_id, exc)
        return None

    def _review(self, key: ClaimKey, step: str) -> _Flow:
        me = Owner.here()
        try:
            yield from self._take_review(key, step, me)
        except (ToolCallClaimed, GeneratorExit):
            raise
        except BaseException:
            yield from self._settle(key, str(me), abandon=False)
            raise
        return None

    def _take_review(self, key: ClaimKey, step: str, me: Owner) -> _Flow:
        mine = ClaimRow(key, "approval", str(me), step, "done", time.time())
        for _ in range(8):
            if (yield _Insert(mine)):
                return None
            held: ClaimRow | None = yield _Get(key)
            if held is None:
                continue
            owner = held.holder
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


def _forget(me: Owner) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE.pop(me.token, None)


@dataclass(frozen=True)
class TaskClaim:
    """The claim on one call in the graph task that runs it (see :func:`claim_in_task`).

    Attributes:
        claims: the claims of the task's thread.
        key: the call.
        step: the checkpoint the task's step runs from.
        run: the graph run's :data:`RUN_KEY` token, if it has one.
    """

    claims: CallClaims
    key: ClaimKey
    step: str
    run: str | None = None

    def once(
        self,
        run: Callable[[], T],
        *,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], T],
    ) -> T:
        """Run the call at most once (see :meth:`CallClaims.once`)."""
        return self.claims.once(
            self.key,
            self.step,
            run,
            tool=tool,
            idempotent=idempotent,
            unknown=unknown,
            graph_run=self.run,
        )

    async def aonce(
        self,
        run: Callable[[], Awaitable[T]],
        *,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], T],
    ) -> T:
        return await self.claims.aonce(
            self.key,
            self.step,
            run,
            tool=tool,
            idempotent=idempotent,
            unknown=unknown,
            graph_run=self.run,
        )

    def review(self) -> None:
        """Claim the answer to an approval (see :meth:`CallClaims.review`)."""
        self.claims.review(self.key, self.step)

    async def areview(self) -> None:
        await self.claims.areview(self.key, self.step)
