"""A claim's whole life as one flow: claim the call, run it, store its outcome
(:meth:`CallClaims.once`), and the claim on an approval's answer
(:meth:`CallClaims.review`); the public functions the nodes use.

However an attempt stops once it made the claim (an error, a cancel, an outcome that
could not be stored), the claim is settled (given up, finished or marked abandoned) and
not left ``running`` while its process lives on. A flow is a generator of store
operations: the same flow is driven against a sync or an async store.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphBubbleUp

from fncall_graph._compat import CONFIG_KEY_CHECKPOINTER, task_position

from ..retries import Retries
from .errors import ThreadAlreadyResumed, ToolCallAlreadyRan, ToolCallClaimed, ToolCallInProgress
from .lease import DEFAULT_LEASE, _beat, _forget, _held, _taken_over
from .owner import RUN_KEY, ClaimKey, ClaimRow, Owner, Status, _lose
from .store import _Finish, _Get, _Insert, _Op, _Release, _store_of, _Swap

__all__ = []

log = logging.getLogger(__name__)

T = TypeVar("T")

# outcomes this process had but could not store with their claims: holder -> (status,
# outcome); its next run of the call stores it then, instead of calling it unknown
_UNSAVED: dict[str, tuple[Status, Any]] = {}


@dataclass(frozen=True)
class _Started:
    """What claiming a call decided.

    ``run``: this attempt holds the claim and runs the call.
    ``output``: the stored outcome to use instead (the call ran and its result was stored).
    ``unknown``: an earlier attempt stopped inside the call; this attempt holds the claim
    and answers it (``unknown`` is that attempt's claim).
    """

    run: bool = False
    output: Any = None
    unknown: ClaimRow | None = None


@dataclass
class _Attempt:
    """One attempt at a call: who claims it, for which graph run (its :data:`RUN_KEY`
    token), and whether its claim replaced an earlier attempt's (whose outcome is
    unknown, so giving the claim up would forget that)."""

    me: Owner
    run: str | None = None
    replacing: bool = False

    @property
    def holder(self) -> str:
        return str(self.me)


@dataclass(frozen=True)
class _Head:  # the thread's latest checkpoint id (from the saver)
    key: ClaimKey


@dataclass(frozen=True)
class _Run:  # run the call itself (what the caller of the flow gave)
    pass


_FlowOp = _Op | _Head | _Run
_Flow = Generator[_FlowOp, Any, Any]


class _Driving:
    """A flow being driven: its next operation, then that operation's answer, or its
    error, which goes back into the flow (where it settles the claim)."""

    def __init__(self, flow: _Flow) -> None:
        self.flow = flow
        self.answer: Any = None
        self.error: BaseException | None = None
        self.value: Any = None  # what the flow returned

    def next(self) -> _FlowOp | None:
        """The next operation; ``None`` once the flow returned."""
        try:
            if self.error is not None:
                return self.flow.throw(self.error)
            return self.flow.send(self.answer)
        except StopIteration as done:
            self.value = done.value
            return None

    @contextmanager
    def answering(self) -> Iterator[None]:
        self.answer, self.error = None, None
        try:
            yield
        except BaseException as exc:
            self.error = exc


FINISH_ATTEMPTS = 3
"""How many times storing a call's outcome is tried before its claim is abandoned."""

_STORING = Retries(FINISH_ATTEMPTS, log, "could not store the outcome of tool call %s")


