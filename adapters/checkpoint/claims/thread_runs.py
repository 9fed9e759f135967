"""One run at a time per thread, across processes.

Two runs of one thread at once fork it: each saves its own branch and the last writer's
becomes the thread's head, so the other run's turn is lost without a word (LangGraph
itself does not stop it). A run therefore *holds the thread* while it goes on: a row in
the claims table (:mod:`.claims`) made when it starts, renewed by the claims' heartbeat
and deleted when it ends. A second run finds it held and, as LangGraph Server's
multitask strategies say:

- ``"enqueue"`` (the default, as on LangGraph Server): waits until the first run ends,
  then starts from the thread as that run left it;
- ``"reject"``: stops at once with :class:`ThreadBusy`, running nothing.

A hold whose process is gone, or that was not renewed for the lease, is taken over; the
run that lost it (frozen past the lease) writes nothing more: the savers refuse it, as
for a lost tool call claim (:class:`~.claims.ToolCallTakenOver`); one that ends before
its heartbeat learned of it finds out as it lets go, and raises that error rather than
returning as if its turn were kept. A hold counts from the moment it is taken, however
long its run waited for it: stamped with the time the run began waiting, a hold taken
after a wait longer than the lease looked lapsed to the next waiting run until its
first renewal, and two runs went on at once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver

from .errors import ToolCallClaimed, ToolCallTakenOver
from .flows import CallClaims, claims_for
from .lease import DEFAULT_LEASE, _beat, _forget
from .owner import THREAD_RUN_ID, ClaimKey, ClaimRow, Owner, _this_process
from .store import _arun, _Get, _Insert, _Release, _Swap

__all__ = ["ThreadBusy"]

log = logging.getLogger(__name__)

Multitask = Literal["enqueue", "reject"]

#: ``configurable`` keys a run's hold reads (a graph's defaults, or one run's choice).
MULTITASK_KEY, LEASE_KEY = "fncall_multitask", "fncall_lease"

_FIRST_WAIT, _LONGEST_WAIT = 0.02, 1.0  # a waiting run looks again, backing off

# the run tokens of this process's runs taking or holding a thread: a hold row of this
# process is known exactly, from the moment its insert may have landed
_HOLDING: set[str] = set()
_HOLDING_LOCK = threading.Lock()


class ThreadBusy(ToolCallClaimed):
    """Another run of this thread is in progress; this run did not start and ran
    nothing. Send it again once that run is done (or wait for it:
    ``multitask="enqueue"``)."""


def _busy(key: ClaimKey, held: ClaimRow, waited: float | None) -> ThreadBusy:
    how = f"waited {waited:g} s for it; " if waited is not None else ""
    return ThreadBusy(
        f"thread {key.thread_id!r} has a run in progress ({held.holder.describe()}); "
        f"{how}this run did not start and ran nothing. Send it again when that run is "
        "done, or let it wait: multitask='enqueue'.",
        thread_id=key.thread_id,
        call_id=THREAD_RUN_ID,
        tool="run",
    )


class _Hold:
    """Taking a thread's run hold: the same steps for the sync and async drivers."""

    def __init__(
        self,
        saver: BaseCheckpointSaver,
        config: dict[str, Any],
        token: str,
        multitask: Multitask,
        lease: float | None,
        wait: float | None,
    ) -> None:
        if multitask not in ("enqueue", "reject"):
            raise ValueError(f"multitask must be 'enqueue' or 'reject', got {multitask!r}")
        conf = config.get("configurable") or {}
        self.key = ClaimKey(
            str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), THREAD_RUN_ID
        )
        self.claims: CallClaims = claims_for(saver, stale_after=lease)
        self.me = Owner(*_this_process(), token)
        self.token, self.multitask, self.lease, self.wait = token, multitask, lease, wait
        self.started = time.monotonic()
        self.pause = _FIRST_WAIT
        self.waiting = False
        with _HOLDING_LOCK:
            _HOLDING.add(self.me.token)

    def row(self) -> ClaimRow:
        """The hold's row as of now: it counts from when it is taken, not from when this
        run began waiting for it."""
        return ClaimRow(self.key, "run", str(self.me), "", "running", time.time())

    def decide(self, inserted: bool, held: ClaimRow | None) -> str:
        """``"held"`` (ours), ``"take"`` (swap a lost hold), ``"look"`` (again now) or
        ``"wait"``; raises :class:`ThreadBusy` when this run may not wait."""
        if inserted:
            return "held"
        if held is None:
            return "look"
        if held.owner == str(self.me):  # our own (an earlier attempt of this very run)
            return "held"
        if not self._held(held):
            return "take"
        waited = time.monotonic() - self.started
        if self.multitask == "reject":
            raise _busy(self.key, held, None)
        if self.wait is not None and waited >= self.wait:
            raise _busy(self.key, held, round(waited, 1))
        if not self.waiting:
            self.waiting = True
            log.debug(
                "thread %r has a run in progress (%s): this run waits for it",
                self.key.thread_id,
                held.holder.describe(),
            )
        return "wait"

    def _held(self, held: ClaimRow) -> bool:
        # a run of this process between its insert and its first heartbeat is not yet
        # among the claims' running ones: it holds the thread all the same
        if held.holder.is_this_process():
            with _HOLDING_LOCK:
                if held.holder.token in _HOLDING:
                    return True
        return self.claims.held(held)

    def next_pause(self) -> float:
        pause, self.pause = self.pause, min(self.pause * 2, _LONGEST_WAIT)
        return pause

    def beat(self) -> None:
        _beat(self.claims.store, self.me, self.key, tool="run", run=self.token, lease=self.lease)

    def lost(self, held: ClaimRow | None) -> ToolCallTakenOver:
        """The run ended normally, but its hold was no longer its own when it let go:
        another run took the thread over meanwhile (the heartbeat had not yet said so,
        which would have stopped this run's writes)."""
        by = (
            "its hold was deleted (the thread was deleted)"
            if held is None
            else f"{held.holder.describe()} took it over"
        )
        lapse = f"for over {self.lease:g} s" if self.lease is not None else "too long"
        return ToolCallTakenOver(
            f"thread {self.key.thread_id!r}: this run's hold on the thread was taken over "
            f"while the run went on: it had not been renewed {lapse} (the process was "
            f"frozen, or too busy to renew it), and {by}. The run finished, but another "
            "run may have started from the same checkpoint, and this run's turn may be "
            "missing from the thread: read it with get_state, and send the turn again "
            "if it is not there.",
            thread_id=self.key.thread_id,
            call_id=THREAD_RUN_ID,
            tool="run",
        )

    def done(self) -> None:
        """The run has let the thread go (or never took it)."""
        with _HOLDING_LOCK:
            _HOLDING.discard(self.me.token)


