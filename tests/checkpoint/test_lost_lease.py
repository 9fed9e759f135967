"""A run that lost its claim stops; a tool that blocks its event loop keeps its claim.

A graph run in a process of its own (tests/frozen_child.py) holds the claim on a tool
call while the call runs, renewing it every ``lease / 4`` seconds. Frozen past the lease
(SIGSTOP: a paused VM or container, a swap or GC stall), it loses the call: this process
takes the thread over (the call is answered "outcome unknown") and runs another turn.
When the frozen run wakes, it must stop without writing (``ToolCallTakenOver``): its
stale branch would otherwise become the thread's head, hiding the turn that ran
meanwhile, and the task's next write would run a second time.

An ``async def`` tool that blocks the event loop does not lose its claim: the heartbeat
renews it from a thread and a connection of its own.

Real SQLite files and a real PostgreSQL, sync and async savers; the lease is lowered
through ``create_fncall_graph(lease=...)``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from frozen_child import replay_model
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from pg_server import postgres_url  # noqa: F401  (the fixture)
from test_claim_lease import eventually
from test_claims import fresh_thread, row_of

from fncall_graph import ThreadBusy, ToolCallInProgress, ToolCallTakenOver, create_fncall_graph
from fncall_graph.adapters.checkpoint import postgres_saver, sqlite_saver
from fncall_graph.adapters.checkpoint.claims import ClaimKey, claims_for

CHILD = str(Path(__file__).parents[1] / "frozen_child.py")
LEASE = 2.0  # renewed every half second
SQLITE, POSTGRES = ("sqlite", "async_sqlite"), ("postgres", "async_postgres")


def _place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    kind = request.param
    if kind in SQLITE:
        return kind, str(tmp_path / "threads.db")
    return kind, request.getfixturevalue("postgres_url")


def _kinds(*kinds: str) -> list[Any]:
    return [k if k in SQLITE else pytest.param(k, marks=pytest.mark.slow) for k in kinds]


@pytest.fixture(params=_kinds(*SQLITE, *POSTGRES))
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(the child's saver kind, its file or URL)."""
    return _place(request, tmp_path)


@pytest.fixture(params=_kinds("async_sqlite", "async_postgres"))
def async_place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    return _place(request, tmp_path)


@contextmanager
def holder(place: tuple[str, str], thread: str, effects: Path, mode: str) -> Iterator[Any]:
    """The child running the thread's first turn, stopped inside its tool call."""
    kind, where = place
    argv = [sys.executable, CHILD, kind, where, thread, str(LEASE), str(effects), mode]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "running\n"
        yield child
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
        child.wait()


@contextmanager
def this_process_saver(place: tuple[str, str]) -> Iterator[Any]:
    kind, where = place
    with sqlite_saver(where) if kind in SQLITE else postgres_saver(where) as saver:
        yield saver


def takeover_graph(saver: Any, effects: Path) -> Any:
    @tool
    def log(entry: str) -> str:
        """Append an entry to the log."""
        with effects.open("a", encoding="utf-8") as f:
            f.write(f"{entry}\n")
        return f"logged {entry!r}"

    return create_fncall_graph(
        replay_model(), [log], dialect="native", checkpointer=saver, lease=LEASE
    )


def release(child: subprocess.Popen) -> str:
    """Let the child's tool call return; what the child says of its run."""
    os.kill(child.pid, signal.SIGCONT)
    child.stdin.write("\n")
    child.stdin.flush()
    said = child.stdout.readline()
    assert child.wait(60) == 0
    return said


