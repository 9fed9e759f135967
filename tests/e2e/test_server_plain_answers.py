"""LangChain's plain HITL answer over ``langgraph dev``, as agent-chat-ui and Studio's resume
box send it: ``{"decisions": [...]}`` with no interrupt id, from a langgraph-sdk client.

The database assistant (seed 000's recording, ``sqlite-write_query`` gated) is asked its
write question ten times in one thread; each review is answered with a plain answer,
and that answer is then sent again. Both sides are counted: every plain answer is taken
(10/10, each write lands once) and every answer sent again runs nothing (the run fails
with ``StaleApproval``, the log table keeps its rows).
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator

import pytest
from langgraph_sdk import get_client
from ports import free_port
from test_studio import LANGGRAPH, QUESTIONS, REPO, Studio, offline_env, stop, wait_ready

pytestmark = pytest.mark.slow

REVIEWS = 10
PLAIN = {"decisions": [{"type": "approve"}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli[inmem] is not installed (pip install 'fncall-graph[studio]')")
    tmp = tmp_path_factory.mktemp("plain")
    port = free_port()
    log = tmp / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *(str(LANGGRAPH), "dev", "--config", str(REPO / "langgraph.json")),
                *("--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload"),
            ],
            cwd=tmp,
            env=offline_env(tmp),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    studio = Studio(f"http://127.0.0.1:{port}", proc, log, tmp / "test.db")
    try:
        wait_ready(proc, studio.url, log)
        yield studio
    finally:
        _, leftovers = stop(proc)
    assert not leftovers, f"processes left after the server stopped: {leftovers}"
    # the refused runs' errors are logged with their tracebacks; the server saved its
    # runs and threads as it stopped
    text = studio.log_text()
    assert "Application shutdown failed" not in text, text[-4000:]


def log_rows(db) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM log").fetchone()[0]


async def test_plain_answers_over_the_server_ten_of_ten_and_resent_ones_run_nothing(
    server: Studio,
) -> None:
    client = get_client(url=server.url)
    tid = (await client.threads.create())["thread_id"]
    taken = stale_runs = 0
    for n in range(REVIEWS):
        question = {"messages": [{"role": "user", "content": QUESTIONS[3]}]}
        await client.runs.wait(tid, "sqlite_assistant", input=question)
        state = await client.threads.get_state(tid)
        assert state["next"] == ["approve"], (n, state["next"])
        before = log_rows(server.db)  # the graph made the database on its first run
        values = await client.runs.wait(tid, "sqlite_assistant", command={"resume": PLAIN})
        answer = values["messages"][-1]
        taken += answer["type"] == "ai" and "韩梅梅的年龄是 6 岁" in answer["content"]
        rows = log_rows(server.db)
        assert rows == before + 1
        # the same answer sent again (a client's retry): refused, nothing runs
        with pytest.raises(Exception, match="StaleApproval"):
            await client.runs.wait(tid, "sqlite_assistant", command={"resume": PLAIN})
        stale_runs += log_rows(server.db) - rows
        assert (await client.threads.get_state(tid))["next"] == []
    assert (taken, stale_runs) == (REVIEWS, 0)
    history = (await client.threads.get_state(tid))["values"]["messages"]
    assert sum(m["type"] == "human" for m in history) == REVIEWS
    assert sum(m.get("name") == "sqlite-write_query" for m in history) == REVIEWS
