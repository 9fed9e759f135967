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


def peek_tool(written: list[str]):
    @tool
    def peek(entry: str) -> str:
        """Read an entry."""
        written.append(f"peek:{entry}")
        return "seen"

    return peek


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
    # keyed by the first review's id again: still nothing takes it
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
        # LangChain's own answer, unkeyed: the first review of each turn takes it
        done = agent.invoke(Command(resume=plain), CFG)
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
    # as LangChain's middleware: the model's call stays as it wrote it, the result says
    # which call ran instead
    assert ai.tool_calls[0]["args"] == {"entry": "e0"}
    answers = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert answers["c0"].content.startswith("Note: a human reviewer replaced this tool call")
    assert answers["c0"].content.endswith(
        'Executed instead: log with arguments {"entry": "E0"}.\n\nTool response:\nlogged'
    )
    assert (answers["c1"].status, answers["c1"].content) == (
        "error",
        "User rejected the tool call for `log` with reason: not this one",
    )
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
    """Two gated calls in a thread's second turn wait at once, each in its own tool
    call (as LangChain's middleware asks them); each answer keyed by its id runs its
    call only; an answer naming neither waits for the one it could be for."""
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
    pending = agent.invoke({"messages": [("user", "log b")]}, CFG)["__interrupt__"]
    by_call = {i.value["tool_call_id"]: i for i in pending}
    assert sorted(by_call) == ["b1", "b2"]
    out = agent.invoke(Command(resume={by_call["b1"].id: {"type": "approve"}}), CFG)
    assert [i.id for i in out["__interrupt__"]] == [by_call["b2"].id]
    assert written == ["a", "b1"]
    done = agent.invoke(Command(resume={by_call["b2"].id: {"type": "reject"}}), CFG)
    assert done["messages"][-1].content == "done b"
    assert written == ["a", "b1"]


# --------------------------------------------------------------- a drop-in for LangChain's

EDITED = {"type": "edit", "edited_action": {"name": "log", "args": {"entry": "E"}}}


def _history(agent) -> list[tuple]:
    out = []
    for m in agent.get_state(CFG).values["messages"]:
        if isinstance(m, AIMessage):
            out.append(("ai", m.text, [(c["name"], c["args"], c["id"]) for c in m.tool_calls]))
        elif isinstance(m, ToolMessage):
            out.append(("tool", m.tool_call_id, m.text, m.status, m.response_metadata))
        else:
            out.append((m.type, m.text))
    return out


@pytest.mark.parametrize(
    "decision",
    [
        {"type": "approve"},
        {"type": "reject"},
        {"type": "reject", "message": "no"},
        EDITED,
        {"type": "respond", "message": "done by hand"},
    ],
    ids=["approve", "reject", "reject-reason", "edit", "respond"],
)
@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_the_same_history_as_human_in_the_loop_middleware(decision, mode):
    """One gated call beside an ungated one, decided; LangChain's middleware and this one
    leave the same history (the model's call as it wrote it, an edited call's result
    with LangChain's notice, a rejection in LangChain's words)."""
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    histories, ran = [], []
    for cls in (HumanInTheLoopMiddleware, BoundApprovalMiddleware):
        written: list[str] = []

        two = [
            {"name": "log", "args": {"entry": "e"}, "id": "c0"},
            {"name": "peek", "args": {"entry": "p"}, "id": "c1"},
        ]
        model = ReplayChatModel([{"content": "", "tool_calls": two}, "done"])
        agent = create_agent(
            model,
            [log_tool(written), peek_tool(written)],
            middleware=[cls(interrupt_on={"log": True}, interrupt_mode=mode)],
            checkpointer=InMemorySaver(),
        )
        [pending] = agent.invoke({"messages": [("user", "go")]}, CFG)["__interrupt__"]
        answer = {"decisions": [decision]} if mode == "batched" else decision
        agent.invoke(Command(resume={pending.id: answer}), CFG)
        histories.append(_history(agent))
        ran.append(sorted(written))
    assert histories[1] == histories[0]
    assert ran[1] == ran[0]


def test_edit_notice_as_langchain_takes_it(saver):
    written: list[str] = []
    model = ReplayChatModel(
        [{"content": "", "tool_calls": [{"name": "log", "args": {"entry": "e"}, "id": "c0"}]}, "ok"]
    )
    agent = agent_on(saver, written, model, edit_notice=None)
    agent.invoke({"messages": [("user", "log")]}, CFG)
    agent.invoke(Command(resume={"decisions": [EDITED]}), CFG)
    assert written == ["E"]
    [result] = [m for m in agent.get_state(CFG).values["messages"] if isinstance(m, ToolMessage)]
    assert result.content == "logged"  # no notice asked for: the result as it is


def test_langchains_per_call_client_loop_answers_every_call(saver):
    """LangChain's per-call client: every pending interrupt listed at once, each answered
    by its own resume, in turn."""
    written: list[str] = []
    three = [{"name": "log", "args": {"entry": f"e{n}"}, "id": f"c{n}"} for n in range(3)]
    model = ReplayChatModel([{"content": "", "tool_calls": three}, "done"])
    agent = agent_on(saver, written, model, interrupt_mode="per_call")
    pending = agent.invoke({"messages": [("user", "log three")]}, CFG)["__interrupt__"]
    assert sorted(i.value["tool_call_id"] for i in pending) == ["c0", "c1", "c2"]
    for interrupt in pending:
        decision = {"type": "reject"} if interrupt.value["tool_call_id"] == "c1" else APPROVE_ONE
        out = agent.invoke(Command(resume={interrupt.id: decision}), CFG)
    assert out["messages"][-1].content == "done"
    assert sorted(written) == ["e0", "e2"]
    assert not agent.get_state(CFG).interrupts


APPROVE_ONE = {"type": "approve"}
