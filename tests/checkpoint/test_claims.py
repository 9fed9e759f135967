"""Tool call claims on every saver kind: what a run finds when a call is already claimed.

Other processes are stood in for by claim owners: this machine's pid 1 (alive), this
process with a start time it never had (a process that is gone), and another machine.
The PostgreSQL cases run against a real server (tests/pg_server.py).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
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
    FINISH_ATTEMPTS,
    CallClaims,
    ClaimKey,
    ClaimRow,
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


def once(
    saver: Any,
    key: ClaimKey,
    step: str,
    run: Any = lambda: RESULT,
    *,
    idempotent: bool = False,
    **kw: Any,
) -> Any:
    """Run call ``key`` at most once; an unknown outcome is answered with its claim's row."""
    return claims_for(saver, **kw).once(
        key, step, run, tool="log", idempotent=idempotent, unknown=unknown_answer
    )


def unknown_answer(row: ClaimRow) -> list[ToolMessage]:
    return [ToolMessage(f"unknown: {row.status} by {row.owner}", tool_call_id="c1", name="log")]


def not_run() -> Any:
    raise AssertionError("the call ran again")


def left_running(saver: Any, key: ClaimKey, step: str, owner: Owner) -> None:
    """The claim as ``owner`` left it inside the call (still there, or killed there)."""
    row = ClaimRow(key, "log", str(owner), step, "running", time.time())
    assert claims_for(saver).store.run(claims_module._Insert(row))


def row_of(saver: Any, key: ClaimKey) -> ClaimRow | None:
    return claims_for(saver).store.run(claims_module._Get(key))


class Stopped(Exception):
    """The call's run stopped inside it (a crash in the tool, a cancel)."""


def test_a_call_is_claimed_run_and_finished_once(thread):
    saver, thread_id, step, key = thread

    def call() -> Any:
        # while it runs, this process's own second attempt is refused
        with pytest.raises(ToolCallInProgress, match="c1 \\(log\\) is running"):
            once(saver, key, step, not_run)
        return RESULT

    assert once(saver, key, step, call) == RESULT
    # finished, and that run is over (here: its checkpoint write failed, say): the next
    # run, in this process too, takes the stored result and does not run the call again
    assert once(saver, key, step, not_run) == RESULT
    # ... but not once the thread has moved on since that step
    _head(saver, thread_id)
    with pytest.raises(ToolCallAlreadyRan, match="already ran"):
        once(saver, key, step, not_run)


def test_a_result_another_live_process_stored_is_used_once_its_lease_lapses(thread, monkeypatch):
    """A process that stored the result but could not save it in the thread (a failed
    checkpoint write; a server replica lives on): others wait out its lease, then use
    the result instead of stopping with ToolCallAlreadyRan until that process exits."""
    saver, _, step, key = thread
    claimed_by(monkeypatch, ALIVE_ELSEWHERE, lambda: once(saver, key, step))
    with pytest.raises(ToolCallAlreadyRan):  # it may still be saving it
        once(saver, key, step, not_run)
    assert once(saver, key, step, not_run, stale_after=0) == RESULT


def test_a_call_running_in_a_live_process_is_not_run(thread):
    saver, thread_id, step, key = thread
    left_running(saver, key, step, ALIVE_ELSEWHERE)
    with pytest.raises(ToolCallInProgress) as raised:
        once(saver, key, step, not_run, idempotent=True)
    error = raised.value
    assert (error.thread_id, error.call_id, error.tool) == (thread_id, "c1", "log")
    assert "process 1 on" in str(error)


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_call_whose_process_died_inside_it(thread, idempotent):
    saver, _, step, key = thread
    left_running(saver, key, step, GONE)
    if idempotent:
        assert once(saver, key, step, idempotent=True) == RESULT
        return
    answer = once(saver, key, step, not_run)
    assert answer[0].content == f"unknown: running by {GONE}"
    assert row_of(saver, key).status == "unknown"
    # answered once: from now on the answer is the stored one
    assert once(saver, key, step, not_run) == answer


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_call_whose_run_was_cancelled_in_a_live_process(thread, monkeypatch, idempotent):
    """A run cancelled inside the call (its process lives on) marks the claim abandoned:
    a later run anywhere answers it as unknown (or reruns it) instead of waiting."""
    saver, _, step, key = thread

    def cancelled() -> Any:
        raise Stopped

    with pytest.raises(Stopped):
        claimed_by(monkeypatch, ALIVE_ELSEWHERE, lambda: once(saver, key, step, cancelled))
    if idempotent:
        assert once(saver, key, step, idempotent=True) == RESULT
        return
    answer = once(saver, key, step, not_run)
    assert answer[0].content == f"unknown: abandoned by {ALIVE_ELSEWHERE}"


