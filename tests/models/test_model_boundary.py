"""One pass through the model boundary: each model call renders once and reads once.

The graph's model step and ``with_dialect`` share one pipeline: render → call → read →
canonicalise. These tests count the steps per model call, in every way a graph or the
wrapper is run (invoke, stream with tokens, async), and check the call-identity rule:
a call id names one call in a thread, whatever the model numbers its calls.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler, get_usage_metadata_callback
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph import create_fncall_graph, with_dialect
from fncall_graph.adapters import get_dialect
from fncall_graph.adapters.formats import normalize as normalize_module
from fncall_graph.adapters.formats.normalize import CallIds, normalize, used_call_ids
from fncall_graph.replay import ReplayChatModel


@tool
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city}: 晴"


def native_turn(call_id: str = "call_0") -> list[dict[str, Any]]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "北京"})},
    }
    return [{"content": "", "tool_calls": [call]}, {"content": "北京晴。"}]


def hermes_turn() -> list[str]:
    body = json.dumps({"name": "get_weather", "arguments": {"city": "北京"}}, ensure_ascii=False)
    return [f"先查一下。\n<tool_call>\n{body}\n</tool_call>", "北京晴。"]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts renders and reads: a read is a ``normalize`` run (wherever a module imported
    it from), or a stream parser opened outside one (a prompt dialect's streamed reply is
    read by its parser as it comes)."""
    counts = {"render": 0, "read": 0, "inside": 0}

    def counting(*args: Any, **kwargs: Any) -> AIMessage:
        counts["read"] += 1
        counts["inside"] += 1
        try:
            return normalize(*args, **kwargs)
        finally:
            counts["inside"] -= 1

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("fncall_graph") and (
            getattr(module, "normalize", None) is normalize
        ):
            monkeypatch.setattr(module, "normalize", counting)
    yield counts


def counting_dialect(name: str, counts: dict[str, int]) -> Any:
    dialect = get_dialect(name)
    render, stream_parser = dialect.render, dialect.stream_parser

    def counted_render(*args: Any, **kwargs: Any) -> Any:
        counts["render"] += 1
        return render(*args, **kwargs)

    def counted_stream_parser() -> Any:
        if not counts["inside"] and not dialect.native:
            counts["read"] += 1
        return stream_parser()

    dialect.render = counted_render  # type: ignore[method-assign]
    dialect.stream_parser = counted_stream_parser  # type: ignore[method-assign]
    return dialect


def graph_for(name: str, counts: dict[str, int]) -> tuple[Any, ReplayChatModel]:
    outputs: list[Any] = native_turn() if name == "native" else hermes_turn()
    model = ReplayChatModel(outputs, chunk_size=3)
    dialect = counting_dialect(name, counts)
    graph = create_fncall_graph(model, [get_weather], dialect=dialect, checkpointer=InMemorySaver())
    return graph, model


QUESTION = {"messages": [("user", "北京天气?")]}
CONFIG = {"configurable": {"thread_id": "t"}}


@pytest.mark.parametrize("name", ["native", "hermes"])
@pytest.mark.parametrize("mode", ["invoke", "messages", "updates"])
def test_each_model_call_renders_once_and_reads_once(
    name: str, mode: str, counted: dict[str, int]
) -> None:
    graph, model = graph_for(name, counted)
    if mode == "invoke":
        result = graph.invoke(QUESTION, CONFIG)
    else:
        list(graph.stream(QUESTION, CONFIG, stream_mode=mode))
        result = graph.get_state(CONFIG).values
    assert result["messages"][-1].content == "北京晴。"
    calls = len(model.inputs)
    assert calls == 2
    assert (counted["render"], counted["read"]) == (calls, calls)


@pytest.mark.parametrize("name", ["native", "hermes"])
async def test_async_and_astream_render_once_and_read_once(
    name: str, counted: dict[str, int]
) -> None:
    graph, model = graph_for(name, counted)
    async for _ in graph.astream(QUESTION, CONFIG, stream_mode=["messages", "updates"]):
        pass
    assert len(model.inputs) == 2
    assert (counted["render"], counted["read"]) == (2, 2)


def test_model_input_is_the_input_the_model_was_sent(counted: dict[str, int]) -> None:
    graph, model = graph_for("hermes", counted)
    updates = [
        u["adapter"]
        for u in graph.stream(QUESTION, CONFIG, stream_mode="updates")
        if "adapter" in u
    ]
    for update, sent in zip(updates, model.inputs, strict=True):
        assert [m["content"] for m in update["model_input"]] == [m.content for m in sent]
    assert counted["render"] == 2  # shown without a second rendering


# -- one call-identity rule


def test_a_model_that_numbers_every_reply_call_0_gets_ids_unique_in_the_thread() -> None:
    model = ReplayChatModel([*native_turn("call_0"), *native_turn("call_0")])
    graph = create_fncall_graph(
        model, [get_weather], dialect="native", checkpointer=InMemorySaver()
    )
    graph.invoke(QUESTION, CONFIG)
    graph.invoke({"messages": [("user", "再查一次")]}, CONFIG)
    messages = graph.get_state(CONFIG).values["messages"]
    ids = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert len(ids) == 2 and ids[0] == "call_0" and ids[1] != "call_0"
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert answered == ids


