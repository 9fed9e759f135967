"""A claim's lease across processes, on a real SQLite file and a real PostgreSQL: a
running call's process renews its claim (a heartbeat), so another process waits for it
however long the call takes; a process that stops renewing (frozen, or alive but no
longer running the call because its outcome could not be written) loses the claim once
the lease lapses, and the call is answered as unknown instead of wedging the thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pg_server import postgres_url  # noqa: F401  (the fixture)
from test_claims import _head, fresh_thread, row_of

from fncall_graph.adapters.checkpoint import postgres_saver, sqlite_saver
from fncall_graph.adapters.checkpoint.claims import ClaimKey, ToolCallInProgress, claims_for

CHILD = str(Path(__file__).parents[1] / "lease_child.py")
LEASE = 4.0  # the holder renews every second
KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.slow)]


def eventually(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Wait until ``check()`` holds (a condition, looked at every 50 ms)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        pause.wait(0.05)


@contextmanager
def claim_holder(
    mode: str, place: tuple[str, str], request: pytest.FixtureRequest
) -> Iterator[tuple[Any, ClaimKey, str, subprocess.Popen]]:
    """A thread on the saver at ``place``, and a process of its own holding the claim on
    its call c1 (tests/lease_child.py): (this process's saver, the key, the thread's
    checkpoint, the holder)."""
    kind, where = place
    thread = fresh_thread(request)
    with opened(kind, where) as saver:
        step = _head(saver, thread)
        argv = [sys.executable, CHILD, mode, kind, where, thread, step, str(LEASE)]
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            yield saver, ClaimKey(thread, "", "c1"), step, child
        finally:
            child.kill()
            child.wait()


@pytest.fixture(params=KINDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(saver kind, its file or URL)."""
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "c.db")
    return "postgres", request.getfixturevalue("postgres_url")


@contextmanager
def opened(kind: str, where: str) -> Iterator[Any]:
    with sqlite_saver(where) if kind == "sqlite" else postgres_saver(where) as saver:
        yield saver


def answer_for(saver: Any, key: ClaimKey, step: str) -> Any:
    def not_run() -> Any:
        raise AssertionError("the call ran again")

    return claims_for(saver, stale_after=LEASE).once(
        key, step, not_run, tool="log", idempotent=False, unknown=lambda row: ("unknown", row)
    )


def test_a_running_call_s_heartbeat_holds_its_claim_past_the_lease(place, request):
    with claim_holder("hold", place, request) as (saver, key, step, child):
        assert child.stdout.readline() == "running\n"
        made = row_of(saver, key).created_at
        # renewed after the time its first lease would have run out
        eventually(
            lambda: (row_of(saver, key).renewed_at or 0) > made + LEASE,
            "the holder renewed its claim",
        )
        with pytest.raises(ToolCallInProgress):
            answer_for(saver, key, step)
        # frozen: alive, but no longer renewing; once its lease lapses the call's
        # outcome is unknown (it is not run again)
        os.kill(child.pid, signal.SIGSTOP)
        eventually(lambda: row_of(saver, key).lapsed(LEASE, time.time()), "the lease lapsed")
        said, row = answer_for(saver, key, step)
        assert said == "unknown" and row.status == "running"
        taken = row_of(saver, key)
        assert (taken.status, taken.holder.pid) == ("unknown", os.getpid())
        # thawed, the holder finishes its call: its late outcome does not overwrite, and
        # it is told it lost the call (it does not go on as if it had stored it)
        os.kill(child.pid, signal.SIGCONT)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline() == "taken over\n"
        assert child.wait(60) == 3
        assert row_of(saver, key) == taken


def test_a_claim_left_running_by_a_live_process_lapses(place, request):
    """The holder ran the call, but neither its outcome nor its abandoning could be
    written (the database went away); its process lives on. Others wait for its lease
    only, not until that process exits."""
    with claim_holder("stuck", place, request) as (saver, key, step, child):
        assert child.stdout.readline() == "stuck\n"
        assert row_of(saver, key).status == "running"
        with pytest.raises(ToolCallInProgress):  # within its lease
            answer_for(saver, key, step)
        eventually(lambda: row_of(saver, key).lapsed(LEASE, time.time()), "the lease lapsed")
        assert child.poll() is None  # the holder lives on
        said, row = answer_for(saver, key, step)
        assert said == "unknown" and row.holder.pid == child.pid


CLOSE_WHILE_RENEWING = """
import os, sys, time
from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.adapters.checkpoint.claims import ClaimKey, claims_for

for i in range(400):
    with sqlite_saver(os.path.join(sys.argv[1], f"c{i}.db")) as saver:
        claims = claims_for(saver, stale_after=0.004)  # a renewal every millisecond
        claims.once(
            ClaimKey("t", "", "c1"), "s", lambda: time.sleep(0.01) or "done",
            tool="log", idempotent=False, unknown=lambda row: "unknown",
        )
"""


def test_closing_a_sqlite_saver_while_a_heartbeat_renews_does_not_crash(tmp_path):
    """The heartbeat thread may be writing a renewal as the saver's connection closes
    (a call just ended, its ``with sqlite_saver(...)`` left): closed under a running
    statement, sqlite3 crashed the process (SIGSEGV in 14 of 40 runs of this loop)."""
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_WHILE_RENEWING, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