def test_a_finished_call_whose_result_was_not_saved_gives_its_result(thread, monkeypatch):
    saver, thread_id, step, key = thread
    claimed_by(monkeypatch, GONE, lambda: once(saver, key, step))  # ran, then died
    assert once(saver, key, step, not_run) == RESULT
    # the thread moved on since that step: a run from the old step stops instead
    _head(saver, thread_id)
    with pytest.raises(ToolCallAlreadyRan):
        once(saver, key, step, not_run)


def test_a_claim_made_on_another_machine(thread):
    saver, _, step, key = thread
    left_running(saver, key, step, OTHER_MACHINE)
    with pytest.raises(ToolCallInProgress):  # running, as far as anyone here knows
        once(saver, key, step, not_run)
    # once no call could still be running there, its outcome is unknown
    answer = once(saver, key, step, not_run, stale_after=0)
    assert answer[0].content.startswith("unknown: running")


def test_a_call_paused_by_an_interrupt_is_released(thread):
    saver, _, step, key = thread

    def paused() -> Any:
        raise GraphInterrupt()

    with pytest.raises(GraphInterrupt):
        once(saver, key, step, paused)
    assert row_of(saver, key) is None
    assert once(saver, key, step) == RESULT  # on resume it runs


# -- a claim always settles: faults injected by wrapping the saver's claim store


class FailingFinish:
    """The saver's claim store, where storing a call's outcome fails ``times`` times."""

    def __init__(self, store: Any, times: int) -> None:
        self.store, self.left, self.tried = store, times, 0

    def fails(self, op: Any) -> bool:
        if not (isinstance(op, claims_module._Finish) and op.status == "done"):
            return False
        self.tried += 1
        self.left -= 1
        return self.left >= 0

    def run(self, op: Any) -> Any:
        if self.fails(op):
            raise ConnectionError("the database went away")
        return self.store.run(op)

    async def arun(self, op: Any) -> Any:
        if self.fails(op):
            raise ConnectionError("the database went away")
        return await self.store.arun(op)


def with_store(saver: Any, store: Any) -> CallClaims:
    return CallClaims(store, saver, stale_after=None)


def test_an_outcome_that_fails_to_store_once_is_stored_on_retry(thread):
    saver, _, step, key = thread
    store = FailingFinish(claims_for(saver).store, times=1)
    runs: list[int] = []

    def call() -> Any:
        runs.append(1)
        return RESULT

    claims = with_store(saver, store)
    assert claims.once(key, step, call, tool="log", idempotent=False, unknown=unknown_answer)
    assert (runs, store.tried) == ([1], 2)
    row = row_of(saver, key)
    assert row.status == "done" and saver.serde.loads_typed((row.result_type, row.result)) == RESULT
    assert once(saver, key, step, not_run) == RESULT


def test_an_outcome_that_never_stores_leaves_the_claim_abandoned(thread, caplog):
    saver, _, step, key = thread
    store = FailingFinish(claims_for(saver).store, times=FINISH_ATTEMPTS)
    claims = with_store(saver, store)
    with pytest.raises(ConnectionError, match="went away"):
        claims.once(key, step, lambda: RESULT, tool="log", idempotent=False, unknown=unknown_answer)
    assert store.tried == FINISH_ATTEMPTS
    # the outcome is said where a person can find it: another process will not know it
    [said] = [r for r in caplog.records if "could not be stored" in r.getMessage()]
    assert said.levelname == "ERROR" and "logged" in said.getMessage()
    # not running: nobody waits for it; another process answers it as unknown
    assert row_of(saver, key).status == "abandoned"
    # this process had the outcome: its next run stores it and uses it, not "unknown"
    assert once(saver, key, step, not_run) == RESULT
    row = row_of(saver, key)
    assert row.status == "done" and saver.serde.loads_typed((row.result_type, row.result)) == RESULT


