"""Two OS processes approve the same paused threads at the same instant: the approved
write runs exactly once per thread, on SQLite and on PostgreSQL.

Each of 20 threads is paused at the approval of one ``log_action`` call; two worker
processes (tests/race_child.py) then approve all 20, a shared barrier releasing both into
each trial together. The run that loses gets a typed outcome (``ThreadAlreadyResumed``
and friends, or ``StaleApproval`` when the other run had finished); the tool's own side-effect table
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
LOSING = {"ThreadAlreadyResumed", "ToolCallInProgress", "ToolCallAlreadyRan", "StaleApproval"}


def race(
    checkpoints: str, effects: Path, threads: list[str], decisions: tuple[str, str] = ("", "")
) -> list[list[str]]:
    race_child.pause(checkpoints, effects, threads)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    outs = [ctx.Queue() for _ in decisions]  # one each: results in the workers' order
    workers = [
        ctx.Process(
            target=race_child.worker,
            args=(checkpoints, str(effects), threads, barrier, out, decision),
        )
        for decision, out in zip(decisions, outs, strict=True)
    ]
    for w in workers:
        w.start()
    try:
        results = [out.get(timeout=300) for out in outs]
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


def assert_one_answer_taken(checkpoints: str, effects: Path, threads: list[str], results) -> None:
    """One reviewer approves, the other rejects, at once: one answer is taken, the other
    is an error (never ignored in silence), and the write ran iff the approve won."""
    approver, rejecter = results
    counts = race_child.effect_counts(effects)
    with race_child.saver_for(checkpoints) as saver:
        graph = race_child.graph_on(saver, effects)
        for trial, thread in enumerate(threads):
            pair = (approver[trial], rejecter[trial])
            assert pair.count("resumed") == 1, f"trial {trial}: {pair}"
            assert set(pair) <= {"resumed"} | LOSING, f"trial {trial}: {pair}"
            ran = counts.get(f"action {thread}", 0)
            assert ran == (1 if approver[trial] == "resumed" else 0), f"trial {trial}: {pair}"
            messages = graph.get_state({"configurable": {"thread_id": thread}}).values["messages"]
            [result] = [m for m in messages if isinstance(m, ToolMessage)]
            assert (result.status == "error") == (rejecter[trial] == "resumed")
    print(
        f"{len(threads)} trials: approve took {approver.count('resumed')}, reject took "
        f"{rejecter.count('resumed')}; losers {dict(Counter(o for r in results for o in r if o != 'resumed'))}"
    )


def test_approve_and_reject_at_once_on_sqlite(tmp_path):
    checkpoints = str(tmp_path / "checkpoints.db")
    effects = tmp_path / "effects.db"
    threads = [f"sqlite-ar-{i}" for i in range(TRIALS)]
    results = race(checkpoints, effects, threads, ("approve", "reject"))
    assert_one_answer_taken(checkpoints, effects, threads, results)


def test_approve_and_reject_at_once_on_postgres(tmp_path, postgres_url):  # noqa: F811
    effects = tmp_path / "effects.db"
    threads = [f"pg-ar-{tmp_path.name}-{i}" for i in range(TRIALS)]
    results = race(postgres_url, effects, threads, ("approve", "reject"))
    assert_one_answer_taken(postgres_url, effects, threads, results)
