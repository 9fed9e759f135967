"""The database assistant's recorded session, driven through langgraph-sdk on a cluster.

One thread asks the recording's four questions; the fourth pauses before
``sqlite-write_query`` and is approved. Every run is created on one replica and joined
there (``runs.create`` + ``runs.join``: ``runs.wait`` can answer with an older state
when another replica ran the run), and each run of a thread goes to the next replica in
turn. Used by tests/test_cluster.py and bench/server_cluster.py.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from typing import Any

from langgraph_sdk.client import LangGraphClient

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


def cluster_env(tmp: os.PathLike[str] | str) -> dict[str, str]:
    """The replicas' environment: the replay model per conversation, approvals on the
    write, the database in ``tmp``, nothing leaving the machine."""
    return {
        "FNCALL_MODEL": "replay:database-assistant?per-conversation",
        "FNCALL_SQLITE_DB": str(os.path.join(tmp, "test.db")),
        "FNCALL_APPROVE": "sqlite-write_query",
        "XDG_STATE_HOME": str(os.path.join(tmp, "state")),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "PYTHONUNBUFFERED": "1",
    }


async def run_on(client: LangGraphClient, thread_id: str, **kwargs: Any) -> dict[str, Any]:
    """Create a run on ``client``'s replica and wait for it there; returns the run."""
    run = await client.runs.create(thread_id, GRAPH, **kwargs)
    await client.runs.join(thread_id, run["run_id"])
    return await client.runs.get(thread_id, run["run_id"])


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def ask_until_approval(clients: list[LangGraphClient], start: int = 0) -> str:
    """A new thread asks the four questions, one run per replica in turn; returns its id
    once it waits for the write's approval."""
    thread = await clients[start % len(clients)].threads.create()
    tid = thread["thread_id"]
    for i, question in enumerate(QUESTIONS):
        run = await run_on(clients[(start + i) % len(clients)], tid, input=user(question))
        if run["status"] not in ("success", "interrupted"):
            raise AssertionError(f"thread {tid}: run for {question!r} ended {run['status']}")
    return tid


async def whole_session(clients: list[LangGraphClient], start: int = 0) -> str:
    """:func:`ask_until_approval`, then the approval, on the next replica."""
    tid = await ask_until_approval(clients, start)
    run = await run_on(clients[(start + len(QUESTIONS)) % len(clients)], tid, command=APPROVE)
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
