"""Two processes approving the same paused threads at the same instant.

Used by tests/e2e/test_concurrent_resume.py. A thread asks to log one action with a gated
``log_action`` tool whose side effect is a row in a SQLite file of its own (not the
checkpoints), so the test can count how often the tool really ran. Each worker is an OS
process (multiprocessing, spawn); a shared barrier releases both workers into every
trial at once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command

from fncall_graph import bind_decisions, create_fncall_graph
from fncall_graph.adapters.checkpoint import postgres_saver, sqlite_saver

DECISION = {"decisions": [{"type": "approve"}]}


class LogOnceModel(BaseChatModel):
    """Asks for ``log_action`` after the user's message, then answers."""

    @property
    def _llm_type(self) -> str:
        return "log-once"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> LogOnceModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if isinstance(messages[-1], HumanMessage):
            call = {"name": "log_action", "args": {"action": messages[-1].content}, "id": ""}
            call["id"] = f"call_{abs(hash(messages[-1].content)) % 10**12}"
            reply = AIMessage(content="", tool_calls=[call])
        else:
            reply = AIMessage(content=f"logged: {messages[-1].content}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def effects_table(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS effects (call_id TEXT, action TEXT)")


def effect_counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT action, COUNT(*) FROM effects GROUP BY action").fetchall()
    return dict(rows)


def log_tool(effects: Path) -> Any:
    @tool
    def log_action(action: str, call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Record an action in the log."""
        with sqlite3.connect(effects, timeout=30) as db:
            db.execute("INSERT INTO effects VALUES (?, ?)", (call_id, action))
        return f"logged {action}"

    return log_action


@contextmanager
def saver_for(checkpoints: str) -> Iterator[Any]:
    if checkpoints.startswith("postgresql://"):
        with postgres_saver(checkpoints) as saver:
            yield saver
    else:
        with sqlite_saver(checkpoints) as saver:
            yield saver


def graph_on(saver: Any, effects: Path) -> Any:
    return create_fncall_graph(
        LogOnceModel(),
        [log_tool(effects)],
        dialect="native",
        checkpointer=saver,
        interrupt_on={"log_action": True},
    )


def pause(checkpoints: str, effects: Path, threads: Sequence[str]) -> None:
    """Start each thread; it stops at the approval of its one write."""
    effects_table(effects)
    with saver_for(checkpoints) as saver:
        graph = graph_on(saver, effects)
        for thread in threads:
            out = graph.invoke(
                {"messages": [("user", f"action {thread}")]},
                {"configurable": {"thread_id": thread}},
            )
            assert out["__interrupt__"], f"{thread} did not pause"


def approve_all(
    checkpoints: str, effects: str, threads: Sequence[str], barrier: Any, decision: str = ""
) -> list:
    """Answer every thread, each at the same instant as the other worker: with the
    unbound approve, or with ``decision`` bound to the interrupt the worker read."""
    outcomes: list[str] = []
    with saver_for(checkpoints) as saver:
        graph = graph_on(saver, Path(effects))
        for thread in threads:
            config = {"configurable": {"thread_id": thread}}
            answer: Any = DECISION
            if decision:
                [seen] = graph.get_state(config).interrupts
                answer = bind_decisions(seen.value, [{"type": decision}])
            barrier.wait()
            try:
                graph.invoke(Command(resume=answer), config)
                outcomes.append("resumed")
            except Exception as exc:  # the typed outcome of the run that lost
                outcomes.append(type(exc).__name__)
    return outcomes


def worker(
    checkpoints: str,
    effects: str,
    threads: Sequence[str],
    barrier: Any,
    out: Any,
    decision: str = "",
) -> None:
    try:
        out.put(approve_all(checkpoints, effects, threads, barrier, decision))
    except BaseException as exc:  # reported, so the test shows it
        out.put(f"worker failed: {type(exc).__name__}: {exc}")
        barrier.abort()
        raise
