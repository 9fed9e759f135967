"""Two processes answering the same paused ``create_agent`` threads at the same instant.

Used by tests/e2e/test_middleware_race.py, as tests/race_child.py is for the product's
graph: a thread asks to log one action with a gated ``log_action`` tool whose side effect
is a row in a SQLite file of its own, and each worker (a spawned OS process) answers
every thread when a shared barrier releases both.

``kind`` names the agent's middleware: ``"hitl"`` LangChain's own
``HumanInTheLoopMiddleware`` with :class:`~fncall_graph.AtMostOnceMiddleware`;
``"bound"`` :class:`~fncall_graph.BoundApprovalMiddleware` with it; ``"hitl-alone"``
LangChain's middleware alone (what a ``create_agent`` user has without the product).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langgraph.types import Command
from race_child import DECISION, LogOnceModel, effects_table, log_tool, saver_for

from fncall_graph import AtMostOnceMiddleware, BoundApprovalMiddleware


def agent_on(saver: Any, effects: Path, kind: str) -> Any:
    gate = {"log_action": True}
    middleware: list[Any] = {
        "hitl": [AtMostOnceMiddleware(), HumanInTheLoopMiddleware(interrupt_on=gate)],
        "bound": [AtMostOnceMiddleware(), BoundApprovalMiddleware(interrupt_on=gate)],
        "hitl-alone": [HumanInTheLoopMiddleware(interrupt_on=gate)],
    }[kind]
    return create_agent(
        LogOnceModel(), [log_tool(effects)], middleware=middleware, checkpointer=saver
    )


def pause(checkpoints: str, effects: Path, threads: Sequence[str], kind: str) -> None:
    """Start each thread; it stops at the approval of its one write."""
    effects_table(effects)
    with saver_for(checkpoints) as saver:
        agent = agent_on(saver, effects, kind)
        for thread in threads:
            out = agent.invoke(
                {"messages": [("user", f"action {thread}")]},
                {"configurable": {"thread_id": thread}},
            )
            assert out["__interrupt__"], f"{thread} did not pause"


def approve_all(
    checkpoints: str, effects: str, threads: Sequence[str], barrier: Any, kind: str
) -> list[str]:
    """Approve every thread with LangChain's plain answer, at the same instant as the
    other worker; each outcome is ``"resumed"`` or the name of the error raised."""
    outcomes: list[str] = []
    with saver_for(checkpoints) as saver:
        agent = agent_on(saver, Path(effects), kind)
        for thread in threads:
            config = {"configurable": {"thread_id": thread}}
            barrier.wait()
            try:
                agent.invoke(Command(resume=DECISION), config)
                outcomes.append("resumed")
            except Exception as exc:  # the typed outcome of the run that lost
                outcomes.append(type(exc).__name__)
    return outcomes


def worker(
    checkpoints: str, effects: str, threads: Sequence[str], barrier: Any, out: Any, kind: str
) -> None:
    try:
        out.put(approve_all(checkpoints, effects, threads, barrier, kind))
    except BaseException as exc:  # reported, so the test shows it
        out.put(f"worker failed: {type(exc).__name__}: {exc}")
        barrier.abort()
        raise
