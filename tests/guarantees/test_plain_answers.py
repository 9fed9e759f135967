"""LangChain's plain HITL answer, ``{"decisions": [...]}`` without an interrupt id, as
agent-chat-ui and Studio's resume box send it.

It is taken where it can be tied to the pending review: the review is the first of the
user's turn (no answer was taken since the user's last message, so it cannot be another
review's answer sent again) and the answer has one decision per pending call. Both sides
are measured: a plain client answers every review of a thread (10/10, one review a
turn), and an answer sent again runs nothing: after its review is done (nothing
pending), and while a later review of the same turn is pending. What the rule cannot
tell apart (an earlier turn's answer sent again while the next turn's first review is
pending, with as many decisions) is shown too; bound answers and answers keyed by the
interrupt id are tied always.
"""

from __future__ import annotations

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from fncall_graph import StaleApproval, create_fncall_graph
from fncall_graph.testing import ReplayChatModel

REVIEWS = 10
PLAIN = {"batched": {"decisions": [{"type": "approve"}]}, "per_call": {"type": "approve"}}


def _graph(outputs=None, interrupt_mode: str = "batched"):
    written: list[str] = []

    @tool
    def log(entry: str) -> str:
        """Append an entry to the log."""
        written.append(entry)
        return "logged"

    if outputs is None:
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


def one_call(entry: str) -> dict:
    return {"content": "", "tool_calls": [{"name": "log", "args": {"entry": entry}, "id": entry}]}


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_a_plain_client_answers_every_review_of_a_thread_and_a_resent_answer_runs_nothing(mode):
    graph, written = _graph(interrupt_mode=mode)
    cfg = {"configurable": {"thread_id": "t"}}
    taken = refused = 0
    for n in range(REVIEWS):
        graph.invoke({"messages": [("user", f"log e{n}")]}, cfg)
        done = graph.invoke(Command(resume=PLAIN[mode]), cfg)  # no interrupt id
        taken += done["messages"][-1].content == f"logged {n}"
        # the same answer again (a client's retry): it answers nothing and runs nothing
        with pytest.raises(StaleApproval):
            graph.invoke(Command(resume=PLAIN[mode]), cfg)
        refused += 1
    assert (taken, refused) == (REVIEWS, REVIEWS)
    assert written == [f"e{n}" for n in range(REVIEWS)]


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_a_plain_answer_sent_again_on_a_later_review_of_the_turn_runs_nothing(mode):
    """The first write approved, the model makes a second in the same turn: the first
    answer, sent again, is refused there (it could be that retry); the second review is
    still pending and taken by its id."""
    graph, written = _graph([one_call("a"), one_call("b"), "done"], interrupt_mode=mode)
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "log a, then b")]}, cfg)
    [second] = graph.invoke(Command(resume=PLAIN[mode]), cfg)["__interrupt__"]
    assert written == ["a"]
    with pytest.raises(StaleApproval, match="first review of a user's turn"):
        graph.invoke(Command(resume=PLAIN[mode]), cfg)
    assert written == ["a"]
    [pending] = graph.get_state(cfg).interrupts
    assert pending.id == second.id
    done = graph.invoke(Command(resume={second.id: PLAIN[mode]}), cfg)
    assert done["messages"][-1].content == "done"
    assert written == ["a", "b"]


def test_a_plain_answer_with_another_count_is_not_taken():
    two = {
        "content": "",
        "tool_calls": [{"name": "log", "args": {"entry": e}, "id": e} for e in ("a", "b")],
    }
    graph, written = _graph([two, "done"])
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "log a and b")]}, cfg)
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="1 decision"):
        graph.invoke(Command(resume=PLAIN["batched"]), cfg)
    assert written == []
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}] * 2}), cfg)
    assert sorted(written) == ["a", "b"]


def test_what_plain_answers_cannot_tell_apart():
    """An earlier turn's answer sent again after the user asked something new, while
    that turn's first review is pending with as many calls, is taken for it: nothing in
    it says otherwise. Bound answers (``bind_decisions``) are refused there."""
    from fncall_graph import bind_decisions

    graph, written = _graph()
    cfg = {"configurable": {"thread_id": "t"}}
    [first] = graph.invoke({"messages": [("user", "log e0")]}, cfg)["__interrupt__"]
    bound = bind_decisions(first.value, [{"type": "approve"}])
    graph.invoke(Command(resume=bound), cfg)
    graph.invoke({"messages": [("user", "log e1")]}, cfg)
    with pytest.raises(StaleApproval):
        graph.invoke(Command(resume=bound), cfg)
    assert written == ["e0"]
    graph.invoke(Command(resume=PLAIN["batched"]), cfg)
    assert written == ["e0", "e1"]


def test_plain_decisions_tied_by_the_checkpoint_the_client_read():
    graph, written = _graph([one_call("a"), one_call("b"), "done"])
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "log a, then b")]}, cfg)
    graph.invoke(Command(resume=PLAIN["batched"]), cfg)
    read = graph.get_state(cfg).config  # what a client read before answering
    graph.invoke(Command(resume=PLAIN["batched"]), read)  # the turn's second review
    assert written == ["a", "b"]


def test_an_answer_refused_earlier_is_not_taken_by_the_last_call_of_a_per_call_review():
    """A per-call review asks about all its calls at once, and an answer without an id is
    refused while several are asked (LangGraph's own rule). Once one is answered by id,
    a plain answer for the other is refused on the turn's second review (it could be the
    first review's answer sent again); LangGraph keeps it written at the checkpoint, and
    the run that answers that call by id takes its own answer, not that one."""
    two = {
        "content": "",
        "tool_calls": [{"name": "log", "args": {"entry": e}, "id": e} for e in ("b1", "b2")],
    }
    graph, written = _graph([one_call("a"), two, "done"], interrupt_mode="per_call")
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "log a, then b1 and b2")]}, cfg)
    first, second = graph.invoke(Command(resume=PLAIN["per_call"]), cfg)["__interrupt__"]
    assert [first.value["tool_call_id"], second.value["tool_call_id"]] == ["b1", "b2"]
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        graph.invoke(Command(resume=PLAIN["per_call"]), cfg)
    [left] = graph.invoke(Command(resume={first.id: {"type": "approve"}}), cfg)["__interrupt__"]
    assert left.id == second.id
    with pytest.raises(StaleApproval, match="first review of a user's turn"):
        graph.invoke(Command(resume=PLAIN["per_call"]), cfg)  # an approve, refused
    assert written == ["a"]
    done = graph.invoke(Command(resume={second.id: {"type": "reject"}}), cfg)
    assert done["messages"][-1].content == "done"
    assert written == ["a", "b1"]
