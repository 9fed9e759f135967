"""Runs per second of the database assistant on LangGraph Server, side by side in one run.

The recorded database-assistant session (four questions, the write approved: five runs
per thread, the real mcp-server-sqlite, the replay model per conversation) for
``--threads`` threads at once, through langgraph-sdk, on three graphs:

- ``sqlite_assistant``: the project's database assistant (Hermes replies, parsed);
- ``fncall_native``: ``create_fncall_graph(dialect="native")`` on the same replies as
  native tool calls;
- ``create_agent``: LangChain's ``create_agent`` + ``HumanInTheLoopMiddleware`` on those;

served by (a) ``langgraph dev`` (one process, in memory; the ``studio`` extra) and (b)
the cluster (scripts/serve_cluster.py: PostgreSQL + Redis + two ``langhost serve``
replicas). The database assistant also runs on one replica (the other stopped), in
alternating rounds.

Prints runs/s and each graph ÷ ``create_agent``; two replicas ÷ one; the bytes the
cluster's PostgreSQL grew by per thread for each graph (checkpoints, runs, and the tool
call claims, those also alone); how often ``runs.wait`` answered 100 first questions
with an older state than ``threads.get_state`` shows; last, the recovery time: a replica
SIGKILLed while it runs the approved write, until the other finishes the run, with the
runs' heartbeat at ``--heartbeat`` seconds (the server's default is 120). Nothing is
asserted.

    python bench/server_cluster.py [--threads 50] [--rounds 3] [--heartbeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from langgraph_sdk import get_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "scripts"))
from cluster_session import (  # noqa: E402
    GRAPH,
    QUESTIONS,
    cluster_env,
    kill_during_the_write,
    user,
    whole_session,
)
from serve_cluster import (  # noqa: E402
    Cluster,
    free_port,
    http_ok,
    kill_group,
    stop_pid,
    wait_until,
)

RUNS_PER_THREAD = len(QUESTIONS) + 1  # the questions, then the approval
GRAPHS = ["sqlite_assistant", "fncall_native", "create_agent"]


def write_config(tmp: Path) -> Path:
    """A langgraph.json serving the project's database assistant and the two graphs of
    bench/server_graphs.py to compare it with (absolute paths: servers read relative
    ones from their working directory)."""
    compared = REPO / "bench" / "server_graphs.py"
    config = {
        "dependencies": [str(REPO)],
        "graphs": {
            "sqlite_assistant": "fncall_graph.graphs.studio:sqlite_assistant",
            "fncall_native": f"{compared}:fncall_native_assistant",
            "create_agent": f"{compared}:create_agent_assistant",
        },
    }
    path = tmp / "langgraph.json"
    path.write_text(json.dumps(config, indent=2))
    return path


async def runs_per_second(urls: list[str], threads: int, graph: str = GRAPH) -> float:
    clients = [get_client(url=u) for u in urls]
    started = time.monotonic()
    await asyncio.gather(*(whole_session(clients, i, graph) for i in range(threads)))
    return threads * RUNS_PER_THREAD / (time.monotonic() - started)


def warm(urls: list[str]) -> None:
    """Every graph built on every server (MCP sessions open) before anything is timed."""
    for graph in GRAPHS:
        asyncio.run(runs_per_second(urls, 2 * len(urls), graph))


@contextmanager
def langgraph_dev(tmp: Path, config: Path) -> Iterator[str | None]:
    """``langgraph dev`` on the same graphs and environment; None when not installed."""
    langgraph = Path(sys.executable).parent / "langgraph"
    if not langgraph.exists():
        yield None
        return
    port = free_port()
    env = {**os.environ, **cluster_env(tmp)}
    with (tmp / "dev.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(langgraph), "dev", "--config", str(config), "--host",
             "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload"],
            cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until("langgraph dev", lambda: http_ok(url), 120, alive=lambda: proc.poll() is None)
        yield url
    finally:
        stop_pid(proc.pid, signal.SIGINT)
        proc.wait()
        kill_group(proc.pid)


async def stale_waits(urls: list[str], threads: int) -> int:
    """Of ``threads`` first questions asked with ``runs.wait`` (replicas in turn), how
    many answers hold fewer messages than the thread's state read afterwards."""
    clients = [get_client(url=u) for u in urls]

    async def one(i: int) -> bool:
        client = clients[i % len(clients)]
        tid = (await client.threads.create())["thread_id"]
        values = await client.runs.wait(tid, GRAPH, input=user(QUESTIONS[0]))
        state = await clients[(i + 1) % len(clients)].threads.get_state(tid)
        return len(values.get("messages") or []) < len(state["values"]["messages"])

    return sum(await asyncio.gather(*(one(i) for i in range(threads))))


