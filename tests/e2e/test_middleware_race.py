"""Two OS processes resume the same paused ``create_agent`` threads at the same instant:
with :class:`~fncall_graph.AtMostOnceMiddleware` the approved write runs once per thread,
whether the review is LangChain's ``HumanInTheLoopMiddleware`` or
:class:`~fncall_graph.BoundApprovalMiddleware`, on SQLite and on PostgreSQL.

Each of the threads is paused at the approval of one ``log_action`` call; two worker
processes (tests/agent_race_child.py) then approve all of them with LangChain's plain
answer, a shared barrier releasing both into each trial together. The run that loses
gets a typed outcome (``ToolCallInProgress`` or ``ToolCallAlreadyRan`` from the tool
call's claim, ``ThreadAlreadyResumed`` from the review's), or finds nothing left to
resume; the tool's own side-effect table holds one row per thread.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections import Counter
from pathlib import Path

import agent_race_child
import pytest
import race_child
from langchain_core.messages import ToolMessage
from pg_server import postgres_url  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow

TRIALS = 12
LOSING = {"ThreadAlreadyResumed", "ToolCallInProgress", "ToolCallAlreadyRan"}


def race(checkpoints: str, effects: Path, threads: list[str], kind: str) -> list[list[str]]:
    agent_race_child.pause(checkpoints, effects, threads, kind)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    outs = [ctx.Queue() for _ in range(2)]
    workers = [
        ctx.Process(
            target=agent_race_child.worker,
            args=(checkpoints, str(effects), threads, barrier, out, kind),
        )
        for out in outs
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


def assert_written_once(checkpoints: str, effects: Path, threads: list[str], results, kind):
    counts = race_child.effect_counts(effects)
    assert {t: counts.get(f"action {t}", 0) for t in threads} == dict.fromkeys(threads, 1)
    for trial, pair in enumerate(zip(*results, strict=True)):
        assert set(pair) <= {"resumed"} | LOSING, f"trial {trial}: {pair}"
        assert "resumed" in pair, f"trial {trial}: no run went on: {pair}"
    with race_child.saver_for(checkpoints) as saver:
        agent = agent_race_child.agent_on(saver, effects, kind)
        for thread in threads:
            state = agent.get_state({"configurable": {"thread_id": thread}})
            results_seen = [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
            # never two answers to the one call; the thread ends with its one result
            assert len(results_seen) <= 1, f"{thread}: {state.values['messages']}"
            if not state.next:
                assert state.values["messages"][-1].content == f"logged: logged action {thread}"
    losers = Counter(o for r in results for o in r if o != "resumed")
    print(f"{kind}: {len(threads)} trials: losing runs {dict(losers)}")


@pytest.mark.parametrize("kind", ["hitl", "bound"])
def test_two_processes_resuming_at_once_write_once_on_sqlite(tmp_path, kind):
    checkpoints = str(tmp_path / "checkpoints.db")
    effects = tmp_path / "effects.db"
    threads = [f"sqlite-{kind}-{i}" for i in range(TRIALS)]
    results = race(checkpoints, effects, threads, kind)
    assert_written_once(checkpoints, effects, threads, results, kind)


@pytest.mark.parametrize("kind", ["hitl", "bound"])
def test_two_processes_resuming_at_once_write_once_on_postgres(
    tmp_path,
    postgres_url,  # noqa: F811
    kind,
):
    effects = tmp_path / "effects.db"
    threads = [f"pg-{kind}-{tmp_path.name}-{i}" for i in range(TRIALS)]
    results = race(postgres_url, effects, threads, kind)
    assert_written_once(postgres_url, effects, threads, results, kind)
