"""scripts/serve_cluster.py as a user runs it: `run` until SIGTERM, `start` then `stop`,
and the errors it gives for what it cannot start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "serve_cluster.py"
sys.path.insert(0, str(REPO / "scripts"))
from serve_cluster import (  # noqa: E402
    STATE_FILE,
    Cluster,
    ClusterError,
    http_ok,
    pid_alive,
    server_bin,
    wait_until,
)

pytestmark = pytest.mark.slow

ENV = {"LANGSMITH_TRACING": "false", "LANGGRAPH_NO_VERSION_CHECK": "true"}


def cli(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(server_bin("python")), str(SCRIPT), *args],
        env={**os.environ, **ENV} if env is None else env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,
    )


def pids(state: dict) -> list[int]:
    return [state["postgres"]["pid"], state["redis"]["pid"]] + [r["pid"] for r in state["replicas"]]


def serving(proc: subprocess.Popen[str], root: Path) -> dict:
    """The state of the cluster ``proc`` runs in ``root``, once its first replica answers."""
    state_file = root / STATE_FILE
    wait_until(
        "the cluster",
        lambda: state_file.exists() and json.loads(state_file.read_text())["replicas"],
        120,
        alive=lambda: proc.poll() is None,
    )
    state = json.loads(state_file.read_text())
    wait_until("replica 0", lambda: http_ok(state["replicas"][0]["url"]), 120)
    return state


def test_run_serves_until_sigterm_then_stops_everything(tmp_path: Path) -> None:
    proc = cli("run", "--dir", str(tmp_path), "--replicas", "1", "--port", "0")
    state_file = tmp_path / STATE_FILE
    try:
        state = serving(proc, tmp_path)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "replica 0: http://127.0.0.1:" in out
    assert [p for p in pids(state) if pid_alive(p)] == []
    assert not state_file.exists()
    assert not Path(state["postgres"]["dir"]).exists()


def test_start_then_stop_by_pid(tmp_path: Path) -> None:
    started = cli("start", "--dir", str(tmp_path), "--replicas", "1", "--port", "0")
    try:
        out, _ = started.communicate(timeout=180)
        assert started.returncode == 0, out
        state = json.loads((tmp_path / STATE_FILE).read_text())
        assert all(pid_alive(p) for p in pids(state))

        again = cli("start", "--dir", str(tmp_path))
        out, _ = again.communicate(timeout=60)
        assert again.returncode == 1 and "cluster.json exists" in out

        stopped = cli("stop", "--dir", str(tmp_path))
        out, _ = stopped.communicate(timeout=120)
        assert stopped.returncode == 0, out
        assert out.count("stopped ") == 3, out  # the replica, redis, postgres
        assert [p for p in pids(state) if pid_alive(p)] == []
    finally:
        started.kill()
        if (tmp_path / STATE_FILE).exists():  # what a failed check above left running
            Cluster.stop_saved(tmp_path)


def test_a_replica_that_cannot_start_says_why_and_stops_the_rest(tmp_path: Path) -> None:
    bad = tmp_path / "langgraph.json"
    bad.write_text(
        json.dumps({"dependencies": [str(REPO)], "graphs": {"broken": "no_such_module:graph"}})
    )
    cluster = Cluster(tmp_path / "state", replicas_wanted=1, config=bad, env=ENV)
    with pytest.raises(
        ClusterError, match=r"replica 0 .* exited \(or failed to load a graph\) before it was ready"
    ) as info:
        cluster.start()
    assert "no_such_module" in str(info.value)  # the replica's log, quoted
    assert cluster.postgres is not None and cluster.redis is not None
    assert cluster.postgres.pid is None and cluster.redis.pid is None  # stopped again


def test_run_with_its_defaults_answers_threads_and_says_what_it_serves(tmp_path: Path) -> None:
    """`make serve-cluster` as docs/studio.md writes it: no model variable set, so the
    replicas serve the database assistant's recording, which answers any thread; the
    write asks first (approvals from the tools' annotations, on by default); a question
    it has no reply for fails that run with an error that names the recording."""
    import asyncio

    from cluster_session import APPROVE, user
    from langgraph_sdk import get_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("FNCALL_")}
    env.update(ENV, XDG_STATE_HOME=str(tmp_path / "state"), PYTHONUNBUFFERED="1")
    proc = cli("run", "--dir", str(tmp_path), "--replicas", "1", "--port", "0", env=env)

    async def threads(url: str) -> list[dict]:
        client = get_client(url=url)
        runs = []
        for question in ("数据库有几张表", "查询韩梅梅的年龄,然后在log表里记录下", "hello"):
            thread = await client.threads.create()  # each question in a thread of its own
            tid = thread["thread_id"]
            run = await client.runs.create(tid, "sqlite_assistant", input=user(question))
            joined = await client.runs.join(tid, run["run_id"])  # what the caller is given
            run = await client.runs.get(tid, run["run_id"])
            state = await client.threads.get_state(tid)
            if state["interrupts"]:  # the write asks first, with no setting
                asked = state["interrupts"][0]["value"]["action_requests"][0]["name"]
                run = await client.runs.create(tid, "sqlite_assistant", command=APPROVE)
                joined = await client.runs.join(tid, run["run_id"])
                run = {**await client.runs.get(tid, run["run_id"]), "asked": asked}
                state = await client.threads.get_state(tid)
            runs.append({**run, "joined": joined, "messages": state["values"].get("messages", [])})
        return runs

    try:
        url = serving(proc, tmp_path)["replicas"][0]["url"]
        tables, write, unknown = asyncio.run(threads(url))
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert out.startswith("model: replay:database-assistant (FNCALL_MODEL is not set"), out
    assert out.rstrip().endswith("stopped: 1 replica(s), Redis, PostgreSQL"), out
    assert tables["status"] == "success", tables
    assert "当前数据库中有三张表" in tables["messages"][-1]["content"]
    assert write["status"] == "success", write
    assert write.get("asked") == "sqlite-write_query"  # its server does not say it only reads
    assert "韩梅梅的年龄是 6 岁" in write["messages"][-1]["content"]
    assert unknown["status"] == "error"
    error = unknown["joined"]["__error__"]
    assert error["error"] == "ReplayExhausted"
    assert error["message"].startswith("replay:database-assistant has no reply for 'hello'")