def database_bytes(url: str) -> tuple[int, int]:
    """The database's size and the claims table's (with its index), in bytes."""
    with psycopg.connect(url, autocommit=True) as conn:
        total = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        claims = conn.execute(
            "SELECT COALESCE(pg_total_relation_size(to_regclass('fncall_tool_calls')), 0)"
        ).fetchone()
    return total[0], claims[0]  # type: ignore[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heartbeat", type=float, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fncall-bench-cluster-"))
    config = write_config(tmp)
    dev_rates: dict[str, list[float]] = {g: [] for g in GRAPHS}
    cluster_rates: dict[str, list[float]] = {g: [] for g in GRAPHS}
    one_replica: list[float] = []
    grown: dict[str, list[int]] = {g: [0, 0] for g in GRAPHS}  # database, claims

    (tmp / "dev").mkdir()
    with langgraph_dev(tmp / "dev", config) as dev:
        if dev is None:
            print("langgraph dev: not installed (pip install 'fncall-graph[studio]'); skipped")
        else:
            warm([dev])
            for round_ in range(args.rounds):
                for graph in GRAPHS if round_ % 2 else reversed(GRAPHS):
                    dev_rates[graph].append(
                        asyncio.run(runs_per_second([dev], args.threads, graph))
                    )

    env = cluster_env(tmp, heartbeat=args.heartbeat)
    with Cluster(tmp / "cluster", replicas_wanted=2, env=env, config=config) as cluster:
        urls = [r.url for r in cluster.replicas]
        warm(urls)
        for _ in range(args.rounds):
            cluster.stop_replica(1)
            one_replica.append(asyncio.run(runs_per_second(urls[:1], args.threads)))
            cluster.start_replica(1)
            warm(urls[1:])
            for graph in GRAPHS if len(one_replica) % 2 else reversed(GRAPHS):  # fair order
                before = database_bytes(cluster.database_url)
                cluster_rates[graph].append(asyncio.run(runs_per_second(urls, args.threads, graph)))
                after = database_bytes(cluster.database_url)
                grown[graph][0] += after[0] - before[0]
                grown[graph][1] += after[1] - before[1]
        stale = asyncio.run(stale_waits(urls, 100))
        takeover = asyncio.run(kill_during_the_write(cluster))

    median = statistics.median
    print(
        f"\nthe database-assistant session: {args.threads} threads at once, "
        f"{RUNS_PER_THREAD} runs each, median of {args.rounds} rounds (CPU cores: {os.cpu_count()})"
    )
    print(
        f"  {'graph':18s} {'langgraph dev':>14s} {'2 replicas':>11s}  ÷ create_agent (dev, cluster)"
    )
    agent_dev = median(dev_rates["create_agent"]) if dev_rates["create_agent"] else None
    agent_cluster = median(cluster_rates["create_agent"])
    for graph in GRAPHS:
        dev_rate = median(dev_rates[graph]) if dev_rates[graph] else float("nan")
        rate = median(cluster_rates[graph])
        dev_ratio = dev_rate / agent_dev if agent_dev else float("nan")
        print(
            f"  {graph:18s} {dev_rate:9.1f} r/s {rate:7.1f} r/s  "
            f"{dev_ratio:5.2f}×, {rate / agent_cluster:5.2f}×"
        )
    one, two = median(one_replica), median(cluster_rates[GRAPH])
    print(f"  {GRAPH}: 1 replica {one:.1f} runs/s; 2 replicas ÷ 1 replica: {two / one:.2f}×")
    threads_run = args.rounds * args.threads
    for graph in GRAPHS:
        total, claims = (b / threads_run / 1024 for b in grown[graph])
        print(
            f"  PostgreSQL per thread, {graph}: {total:.1f} KiB "
            f"({total / RUNS_PER_THREAD:.1f} KiB per run; tool call claims {claims:.2f} KiB)"
        )
    print(f"runs.wait answered with an older state than threads.get_state in {stale} of 100 runs")
    print(
        f"recovery: replica {takeover.victim} SIGKILLed during the write; the other "
        f"finished the run {takeover.seconds:.1f} s later (heartbeat {args.heartbeat:g} s); "
        f"run {takeover.run['status']}, the write landed {takeover.writes} time(s)"
    )


if __name__ == "__main__":
    main()
