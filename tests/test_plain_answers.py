"""LangChain's plain HITL answer, ``{"decisions": [...]}``, on every review of a thread
when it is tied to the pending review by the ecosystem's own means: LangGraph's
interrupt id (``Command(resume={interrupt.id: ...})``) or the checkpoint the client read.
Stale answers stay refused: an answer to an interrupt that is no longer pending runs
nothing, and decisions alone, tied to nothing, are taken only for a first review."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from fncall_graph import StaleApproval, create_fncall_graph
from fncall_graph.testing import ReplayChatModel

REVIEWS = 10


def _graph(interrupt_mode: str = "batched"):
    written: list[str] = []

    @tool
    def log(entry: str) -> str:
        """Append an entry to the log."""
        written.append(entry)
        return "logged"

    outputs = []
    for n in range(REVIEWS):
        call = {"name": "log", "args": {"entry": f"e{n}"}, "id": f"c{n}"}
        outputs += [{"content": "", "tool_calls": [call]}, f"logged {n}"]
    graph = create_fncall_graph(
        ReplayChatModel(outputs),
        [log],
        dialect="native",
        checkpointer=InMemorySaver(),
        interrupt_on={"log": True},
        interrupt_mode=interrupt_mode,
    )
    return graph, written


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_a_plain_decisions_client_answers_every_review_of_a_thread(mode):
    graph, written = _graph(mode)
    cfg = {"configurable": {"thread_id": "t"}}
    plain = {"decisions": [{"type": "approve"}]} if mode == "batched" else {"type": "approve"}
    for n in range(REVIEWS):
        [pending] = graph.invoke({"messages": [("user", f"log e{n}")]}, cfg)["__interrupt__"]
        done = graph.invoke(Command(resume={pending.id: plain}), cfg)
        assert done["messages"][-1].content == f"logged {n}"
        # the same answer again (a client's retry) answers nothing: refused, runs nothing
        with pytest.raises(StaleApproval):
            graph.invoke(Command(resume={pending.id: plain}), cfg)
    assert written == [f"e{n}" for n in range(REVIEWS)]


def test_plain_decisions_tied_by_the_checkpoint_the_client_read():
    graph, written = _graph()
    cfg = {"configurable": {"thread_id": "t"}}
    for n in range(3):
        graph.invoke({"messages": [("user", f"log e{n}")]}, cfg)
        read = graph.get_state(cfg).config  # what a client read before answering
        graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), read)
    assert written == ["e0", "e1", "e2"]


def test_plain_decisions_tied_to_nothing_are_refused_after_the_first_review():
    graph, written = _graph()
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "log e0")]}, cfg)
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    graph.invoke({"messages": [("user", "log e1")]}, cfg)
    with pytest.raises(StaleApproval, match=r"Command\(resume=\{interrupt.id"):
        graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    assert written == ["e0"]


def test_plain_decisions_naming_an_older_checkpoint_are_not_tied():
    graph, written = _graph()
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "log e0")]}, cfg)
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    graph.invoke({"messages": [("user", "log e1")]}, cfg)
    read = graph.get_state(cfg).config
    graph.invoke({"messages": [("user", "hello")]}, cfg)  # the thread moved on
    with pytest.raises(StaleApproval):
        graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), read)
    assert written == ["e0"]


def test_an_answer_refused_earlier_is_not_taken_by_the_next_call_of_a_per_call_review():
    """LangGraph keeps an answer without an id written at the checkpoint even when the
    review refused it, and hands it to whichever interrupt asks next: after the first
    call of a per-call review is answered by id, the second call pauses for its own
    decision instead of taking the refused answer (which would run it unreviewed)."""
    written: list[str] = []

    @tool
    def log(entry: str) -> str:
        """Append an entry to the log."""
        written.append(entry)
        return "logged"

    two = [{"name": "log", "args": {"entry": e}, "id": e} for e in ("b1", "b2")]
    first_turn = {"content": "", "tool_calls": [{"name": "log", "args": {"entry": "a"}, "id": "a"}]}
    graph = create_fncall_graph(
        ReplayChatModel([first_turn, "done a", {"content": "", "tool_calls": two}, "done b"]),
        [log],
        dialect="native",
        checkpointer=InMemorySaver(),
        interrupt_on={"log": True},
        interrupt_mode="per_call",
    )
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "log a")]}, cfg)
    graph.invoke(Command(resume={"type": "approve"}), cfg)
    [first] = graph.invoke({"messages": [("user", "log b")]}, cfg)["__interrupt__"]
    with pytest.raises(StaleApproval):  # tied to nothing on a later review: refused
        graph.invoke(Command(resume={"type": "approve"}), cfg)
    [second] = graph.invoke(Command(resume={first.id: {"type": "approve"}}), cfg)["__interrupt__"]
    assert second.value["tool_call_id"] == "b2"
    assert written == ["a"]
    done = graph.invoke(Command(resume={second.id: {"type": "reject"}}), cfg)
    assert done["messages"][-1].content == "done b"
    assert written == ["a", "b1"]
