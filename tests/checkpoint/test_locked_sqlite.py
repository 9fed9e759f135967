"""A SQLite file locked by another connection: the savers ride a short lock out, and a
write that fails for good stops the run before its next step (not at its end)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from contextlib import closing
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import CheckpointWriteError, sqlite_saver
from fncall_graph.testing import ReplayChatModel

SAVERS = "fncall_graph.adapters.checkpoint.savers"


class Locker:
    """A second connection that takes the file's exclusive lock when the model's reply
    is done (before the step's writes are saved) and gives it back when told."""

    def __init__(self, path: Any) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.locked = threading.Event()

    def lock(self) -> None:
        if not self.locked.is_set():
            self.db.execute("BEGIN EXCLUSIVE")
            self.locked.set()

    def release(self) -> None:
        self.db.execute("COMMIT")


class LockAfterReply(BaseCallbackHandler):
    def __init__(self, locker: Locker) -> None:
        self.locker = locker

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.locker.lock()


class Seen(logging.Handler):
    """Sets ``event`` when a record of the savers' logger contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.WARNING)
        self.text, self.event = text, threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


@pytest.fixture
def seen() -> Any:
    handlers: list[Seen] = []
    logger = logging.getLogger(SAVERS)

    def watch(text: str) -> Seen:
        handler = Seen(text)
        logger.addHandler(handler)
        handlers.append(handler)
        return handler

    yield watch
    for handler in handlers:
        logger.removeHandler(handler)


def graph_on(
    saver: Any, *, model_steps_again: bool = True, replies: list[Any] | None = None
) -> tuple[Any, list[str]]:
    """A turn of one tool call, on ``saver``; the list of the tool's runs.
    ``model_steps_again``: the model's step is not saved, so its call is made again;
    ``replies``: the model's replies after its call of the tool, if not ``["done"]``."""
    runs: list[str] = []

    @tool
    def send(text: str) -> str:
        """Send a message."""
        runs.append(text)
        return "sent"

    reply = AIMessage(content="", tool_calls=[{"name": "send", "args": {"text": "hi"}, "id": "c1"}])
    # twice: a step that was not saved runs again on resume, its model call too
    calls = [reply, reply] if model_steps_again else [reply]
    model = ReplayChatModel([*calls, *(replies or ["done"])])
    return create_fncall_graph(model, [send], dialect="native", checkpointer=saver), runs


def run_under_lock(
    graph: Any, db: Any, cfg: dict[str, Any], seen: Seen, locker: Locker | None = None
) -> dict[str, Any]:
    """Run a turn whose model reply takes the file's lock (unless ``locker`` is given:
    the test takes it); give the lock back once the savers' log says ``seen``'s text.
    The turn's value or error."""
    callbacks = [] if locker else [LockAfterReply(locker := Locker(db))]
    outcome: dict[str, Any] = {}

    def turn() -> None:
        try:
            # sync: each checkpoint is saved before the next step starts, so the lock
            # meets the step the test means (async lets a late save overlap the next step)
            outcome["value"] = graph.invoke(
                {"messages": [("user", "go")]},
                {**cfg, "callbacks": callbacks},
                durability="sync",
            )
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=turn, daemon=True)
    thread.start()
    assert seen.event.wait(60), f"the savers never logged {seen.text!r}"
    locker.release()
    thread.join(60)  # a bound against a hung suite, not a synchronisation
    assert not thread.is_alive()
    locker.db.close()
    return outcome


CFG = {"configurable": {"thread_id": "t"}}


def test_a_lock_of_a_few_seconds_is_ridden_out(tmp_path, seen):
    db = tmp_path / "c.db"
    with sqlite_saver(db, busy_timeout=0.3) as saver:
        # the step's save is retried, not the step: the model is called once for the call
        graph, runs = graph_on(saver, model_steps_again=False)
        # released after the first attempt failed: the retry gets through
        outcome = run_under_lock(graph, db, CFG, seen("database locked (attempt 1 of 3)"))
    assert "error" not in outcome, outcome.get("error")
    messages = outcome["value"]["messages"]
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == ["sent"]
    assert runs == ["hi"]


def test_a_write_that_fails_stops_the_run_before_the_next_step(tmp_path, seen):
    """The model step's writes fail (locked through every attempt); the lock is then
    released, so the step's checkpoint could be saved: the run stops there all the
    same, and the tool of the next step does not run. A resume finishes the turn."""
    db = tmp_path / "c.db"
    with sqlite_saver(db, busy_timeout=0.2) as saver:
        graph, runs = graph_on(saver)
        outcome = run_under_lock(graph, db, CFG, seen("checkpoint write failed"))
        assert isinstance(outcome.get("error"), CheckpointWriteError), outcome
        assert runs == []  # stopped before the tools step
        out = graph.invoke(None, CFG)
    assert runs == ["hi"]
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["sent"]
    assert out["messages"][-1].content == "done"
    with closing(sqlite3.connect(db)) as check:
        assert check.execute("SELECT count(*) FROM fncall_tool_calls").fetchone() == (1,)


