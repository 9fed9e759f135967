"""Crash and resume: a process killed mid-task, a new process finishes the thread.

The database assistant's serial task (read 韩梅梅's age, then log it) runs in a child process
(tests/crash_child.py) with the real mcp-server-sqlite and a SqliteSaver on a file.
The child kills itself with SIGKILL at an exact point chosen by ``FNCALL_KILL_AT``;
then a new process resumes the thread with ``graph.invoke(None, cfg)``.

Kill points (see crash_child.py):
  a        after the read_query result is committed to the checkpoint file;
  b        inside the write_query call, before the request reaches the server;
  b_after  inside the write_query call, after the server committed the row;
  c        after the write_query result is committed, before the final answer.
In each case the answer says 韩梅梅 is 6 and the history holds each tool call once with
one ToolMessage. No call runs twice (docs/pause-and-resume.md): a call the process died
inside (b, b_after) is answered "outcome unknown" and not run again, so the log holds
the row only if the server got the request. A tool declared idempotent runs again.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from seed_db import make_database

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.testing import ReplayChatModel

pytestmark = pytest.mark.slow

CHILD = Path(__file__).parents[1] / "crash_child.py"
LOGGED = "查询了韩梅梅的年龄"


def _stop_leftovers(marker: str) -> None:
    """Kill and reap processes we started whose command line names ``marker`` (the MCP
    server of a killed child, which outlives it until it reads EOF)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            pidfd = os.pidfd_open(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        try:
            if marker in cmdline and "crash_child.py" not in cmdline:
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except ProcessLookupError:
                    continue
                select.select([pidfd], [], [], 30)  # readable once the process has exited
        finally:
            os.close(pidfd)


def run_child(
    mode: str, db: Path, checkpoints: Path, kill_at: str = "", *, idempotent: bool = False
) -> tuple[int, dict[str, Any] | None, str]:
    result = checkpoints.with_suffix(f".{mode}.json")
    result.unlink(missing_ok=True)
    env = {**os.environ, "FNCALL_KILL_AT": kill_at, "FNCALL_IDEMPOTENT": "1" if idempotent else ""}
    proc = subprocess.run(
        [sys.executable, str(CHILD), mode, str(db), str(checkpoints), "thread-1", str(result)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,  # a bound for a hung child, not a synchronisation
        check=False,
    )
    _stop_leftovers(str(db))
    data = json.loads(result.read_text("utf-8")) if result.exists() else None
    return proc.returncode, data, proc.stderr


def logged_rows(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT COUNT(*) FROM log WHERE action = ?", (LOGGED,)).fetchone()[0]


def history(checkpoints: Path) -> list[Any]:
    with sqlite_saver(checkpoints) as saver:
        graph = create_fncall_graph(ReplayChatModel([]), [], dialect="hermes", checkpointer=saver)
        return graph.get_state({"configurable": {"thread_id": "thread-1"}}).values["messages"]


def assert_each_call_once(messages: list[Any]) -> None:
    ids = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    names = [c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert names == ["sqlite-read_query", "sqlite-write_query"]
    assert len(set(ids)) == 2
    answered = Counter(m.tool_call_id for m in messages if isinstance(m, ToolMessage))
    assert answered == Counter(ids), "one ToolMessage per call id"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return make_database(tmp_path / "test.db"), tmp_path / "checkpoints.db"


# kill point -> (rows logged when the process died, tools the resuming process runs,
#                rows logged in the end, whether the write is answered "outcome unknown")
POINTS = {
    "a": (0, ["sqlite-write_query"], 1, False),
    "b": (0, [], 0, True),
    "b_after": (1, [], 1, True),
    "c": (1, [], 1, False),
}


def write_result(messages: list[Any]) -> ToolMessage:
    [result] = [
        m for m in messages if isinstance(m, ToolMessage) and m.name.endswith("write_query")
    ]
    return result


@pytest.mark.parametrize("kill_at", list(POINTS))
def test_killed_process_resumes_in_a_new_one(files, kill_at):
    db, checkpoints = files
    rows_at_crash, resumed_tools, rows_in_the_end, unknown = POINTS[kill_at]

    code, result, err = run_child("run", db, checkpoints, kill_at)
    assert code == -signal.SIGKILL, f"the child was not killed at {kill_at}: {code}\n{err}"
    assert result is None
    assert logged_rows(db) == rows_at_crash

    code, result, err = run_child("resume", db, checkpoints)
    assert code == 0, err
    assert "韩梅梅" in result["final"] and "6" in result["final"]
    assert result["tools_run"] == resumed_tools
    assert logged_rows(db) == rows_in_the_end
    messages = history(checkpoints)
    assert_each_call_once(messages)
    written = write_result(messages)
    assert written.content.startswith("Outcome unknown") == unknown, written.content
    if unknown:
        assert written.status == "error" and "it was not run again" in written.content


@pytest.mark.parametrize(("kill_at", "rows"), [("b", 1), ("b_after", 2)])
def test_a_tool_declared_idempotent_runs_again(files, kill_at, rows):
    """``idempotent_tools``: the call the process died inside runs again on resume, so a
    write that is not really idempotent lands twice when the server had done it."""
    db, checkpoints = files
    code, _, err = run_child("run", db, checkpoints, kill_at, idempotent=True)
    assert code == -signal.SIGKILL, err

    code, result, err = run_child("resume", db, checkpoints, idempotent=True)
    assert code == 0, err
    assert result["tools_run"] == ["sqlite-write_query"]
    assert logged_rows(db) == rows
    messages = history(checkpoints)
    assert_each_call_once(messages)
    assert not write_result(messages).content.startswith("Outcome unknown")


def test_approval_in_a_fresh_process_finishes_the_task(files):
    db, checkpoints = files
    code, paused, err = run_child("pause", db, checkpoints)
    assert code == 0, err
    assert paused["tools_run"] == ["sqlite-read_query"]
    [request] = paused["interrupt"]["action_requests"]
    assert request["name"] == "sqlite-write_query"
    assert LOGGED in request["args"]["query"]
    assert paused["interrupt"]["review_configs"] == [
        {"action_name": "sqlite-write_query", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    assert logged_rows(db) == 0

    code, result, err = run_child("approve", db, checkpoints)
    assert code == 0, err
    assert result["tools_run"] == ["sqlite-write_query"]
    assert result["interrupt"] is None
    assert "韩梅梅" in result["final"] and "6" in result["final"]
    assert logged_rows(db) == 1
    assert_each_call_once(history(checkpoints))
