"""The database assistant's recorded session, driven through langgraph-sdk on a cluster.

One thread asks the recording's four questions; the fourth pauses before
``sqlite-write_query`` and is approved. Every run is created on one replica and joined
there (``runs.create`` + ``runs.join``: ``runs.wait`` can answer with an older state
when another replica ran the run), and each run of a thread goes to the next replica in
turn. Used by tests/e2e/test_cluster.py and bench/server_cluster.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from fncall_graph.examples.database_assistant import make_database

GRAPH = "sqlite_assistant"
RECORDING = json.loads(
    (
        resources.files("fncall_graph") / "data" / "database-assistant_qwen-max_hermes.json"
    ).read_text("utf-8")
)
QUESTIONS: list[str] = RECORDING["questions"]
WRITE = "INSERT INTO log (action) VALUES ('查询了韩梅梅的年龄')"
LOGGED = "查询了韩梅梅的年龄"
TOOLS_IN_ORDER = [
    "sqlite-list_tables",
    *["sqlite-read_query"] * 3,
    *["sqlite-describe_table"] * 3,
    "sqlite-read_query",
    "sqlite-write_query",
]
APPROVE = {"resume": {"decisions": [{"type": "approve"}]}}


def cluster_env(tmp: os.PathLike[str] | str, *, heartbeat: float | None = None) -> dict[str, str]:
    """The servers' environment: the replay model per conversation, approvals on the
    write, the example's database (created here) in ``tmp``, nothing leaving the
    machine; ``heartbeat``: the runs' heartbeat in seconds (a dead replica's run is
    taken over after about twice that)."""
    env = {
        "FNCALL_MODEL": "replay:database-assistant?per-conversation",
        "FNCALL_SQLITE_DB": str(make_database(os.path.join(tmp, "test.db"))),
        "FNCALL_APPROVE": "sqlite-write_query",
        "XDG_STATE_HOME": str(os.path.join(tmp, "state")),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if heartbeat is not None:
        env["LG_BG_JOB_HEARTBEAT"] = f"{heartbeat:g}"
    return env


async def run_on(
    client: LangGraphClient, thread_id: str, graph: str = GRAPH, **kwargs: Any
) -> dict[str, Any]:
    """Create a run of ``graph`` on ``client``'s replica and wait for it there; returns
    the run."""
    run = await client.runs.create(thread_id, graph, **kwargs)
    await client.runs.join(thread_id, run["run_id"])
    return await client.runs.get(thread_id, run["run_id"])


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def ask_until_approval(
    clients: list[LangGraphClient], start: int = 0, graph: str = GRAPH
) -> str:
    """A new thread asks the four questions, one run per replica in turn; returns its id
    once it waits for the write's approval."""
    thread = await clients[start % len(clients)].threads.create()
    tid = thread["thread_id"]
    for i, question in enumerate(QUESTIONS):
        run = await run_on(clients[(start + i) % len(clients)], tid, graph, input=user(question))
        if run["status"] not in ("success", "interrupted"):
            raise AssertionError(f"thread {tid}: run for {question!r} ended {run['status']}")
    return tid


async def whole_session(clients: list[LangGraphClient], start: int = 0, graph: str = GRAPH) -> str:
    """:func:`ask_until_approval`, then the approval, on the next replica."""
    tid = await ask_until_approval(clients, start, graph)
    run = await run_on(
        clients[(start + len(QUESTIONS)) % len(clients)], tid, graph, command=APPROVE
    )
    if run["status"] != "success":
        raise AssertionError(f"thread {tid}: the approved run ended {run['status']}")
    return tid


def session_problems(values: dict[str, Any]) -> list[str]:
    """What is wrong with a finished thread's messages (empty: the whole session, once)."""
    messages = values.get("messages") or []
    problems = []
    replies = [m for m in messages if m["type"] == "ai"]
    if len(replies) != len(RECORDING["outputs"]):
        problems.append(f"{len(replies)} model replies, not {len(RECORDING['outputs'])}")
    asked = [m["content"] for m in messages if m["type"] == "human"]
    if asked != QUESTIONS:
        problems.append(f"questions {asked}")
    calls = [c for m in replies for c in m.get("tool_calls") or []]
    results = [m for m in messages if m["type"] == "tool"]
    if [c["name"] for c in calls] != TOOLS_IN_ORDER:
        problems.append(f"tool calls {[c['name'] for c in calls]}")
    if sorted(m["tool_call_id"] for m in results) != sorted(c["id"] for c in calls):
        problems.append("tool calls and results do not pair up")
    if failed := [m["name"] for m in results if m.get("status") == "error"]:
        problems.append(f"failed tool calls {failed}")
    if replies and "韩梅梅的年龄是 6 岁" not in replies[-1]["content"]:
        problems.append(f"last reply {replies[-1]['content']!r}")
    return problems


