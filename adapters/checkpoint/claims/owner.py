"""Who holds a claim: a process (host and boot, pid, start time) and one attempt of it,
the graph run the attempt serves (its :data:`RUN_KEY` token), and the graph runs that
lost a claim, whose further writes the savers refuse.

Whether a process is gone is known on its own machine only (``/proc``: the pid with its
start time names one process, even when the pid is reused).
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ToolCallTakenOver

__all__ = []

Status = Literal["running", "done", "unknown", "abandoned"]


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
