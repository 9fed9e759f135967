"""The daemon threads sync tool calls run in: results, errors, context, the time limit."""

from __future__ import annotations

import concurrent.futures
import contextvars
import threading

import pytest

from fncall_graph.guarantees import in_daemon_thread, run_in_daemon_thread
from fncall_graph.guarantees.daemon_workers import wait_for_running_calls

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_a_call_returns_its_result_from_another_daemon_thread_with_the_caller_s_context():
    WHO.set("the caller")
    seen = run_in_daemon_thread(lambda: (WHO.get(), threading.current_thread()), timeout=30)
    assert seen[0] == "the caller"
    assert seen[1] is not threading.current_thread() and seen[1].daemon


def test_a_call_s_exception_is_raised_to_the_caller_as_it_was():
    class Broken(Exception):
        pass

    def fail() -> None:
        raise Broken("the tool broke")

    with pytest.raises(Broken, match="the tool broke"):
        run_in_daemon_thread(fail, timeout=30)
    with pytest.raises(Broken):
        in_daemon_thread(fail).result(timeout=30)


def test_past_its_time_a_call_is_left_running_and_its_end_can_be_awaited():
    release, ended = threading.Event(), threading.Event()

    def slow() -> str:
        release.wait(30)
        ended.set()
        return "late"

    with pytest.raises(concurrent.futures.TimeoutError):
        run_in_daemon_thread(slow, timeout=0.05)
    assert not ended.is_set()  # still running, in its own thread
    release.set()
    assert wait_for_running_calls(timeout=30)
    assert ended.is_set()
    # the worker is free again for the next call
    assert run_in_daemon_thread(lambda: "next", timeout=30) == "next"
