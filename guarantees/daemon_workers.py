"""Sync tool calls in daemon threads kept for reuse: a call abandoned after its timeout
runs on without holding up the interpreter's exit."""

from __future__ import annotations

import concurrent.futures
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = []


class _DaemonWorkers:
    """Daemon threads kept for reuse: a thread per call costs more than a short tool.

    A daemon thread (unlike a thread pool's worker) does not keep the interpreter from
    exiting while a call abandoned after its timeout still runs; an idle worker takes the
    next call, and a new one starts only when none is idle.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._busy = 0
        self._changed = threading.Condition()

    def submit(self, job: Callable[[], None]) -> None:
        with self._changed:
            self._busy += 1
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._work, name="fncall-tool-call", daemon=True).start()

    def wait_idle(self, timeout: float | None) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._busy == 0, timeout)

    def _work(self) -> None:
        while True:
            self._jobs.get()()
            with self._changed:
                self._busy -= 1
                self._idle += 1
                self._changed.notify_all()


_WORKERS = _DaemonWorkers()


def wait_for_running_calls(timeout: float | None = None) -> bool:
    """Wait until the sync tool calls still running (those past ``tool_timeout`` too)
    have ended and settled their claims; ``False`` if ``timeout`` seconds passed first.
    For a clean shutdown, or a test."""
    return _WORKERS.wait_idle(timeout)


def in_daemon_thread(fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
    """Run ``fn(*args)`` in a daemon thread, with the caller's context variables.

    A sync call cannot be cancelled. After a timeout it is abandoned and its result
    dropped, while its thread runs on.
    """
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def settle(ok: bool, value: Any) -> None:
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    _submit(fn, args, settle, start=future.set_running_or_notify_cancel)
    return future


def run_in_daemon_thread(fn: Callable[..., Any], *args: Any, timeout: float | None) -> Any:
    """``fn(*args)`` in a daemon thread, with the caller's context variables: its result,
    or its exception raised here; past ``timeout`` seconds ``concurrent.futures.TimeoutError``
    while the call runs on, its result dropped.

    :func:`in_daemon_thread` for a caller that waits: a lock handed over costs less than a
    future's condition, on every sync tool call.
    """
    done = threading.Lock()
    done.acquire()
    outcome: list[tuple[bool, Any]] = []

    def settle(ok: bool, value: Any) -> None:
        outcome.append((ok, value))
        done.release()

    _submit(fn, args, settle)
    if not done.acquire(timeout=-1 if timeout is None else timeout):
        raise concurrent.futures.TimeoutError
    ok, value = outcome[0]
    if ok:
        return value
    raise value


def _submit(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    settle: Callable[[bool, Any], None],
    *,
    start: Callable[[], bool] | None = None,
) -> None:
    """``fn(*args)`` to a daemon worker, in the caller's context; ``settle(True, result)``
    or ``settle(False, exception)`` when it ends. ``start``: asked first; ``False``
    (a cancelled future) skips the call."""
    ctx = contextvars.copy_context()

    def run() -> None:
        if start is not None and not start():
            return
        try:
            value = ctx.run(fn, *args)
        except BaseException as exc:  # handed to the waiting caller
            settle(False, exc)
        else:
            settle(True, value)

    _WORKERS.submit(run)
