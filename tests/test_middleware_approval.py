"""``BoundApprovalMiddleware`` on LangChain's own ``create_agent`` (SQLite checkpoints):
LangChain's ``{"decisions": [...]}`` answers every review when it is tied to it, and an
answer that is stale (another review's, sent again after the thread moved on, tied to
nothing on a later review) runs nothing."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command
from pydantic import ValidationError

from fncall_graph import BoundApprovalMiddleware, StaleApproval, bind_decisions
from fncall_graph.testing import ReplayChatModel

REVIEWS = 10
APPROVE = {"decisions": [{"type": "approve"}]}


def log_tool(written: list[str]):
    @tool
    def log(entry: str) -> str:
        """Append an entry to the log."""
        written.append(entry)
        return "logged"

    return log


def one_call_per_turn(turns: int) -> ReplayChatModel:
    outputs: list = []
    for n in range(turns):
        call = {"name": "log", "args": {"entry": f"e{n}"}, "id": f"c{n}"}
        outputs += [{"content": "", "tool_calls": [call]}, f"logged {n}"]
    return ReplayChatModel(outputs)


def agent_on(saver, written, model, **options):
    middleware = BoundApprovalMiddleware(interrupt_on={"log": True}, **options)
    return create_agent(model, [log_tool(written)], middleware=[middleware], checkpointer=saver)


@pytest.fixture
def saver(tmp_path):
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        yield saver


CFG = {"configurable": {"thread_id": "t"}}


def test_a_stale_answer_runs_nothing(saver):
    written: list[str] = []
    agent = agent_on(saver, written, one_call_per_turn(2))
    [first] = agent.invoke({"messages": [("user", "log e0")]}, CFG)["__interrupt__"]
    assert first.value["action_requests"][0]["tool_call_id"] == "c0"
    bound = bind_decisions(first.value, [{"type": "approve"}])
    agent.invoke(Command(resume=bound), CFG)
    assert written == ["e0"]
    [second] = agent.invoke({"messages": [("user", "log e1")]}, CFG)["__interrupt__"]

    # keyed by the first review's interrupt id: that review is gone, nothing takes it
    agent.invoke(Command(resume={first.id: APPROVE}), CFG)
    assert written == ["e0"]
    # the first review's answer again (a retried request): refused, the new review kept
    with pytest.raises(StaleApproval, match="review pending now"):
        agent.invoke(Command(resume=bound), CFG)
    # decisions tied to nothing, on a thread's second review: refused, saying how to answer
    with pytest.raises(StaleApproval, match=r"Command\(resume=\{interrupt.id"):
        agent.invoke(Command(resume=APPROVE), CFG)
    # that refused answer stays written to the checkpoint (LangGraph saves an answer
    # without an id before the run): a later run by another review's id does not take it
    again = agent.invoke(Command(resume={first.id: APPROVE}), CFG)
    assert [i.id for i in again["__interrupt__"]] == [second.id]
    assert written == ["e0"]
    [pending] = agent.get_state(CFG).interrupts
    assert pending.id == second.id

    # keyed by the pending review's id: tied by LangGraph, taken
    done = agent.invoke(Command(resume={second.id: APPROVE}), CFG)
    assert done["messages"][-1].content == "logged 1"
    # the same answer again: the review is answered, nothing runs twice
    agent.invoke(Command(resume={second.id: APPROVE}), CFG)
    agent.invoke(Command(resume=bind_decisions(second.value, [{"type": "approve"}])), CFG)
    assert written == ["e0", "e1"]
    calls = [m for m in agent.get_state(CFG).values["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in calls] == ["c0", "c1"]


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_a_plain_decisions_client_answers_every_review_of_a_thread(saver, mode):
    written: list[str] = []
    agent = agent_on(saver, written, one_call_per_turn(REVIEWS), interrupt_mode=mode)
    plain = APPROVE if mode == "batched" else {"type": "approve"}
    for n in range(REVIEWS):
        [pending] = agent.invoke({"messages": [("user", f"log e{n}")]}, CFG)["__interrupt__"]
        if mode == "per_call":
            assert pending.value["type"] == "tool_approval"
            assert pending.value["tool_call_id"] == f"c{n}"
        # LangChain's own answer; a thread's first review takes it even unkeyed
        answer = plain if n == 0 else {pending.id: plain}
        done = agent.invoke(Command(resume=answer), CFG)
        assert done["messages"][-1].content == f"logged {n}"
    assert written == [f"e{n}" for n in range(REVIEWS)]


async def test_async_runs_bind_answers_too(tmp_path):
    written: list[str] = []
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        agent = agent_on(saver, written, one_call_per_turn(2))
        out = await agent.ainvoke({"messages": [("user", "log e0")]}, CFG)
        await agent.ainvoke(Command(resume=APPROVE), CFG)
        [second] = (await agent.ainvoke({"messages": [("user", "log e1")]}, CFG))["__interrupt__"]
        with pytest.raises(StaleApproval):
            await agent.ainvoke(
                Command(
                    resume=bind_decisions(out["__interrupt__"][0].value, [{"type": "approve"}])
                ),
                CFG,
            )
        assert written == ["e0"]
        await agent.ainvoke(Command(resume={second.id: APPROVE}), CFG)
    assert written == ["e0", "e1"]


def test_edit_reject_and_respond_apply_to_their_calls(saver):
    written: list[str] = []
    calls = [{"name": "log", "args": {"entry": f"e{n}"}, "id": f"c{n}"} for n in range(3)]
    model = ReplayChatModel([{"content": "", "tool_calls": calls}, "done"])
    agent = agent_on(saver, written, model)
    [review] = agent.invoke({"messages": [("user", "log three")]}, CFG)["__interrupt__"]
    assert [a["tool_call_id"] for a in review.value["action_requests"]] == ["c0", "c1", "c2"]
    assert review.value["review_configs"][0]["allowed_decisions"] == [
        "approve",
        "edit",
        "reject",
        "respond",
    ]
    decisions = [
        {"type": "edit", "edited_action": {"name": "log", "args": {"entry": "E0"}}},
        {"type": "reject", "message": "not this one"},
        {"type": "respond", "message": "already logged"},
    ]
    out = agent.invoke(Command(resume=bind_decisions(review.value, decisions)), CFG)
    assert written == ["E0"]
    [ai] = [m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert ai.tool_calls[0]["args"] == {"entry": "E0"}  # the history shows the call that ran
    answers = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert answers["c0"].content == "logged"
    assert (answers["c1"].status, answers["c1"].content) == ("error", "not this one")
    assert (answers["c2"].status, answers["c2"].content) == ("success", "already logged")


def test_an_answer_that_does_not_fit_is_refused_before_it_is_saved(saver):
    written: list[str] = []
    gate = {"log": {"allowed_decisions": ["approve", "reject"]}}
    agent = create_agent(
        one_call_per_turn(1),
        [log_tool(written)],
        middleware=[BoundApprovalMiddleware(interrupt_on=gate)],
        checkpointer=saver,
    )
    agent.invoke({"messages": [("user", "log e0")]}, CFG)
    with pytest.raises(ValidationError, match="not allowed"):
        agent.invoke(Command(resume={"decisions": [{"type": "respond", "message": "x"}]}), CFG)
    with pytest.raises(ValidationError, match="2 decision"):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}] * 2}), CFG)
    assert written == []
    agent.invoke(Command(resume=APPROVE), CFG)  # the same review, answered again
    assert written == ["e0"]


def test_langchain_configs_are_taken_and_bad_ones_refused():
    mw = BoundApprovalMiddleware(
        interrupt_on={
            "a": True,
            "b": False,
            "c": {"allowed_decisions": ["approve"], "args_schema": {"type": "object"}},
        },
        description_prefix="Please check",
    )
    assert set(mw.interrupt_on) == {"a", "c"}
    assert mw.interrupt_on["c"]["allowed_decisions"] == ["approve"]
    with pytest.raises(ValueError, match="allowed_decisions"):
        BoundApprovalMiddleware(interrupt_on={"a": {"allowed_decisions": []}})
    with pytest.raises(ValueError, match="unsupported keys"):
        BoundApprovalMiddleware(interrupt_on={"a": {"allowed_decisions": ["approve"], "x": 1}})
    with pytest.raises(ValueError, match="interrupt_mode"):
        BoundApprovalMiddleware(interrupt_on={"a": True}, interrupt_mode="each")


def test_per_call_reviews_of_a_later_turn_are_answered_by_their_ids(saver):
    """Two gated calls in a thread's second turn: one interrupt at a time, each taken
    when keyed by its own id; nothing runs before both are decided."""
    written: list[str] = []
    two = [{"name": "log", "args": {"entry": e}, "id": e} for e in ("b1", "b2")]
    model = ReplayChatModel(
        [
            {"content": "", "tool_calls": [{"name": "log", "args": {"entry": "a"}, "id": "a"}]},
            "done a",
            {"content": "", "tool_calls": two},
            "done b",
        ]
    )
    agent = agent_on(saver, written, model, interrupt_mode="per_call")
    agent.invoke({"messages": [("user", "log a")]}, CFG)
    agent.invoke(Command(resume={"type": "approve"}), CFG)
    [first] = agent.invoke({"messages": [("user", "log b")]}, CFG)["__interrupt__"]
    assert first.value["tool_call_id"] == "b1"
    with pytest.raises(StaleApproval):  # tied to nothing, on a later review
        agent.invoke(Command(resume={"type": "approve"}), CFG)
    [second] = agent.invoke(Command(resume={first.id: {"type": "approve"}}), CFG)["__interrupt__"]
    assert second.value["tool_call_id"] == "b2" and second.id != first.id
    assert written == ["a"]
    done = agent.invoke(Command(resume={second.id: {"type": "reject"}}), CFG)
    assert done["messages"][-1].content == "done b"
    assert written == ["a", "b1"]