# -- the cluster's parts, read directly (``cluster`` is a serve_cluster.Cluster)


def clients(cluster: Any) -> list[LangGraphClient]:
    """One SDK client per replica, in replica order."""
    return [get_client(url=r.url) for r in cluster.replicas]


def database(cluster: Any) -> str:
    """The database assistant's SQLite file on ``cluster``."""
    return cluster.env["FNCALL_SQLITE_DB"]


def logged(cluster: Any) -> int:
    """How many times the session's write is in the database's ``log`` table."""
    with contextlib.closing(sqlite3.connect(database(cluster))) as db:
        return db.execute("SELECT COUNT(*) FROM log WHERE action = ?", (LOGGED,)).fetchone()[0]


def claim_owners(cluster: Any, thread_ids: list[str] | None = None) -> dict[int, int]:
    """How many claimed tool calls each process (pid) ran, for ``thread_ids`` or all."""
    query = "SELECT split_part(owner, '|', 2)::int, count(*) FROM fncall_tool_calls"
    args: tuple[Any, ...] = ()
    if thread_ids is not None:
        query, args = query + " WHERE thread_id = ANY(%s)", (thread_ids,)
    with psycopg.connect(cluster.database_url, autocommit=True) as conn:
        return dict(conn.execute(query + " GROUP BY 1", args).fetchall())  # type: ignore[arg-type]


def write_claim_owner(database_url: str, thread_id: str, timeout: float = 30.0) -> int:
    """The pid of the process that claimed ``thread_id``'s write, once it has."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(database_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT split_part(owner, '|', 2)::int FROM fncall_tool_calls "
                "WHERE thread_id = %s AND tool = 'sqlite-write_query' AND status = 'running'",
                (thread_id,),
            ).fetchone()
            if row:
                return row[0]
            time.sleep(0.02)  # poll interval: the claim row is the condition
    raise AssertionError(f"no replica claimed the write of thread {thread_id} in {timeout} s")


@dataclass
class Takeover:
    thread_id: str
    run: dict[str, Any]  # the approved run, read back from the surviving replica
    victim: int  # the replica killed
    seconds: float  # from the kill to the run's end on the other replica
    writes: int  # how many times the write landed


@contextlib.asynccontextmanager
async def write_held(
    cluster: Any, client: LangGraphClient, thread_id: str
) -> AsyncIterator[tuple[dict[str, Any], int]]:
    """Approve ``thread_id``'s write on ``client`` while holding a lock on the database:
    yields the run and the pid of the process that claimed the write, whose
    mcp-server-sqlite now waits for the lock (up to its 5 s busy timeout). On leaving,
    the lock is released and the waiting write goes through."""
    holder = sqlite3.connect(database(cluster), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        run = await client.runs.create(thread_id, GRAPH, command=APPROVE)
        yield run, await asyncio.to_thread(write_claim_owner, cluster.database_url, thread_id)
    finally:
        holder.execute("COMMIT")
        holder.close()


async def kill_during_the_write(cluster: Any) -> Takeover:
    """Approve a paused thread's write and SIGKILL the replica that runs it while it
    waits for the database (:func:`write_held`); then let the orphaned server's write go
    through, and wait for the other replica to take the run over and finish it."""
    replicas = clients(cluster)
    tid = await ask_until_approval(replicas)
    before = logged(cluster)
    pids = {r.pid: r.index for r in cluster.replicas}
    async with write_held(cluster, replicas[0], tid) as (run, owner):
        victim = pids[owner]
        cluster.kill_replica(victim)
        killed_at = time.monotonic()
    survivor = replicas[1 - victim]
    await survivor.runs.join(tid, run["run_id"])
    seconds = time.monotonic() - killed_at
    done = await survivor.runs.get(tid, run["run_id"])
    return Takeover(tid, done, victim, seconds, logged(cluster) - before)