@pytest.mark.parametrize("stream", [False, True])
def test_with_dialect_gives_ids_unique_against_the_history_it_is_given(stream: bool) -> None:
    # create_agent users of with_dialect get the rule too: the history is the wrapper's input
    history = [
        HumanMessage("北京天气?"),
        AIMessage(
            "", tool_calls=[{"name": "get_weather", "args": {"city": "北京"}, "id": "call_0"}]
        ),
        ToolMessage("北京: 晴", tool_call_id="call_0"),
    ]
    raw = ReplayChatModel(native_turn("call_0")[:1], chunk_size=2)
    model = with_dialect(raw, "native").bind_tools([get_weather])
    if stream:
        reply = None
        for chunk in model.stream(history):
            reply = chunk if reply is None else reply + chunk
    else:
        reply = model.invoke(history)
    assert reply is not None and len(reply.tool_calls) == 1
    assert reply.tool_calls[0]["id"] not in {"call_0", None, ""}


def test_normalize_takes_the_ids_a_thread_used() -> None:
    history = [AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "call_0"}])]
    reply = AIMessage(
        "",
        tool_calls=[
            {"name": "f", "args": {"a": 1}, "id": "call_0"},
            {"name": "f", "args": {"a": 2}, "id": "call_1"},
            {"name": "f", "args": {"a": 3}, "id": "call_1"},
        ],
    )
    ids = [c["id"] for c in normalize(reply, None, taken_ids=used_call_ids(history)).tool_calls]
    assert ids[1] == "call_1" and len(set(ids)) == 3 and "call_0" not in ids


def test_the_rule_lives_in_one_place() -> None:
    # every fresh id of a reply comes from CallIds: no module mints ids on its own
    import fncall_graph.adapters.models.chat_model as chat_model
    import fncall_graph.nodes.model as model_node

    assert not hasattr(model_node, "unique_call_ids")
    assert not hasattr(chat_model, "new_call_id")
    assert normalize_module.CallIds is CallIds


class ChatRuns(BaseCallbackHandler):
    """Every chat-model run a graph run starts, by name."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.names.append(kwargs.get("name") or serialized.get("name") or "?")


@pytest.mark.parametrize("name", ["native", "hermes"])
@pytest.mark.parametrize("mode", ["invoke", "messages", "astream"])
async def test_one_chat_model_run_per_model_call_named_as_the_model(
    name: str, mode: str, counted: dict[str, int]
) -> None:
    graph, model = graph_for(name, counted)
    runs = ChatRuns()
    config = {**CONFIG, "callbacks": [runs]}
    if mode == "invoke":
        graph.invoke(QUESTION, config)
    elif mode == "messages":
        list(graph.stream(QUESTION, config, stream_mode="messages"))
    else:
        async for _ in graph.astream(QUESTION, config, stream_mode=["messages", "updates"]):
            pass
    assert len(model.inputs) == 2
    # the provider's own run is the only one: no wrapper run around it
    assert runs.names == ["ReplayChatModel", "ReplayChatModel"]


# LangChain's usage counter counts a reply under its model's name
NAMED = {"response_metadata": {"model_name": "replayed"}}


@pytest.mark.parametrize("name", ["native", "hermes"])
def test_usage_is_counted_once_per_model_call(name: str, counted: dict[str, int]) -> None:
    outputs: list[Any] = native_turn() if name == "native" else hermes_turn()
    used = [{"input_tokens": 10 * i, "output_tokens": i, "total_tokens": 11 * i} for i in (1, 2)]
    outputs = [
        {**(o if isinstance(o, dict) else {"content": o}), "usage_metadata": u, **NAMED}
        for o, u in zip(outputs, used, strict=True)
    ]
    model = ReplayChatModel(outputs, chunk_size=3)
    graph = create_fncall_graph(
        model, [get_weather], dialect=counting_dialect(name, counted), checkpointer=InMemorySaver()
    )
    with get_usage_metadata_callback() as usage:
        list(graph.stream(QUESTION, CONFIG, stream_mode="messages"))
    state = graph.get_state(CONFIG).values["messages"]
    stored = [m.usage_metadata["total_tokens"] for m in state if isinstance(m, AIMessage)]
    assert stored == [11, 22]  # each reply keeps its own usage, streamed or not
    assert sum(u["total_tokens"] for u in usage.usage_metadata.values()) == 33


class ChainRuns(BaseCallbackHandler):
    """The names of the chain runs a graph run starts."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names.append(kwargs.get("name") or (serialized or {}).get("name") or "?")


@pytest.mark.parametrize("name", ["native", "hermes"])
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_turn_traces_the_graph_and_its_node_steps_only(
    name: str, asynchronous: bool, counted: dict[str, int]
) -> None:
    """As in ``create_agent``: the edges' routing functions are no runs of their own."""
    graph, _ = graph_for(name, counted)
    runs = ChainRuns()
    config = {**CONFIG, "callbacks": [runs]}
    if asynchronous:
        await graph.ainvoke(QUESTION, config)
    else:
        graph.invoke(QUESTION, config)
    # a graph enters the model (native) or the adapter (a prompt dialect) by a plain
    # edge: LangGraph writes the input on without a __start__ step of its own
    steps = (
        ["model", "tools", "model"]
        if name == "native"
        else ["adapter", "model", "tools", "adapter", "model"]
    )
    assert runs.names == ["fncall_graph", *steps]
