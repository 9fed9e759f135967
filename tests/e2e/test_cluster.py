"""The ready-made graphs on a two-replica LangGraph Server cluster (PostgreSQL + Redis).

scripts/serve_cluster.py starts a private PostgreSQL cluster, a ``redis-server`` and two
``langhost serve`` replicas (langgraph-runtime-pg, from ``.venv-server``) on loopback.
The database assistant plays its recording per conversation against a real
``mcp-server-sqlite``; ``sqlite-write_query`` waits for an approval. The runs' heartbeat
is 2 s, so a killed replica's run is taken over within seconds.

Which replica ran a tool call is read from the call's claim (its owner's pid) in the
cluster's PostgreSQL database, the same table the tools node claims calls in.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from cluster_session import (
    APPROVE,
    GRAPH,
    ask_until_approval,
    claim_owners,
    clients,
    cluster_env,
    kill_during_the_write,
    logged,
    session_problems,
    whole_session,
    write_held,
)

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from serve_cluster import Cluster, server_bin  # noqa: E402

pytestmark = pytest.mark.slow

THREADS = 50
HEARTBEAT = 2  # seconds; a run whose replica died is swept after about twice this


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not server_bin("langhost").exists():
        pytest.fail(
            f"{server_bin('langhost')} is missing: the server's virtual environment is made "
            "by `make install-server` (`make test` does it)"
        )
    tmp = tmp_path_factory.mktemp("cluster")
    env = cluster_env(tmp, heartbeat=HEARTBEAT)
    with Cluster(tmp / "state", replicas_wanted=2, env=env) as cluster:
        yield cluster
        # a replica stopped as a deployment stops it closes its MCP sessions: no
        # mcp-server-sqlite is left behind in its process group
        left = {r.index: cluster.stop_replica(r.index) for r in cluster.replicas}
        assert left == {0: [], 1: []}, f"processes left after SIGTERM: {left}"


async def test_every_replica_serves_both_graphs(cluster: Cluster) -> None:
    for client in clients(cluster):
        found = await client.assistants.search(limit=20)
        assert {a["graph_id"] for a in found} >= {"sqlite_assistant", "weather_assistant"}
        # drawing a graph builds it in that replica, MCP session included
        drawn = await client.assistants.get_graph("weather_assistant")
        assert {"model", "tools"} <= {n["id"] for n in drawn["nodes"]}
        drawn = await client.assistants.get_graph("sqlite_assistant")
        assert "approve" in {n["id"] for n in drawn["nodes"]}  # FNCALL_APPROVE took


async def test_fifty_threads_over_two_replicas(cluster: Cluster) -> None:
    a, b = clients(cluster)
    before = logged(cluster)
    started = time.monotonic()
    thread_ids = await asyncio.gather(*(whole_session([a, b], i) for i in range(THREADS)))
    elapsed = time.monotonic() - started
    print(f"\n{THREADS} threads, {THREADS * 5} runs over 2 replicas in {elapsed:.1f} s")

    for i, tid in enumerate(thread_ids):
        state = await (a, b)[i % 2].threads.get_state(tid)
        assert state["next"] == [] and not state["interrupts"], tid
        assert session_problems(state["values"]) == [], tid
    assert logged(cluster) == before + THREADS
    # both replicas ran tool calls
    owners = claim_owners(cluster, list(thread_ids))
    assert set(owners) == {r.pid for r in cluster.replicas}, owners
    assert sum(owners.values()) == THREADS * 10  # nine calls and one approval per thread


@pytest.mark.parametrize("strategy", ["reject", "enqueue", "interrupt", "rollback"])
async def test_an_approval_resumed_on_both_replicas_at_once_writes_once(
    cluster: Cluster, strategy: str
) -> None:
    a, b = clients(cluster)
    tid = await ask_until_approval([a, b])
    before = logged(cluster)

    async def resume(client) -> str:
        """The run's status, or the HTTP status that refused it (409: rejected) or
        no longer finds it (404: rolled back by the other run)."""
        try:
            run = await client.runs.create(tid, GRAPH, command=APPROVE, multitask_strategy=strategy)
            await client.runs.join(tid, run["run_id"])
            return (await client.runs.get(tid, run["run_id"]))["status"]
        except httpx.HTTPStatusError as exc:
            return str(exc.response.status_code)

    statuses = await asyncio.gather(resume(a), resume(b))
    print(f"\nmultitask strategy {strategy}: the two resumes ended {statuses}")
    # under rollback the run that wrote may be deleted (404) once the other, now a stale
    # answer, was created: the thread's state below says the work was done, once
    assert "success" in statuses or (strategy == "rollback" and "404" in statuses), statuses
    if strategy == "reject":
        assert sorted(statuses) == ["409", "success"], statuses

    assert logged(cluster) == before + 1, statuses
    state = await a.threads.get_state(tid)
    assert state["next"] == [] and not state["interrupts"]
    assert session_problems(state["values"]) == [], statuses


async def test_an_approval_interrupted_inside_the_write_by_another(cluster: Cluster) -> None:
    """A second approval with multitask strategy ``interrupt`` cancels the first while
    its write waits for the database (a lock the test holds): the second run neither
    waits for that write nor runs it again; it answers its outcome as unknown."""
    a, b = clients(cluster)
    tid = await ask_until_approval([a, b])
    before = logged(cluster)
    async with write_held(cluster, a, tid) as (first, _):
        second = await b.runs.create(tid, GRAPH, command=APPROVE, multitask_strategy="interrupt")
        await a.runs.join(tid, first["run_id"])
    # the cancelled write reaches the database now
    await b.runs.join(tid, second["run_id"])
    statuses = [(await b.runs.get(tid, r["run_id"]))["status"] for r in (first, second)]
    assert statuses == ["interrupted", "success"]

    state = await b.threads.get_state(tid)
    assert state["next"] == [] and not state["interrupts"]
    write = [m for m in state["values"]["messages"] if m.get("name") == "sqlite-write_query"]
    assert len(write) == 1 and write[0]["content"].startswith("Outcome unknown"), write
    await wait_for_rows(cluster, before + 1)  # the first run's write, once


async def wait_for_rows(cluster: Cluster, rows: int, timeout: float = 30) -> None:
    """Until the log holds ``rows`` rows of the write (a cancelled call's MCP server
    finishes it on its own time); then no more come."""
    deadline = time.monotonic() + timeout
    while logged(cluster) < rows and time.monotonic() < deadline:
        await asyncio.sleep(0.05)  # poll interval: the row count is the condition
    assert logged(cluster) == rows


async def test_a_replica_killed_in_the_middle_of_the_write(cluster: Cluster) -> None:
    """The write's replica dies while mcp-server-sqlite waits for the database (held by
    the test); the run is taken over by the other replica, which does not write again."""
    takeover = await kill_during_the_write(cluster)
    print(
        f"\nreplica {takeover.victim} killed mid-write; the other finished the run in "
        f"{takeover.seconds:.1f} s; the write landed {takeover.writes} time(s)"
    )
    assert takeover.run["status"] == "success", takeover.run
    assert takeover.writes <= 1  # at most once, whatever the kill interrupted
    survivor = clients(cluster)[1 - takeover.victim]
    state = await survivor.threads.get_state(takeover.thread_id)
    assert state["next"] == [] and not state["interrupts"]
    write = [m for m in state["values"]["messages"] if m.get("name") == "sqlite-write_query"]
    assert len(write) == 1
    if takeover.writes == 1:  # the write landed, unseen: said so, not run again
        assert write[0]["content"].startswith("Outcome unknown"), write[0]["content"]

    cluster.start_replica(takeover.victim)  # the cluster whole again for what follows


async def test_one_replica_with_two_workers(tmp_path: Path) -> None:
    """Each uvicorn worker of a replica builds its own graph and MCP sessions; all of
    them close when the replica stops."""
    env = cluster_env(tmp_path, heartbeat=HEARTBEAT)
    with Cluster(tmp_path / "state", replicas_wanted=1, workers=2, env=env) as cluster:
        (client,) = clients(cluster)
        thread_ids = await asyncio.gather(*(whole_session([client], i) for i in range(10)))
        for tid in thread_ids:
            state = await client.threads.get_state(tid)
            assert session_problems(state["values"]) == [], tid
        assert logged(cluster) == 10
        owners = claim_owners(cluster)
        print(f"\ntool calls per worker process: {owners}")
        workers = {p.pid for p in psutil.Process(cluster.replicas[0].pid).children()}
        assert set(owners) <= workers and sum(owners.values()) == 100, (owners, workers)
        assert cluster.stop_replica(0) == []