def test_a_frozen_run_that_lost_its_call_stops_without_writing(place, request, tmp_path):
    thread, effects = fresh_thread(request), tmp_path / "effects.txt"
    cfg = {"configurable": {"thread_id": thread}}
    with holder(place, thread, effects, "wait") as child, this_process_saver(place) as saver:
        os.kill(child.pid, signal.SIGSTOP)
        key = ClaimKey(thread, "", "c1")
        eventually(lambda: row_of(saver, key).lapsed(LEASE, time.time()), "the lease lapsed")

        graph = takeover_graph(saver, effects)
        taken = graph.invoke(None, cfg)  # the frozen run's step, resumed here
        answer = next(m for m in taken["messages"] if isinstance(m, ToolMessage))
        assert answer.tool_call_id == "c1" and "unknown" in str(answer.content).lower()
        moved_on = graph.invoke({"messages": [("user", "log entry 2")]}, cfg)
        assert moved_on["messages"][-1].content == "logged 2"
        head = graph.get_state(cfg)

        said = release(child)
        assert said.startswith("stopped: ToolCallTakenOver"), said
        after = graph.get_state(cfg)
        # nothing of the stale run was written: the thread's head and history are as
        # the run that took over left them
        assert after.config == head.config
        assert [m.content for m in after.values["messages"]] == [
            m.content for m in head.values["messages"]
        ]
        # each write ran once: entry 1 in the frozen run (it woke inside the call),
        # entry 2 here; the frozen run did not go on to another call
        assert Counter(effects.read_text("utf-8").split("\n")[:-1]) == Counter(
            ["entry 1", "entry 2"]
        )


def test_a_tool_blocking_the_event_loop_keeps_its_claim(async_place, request, tmp_path):
    thread, effects = fresh_thread(request), tmp_path / "effects.txt"
    cfg = {"configurable": {"thread_id": thread}}
    with (
        holder(async_place, thread, effects, "block") as child,
        this_process_saver(async_place) as saver,
    ):
        key = ClaimKey(thread, "", "c1")
        made = row_of(saver, key).created_at
        # renewed past its first lease while the tool blocks the child's event loop
        eventually(
            lambda: (row_of(saver, key).renewed_at or 0) > made + 2 * LEASE,
            "the claim was renewed while the event loop was blocked",
            timeout=20 * LEASE,
        )
        # the run holds its thread and its call: another run is refused, not let in
        refuse = {"configurable": {**cfg["configurable"], "fncall_multitask": "reject"}}
        with pytest.raises(ThreadBusy):
            takeover_graph(saver, effects).invoke(None, refuse)
        with pytest.raises(ToolCallInProgress):  # the call itself, resumed elsewhere
            claims_for(saver, stale_after=LEASE).once(
                key,
                row_of(saver, key).step,
                lambda: "ran again",
                tool="log",
                idempotent=False,
                unknown=lambda row: "unknown",
            )
        assert release(child) == "finished: logged 1\n"
        assert effects.read_text("utf-8") == "entry 1\n"


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_a_lost_run_s_writes_are_refused(tmp_path, durability):
    """In one process: while a call runs, another run takes its claim (as a process
    that found the lease lapsed does); the run ends with ToolCallTakenOver and nothing
    of its step reaches the thread, not even the checkpoint LangGraph saves at the end
    of a failed run under ``durability="exit"``."""
    cfg = {"configurable": {"thread_id": "t"}}
    with sqlite_saver(tmp_path / "threads.db") as saver:

        @tool
        def log(entry: str) -> str:
            """Append an entry to the log."""
            # another process takes the claim over (its lease had lapsed)
            saver.conn.execute(
                "UPDATE fncall_tool_calls SET owner = 'elsewhere/x|1|1|t', status = 'unknown' "
                "WHERE call_id = 'c1'"
            )
            saver.conn.commit()
            return "logged"

        graph = create_fncall_graph(
            replay_model(), [log], dialect="native", checkpointer=saver, durability=durability
        )
        with pytest.raises(ToolCallTakenOver, match="c1"):
            graph.invoke({"messages": [("user", "log entry 1")]}, cfg)
        state = graph.get_state(cfg)
        if durability == "exit":  # the run saved nothing: its end was refused too
            assert (
                state.values == {}
                and state.config.get("configurable", {}).get("checkpoint_id") is None
            )
        else:  # the thread stops before the tools' step, its answer unsaved
            assert not any(isinstance(m, ToolMessage) for m in state.values["messages"])
            assert state.next == ("tools",)
