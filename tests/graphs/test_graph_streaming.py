"""Streaming a fncall graph: answer text token by token, never call markup or the prompt.

A Hermes model is replayed in small chunks, so ``<tool_call>`` and its JSON arrive split
across chunks as they do from a server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph import create_fncall_graph
from fncall_graph.testing import ReplayChatModel

LEAD = "我先查一下北京的天气。"
ANSWER = "北京今天晴, 25°C, 适合出门。"
MARKUP = ("<tool_call>", "</tool_call>", '{"name"', "<tool_response>", "# Tools")


@tool
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city}: 晴, 25°C"


def replies() -> list[str]:
    call = json.dumps({"name": "get_weather", "arguments": {"city": "北京"}}, ensure_ascii=False)
    return [f"{LEAD}\n<tool_call>\n{call}\n</tool_call>", ANSWER]


def make_graph(chunk_size: int = 2, **options: Any) -> tuple[Any, ReplayChatModel]:
    model = ReplayChatModel(replies(), chunk_size=chunk_size)
    graph = create_fncall_graph(
        model, [get_weather], dialect="hermes", checkpointer=InMemorySaver(), **options
    )
    return graph, model


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


QUESTION = {"messages": [("user", "北京天气怎么样?")]}


def check_message_stream(
    items: list[tuple[BaseMessage, dict[str, Any]]], chunk_size: int = 2
) -> None:
    """Tokens come from the model node only, with answer text and no markup."""
    # model_input is dicts, not streamed as chat: no prompt message shows
    assert not [m for m, _ in items if m.type in ("system", "human")]
    chunks = [(m, meta) for m, meta in items if isinstance(m, AIMessageChunk)]
    assert {meta["langgraph_node"] for _, meta in chunks} == {"model"}
    for chunk, _ in chunks:
        for marker in MARKUP:
            assert marker not in chunk.content, chunk.content
    texts = [c.content for c, _ in chunks if c.content]
    # token by token: the answer arrives in many small pieces, in order
    answer = [t for t in texts if t in ANSWER]
    assert len(answer) >= max(2, len(ANSWER) // chunk_size - 1)
    assert "".join(texts) in (LEAD + ANSWER, LEAD.rstrip() + ANSWER)
    # the call arrives as a parsed tool_call_chunk, never as text
    calls = [tc for c, _ in chunks for tc in c.tool_call_chunks]
    assert [(tc["name"], json.loads(tc["args"])) for tc in calls] == [
        ("get_weather", {"city": "北京"})
    ]
    tool_results = [m for m, _ in items if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_results] == ["北京: 晴, 25°C"]


def test_messages_stream_sync() -> None:
    graph, model = make_graph()
    items = list(graph.stream(QUESTION, cfg("s"), stream_mode="messages"))
    check_message_stream(items)
    assert len(model.inputs) == 2
    final = graph.get_state(cfg("s")).values["messages"][-1]
    assert isinstance(final, AIMessage) and final.content == ANSWER


async def test_messages_stream_async() -> None:
    graph, _ = make_graph()
    items = [item async for item in graph.astream(QUESTION, cfg("a"), stream_mode="messages")]
    check_message_stream(items)
    final = (await graph.aget_state(cfg("a"))).values["messages"][-1]
    assert final.content == ANSWER


@pytest.mark.parametrize("chunk_size", [1, 3, 7])
def test_markup_split_anywhere_never_leaks(chunk_size: int) -> None:
    graph, _ = make_graph(chunk_size)
    items = list(graph.stream(QUESTION, cfg("c"), stream_mode="messages"))
    check_message_stream(items, chunk_size)


def test_updates_stream_and_model_input() -> None:
    graph, model = make_graph()
    updates = list(graph.stream(QUESTION, cfg("u"), stream_mode="updates"))
    names = [next(iter(u)) for u in updates]
    # a prompt dialect's model call: the adapter renders, the model calls and reads
    assert names == ["adapter", "model", "tools", "adapter", "model"]
    models = [u["model"] for u in updates if "model" in u]
    rendered = [u["adapter"] for u in updates if "adapter" in u]
    assert models[0]["dialect"] == "hermes"  # the model call records the thread's dialect
    # model_input: the adapter's prompt as OpenAI-style dicts, exactly what the model got
    first = rendered[0]
    assert all("model_input" not in m for m in models)  # shown once, by the adapter
    assert all(isinstance(m, dict) for m in first["model_input"])
    sent = [(m.type, m.content) for m in model.inputs[0]]
    role = {"system": "system", "user": "human", "assistant": "ai"}
    assert [(role[m["role"]], m["content"]) for m in first["model_input"]] == sent
    assert first["model_input"][0]["content"].startswith("# Tools")
    second = rendered[1]["model_input"]
    assert second[-1] == {
        "role": "user",
        "content": "<tool_response>\n北京: 晴, 25°C\n</tool_response>",
    }
    # the model node's update holds the canonical call, not its markup
    call_msg = models[0]["messages"][0]
    assert call_msg.tool_calls[0]["args"] == {"city": "北京"}
    assert "<tool_call>" not in call_msg.content


def test_values_stream_grows_the_history() -> None:
    graph, _ = make_graph()
    values = list(graph.stream(QUESTION, cfg("v"), stream_mode="values"))
    lengths = [len(v["messages"]) for v in values]
    assert lengths == sorted(lengths) and lengths[0] == 1 and lengths[-1] == 4
    assert values[-1]["messages"][-1].content == ANSWER
    assert values[-1]["dialect"] == "hermes"


def test_debug_stream_reports_each_task() -> None:
    graph, _ = make_graph()
    events = list(graph.stream(QUESTION, cfg("d"), stream_mode="debug"))
    tasks = [e["payload"]["name"] for e in events if e["type"] == "task"]
    assert tasks == ["adapter", "model", "tools", "adapter", "model"]
    assert {e["type"] for e in events} >= {"checkpoint", "task", "task_result"}


async def test_several_modes_at_once() -> None:
    graph, _ = make_graph()
    seen: dict[str, list[Any]] = {"messages": [], "updates": [], "values": [], "custom": []}
    async for mode, payload in graph.astream(
        QUESTION, cfg("m"), stream_mode=["messages", "updates", "values", "custom"]
    ):
        seen[mode].append(payload)
    assert seen["messages"] and seen["updates"] and seen["values"]
    check_message_stream(seen["messages"])
    assert [next(iter(u)) for u in seen["updates"]][-1] == "model"
    assert seen["values"][-1]["messages"][-1].content == ANSWER


def test_model_input_is_streamed_but_not_checkpointed() -> None:
    graph, _ = make_graph()
    updates = [c for c in graph.stream(QUESTION, cfg("u"), stream_mode="updates")]
    shown = [c["adapter"]["model_input"] for c in updates if "adapter" in c]
    assert len(shown) == 2 and shown[0][0]["content"].startswith("# Tools")
    # no checkpoint of the thread holds it: it is the history again, in the dialect's form
    assert all("model_input" not in s.values for s in graph.get_state_history(cfg("u")))


def test_state_history_lists_the_steps() -> None:
    graph, _ = make_graph(keep_model_input=True)
    graph.invoke(QUESTION, cfg("h"))
    history = list(graph.get_state_history(cfg("h")))
    # newest first: the finished turn, then each step back to the input
    assert history[0].next == ()
    steps = [s.next for s in reversed(history)]
    # the adapter's step, then the model's: each a checkpoint, the rendering in neither
    assert steps == [
        ("__start__",),
        ("adapter",),
        ("model",),
        ("tools",),
        ("adapter",),
        ("model",),
        (),
    ]
    assert [len(s.values.get("messages", [])) for s in reversed(history)] == [0, 1, 1, 2, 3, 3, 4]
    # with keep_model_input, a checkpoint holds the prompt of the model call before it
    after_second_call = history[0]
    assert "<tool_response>" in after_second_call.values["model_input"][-1]["content"]
