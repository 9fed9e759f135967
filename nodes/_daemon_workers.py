"""Sync tool calls in daemon threads kept for reuse: a call abandoned after its timeout
runs on without holding up the interpreter's exit."""

from __future__ import annotations

import concurrent.futures
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["wait_for_running_calls"]


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
    ctx = contextvars.copy_context()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = ctx.run(fn, *args)
        except BaseException as exc:  # handed to the waiting caller
            future.set_exception(exc)
        else:
            future.set_result(result)

    _WORKERS.submit(run)
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
    ctx = contextvars.copy_context()

    def run() -> None:
        try:
            outcome.append((True, ctx.run(fn, *args)))
        except BaseException as exc:  # handed to the waiting caller
            outcome.append((False, exc))
        finally:
            done.release()

    _WORKERS.submit(run)
    if not done.acquire(timeout=-1 if timeout is None else timeout):
        raise concurrent.futures.TimeoutError
    ok, value = outcome[0]
    if ok:
        return value
    raise value