class CancelledAfterInsert:
    """The saver's claim store, where the run is cancelled as the claim's INSERT lands."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def arun(self, op: Any) -> Any:
        answer = await self.store.arun(op)
        if isinstance(op, claims_module._Insert):
            raise asyncio.CancelledError
        return answer


def test_a_cancel_between_the_claim_and_the_call_gives_the_claim_up(kind, url, tmp_path, request):
    thread = fresh_thread(request)
    runs: list[int] = []

    async def call() -> Any:
        runs.append(1)
        return RESULT

    async def scenario() -> None:
        async with async_saver(kind, tmp_path, url) as saver:
            step = await _ahead(saver, thread)
            key = ClaimKey(thread, "", "c1")
            store = claims_for(saver).store
            claims = with_store(saver, CancelledAfterInsert(store))
            with pytest.raises(asyncio.CancelledError):
                await claims.aonce(
                    key, step, call, tool="log", idempotent=False, unknown=unknown_answer
                )
            assert runs == []
            assert await store.arun(claims_module._Get(key)) is None  # not left running
            # the call did not run: the next run runs it
            answer = await claims_for(saver).aonce(
                key, step, call, tool="log", idempotent=False, unknown=unknown_answer
            )
            assert (answer, runs) == (RESULT, [1])

    asyncio.run(scenario())


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

    async def result() -> Any:
        return RESULT

    async def scenario() -> None:
        async with async_saver(kind, tmp_path, url) as saver:
            step = await _ahead(saver, thread)
            claims = claims_for(saver)

            def aonce(key: ClaimKey, run: Any) -> Any:
                return claims.aonce(
                    key, step, run, tool="log", idempotent=False, unknown=unknown_answer
                )

            key = ClaimKey(thread, "", "c1")

            async def call() -> Any:
                with pytest.raises(ToolCallInProgress):
                    await aonce(key, result)
                return RESULT

            assert await aonce(key, call) == RESULT
            with monkeypatch.context() as m:  # held by another process, within its lease
                as_owner(m, ALIVE_ELSEWHERE)
                await aonce(ClaimKey(thread, "", "c0"), result)
            with pytest.raises(ToolCallAlreadyRan):
                await aonce(ClaimKey(thread, "", "c0"), result)

            gone = ClaimKey(thread, "", "c2")
            with monkeypatch.context() as m:
                as_owner(m, GONE)
                await aonce(gone, result)
            runs: list[int] = []

            async def again() -> Any:
                runs.append(1)
                return RESULT

            assert await aonce(gone, again) == RESULT and runs == []

            paused = ClaimKey(thread, "", "c3")

            async def pause() -> Any:
                raise GraphInterrupt()

            with pytest.raises(GraphInterrupt):
                await aonce(paused, pause)
            assert await aonce(paused, again) == RESULT and runs == [1]

            review = ClaimKey(thread, "", "approval:c4")
            await claims.areview(review, step)
            with monkeypatch.context() as m:
                as_owner(m, ALIVE_ELSEWHERE)
                with pytest.raises(ThreadAlreadyResumed):
                    await claims.areview(review, step)

    asyncio.run(scenario())


def test_a_running_call_s_claim_is_renewed_through_an_async_saver(kind, url, tmp_path, request):
    """The heartbeat renews the claims of an async saver on the saver's own loop, while
    the call runs there."""
    thread = fresh_thread(request)

    async def scenario() -> None:
        async with async_saver(kind, tmp_path, url) as saver:
            step = await _ahead(saver, thread)
            key = ClaimKey(thread, "", "c1")
            claims = claims_for(saver, stale_after=0.4)  # renewed every 0.1 s

            async def call() -> Any:
                made = (await claims.store.arun(claims_module._Get(key))).created_at
                deadline = time.monotonic() + 60
                while True:  # the call runs until its claim was renewed
                    row = await claims.store.arun(claims_module._Get(key))
                    if (row.renewed_at or 0) > made:
                        return RESULT
                    assert time.monotonic() < deadline, "the claim was never renewed"
                    await asyncio.sleep(0.05)  # the loop stays free for the heartbeat

            answer = await claims.aonce(
                key, step, call, tool="log", idempotent=False, unknown=unknown_answer
            )
            assert answer == RESULT

    asyncio.run(scenario())
