"""Two OS processes approve the same paused threads at the same instant: the approved
write runs exactly once per thread, on SQLite and on PostgreSQL.

Each of 20 threads is paused at the approval of one ``log_action`` call; two worker
processes (tests/race_child.py) then approve all 20, a shared barrier releasing both into
each trial together. The run that loses gets a typed outcome (``ThreadAlreadyResumed``
and friends) or finds the thread already resumed; the tool's own side-effect table
holds one row per thread, and each thread's history the call once with one result.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections import Counter
from pathlib import Path

import pytest
import race_child
from langchain_core.messages import AIMessage, ToolMessage
from pg_server import postgres_url  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow

TRIALS = 20
LOSING = {"ThreadAlreadyResumed", "ToolCallInProgress", "ToolCallAlreadyRan"}


def race(checkpoints: str, effects: Path, threads: list[str]) -> list[list[str]]:
    race_child.pause(checkpoints, effects, threads)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    out = ctx.Queue()
    workers = [
        ctx.Process(
            target=race_child.worker, args=(checkpoints, str(effects), threads, barrier, out)
        )
        for _ in range(2)
    ]
    for w in workers:
        w.start()
    try:
        results = [out.get(timeout=300) for _ in workers]
    except queue.Empty:
        pytest.fail("a worker gave no result within 300 s")
    finally:
        for w in workers:
            w.join(timeout=60)
            if w.is_alive():
                w.kill()
    for r in results:
        assert isinstance(r, list), r
    return results


def assert_exactly_once(checkpoints: str, effects: Path, threads: list[str], results) -> None:
    counts = race_child.effect_counts(effects)
    assert {t: counts.get(f"action {t}", 0) for t in threads} == dict.fromkeys(threads, 1)
    for trial, pair in enumerate(zip(*results, strict=True)):
        assert set(pair) <= {"resumed"} | LOSING, f"trial {trial}: {pair}"
        assert "resumed" in pair, f"trial {trial}: no run went on: {pair}"
    with race_child.saver_for(checkpoints) as saver:
        graph = race_child.graph_on(saver, effects)
        for thread in threads:
            messages = graph.get_state({"configurable": {"thread_id": thread}}).values["messages"]
            calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
            answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
            assert len(calls) == 1 and answered == calls, f"{thread}: {messages}"
            assert messages[-1].content == f"logged: logged action {thread}"
    losers = Counter(o for r in results for o in r if o != "resumed")
    print(f"{len(threads)} trials: losing runs {dict(losers)}")


def test_two_processes_approving_at_once_on_sqlite(tmp_path):
    checkpoints = str(tmp_path / "checkpoints.db")
    effects = tmp_path / "effects.db"
    threads = [f"sqlite-{i}" for i in range(TRIALS)]
    results = race(checkpoints, effects, threads)
    assert_exactly_once(checkpoints, effects, threads, results)


def test_two_processes_approving_at_once_on_postgres(tmp_path, postgres_url):  # noqa: F811
    effects = tmp_path / "effects.db"
    threads = [f"pg-{tmp_path.name}-{i}" for i in range(TRIALS)]
    results = race(postgres_url, effects, threads)
    assert_exactly_once(postgres_url, effects, threads, results)