def test_a_result_stored_before_its_step_s_write_failed_is_used_by_the_next_run(tmp_path, seen):
    """The tool ran and its result was stored with its claim; then the step's writes
    failed (the file locked through every attempt), so the run stopped. The process
    lives on: its next run takes the stored result (no ToolCallAlreadyRan until the
    process exits), and the tool does not run again."""
    db = tmp_path / "c.db"
    with sqlite_saver(db, busy_timeout=0.2) as saver:
        # a write waiting in LangGraph's queue can start after its step's checkpoint
        # was saved: the run then stops a step later, and that model call runs again
        graph, runs = graph_on(saver, model_steps_again=False, replies=["done", "done"])
        locker = Locker(db)
        put_writes = saver.put_writes

        def locked_once_the_tool_ran(*args: Any, **kwargs: Any) -> Any:
            if runs:  # the tool's step saves its result
                locker.lock()
            return put_writes(*args, **kwargs)

        saver.put_writes = locked_once_the_tool_ran  # type: ignore[method-assign]
        outcome = run_under_lock(graph, db, CFG, seen("checkpoint write failed"), locker)
        assert isinstance(outcome.get("error"), CheckpointWriteError), outcome
        assert runs == ["hi"]
        saver.put_writes = put_writes  # type: ignore[method-assign]
        out = graph.invoke(None, CFG)
    assert runs == ["hi"]
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["sent"]
    assert out["messages"][-1].content == "done"


def test_a_tool_step_s_failed_write_keeps_its_checkpoint_from_being_saved(tmp_path, seen):
    """The tool step's write fails (the file is locked): the history is a delta channel,
    rebuilt from the steps' writes, so LangGraph saves the step's checkpoint only once
    those writes are saved, and the run stops; the thread stays before the tool step,
    and the resume answers the call from its claim, without running it again."""
    db = tmp_path / "c.db"
    failed = seen("checkpoint write failed")
    with sqlite_saver(db, busy_timeout=0.2) as saver:
        graph, runs = graph_on(saver, model_steps_again=False)
        locker = Locker(db)
        put_writes = saver.put_writes

        def locked_write(*args: Any, **kwargs: Any) -> Any:
            if runs and not failed.event.is_set():  # the tool step's write
                locker.lock()
            return put_writes(*args, **kwargs)

        saver.put_writes = locked_write  # type: ignore[method-assign]
        outcome: dict[str, Any] = {}

        def turn() -> None:
            try:
                graph.invoke({"messages": [("user", "go")]}, CFG, durability="sync")
            except BaseException as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=turn, daemon=True)
        thread.start()
        assert failed.event.wait(60), "the tool step's write never failed"
        locker.release()
        thread.join(60)  # a bound against a hung suite, not a synchronisation
        assert not thread.is_alive()
        locker.db.close()
        assert isinstance(outcome.get("error"), CheckpointWriteError), outcome
        # saved: the input, the start and the model's step; not the tools' step
        assert [c.metadata["step"] for c in saver.list(CFG)] == [1, 0, -1]
        saver.put_writes = put_writes  # type: ignore[method-assign]
        out = graph.invoke(None, CFG)
    assert runs == ["hi"]
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["sent"]
    assert out["messages"][-1].content == "done"


def test_a_write_an_earlier_run_failed_does_not_stop_the_next_run(tmp_path, seen):
    """A run stopped on a failed write; another write of its step failed after the
    run's last check (it waited in LangGraph's queue). That failure is the earlier
    run's: the resume, which writes the step again, is not stopped by it."""
    db = tmp_path / "c.db"
    with sqlite_saver(db, busy_timeout=0.2) as saver:
        graph, runs = graph_on(saver)
        outcome = run_under_lock(graph, db, CFG, seen("checkpoint write failed"))
        assert isinstance(outcome.get("error"), CheckpointWriteError), outcome
        head = graph.get_state(CFG).config  # the step the failed writes belong to
        with pytest.raises(CheckpointWriteError), saver.guard.writing(head):
            raise sqlite3.OperationalError("database is locked")  # the late one
        out = graph.invoke(None, CFG)
    assert runs == ["hi"]
    assert out["messages"][-1].content == "done"
