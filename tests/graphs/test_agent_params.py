"""``create_fncall_graph`` takes what ``create_agent`` takes, where it means the same.

``state_schema``, ``context_schema``, ``response_format`` and ``interrupt_on`` inside a
parent graph that holds the checkpointer (``checkpointer=None``, as a subgraph does).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from pydantic import BaseModel
from typing_extensions import TypedDict

from fncall_graph import create_fncall_graph
from fncall_graph.graphs.state import FncallState
from fncall_graph.guarantees import bind_decisions
from fncall_graph.replay import ReplayChatModel

WRITES: list[str] = []


@tool
def log_age(name: str, age: int) -> str:
    """Log a person's age."""
    WRITES.append(f"{name}={age}")
    return "logged"


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    fn = {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}
    return {"content": "", "tool_calls": [{"id": call_id, "type": "function", "function": fn}]}


CONFIG = {"configurable": {"thread_id": "t"}}


def test_interrupt_on_in_a_parent_graph_with_its_checkpointer() -> None:
    WRITES.clear()
    model = ReplayChatModel([call("log_age", {"name": "韩梅梅", "age": 25}), {"content": "done"}])
    inner = create_fncall_graph(
        model, [log_age], dialect="native", interrupt_on={"log_age": True}, checkpointer=None
    )
    parent = StateGraph(MessagesState)
    parent.add_node("assistant", inner)
    parent.add_edge(START, "assistant")
    graph = parent.compile(checkpointer=InMemorySaver())
    paused = graph.invoke({"messages": [("user", "log 韩梅梅's age")]}, CONFIG)
    assert "__interrupt__" in paused and WRITES == []
    review = paused["__interrupt__"][0]
    answer = bind_decisions(review.value, [{"type": "approve"}])
    done = graph.invoke(Command(resume=answer), CONFIG)
    assert WRITES == ["韩梅梅=25"]
    assert done["messages"][-1].content == "done"


def test_interrupt_on_without_any_checkpointer_says_how() -> None:
    model = ReplayChatModel([{"content": "hi"}])
    graph = create_fncall_graph(model, [log_age], interrupt_on={"log_age": True})
    with pytest.raises(
        ValueError, match=r"interrupt_on needs a checkpointer.*as a node of a graph"
    ):
        graph.invoke({"messages": [("user", "hi")]})


class Profile(TypedDict):
    messages: Any
    user_name: str


@tool
def greet(state: Annotated[dict, InjectedState]) -> str:
    """Greet the user by name."""
    return f"hello {state['user_name']}"


def test_state_schema_adds_fields_the_input_and_tools_use() -> None:
    model = ReplayChatModel([call("greet", {}), {"content": "greeted"}])
    graph = create_fncall_graph(
        model, [greet], dialect="native", state_schema=Profile, checkpointer=InMemorySaver()
    )
    out = graph.invoke({"messages": [("user", "hi")], "user_name": "李雷"}, CONFIG)
    assert out["user_name"] == "李雷"
    results = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results == ["hello 李雷"]
    # the graph's own keys still cannot be set by input
    with pytest.raises(
        ValueError, match="may only hold 'messages', 'user_name'; got \\['dialect'\\]"
    ):
        graph.invoke({"messages": [("user", "hi")], "dialect": "react"}, CONFIG)


def test_state_schema_may_extend_fncall_state() -> None:
    class Mine(FncallState):
        notes: list[str]

    model = ReplayChatModel([{"content": "ok"}])
    graph = create_fncall_graph(model, [log_age], dialect="native", state_schema=Mine)
    out = graph.invoke({"messages": [("user", "hi")], "notes": ["a"]})
    assert out["notes"] == ["a"] and out["messages"][-1].content == "ok"


@dataclass
class Caller:
    user_id: str


@tool
def whoami(runtime: ToolRuntime[Caller]) -> str:
    """Say who is calling."""
    return f"user {runtime.context.user_id}"


def test_context_schema_reaches_the_tools() -> None:
    model = ReplayChatModel([call("whoami", {}), {"content": "ok"}])
    graph = create_fncall_graph(model, [whoami], dialect="native", context_schema=Caller)
    out = graph.invoke({"messages": [("user", "who am I?")]}, context=Caller(user_id="u7"))
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["user u7"]


class Age(BaseModel):
    name: str
    age: int


@pytest.mark.parametrize("dialect", ["native", "hermes"])
def test_response_format_gives_a_structured_answer_for_any_model(dialect: str) -> None:
    lookup_call = (
        call("log_age", {"name": "韩梅梅", "age": 25})
        if dialect == "native"
        else '<tool_call>\n{"name": "log_age", "arguments": {"name": "韩梅梅", "age": 25}}\n</tool_call>'
    )
    model = ReplayChatModel(
        [lookup_call, {"content": "韩梅梅 is 25."}, {"content": '{"name": "韩梅梅", "age": 25}'}]
    )
    graph = create_fncall_graph(model, [log_age], dialect=dialect, response_format=Age)
    out = graph.invoke({"messages": [("user", "how old is 韩梅梅? log it")]})
    assert out["structured_response"] == Age(name="韩梅梅", age=25)
    assert out["messages"][-1].content == "韩梅梅 is 25."
    # the structured step asked for JSON of the schema, after the answer
    assert '"age"' in str(model.inputs[-1][0].content)
    assert isinstance(out["messages"][-1], AIMessage)
