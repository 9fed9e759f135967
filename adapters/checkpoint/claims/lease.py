"""The lease on a claim: while a call runs, its process renews its claim (a heartbeat),
and a renewal that finds the claim gone to another run marks this graph run lost.

Whether a claim is still held is known exactly by the process holding it (it knows which
of its calls are running). Any other process goes by the lease: a claim not renewed for
its ``stale_after`` seconds (:data:`DEFAULT_LEASE`) has lost its holder — unless that
holder is on this machine and known to be gone, which is said at once.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from .errors import ToolCallTakenOver
from .owner import THREAD_RUN_ID, ClaimKey, ClaimRow, Owner, _lose
from .store import _Get, _Renew

__all__ = ["DEFAULT_LEASE"]

log = logging.getLogger(__name__)

DEFAULT_LEASE = 60.0
"""Seconds a claim counts as held after its holder last renewed it; the holder renews it
four times as often while its call runs."""


@dataclass
class _Heartbeat:
    """One running call's claim, renewed every ``every`` seconds (next at ``due``), made
    by graph run ``run``."""

    store: Any
    key: ClaimKey
    owner: str
    every: float
    due: float
    tool: str = ""
    run: str | None = None
    lease: float | None = None


# the claims this process is running a call for right now: token -> its heartbeat
_ACTIVE: dict[str, _Heartbeat] = {}
_ACTIVE_LOCK = threading.Lock()
_WAKE = threading.Event()  # a claim joined: look again when the next renewal is due
_HEART: list[threading.Thread] = []


def _beat(
    store: Any, me: Owner, key: ClaimKey, *, tool: str, run: str | None, lease: float | None
) -> None:
    """Renew ``me``'s claim on ``key`` every quarter lease (of :data:`DEFAULT_LEASE` if
    ``lease`` is ``None``) until :func:`_forget`; ``run`` is the graph run it serves."""
    every = (lease if lease is not None else DEFAULT_LEASE) / 4
    _hold(me, _Heartbeat(store, key, str(me), every, time.time() + every, tool, run, lease))


def _forget(me: Owner) -> None:
    """``me``'s call is over: stop renewing its claim."""
    with _ACTIVE_LOCK:
        _ACTIVE.pop(me.token, None)


def _held(row: ClaimRow, lease: float | None) -> bool:
    """Whether the attempt that made claim ``row`` may still be going: running its call,
    or (a finished call) saving the result in its thread."""
    owner = row.holder
    if owner.is_this_process():  # known exactly
        with _ACTIVE_LOCK:
            return owner.token in _ACTIVE
    if owner.process_alive() is False:
        return False
    return not row.lapsed(lease, time.time())


def _hold(me: Owner, beat: _Heartbeat) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE[me.token] = beat
        # one heartbeat thread per process (a forked child starts its own)
        if not any(t.is_alive() for t in _HEART):
            _HEART[:] = [threading.Thread(target=_heart, name="fncall-claims", daemon=True)]
            _HEART[0].start()
    _WAKE.set()


def _heart() -> None:
    while True:
        _WAKE.clear()
        with _ACTIVE_LOCK:
            beats = list(_ACTIVE.values())
        now = time.time()
        for beat in beats:
            if beat.due > now:
                continue
            with _ACTIVE_LOCK:  # its call may have ended since (and its saver closed)
                if all(b is not beat for b in _ACTIVE.values()):
                    continue
            beat.due = now + beat.every
            try:
                # an async saver's store renews on a connection of its own, never
                # through the event loop, which the running tool may be blocking
                if beat.store.run(_Renew(beat.key, beat.owner, time.time())) is False:
                    _check_taken_over(beat)
            except Exception as exc:  # the next beat tries again; a lapse is the worst
                log.warning("could not renew the claim on tool call %s: %s", beat.key.call_id, exc)
        _WAKE.wait(min((b.due for b in beats), default=now + 3600) - time.time())


def _check_taken_over(beat: _Heartbeat) -> None:
    """A renewal matched no running claim of ours: if another run holds the claim now
    (or it is gone), this run lost it: its writes are refused from here on."""
    held = beat.store.run(_Get(beat.key))
    if held is not None and held.owner == beat.owner:
        return  # ours still: the call finished between the look and the renewal
    with _ACTIVE_LOCK:  # looked at after the claim: a call forgets it before letting go
        if all(b is not beat for b in _ACTIVE.values()):
            return  # it ended meanwhile and let its claim go (a thread's run hold)
    error = _taken_over(beat.key, beat.tool, held, beat.lease)
    log.error("%s", error)
    _lose(beat.run, error)
    _forget(Owner.parse(beat.owner))


def _taken_over(
    key: ClaimKey, tool: str, held: ClaimRow | None, lease: float | None
) -> ToolCallTakenOver:
    if held is None:
        by = "its claim was deleted (the thread was deleted)"
    else:
        by = f"{held.holder.describe()} took the call over (it is now {held.status!r} there)"
    lapse = f"for over {lease:g} s" if lease is not None else "too long"
    what = (
        "this run's hold on the thread was taken over while the run went on"
        if key.call_id == THREAD_RUN_ID
        else f"tool call {key.call_id} ({tool}) was taken over while this run ran it"
    )
    return ToolCallTakenOver(
        f"thread {key.thread_id!r}: {what}: the run had not renewed its claim {lapse} (its process was "
        f"frozen, or the tool blocked the event loop), and {by}. This run stopped and "
        "writes nothing more to the thread; read the thread with get_state. The call may "
        "have taken effect here: the thread's answer to it says its outcome is unknown.",
        thread_id=key.thread_id,
        call_id=key.call_id,
        tool=tool,
    )
