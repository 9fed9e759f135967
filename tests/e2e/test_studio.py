"""The ready-made graphs under ``langgraph dev``, driven with langgraph-sdk.

``langgraph dev`` (langgraph-cli[inmem]) starts on loopback with the repository's
``langgraph.json``; the database assistant plays seed 000's recorded session
(``FNCALL_MODEL=replay:database-assistant``) against a real ``mcp-server-sqlite`` on a temporary
database, with ``sqlite-write_query`` gated by an approval. Everything that could reach
the network is off: no browser, no version check, no CLI analytics, no LangSmith
tracing, no license metadata; HTTP(S) proxies point at a closed loopback port, so a
request that slipped through would fail rather than leave the machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest
from langgraph_sdk import get_client
from ports import free_port

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).parent / "langgraph"
STARTUP_DEADLINE = 120.0
NODES = {"__start__", "adapter", "model", "react_fallback", "tools", "__end__"}
QUESTIONS = [
    "数据库有几张表",
    "分别有多少条记录",
    "这几个表的结构分别是什么样的",
    "查询韩梅梅的年龄,然后在log表里记录下",
]
WRITE = "INSERT INTO log (action) VALUES ('查询了韩梅梅的年龄')"


def offline_env(tmp: Path) -> dict[str, str]:
    """The server's environment: loopback only, the replay model, a temporary database."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_", "FNCALL_"))
        and k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    }
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env.update(
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_NO_VERSION_CHECK="true",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        HTTP_PROXY=dead,
        HTTPS_PROXY=dead,
        ALL_PROXY=dead,
        NO_PROXY="127.0.0.1,localhost",
        XDG_STATE_HOME=str(tmp / "state"),
        FNCALL_MODEL="replay:database-assistant",
        FNCALL_SQLITE_DB=str(tmp / "test.db"),
        FNCALL_APPROVE="sqlite-write_query",
        PYTHONUNBUFFERED="1",
    )
    return env


@dataclass
class Studio:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    db: Path

    def log_text(self) -> str:
        return self.log.read_text("utf-8", errors="replace")


def wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Poll ``/ok`` until the server answers; fail at once if it exits."""
    deadline = time.monotonic() + STARTUP_DEADLINE
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        # the pause between polls ends early if the server exits
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.25)
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited ({proc.returncode}):\n{log.read_text()[-4000:]}")
    pytest.fail(f"langgraph dev did not answer within {STARTUP_DEADLINE:.0f} s")


def stop(proc: subprocess.Popen[bytes]) -> tuple[list[str], list[str]]:
    """Stop the server as Ctrl-C does; return its process tree before, and what was left."""
    try:
        tree = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        tree = []
    names = []
    for p in tree:
        with contextlib.suppress(psutil.Error):
            names.append(" ".join(p.cmdline()[1:3]))
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    _, alive = psutil.wait_procs(tree, timeout=10)
    leftovers = [f"{p.pid} {p.name()}" for p in alive if p.is_running()]
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    return names, leftovers


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli[inmem] is not installed (pip install 'fncall-graph[studio]')")
    tmp = tmp_path_factory.mktemp("studio")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp / "server.log"
    with log.open("wb") as out:
        # cwd: a temporary directory, so the server's own files (.langgraph_api/) land there
        proc = subprocess.Popen(
            [
                str(LANGGRAPH),
                "dev",
                "--config",
                str(REPO / "langgraph.json"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-browser",
                "--no-reload",
            ],
            cwd=tmp,
            env=offline_env(tmp),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Studio(url, proc, log, tmp / "test.db")
    try:
        wait_ready(proc, url, log)
        yield server
    finally:
        tree, leftovers = stop(proc)
    assert not leftovers, f"processes left after the server stopped: {leftovers}"
    # the check above saw the MCP servers the graphs started
    assert any("mcp-server-sqlite" in name for name in tree), tree
    assert any("fncall_graph.examples.weather_server" in name for name in tree), tree
    text = server.log_text()
    assert "Traceback" not in text, text[-4000:]


async def test_both_graphs_are_listed(studio: Studio) -> None:
    client = get_client(url=studio.url)
    assistants = await client.assistants.search(limit=20)
    assert {a["graph_id"] for a in assistants} >= {"sqlite_assistant", "weather_assistant"}


async def test_graphs_draw_the_design(studio: Studio) -> None:
    client = get_client(url=studio.url)
    for graph_id, nodes in (
        ("sqlite_assistant", NODES | {"approve"}),  # FNCALL_APPROVE gates one of its tools
        ("weather_assistant", NODES),
    ):
        drawn = await client.assistants.get_graph(graph_id)
        assert {n["id"] for n in drawn["nodes"]} == nodes, graph_id
        edges = {(e["source"], e["target"], bool(e.get("conditional"))) for e in drawn["edges"]}
        # the card's graph: a prompt dialect's model call goes through the adapter to the
        # model (these graphs' recordings speak Hermes and ReAct, so plain edges lead
        # there; test_graph draws a native model's graph, which chooses), a refused
        # native call to the fallback
        assert {
            ("__start__", "adapter", False),
            ("adapter", "model", False),
            ("model", "tools", True),
            ("model", "react_fallback", True),
            ("model", "__end__", True),
            ("react_fallback", "adapter", False),
            ("tools", "adapter", False),
        } <= edges, graph_id
        if "approve" in nodes:
            assert {
                ("model", "approve", True),
                ("approve", "tools", True),
                ("approve", "adapter", True),
            } <= edges


def last_ai(values: dict) -> dict:
    return next(m for m in reversed(values["messages"]) if m["type"] == "ai")


async def test_seed_session_with_an_approved_write(studio: Studio) -> None:
    client = get_client(url=studio.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]

    values = await client.runs.wait(
        tid, "sqlite_assistant", input={"messages": [{"role": "user", "content": QUESTIONS[0]}]}
    )
    tool_messages = [m for m in values["messages"] if m["type"] == "tool"]
    assert [m["name"] for m in tool_messages] == ["sqlite-list_tables"]
    assert "students" in tool_messages[0]["content"]
    answer = last_ai(values)["content"]
    assert "三张表" in answer and "sqlite_sequence" in answer
    assert values["dialect"] == "hermes"  # the recording's dialect

    for question in QUESTIONS[1:3]:
        values = await client.runs.wait(
            tid, "sqlite_assistant", input={"messages": [{"role": "user", "content": question}]}
        )
        assert last_ai(values)["content"] and not last_ai(values)["tool_calls"]

    # the write waits for a decision
    await client.runs.wait(
        tid, "sqlite_assistant", input={"messages": [{"role": "user", "content": QUESTIONS[3]}]}
    )
    state = await client.threads.get_state(tid)
    assert state["next"] == ["approve"]
    request = state["interrupts"][0]["value"]
    assert [a["name"] for a in request["action_requests"]] == ["sqlite-write_query"]
    assert request["action_requests"][0]["args"] == {"query": WRITE}
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    with sqlite3.connect(studio.db) as db:
        assert db.execute("SELECT COUNT(*) FROM log").fetchone() == (1,)

    values = await client.runs.wait(
        tid, "sqlite_assistant", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert "韩梅梅的年龄是 6 岁" in last_ai(values)["content"]
    written = [m for m in values["messages"] if m.get("name") == "sqlite-write_query"]
    assert "affected_rows" in written[-1]["content"]
    state = await client.threads.get_state(tid)
    assert state["next"] == [] and not state["interrupts"]
    with sqlite3.connect(studio.db) as db:
        rows = db.execute("SELECT action FROM log ORDER BY id").fetchall()
    assert rows == [("创建数据库",), ("查询了韩梅梅的年龄",)]


async def test_other_threads_go_straight_to_their_question(studio: Studio) -> None:
    """As the Studio page (docs/studio.md) says: any of the example's questions, in any thread
    and order. The write question, asked first in a new thread, stops at its approval and
    finishes once approved, writing once."""
    client = get_client(url=studio.url)
    with sqlite3.connect(studio.db) as db:
        logged = db.execute("SELECT COUNT(*) FROM log").fetchone()[0]

    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(
        tid, "sqlite_assistant", input={"messages": [{"role": "user", "content": QUESTIONS[3]}]}
    )
    state = await client.threads.get_state(tid)
    assert state["next"] == ["approve"], state["next"]
    assert state["interrupts"][0]["value"]["action_requests"][0]["args"] == {"query": WRITE}
    values = await client.runs.wait(
        tid, "sqlite_assistant", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert "韩梅梅的年龄是 6 岁" in last_ai(values)["content"]
    assert (await client.threads.get_state(tid))["next"] == []

    other = (await client.threads.create())["thread_id"]
    for question in (QUESTIONS[1], QUESTIONS[0]):  # not in the recording's order
        values = await client.runs.wait(
            other, "sqlite_assistant", input={"messages": [{"role": "user", "content": question}]}
        )
        assert not last_ai(values)["tool_calls"]
    assert "三张表" in last_ai(values)["content"]

    with sqlite3.connect(studio.db) as db:
        assert db.execute("SELECT COUNT(*) FROM log").fetchone()[0] == logged + 1


def test_what_works_offline_is_what_the_readme_says(studio: Studio) -> None:
    """The Studio page (docs/studio.md): the UI is a hosted page, `/docs` needs a CDN, the
    API (and so the SDK, as the tests above use it) and `/openapi.json` answer offline."""
    section = (
        (REPO / "docs" / "studio.md").read_text("utf-8").split("# Debug in LangGraph Studio")[1]
    )
    section = section.split("\n## ", 1)[0]
    assert "https://smith.langchain.com/studio/" in section and "internet" in section
    assert "`/docs`" in section and "CDN" in section and "/openapi.json" in section
    docs = httpx.get(f"{studio.url}/docs", timeout=10).text
    assert re.search(r'<script src="https://[^"]+"', docs), docs[:500]  # loaded from a CDN
    schema = httpx.get(f"{studio.url}/openapi.json", timeout=10).json()
    assert "/threads" in schema["paths"]