class CallClaims:
    """Claims on the tool calls of ``saver``'s threads.

    Args:
        store: where claims live (see :func:`claims_for`).
        saver: the threads' checkpointer (its serializer stores results, and it tells
            whether a thread moved on).
        stale_after: the lease: seconds after its holder last renewed it (or finished
            its call) that another process counts a claim as held; this process renews
            the claims of its running calls every ``stale_after / 4`` seconds. ``None``:
            a claim is held until its process is known to be gone, which only this
            machine can tell (a claim made on another machine waits for its holder).
    """

    def __init__(
        self, store: Any, saver: BaseCheckpointSaver, *, stale_after: float | None
    ) -> None:
        self.store, self.saver, self.stale_after = store, saver, stale_after

    # sync and async entry points drive the same flows

    def once(
        self,
        key: ClaimKey,
        step: str,
        run: Callable[[], T],
        *,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], T],
        graph_run: str | None = None,
    ) -> T:
        """Run the call ``key`` at most once: claim it, ``run()`` it, store its outcome.

        The whole life of the claim is one protected flow: however the attempt stops
        once the claim is made (an error, a cancel, a failed store), the claim is
        settled, never left ``running``:

        - the call paused inside (``GraphBubbleUp``, e.g. ``interrupt``), or the attempt
          stopped before the call ran: the claim is given up, and the call runs on resume;
        - the call raised, or the attempt stopped inside it or before its outcome was
          stored: the claim is marked ``abandoned`` (its outcome is unknown);
        - the outcome could not be stored: tried :data:`FINISH_ATTEMPTS` times, then the
          claim is abandoned and the error raised;
        - the claim was taken over while the call ran (this process stopped renewing it
          for longer than the lease, and another run answered the call):
          :class:`ToolCallTakenOver` is raised, the outcome is not stored, and the graph
          run ``graph_run`` is marked lost, so the savers refuse its further writes.

        Already claimed: the stored outcome is returned if the call ran and the thread
        did not save it; ``unknown(claim)`` answers a call whose earlier attempt stopped
        inside it (unless ``idempotent``: then it runs again); otherwise
        :class:`ToolCallClaimed` is raised and nothing runs.

        Args:
            key: the call.
            step: the checkpoint the call's step runs from.
            run: runs the call and returns its outcome (stored with the claim).
            tool: the tool's name (said in errors).
            idempotent: whether the call may run again when its outcome is unknown.
            unknown: the answer to a call whose outcome is unknown.
            graph_run: the graph run making the call (its :data:`RUN_KEY` token).
        """
        flow = self._once(key, step, tool, idempotent, unknown, graph_run)
        return self._drive(flow, run)

    async def aonce(
        self,
        key: ClaimKey,
        step: str,
        run: Callable[[], Awaitable[T]],
        *,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], T],
        graph_run: str | None = None,
    ) -> T:
        """:meth:`once` for an async ``run``."""
        flow = self._once(key, step, tool, idempotent, unknown, graph_run)
        return await self._adrive(flow, run)

    def stored(self, key: ClaimKey) -> Any:
        """The outcome stored with call ``key``'s claim; ``None`` if none is stored."""
        return self._loads(self.store.run(_Get(key)))

    async def astored(self, key: ClaimKey) -> Any:
        return self._loads(await self.store.arun(_Get(key)))

    def _loads(self, held: ClaimRow | None) -> Any:
        if held is None or held.result_type is None or held.result is None:
            return None
        return self.saver.serde.loads_typed((held.result_type, held.result))

    def review(self, key: ClaimKey, step: str) -> None:
        """Claim the answer to an approval; raises :class:`ThreadAlreadyResumed` if taken.

        Interrupted while claiming (its run cancelled, the process stopping), it gives
        the claim up again, so the run that follows can answer the approval."""
        self._drive(self._review(key, step))

    async def areview(self, key: ClaimKey, step: str) -> None:
        await self._adrive(self._review(key, step))

    # drivers: an operation's error goes back into the flow, which settles the claim

    def _drive(self, flow: _Flow, run: Callable[[], Any] | None = None) -> Any:
        driving = _Driving(flow)
        while (op := driving.next()) is not None:
            with driving.answering():
                driving.answer = self._perform(op, run)
        return driving.value

    async def _adrive(self, flow: _Flow, run: Callable[[], Awaitable[Any]] | None = None) -> Any:
        driving = _Driving(flow)
        while (op := driving.next()) is not None:
            with driving.answering():
                driving.answer = await self._aperform(op, run)
        return driving.value

    def _perform(self, op: _FlowOp, run: Callable[[], Any] | None) -> Any:
        if isinstance(op, _Run):
            assert run is not None
            return run()
        if isinstance(op, _Head):
            return self._head(op)
        return self.store.run(op)

    async def _aperform(self, op: _FlowOp, run: Callable[[], Awaitable[Any]] | None) -> Any:
        if isinstance(op, _Run):
            assert run is not None
            return await run()
        if isinstance(op, _Head):
            return await self._ahead(op)
        if isinstance(op, _Finish | _Release):
            # settling a claim is not cut short by a (further) cancel of the run
            return await asyncio.shield(self.store.arun(op))
        return await self.store.arun(op)

    @staticmethod
    def _head_config(key: ClaimKey) -> dict[str, Any]:
        return {"configurable": {"thread_id": key.thread_id, "checkpoint_ns": key.namespace}}

    def _head(self, op: _Head) -> str | None:
        found = self.saver.get_tuple(self._head_config(op.key))  # type: ignore[arg-type]
        return found.checkpoint["id"] if found else None

    async def _ahead(self, op: _Head) -> str | None:
        found = await self.saver.aget_tuple(self._head_config(op.key))  # type: ignore[arg-type]
        return found.checkpoint["id"] if found else None

    # the flows

    def _once(
        self,
        key: ClaimKey,
        step: str,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], Any],
        graph_run: str | None = None,
    ) -> _Flow:
        attempt = _Attempt(Owner.here(), graph_run)
        try:
            try:
                started = yield from self._start(key, tool, step, idempotent, attempt)
            except (ToolCallClaimed, GeneratorExit):
                raise
            except BaseException:
                # stopped while claiming: the call did not run in this attempt
                yield from self._settle(key, attempt.holder, abandon=attempt.replacing)
                raise
            if not started.run and started.unknown is None:
                return started.output  # it ran; its process stopped before the thread saved it
            status: Status = "done"
            try:
                if started.unknown is None:
                    output = yield _Run()
                else:
                    output, status = unknown(started.unknown), "unknown"
            except GraphBubbleUp:  # paused inside the call: it runs again on resume
                yield from self._settle(key, attempt.holder, abandon=False)
                raise
            except GeneratorExit:
                raise
            except BaseException:
                yield from self._settle(key, attempt.holder, abandon=True)
                raise
            yield from self._store(key, attempt, output, status, tool)
            return output
        finally:
            _forget(attempt.me)

    def held(self, row: ClaimRow) -> bool:
        """Whether the attempt that made claim ``row`` may still be going: running its
        call, or (a finished call) saving the result in its thread."""
        return _held(row, self.stale_after)

    def _start(
        self, key: ClaimKey, tool: str, step: str, idempotent: bool, attempt: _Attempt
    ) -> _Flow:
        mine = ClaimRow(key, tool, attempt.holder, step, "running", time.time())
        for _ in range(8):  # a claim that changes hands while we look: look again
            if (yield _Insert(mine)):
                return self._began(attempt, key, tool)
            held: ClaimRow | None = yield _Get(key)
            if held is None:
                continue
            owner = held.holder
            unsaved = _UNSAVED.get(held.owner) if owner.is_this_process() else None
            if unsaved is not None and held.status in ("running", "abandoned"):
                # this process had the outcome: store it now (the retry of its finish)
                status, output = unsaved
                rtype, data = self.saver.serde.dumps_typed(output)
                if (yield _Finish(key, held.owner, status, rtype, data, time.time())):
                    _UNSAVED.pop(held.owner, None)
                    return _Started(output=output)
                continue
            if held.status in ("running", "abandoned"):
                if held.status == "running" and self.held(held):
                    raise ToolCallInProgress(
                        f"thread {key.thread_id!r}: tool call {key.call_id} ({tool}) is running "
                        f"in another run of this thread ({owner.describe()}); this run stopped "
                        "without running it. Read the thread with get_state when that run is done.",
                        thread_id=key.thread_id,
                        call_id=key.call_id,
                        tool=tool,
                    )
                attempt.replacing = True  # from here on, the claim may be ours
                if (yield _Swap(mine, held.owner)):
                    return self._began(attempt, key, tool) if idempotent else _Started(unknown=held)
                attempt.replacing = False
                continue
            moved_on = (yield _Head(key)) != step
            if moved_on or self.held(held):
                raise ToolCallAlreadyRan(
                    f"thread {key.thread_id!r}: tool call {key.call_id} ({tool}) already ran in "
                    f"another run of this thread ({owner.describe()}) and is not run again; "
                    "this run stopped. Read the thread with get_state.",
                    thread_id=key.thread_id,
                    call_id=key.call_id,
                    tool=tool,
                )
            # its run ended (its process died, or its checkpoint write failed) after the
            # call, before the thread saved the result: the result stored with the claim
            return _Started(output=self.saver.serde.loads_typed((held.result_type, held.result)))
        raise RuntimeError(f"tool call claim {key} kept changing hands")

    def _began(self, attempt: _Attempt, key: ClaimKey, tool: str) -> _Started:
        _beat(self.store, attempt.me, key, tool=tool, run=attempt.run, lease=self.stale_after)
        return _Started(run=True)

    def _store(
        self, key: ClaimKey, attempt: _Attempt, output: Any, status: Status, tool: str
    ) -> _Flow:
        """Store the outcome with the claim; the last failure abandons it and is raised.
        A claim that is no longer this attempt's (taken over) raises
        :class:`ToolCallTakenOver` and marks the graph run lost."""
        holder = attempt.holder
        for tries in range(1, FINISH_ATTEMPTS + 1):
            try:
                rtype, data = self.saver.serde.dumps_typed(output)
                stored = yield _Finish(key, holder, status, rtype, data, time.time())
            except Exception as exc:
                if _STORING.again(tries, exc, key.call_id):
                    continue
                _UNSAVED[holder] = (status, output)  # its next run here stores it
                # another process that asks first answers "outcome unknown": say here
                # what the outcome was, so a person can still find it
                log.error(
                    "the outcome of tool call %s (%s, thread %r) could not be stored: %s. "
                    "This process stores it when its thread is resumed here; elsewhere the "
                    "call is answered 'outcome unknown'. Its outcome was: %.2000s",
                    key.call_id,
                    tool,
                    key.thread_id,
                    exc,
                    getattr(output, "content", output),
                )
                yield from self._settle(key, holder, abandon=True)
                raise
            except GeneratorExit:
                raise
            except BaseException:  # stopped while storing: the outcome may not be stored
                yield from self._settle(key, holder, abandon=True)
                raise
            if stored is False:  # matched no row of ours: another run took the call
                yield from self._taken(key, attempt, output, tool)
            return None
        return None

    def _taken(self, key: ClaimKey, attempt: _Attempt, output: Any, tool: str) -> _Flow:
        """This attempt's claim was taken over: say so and stop the graph run's writes.
        (The outcome it had is logged: the thread holds the other run's answer.)"""
        try:
            held: ClaimRow | None = yield _Get(key)
        except Exception:
            held = None
        error = _taken_over(key, tool, held, self.stale_after)
        _lose(attempt.run, error)
        shown = getattr(output, "content", output)
        log.error("%s Its outcome in this run was: %.300s", error, shown)
        raise error

    @staticmethod
    def _settle(key: ClaimKey, holder: str, *, abandon: bool) -> _Flow:
        """Mark the claim abandoned, or give it up; what goes wrong here is logged, not
        raised: it runs while a run stops, and must not hide why it stops."""
        op: _Op = (
            _Finish(key, holder, "abandoned", None, None, time.time())
            if abandon
            else _Release(key, holder)
        )
        try:
            yield op
        except Exception as exc:
            what = "mark tool call %s abandoned" if abandon else "give up the claim on %s"
            log.warning("could not " + what + ": %s", key.call_id, exc)
        return None

    def _review(self, key: ClaimKey, step: str) -> _Flow:
        me = Owner.here()
        try:
            yield from self._take_review(key, step, me)
        except (ToolCallClaimed, GeneratorExit):
            raise
        except BaseException:
            yield from self._settle(key, str(me), abandon=False)
            raise
        return None

    def _take_review(self, key: ClaimKey, step: str, me: Owner) -> _Flow:
        mine = ClaimRow(key, "approval", str(me), step, "done", time.time())
        for _ in range(8):
            if (yield _Insert(mine)):
                return None
            held: ClaimRow | None = yield _Get(key)
            if held is None:
                continue
            owner = held.holder
            alive = owner.process_alive()
            same_process = (owner.host, owner.pid, owner.start) == (me.host, me.pid, me.start)
            # a resume that died (or failed in this process) before the thread moved on
            taken_over = (
                (alive is False or same_process)
                and (yield _Head(key)) == step
                and (yield _Swap(mine, held.owner))
            )
            if taken_over:
                return None
            raise ThreadAlreadyResumed(
                f"thread {key.thread_id!r}: this approval was already answered by another run "
                f"of the thread ({owner.describe()}); this run stopped and ran nothing. Read "
                "the thread with get_state to see what that run did.",
                thread_id=key.thread_id,
                call_id=key.call_id,
                tool="approval",
            )
        raise RuntimeError(f"approval claim {key} kept changing hands")


