"""Runs per second of the database assistant on LangGraph Server, side by side in one run.

The recorded database-assistant session (four questions, the write approved: five runs
per thread, the real mcp-server-sqlite, the replay model per conversation) for
``--threads`` threads at once, through langgraph-sdk:

(a) ``langgraph dev``: one process, in memory (the ``studio`` extra), as the baseline;
(b) the cluster (scripts/serve_cluster.py: PostgreSQL + Redis + ``langhost serve``)
    with one replica, then (c) with two; one replica is stopped and started again
    between rounds, which alternate so both see the same machine.

Prints runs/s, each ratio to ``langgraph dev`` and two replicas ÷ one, and the bytes the
cluster's PostgreSQL grew by per thread (LangGraph's checkpoints plus the tool call
claims, the claims also alone), and how often ``runs.wait`` answered 100 first questions
with an older state than ``threads.get_state`` shows. Last, the recovery time: a replica SIGKILLed while it
runs the approved write, until the other finishes the run, with the runs' heartbeat at
``--heartbeat`` seconds (the server's default is 120: about twice that to recover).
Nothing is asserted.

    python bench/server_cluster.py [--threads 50] [--rounds 2] [--heartbeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
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

from fncall_graph.examples.database_assistant import make_database

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

RUNS_PER_THREAD = 5


async def runs_per_second(urls: list[str], threads: int) -> float:
    clients = [get_client(url=u) for u in urls]
    started = time.monotonic()
    await asyncio.gather(*(whole_session(clients, i) for i in range(threads)))
    return threads * RUNS_PER_THREAD / (time.monotonic() - started)


@contextmanager
def langgraph_dev(tmp: Path) -> Iterator[str | None]:
    """``langgraph dev`` on the same graphs and environment; None when not installed."""
    langgraph = Path(sys.executable).parent / "langgraph"
    if not langgraph.exists():
        yield None
        return
    port = free_port()
    env = {**os.environ, **cluster_env(tmp), "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    make_database(env["FNCALL_SQLITE_DB"])
    with (tmp / "dev.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(langgraph), "dev", "--config", str(REPO / "langgraph.json"), "--host",
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
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--heartbeat", type=float, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fncall-bench-cluster-"))
    rates: dict[str, list[float]] = {"langgraph dev": [], "1 replica": [], "2 replicas": []}

    (tmp / "dev").mkdir()
    with langgraph_dev(tmp / "dev") as dev:
        if dev is None:
            print("langgraph dev: not installed (pip install 'fncall-graph[studio]'); skipped")
        else:
            asyncio.run(runs_per_second([dev], 2))  # warm-up: MCP sessions open
            for _ in range(args.rounds):
                rates["langgraph dev"].append(asyncio.run(runs_per_second([dev], args.threads)))

    env = {**cluster_env(tmp), "LG_BG_JOB_HEARTBEAT": f"{args.heartbeat:g}"}
    make_database(env["FNCALL_SQLITE_DB"])
    with Cluster(tmp / "cluster", replicas_wanted=2, env=env) as cluster:
        urls = [r.url for r in cluster.replicas]
        asyncio.run(runs_per_second(urls, 4))  # warm-up on both replicas
        before = database_bytes(cluster.database_url)
        threads_run = 0
        for _ in range(args.rounds):
            cluster.stop_replica(1)
            rates["1 replica"].append(asyncio.run(runs_per_second(urls[:1], args.threads)))
            cluster.start_replica(1)
            asyncio.run(runs_per_second(urls[1:], 1))  # its sessions open, as replica 0's are
            rates["2 replicas"].append(asyncio.run(runs_per_second(urls, args.threads)))
            threads_run += 2 * args.threads + 1
        after = database_bytes(cluster.database_url)
        stale = asyncio.run(stale_waits(urls, 100))
        takeover = asyncio.run(kill_during_the_write(cluster))

    print(
        f"\nthe database-assistant session: {args.threads} threads at once, "
        f"{RUNS_PER_THREAD} runs each, median of {args.rounds} rounds"
    )
    base = statistics.median(rates["langgraph dev"]) if rates["langgraph dev"] else None
    for name, values in rates.items():
        if not values:
            continue
        rate = statistics.median(values)
        ratio = f"{rate / base:5.2f}× langgraph dev" if base else ""
        print(f"  {name:14s} {rate:7.1f} runs/s  {ratio}")
    one, two = (statistics.median(rates[k]) for k in ("1 replica", "2 replicas"))
    print(f"  2 replicas ÷ 1 replica: {two / one:.2f}× (CPU cores: {os.cpu_count()})")
    grown, claims = after[0] - before[0], after[1] - before[1]
    print(
        f"PostgreSQL grew {grown / threads_run / 1024:.1f} KiB per thread "
        f"({grown / threads_run / RUNS_PER_THREAD / 1024:.1f} KiB per run); "
        f"the tool call claims {claims / threads_run / 1024:.2f} KiB per thread"
    )
    print(f"runs.wait answered with an older state than threads.get_state in {stale} of 100 runs")
    print(
        f"recovery: replica {takeover.victim} SIGKILLed during the write; the other "
        f"finished the run {takeover.seconds:.1f} s later (heartbeat {args.heartbeat:g} s); "
        f"run {takeover.run['status']}, the write landed {takeover.writes} time(s)"
    )


if __name__ == "__main__":
    main()
