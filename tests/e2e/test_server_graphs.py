"""The server graph factories (graphs/studio.py) in several processes and across a
server's life, without a server: what each server process does on its own."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import psutil
import pytest

from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.graphs import studio

pytestmark = pytest.mark.slow  # starts processes and mcp-server-sqlite


def _first_use(path: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    os.environ[studio.SQLITE_DB_ENV] = path
    barrier.wait()
    studio.default_sqlite_db()


def test_server_processes_create_the_database_once(tmp_path: Path) -> None:
    """Replicas opening the database assistant at the same moment make one database."""
    path = tmp_path / "test.db"
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_first_use, args=(str(path), barrier)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT COUNT(*) FROM students").fetchone() == (2,)
        assert db.execute("SELECT action FROM log").fetchall() == [("创建数据库",)]
    assert [p.name for p in tmp_path.iterdir()] == ["test.db"]  # no temporary file left


def _mcp_children() -> list[str]:
    return [
        " ".join(p.cmdline()[:2])
        for p in psutil.Process().children(recursive=True)
        if any("mcp-server-sqlite" in part for part in p.cmdline())
    ]


def _asks_before(graph_id: str, approve: str | None, monkeypatch) -> tuple[set[str], bool]:
    """The tools the server graph ``graph_id`` asks before with this ``FNCALL_APPROVE``, and
    whether the graph the server builds has an approve node."""
    if approve is None:
        monkeypatch.delenv("FNCALL_APPROVE", raising=False)
    else:
        monkeypatch.setenv("FNCALL_APPROVE", approve)
    config = (
        (lambda: studio.sqlite_config(studio.default_sqlite_db()))
        if graph_id == "sqlite_assistant"
        else studio.weather_config
    )

    async def build() -> tuple[set[str], bool]:
        graph = await studio._ServerGraphs()._start(graph_id, config)
        async with MCPToolkit.from_config(config(), include_resources=False) as toolkit:
            asked = set(studio._server_approvals(graph_id, toolkit.tools))
        return asked, "approve" in graph.nodes

    return asyncio.run(build())


def test_server_graphs_ask_before_writes_by_default(tmp_path: Path, monkeypatch) -> None:
    """With no FNCALL_APPROVE the sqlite assistant asks before its writes, as ``chat`` and
    ``demo`` do, and the weather assistant (a read-only tool) before nothing; a list in
    FNCALL_APPROVE, or ``none``, wins."""
    monkeypatch.setenv(studio.SQLITE_DB_ENV, str(tmp_path / "test.db"))
    writes = {"sqlite-write_query", "sqlite-create_table", "sqlite-append_insight"}
    monkeypatch.setenv("FNCALL_MODEL", "replay:database-assistant")
    assert _asks_before("sqlite_assistant", None, monkeypatch) == (writes, True)
    assert _asks_before("weather_assistant", None, monkeypatch) == (set(), False)
    named = _asks_before("sqlite_assistant", "sqlite-read_query", monkeypatch)
    assert named == ({"sqlite-read_query"}, True)
    assert _asks_before("sqlite_assistant", "none", monkeypatch) == (set(), False)


def test_sessions_close_when_the_server_loop_ends(tmp_path: Path, monkeypatch) -> None:
    """The factory's MCP sessions live on the server's event loop; when the loop ends
    (the server stopped), they close and their server processes exit."""
    monkeypatch.setenv(studio.SQLITE_DB_ENV, str(tmp_path / "test.db"))
    monkeypatch.setenv("FNCALL_MODEL", "replay:database-assistant?per-conversation")
    # no approvals: run here, outside a server, the graph has no checkpointer to pause in
    monkeypatch.setenv("FNCALL_APPROVE", "none")
    monkeypatch.setattr(studio, "_server", studio._ServerGraphs())  # this test's own

    async def serve() -> tuple[int, list[str]]:
        config = {"configurable": {"thread_id": "t"}}
        async with studio.sqlite_assistant(config) as first:
            pass
        async with studio.sqlite_assistant(config) as second:
            assert second is first  # one graph per process, built on first use
        result = await first.ainvoke({"messages": [("user", "数据库有几张表")]})
        return len(result["messages"]), _mcp_children()

    messages, running = asyncio.run(serve())
    assert messages == 4 and len(running) == 1, running
    assert _mcp_children() == []