@dataclass(frozen=True)
class TaskClaim:
    """The claim on one call in the graph task that runs it (see :func:`claim_in_task`).

    Attributes:
        claims: the claims of the task's thread.
        key: the call.
        step: the checkpoint the task's step runs from.
        run: the graph run's :data:`RUN_KEY` token, if it has one.
    """

    claims: CallClaims
    key: ClaimKey
    step: str
    run: str | None = None

    def once(
        self,
        run: Callable[[], T],
        *,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], T],
    ) -> T:
        """Run the call at most once (see :meth:`CallClaims.once`)."""
        return self.claims.once(
            self.key,
            self.step,
            run,
            tool=tool,
            idempotent=idempotent,
            unknown=unknown,
            graph_run=self.run,
        )

    async def aonce(
        self,
        run: Callable[[], Awaitable[T]],
        *,
        tool: str,
        idempotent: bool,
        unknown: Callable[[ClaimRow], T],
    ) -> T:
        return await self.claims.aonce(
            self.key,
            self.step,
            run,
            tool=tool,
            idempotent=idempotent,
            unknown=unknown,
            graph_run=self.run,
        )

    def review(self) -> None:
        """Claim the answer to an approval (see :meth:`CallClaims.review`)."""
        self.claims.review(self.key, self.step)

    async def areview(self) -> None:
        await self.claims.areview(self.key, self.step)


def claim_in_task(
    config: Any, call_id: str | None, *, stale_after: float | None = DEFAULT_LEASE
) -> TaskClaim | None:
    """The claim on ``call_id`` in the graph task ``config`` runs (``None`` outside a
    thread with a checkpointer)."""
    position = task_position(config)
    saver = ((config or {}).get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)
    if position is None or saver is None or not call_id:
        return None
    thread_id, namespace, step = position
    claims = claims_for(saver, stale_after=stale_after)
    run = ((config or {}).get("configurable") or {}).get(RUN_KEY)
    return TaskClaim(claims, ClaimKey(thread_id, namespace, call_id), step, run)


def claims_for(
    saver: BaseCheckpointSaver, *, stale_after: float | None = DEFAULT_LEASE
) -> CallClaims:
    """The tool call claims kept with ``saver``'s threads (one store per saver)."""
    return CallClaims(_store_of(saver), saver, stale_after=stale_after)
