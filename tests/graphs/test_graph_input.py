"""What a run takes as input: messages only, each one LangChain can read, with errors
that say what and where."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph import create_fncall_graph
from fncall_graph.testing import ReplayChatModel

CFG = {"configurable": {"thread_id": "t"}}


def graph():
    return create_fncall_graph(
        ReplayChatModel(["好的", "好的"]), [], dialect="hermes", checkpointer=InMemorySaver()
    )


@pytest.mark.parametrize("key", ["dialect", "fallback_reason", "model_input"])
def test_input_cannot_set_the_graph_s_own_state(key):
    g = graph()
    g.invoke({"messages": [("user", "你好")]}, CFG)
    with pytest.raises(ValueError, match=rf"may only hold 'messages'; got \['{key}'\]"):
        g.invoke({"messages": [("user", "再来")], key: "react"}, CFG)
    assert g.get_state(CFG).values.get("dialect") == "hermes"
    assert len(g.get_state(CFG).values["messages"]) == 2  # nothing ran


async def test_input_cannot_set_the_dialect_async():
    with pytest.raises(ValueError, match="may only hold 'messages'"):
        await graph().ainvoke({"messages": [("user", "你好")], "dialect": "react"}, CFG)


def test_the_input_schema_is_messages_only():
    assert set(graph().get_input_jsonschema()["properties"]) == {"messages"}


def test_a_tool_message_without_its_call_id_is_a_clear_error():
    g = graph()
    bad = {"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "42"}]}
    with pytest.raises(ValueError, match=r"messages\[1\].*'tool'.*'tool_call_id'"):
        g.invoke(bad, CFG)
    assert g.get_state(CFG).values == {}


@pytest.mark.parametrize(
    ("bad", "error", "says"),
    [
        ({"messages": None}, ValueError, r"input 'messages' is None: give a message or a list"),
        ({"messages": [("user", "x"), None]}, ValueError, r"input messages\[1\] is None"),
        (
            "hi",
            TypeError,
            r"got str 'hi'; for one user message: \{'messages': \[\('user', 'hi'\)\]\}",
        ),
        ([("user", "hi")], TypeError, r"got list .*put the messages under 'messages'"),
        (HumanMessage("hi"), TypeError, r"got HumanMessage .*put the messages under 'messages'"),
        (42, TypeError, r"must be a dict of messages, a Command, or None .*got int 42"),
    ],
    ids=[
        "messages-None",
        "a-None-message",
        "a-string",
        "a-bare-list",
        "a-bare-message",
        "a-number",
    ],
)
def test_input_of_the_wrong_shape_is_a_clear_error(bad, error, says):
    g = graph()
    g.invoke({"messages": [("user", "你好")]}, CFG)
    with pytest.raises(error, match=says):
        g.invoke(bad, CFG)
    assert len(g.get_state(CFG).values["messages"]) == 2  # nothing ran


async def test_a_string_input_is_a_clear_error_async():
    with pytest.raises(TypeError, match="got str 'hi'"):
        await graph().ainvoke("hi", CFG)
