"""The seed's database-assistant session through create_fncall_graph, in one thread.

Qwen-Max's recorded Hermes outputs are replayed; the six sqlite tools run for real on
a SQLite file. The model must receive, call for call, the pre-processed inputs the seed
transcript prints.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from seed_db import CALLS, ROUNDS, SYSTEM, as_pairs, make_database, session_outputs
from sqlite_tools import SqliteTools

from fncall_graph import create_fncall_graph
from fncall_graph.testing import ReplayChatModel


@pytest.fixture
def seed(tmp_path):
    tools = SqliteTools(make_database(tmp_path / "test.db"))
    model = ReplayChatModel(session_outputs())
    graph = create_fncall_graph(
        model, tools.tools(), dialect="hermes", system_prompt=SYSTEM, checkpointer=InMemorySaver()
    )
    return graph, model, tools


def test_seed_session_in_one_thread(seed):
    graph, model, tools = seed
    cfg = {"configurable": {"thread_id": "seed"}}
    calls_per_round = []
    for question, _ in ROUNDS:
        before = len(model.inputs)
        result = graph.invoke({"messages": [("user", question)]}, cfg)
        calls_per_round.append(len(model.inputs) - before)
        assert isinstance(result["messages"][-1], AIMessage)
        assert not result["messages"][-1].tool_calls
    assert calls_per_round == [2, 2, 2, 3]

    # every printed model call saw exactly the seed's pre-processed input
    printed = [i for _, idx in ROUNDS for i in idx]
    for position, fixture_index in enumerate(printed):
        if fixture_index is None:
            continue
        expected = [(m["role"], m["content"]) for m in CALLS[fixture_index]["model_input"]]
        assert as_pairs(model.inputs[position]) == expected, f"model call {position + 1}"

    final = result["messages"][-1].content
    assert "6" in final and "韩梅梅" in final
    assert tools.log_rows()[1:] == ["查询了韩梅梅的年龄"]

    # round 2's three COUNT queries were one turn: one AIMessage, three results
    history = graph.get_state(cfg).values["messages"]
    parallel = [m for m in history if isinstance(m, AIMessage) and len(m.tool_calls) == 3]
    assert len(parallel) == 2  # the COUNT round and the describe round
    ids = [c["id"] for m in history if isinstance(m, AIMessage) for c in m.tool_calls]
    assert len(ids) == len(set(ids)) == 9
    answered = [m.tool_call_id for m in history if isinstance(m, ToolMessage)]
    assert sorted(answered) == sorted(ids)


def test_second_thread_shares_nothing(seed):
    graph, model, _ = seed
    graph.invoke({"messages": [("user", ROUNDS[0][0])]}, {"configurable": {"thread_id": "a"}})
    other = graph.get_state({"configurable": {"thread_id": "b"}})
    assert other.values == {}
    graph.invoke({"messages": [("user", ROUNDS[1][0])]}, {"configurable": {"thread_id": "b"}})
    # thread b's first model input holds only its own question
    assert [m.content for m in model.inputs[2][1:]] == [ROUNDS[1][0]]


def test_per_conversation_replay_serves_threads_side_by_side(tmp_path):
    """Three threads asked the four questions round-robin each get the whole session."""
    tools = SqliteTools(make_database(tmp_path / "test.db"))
    model = ReplayChatModel(session_outputs(), per_conversation=True)
    graph = create_fncall_graph(
        model, tools.tools(), dialect="hermes", system_prompt=SYSTEM, checkpointer=InMemorySaver()
    )
    threads = [{"configurable": {"thread_id": t}} for t in ("a", "b", "c")]
    for question, _ in ROUNDS:
        for cfg in threads:
            graph.invoke({"messages": [("user", question)]}, cfg)
    for cfg in threads:
        history = graph.get_state(cfg).values["messages"]
        replies = [m for m in history if isinstance(m, AIMessage)]
        assert len(replies) == len(session_outputs()) == 9
        assert "韩梅梅" in replies[-1].content and not replies[-1].tool_calls
    # each thread wrote its log row once: three threads, three rows
    assert tools.log_rows()[1:] == ["查询了韩梅梅的年龄"] * 3