@contextmanager
def thread_run(
    saver: BaseCheckpointSaver,
    config: dict[str, Any],
    token: str,
    *,
    multitask: Multitask = "enqueue",
    lease: float | None = DEFAULT_LEASE,
    wait: float | None = None,
) -> Iterator[None]:
    """Hold ``config``'s thread for the run ``token`` while the block runs.

    Args:
        saver: the thread's checkpointer (the hold lives beside its claims).
        config: the run's config (``thread_id``, ``checkpoint_ns``).
        token: the run's token (:data:`~.claims.RUN_KEY`).
        multitask: what a run does when the thread has another run in progress:
            ``"enqueue"`` waits for it, ``"reject"`` raises :class:`ThreadBusy`.
        lease: seconds a hold counts after its run last renewed it.
        wait: longest wait of ``"enqueue"`` (seconds; ``None``: as long as the other
            run goes on), then :class:`ThreadBusy`.
    """
    hold = _Hold(saver, config, token, multitask, lease, wait)
    store = hold.claims.store
    pausing = threading.Event()
    ended = False
    try:
        while True:
            inserted = store.run(_Insert(hold.row()))
            held = None if inserted else store.run(_Get(hold.key))
            step = hold.decide(inserted, held)
            if step == "held" or (step == "take" and store.run(_Swap(hold.row(), held.owner))):
                break
            if step == "wait":
                pausing.wait(hold.next_pause())  # another process's run: nothing to wait on
        hold.beat()
        yield
        ended = True
    finally:
        _forget(hold.me)  # no more renewals
        released = None
        try:
            released = store.run(_Release(hold.key, str(hold.me)))
        except Exception as exc:  # it lapses with the lease; the run's own error matters
            log.warning("could not release thread %r: %s", hold.key.thread_id, exc)
        finally:
            hold.done()  # only now: until its release, the row is this run's
    if ended and released is False:
        raise hold.lost(store.run(_Get(hold.key)))


@asynccontextmanager
async def athread_run(
    saver: BaseCheckpointSaver,
    config: dict[str, Any],
    token: str,
    *,
    multitask: Multitask = "enqueue",
    lease: float | None = DEFAULT_LEASE,
    wait: float | None = None,
) -> AsyncIterator[None]:
    """:func:`thread_run` for ``ainvoke``/``astream``: waits without blocking the loop."""
    hold = _Hold(saver, config, token, multitask, lease, wait)
    store = hold.claims.store
    ended = False
    try:
        while True:
            inserted = await _arun(store, _Insert(hold.row()))
            held = None if inserted else await _arun(store, _Get(hold.key))
            step = hold.decide(inserted, held)
            if step == "held" or (
                step == "take" and await _arun(store, _Swap(hold.row(), held.owner))
            ):
                break
            if step == "wait":
                await asyncio.sleep(hold.next_pause())
        hold.beat()
        yield
        ended = True
    finally:
        _forget(hold.me)
        released = None
        try:
            released = await asyncio.shield(_arun(store, _Release(hold.key, str(hold.me))))
        except Exception as exc:
            log.warning("could not release thread %r: %s", hold.key.thread_id, exc)
        finally:
            hold.done()
    if ended and released is False:
        raise hold.lost(await _arun(store, _Get(hold.key)))
