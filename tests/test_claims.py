"""Tool call claims on every saver kind: what a run finds when a call is already claimed.

Other processes are stood in for by claim owners: this machine's pid 1 (alive), this
process with a start time it never had (a process that is gone), and another machine.
The PostgreSQL cases run against a real server (tests/pg_server.py).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from pg_server import postgres_url  # noqa: F401  (the fixture)
from typing_extensions import TypedDict

from fncall_graph.adapters.checkpoint import (
    async_postgres_saver,
    async_sqlite_saver,
    postgres_saver,
    sqlite_saver,
)
from fncall_graph.adapters.checkpoint import claims as claims_module
from fncall_graph.adapters.checkpoint.claims import (
    ClaimKey,
    Owner,
    ThreadAlreadyResumed,
    ToolCallAlreadyRan,
    ToolCallInProgress,
    claims_for,
)


class _State(TypedDict):
    n: int


def _counter(saver: Any) -> Any:
    builder = StateGraph(_State)
    builder.add_node("a", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "a")
    return builder.compile(checkpointer=saver)


def _head(saver: Any, thread: str) -> str:
    """Give ``thread`` a new checkpoint in ``saver`` and return its id (the latest)."""
    cfg = {"configurable": {"thread_id": thread}}
    graph = _counter(saver)
    graph.invoke({"n": 0}, cfg)
    return graph.get_state(cfg).config["configurable"]["checkpoint_id"]


async def _ahead(saver: Any, thread: str) -> str:
    cfg = {"configurable": {"thread_id": thread}}
    graph = _counter(saver)
    await graph.ainvoke({"n": 0}, cfg)
    return (await graph.aget_state(cfg)).config["configurable"]["checkpoint_id"]


ALIVE_ELSEWHERE = Owner(claims_module._HOST, 1, claims_module._start_time(1) or "", "t-alive")
GONE = Owner(claims_module._HOST, os.getpid(), "0", "t-gone")  # this pid, another start
OTHER_MACHINE = Owner("elsewhere/boot", 4242, "1", "t-far")


def as_owner(monkeypatch: pytest.MonkeyPatch, owner: Owner) -> None:
    monkeypatch.setattr(Owner, "here", classmethod(lambda cls: owner))


def claimed_by(monkeypatch: pytest.MonkeyPatch, owner: Owner, claim: Any) -> Any:
    """Run ``claim()`` as if ``owner`` (another process) made it."""
    with monkeypatch.context() as m:
        as_owner(m, owner)
        return claim()


RESULT = [ToolMessage("logged", tool_call_id="c1", name="log")]


# -- the savers, sync and async


@contextmanager
def sync_saver(kind: str, tmp_path: Any, url: str | None) -> Iterator[Any]:
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        with sqlite_saver(tmp_path / "c.db") as saver:
            yield saver
    else:
        assert url is not None
        with postgres_saver(url) as saver:
            yield saver


@asynccontextmanager
async def async_saver(kind: str, tmp_path: Any, url: str | None) -> AsyncIterator[Any]:
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        async with async_sqlite_saver(tmp_path / "c.db") as saver:
            yield saver
    else:
        assert url is not None
        async with async_postgres_saver(url) as saver:
            yield saver


KINDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.slow)]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def url(kind: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if kind == "postgres" else None


def fresh_thread(request: pytest.FixtureRequest) -> str:
    # PostgreSQL is shared by the session: a thread of its own per test
    return f"{request.node.name}-{os.urandom(4).hex()}"


@pytest.fixture
def thread(kind, url, tmp_path, request) -> Iterator[tuple[Any, str, str, ClaimKey]]:
    """(saver, thread id, the thread's latest checkpoint, the key of call c1)."""
    thread_id = fresh_thread(request)
    with sync_saver(kind, tmp_path, url) as saver:
        yield saver, thread_id, _head(saver, thread_id), ClaimKey(thread_id, "", "c1")


def start(saver: Any, key: ClaimKey, step: str, *, idempotent: bool = False, **kw: Any) -> Any:
    return claims_for(saver, **kw).start(key, "log", step, idempotent=idempotent)


def test_a_call_is_claimed_run_and_finished_once(thread):
    saver, _, step, key = thread
    started = start(saver, key, step)
    assert started.run and started.holder
    # while it runs, this process's own second attempt is refused
    with pytest.raises(ToolCallInProgress, match="c1 \\(log\\) is running"):
        start(saver, key, step)
    claims_for(saver).finish(key, started.holder, RESULT)
    # finished by a live process (this one): another run does not run it again
    with pytest.raises(ToolCallAlreadyRan, match="already ran"):
        start(saver, key, step)


def test_a_call_running_in_a_live_process_is_not_run(thread, monkeypatch):
    saver, thread_id, step, key = thread
    assert claimed_by(monkeypatch, ALIVE_ELSEWHERE, lambda: start(saver, key, step)).run
    with pytest.raises(ToolCallInProgress) as raised:
        start(saver, key, step, idempotent=True)
    error = raised.value
    assert (error.thread_id, error.call_id, error.tool) == (thread_id, "c1", "log")
    assert "process 1 on" in str(error)


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_call_whose_process_died_inside_it(thread, monkeypatch, idempotent):
    saver, _, step, key = thread
    assert claimed_by(monkeypatch, GONE, lambda: start(saver, key, step)).run
    started = start(saver, key, step, idempotent=idempotent)
    if idempotent:
        assert started.run and started.unknown is None
        return
    assert not started.run
    assert started.unknown is not None and started.unknown.owner == str(GONE)
    claims_for(saver).finish(key, started.holder, RESULT, status="unknown")
    # answered once: from now on the answer is the stored one
    with pytest.raises(ToolCallAlreadyRan):
        start(saver, key, step)


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_call_whose_run_was_cancelled_in_a_live_process(thread, monkeypatch, idempotent):
    """A run cancelled inside the call (its process lives on) marks the claim abandoned:
    a later run anywhere answers it as unknown (or reruns it) instead of waiting."""
    saver, _, step, key = thread

    def start_then_cancel() -> None:
        started = start(saver, key, step)
        claims_for(saver).abandon(key, started.holder)

    claimed_by(monkeypatch, ALIVE_ELSEWHERE, start_then_cancel)
    started = start(saver, key, step, idempotent=idempotent)
    if idempotent:
        assert started.run and started.unknown is None
        return
    assert not started.run
    assert started.unknown is not None and started.unknown.status == "abandoned"
    assert started.unknown.owner == str(ALIVE_ELSEWHERE)


def test_a_finished_call_whose_result_was_not_saved_gives_its_result(thread, monkeypatch):
    saver, thread_id, step, key = thread

    def run_and_die() -> None:
        claims_for(saver).finish(key, start(saver, key, step).holder, RESULT)

    claimed_by(monkeypatch, GONE, run_and_die)
    again = start(saver, key, step)
    assert not again.run
    assert again.output == RESULT
    # the thread moved on since that step: a run from the old step stops instead
    _head(saver, thread_id)
    with pytest.raises(ToolCallAlreadyRan):
        start(saver, key, step)


def test_a_claim_made_on_another_machine(thread, monkeypatch):
    saver, _, step, key = thread
    claimed_by(monkeypatch, OTHER_MACHINE, lambda: start(saver, key, step))
    with pytest.raises(ToolCallInProgress):  # running, as far as anyone here knows
        start(saver, key, step)
    # once no call could still be running there, its outcome is unknown
    assert start(saver, key, step, stale_after=0).unknown is not None


def test_a_call_paused_by_an_interrupt_is_released(thread):
    saver, _, step, key = thread
    claims_for(saver).release(key, start(saver, key, step).holder)
    assert start(saver, key, step).run


def test_one_run_answers_an_approval(thread, monkeypatch):
    saver, thread_id, step, _ = thread

    def review(call: str) -> None:
        claims_for(saver).review(ClaimKey(thread_id, "", f"approval:{call}"), step)

    claimed_by(monkeypatch, ALIVE_ELSEWHERE, lambda: review("c1"))
    with pytest.raises(ThreadAlreadyResumed, match="already answered"):
        review("c1")
    # a resume whose process died before the thread moved on is taken over
    claimed_by(monkeypatch, GONE, lambda: review("c2"))
    review("c2")
    # ... but not once the thread has moved on
    claimed_by(monkeypatch, GONE, lambda: review("c3"))
    _head(saver, thread_id)
    with pytest.raises(ThreadAlreadyResumed):
        review("c3")


def test_an_approval_interrupted_while_claimed_is_given_up(thread, monkeypatch):
    """Its run stopped inside the claim (the claim made, the answer not yet back): the
    claim is given up, so a run in another process can answer the approval."""
    saver, thread_id, step, _ = thread
    key = ClaimKey(thread_id, "", "approval:c1")
    store = claims_for(saver).store
    made = store.run

    def made_then_stopped(op: Any) -> Any:
        answer = made(op)
        if isinstance(op, claims_module._Insert):
            raise KeyboardInterrupt
        return answer

    with monkeypatch.context() as m:
        m.setattr(store, "run", made_then_stopped)
        with pytest.raises(KeyboardInterrupt):
            claims_for(saver).review(key, step)
    claimed_by(monkeypatch, ALIVE_ELSEWHERE, lambda: claims_for(saver).review(key, step))
    with pytest.raises(ThreadAlreadyResumed):  # and it is that process's now
        claims_for(saver).review(key, step)


def test_async_savers_keep_claims_too(kind, url, tmp_path, request, monkeypatch):
    thread = fresh_thread(request)

    async def scenario() -> None:
        async with async_saver(kind, tmp_path, url) as saver:
            step = await _ahead(saver, thread)
            claims = claims_for(saver)
            key = ClaimKey(thread, "", "c1")
            started = await claims.astart(key, "log", step, idempotent=False)
            assert started.run
            with pytest.raises(ToolCallInProgress):
                await claims.astart(key, "log", step, idempotent=False)
            await claims.afinish(key, started.holder, RESULT)
            with pytest.raises(ToolCallAlreadyRan):
                await claims.astart(key, "log", step, idempotent=False)

            gone = ClaimKey(thread, "", "c2")
            with monkeypatch.context() as m:
                as_owner(m, GONE)
                held = await claims.astart(gone, "log", step, idempotent=False)
                await claims.afinish(gone, held.holder, RESULT)
            assert (await claims.astart(gone, "log", step, idempotent=False)).output == RESULT

            paused = ClaimKey(thread, "", "c3")
            held = await claims.astart(paused, "ask", step, idempotent=False)
            await claims.arelease(paused, held.holder)
            assert (await claims.astart(paused, "ask", step, idempotent=False)).run

            review = ClaimKey(thread, "", "approval:c4")
            await claims.areview(review, step)
            with monkeypatch.context() as m:
                as_owner(m, ALIVE_ELSEWHERE)
                with pytest.raises(ThreadAlreadyResumed):
                    await claims.areview(review, step)

    asyncio.run(scenario())
