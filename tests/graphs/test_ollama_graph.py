"""Contract tests: the graph over ``resolve_model("ollama:...")`` and Ollama's HTTP API.

No Ollama binary runs here. The real ``ChatOllama`` client talks over loopback HTTP to
``tests/servers/ollama_stub.py``, which answers with the bodies of Ollama's API
documentation (streamed NDJSON, ``tool_calls`` in a message chunk of their own, HTTP 400
``{"error": "<model> does not support tools"}`` for a model without tool support). These
tests pin what the graph relies on: a native tool loop, the fallback to ReAct when tools
are refused (and that a thread keeps it), and token streaming.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from servers.ollama_stub import OllamaStub

from fncall_graph import create_fncall_graph
from fncall_graph.adapters import get_dialect
from fncall_graph.adapters.models import resolve_model

WEATHER = {"北京": "北京: 晴, 25°C", "广州": "广州: 多云, 30°C"}


@tool
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return WEATHER[city]


def action(city: str) -> str:
    return (
        f"Thought: 先查{city}的天气。\nAction:\n```\n"
        f'{{"action": "get_weather", "action_input": {{"city": "{city}"}}}}\n```'
    )


def final(text: str) -> str:
    return f"Thought: I now know the final answer\nFinal Answer: {text}"


@pytest.fixture
def stub():
    with OllamaStub(tool_less={"gemma3"}) as server:
        yield server


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_native_tool_calls_complete_a_task(stub, mode: str) -> None:
    stub.reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "北京"}}])
    stub.reply("北京今天晴, 25°C。")
    graph = create_fncall_graph(resolve_model("ollama:qwen3", base_url=stub.url), [get_weather])
    payload = {"messages": [("user", "北京天气怎么样")]}
    result = graph.invoke(payload) if mode == "invoke" else await graph.ainvoke(payload)

    messages = result["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert messages[1].tool_calls[0]["name"] == "get_weather"
    assert messages[1].tool_calls[0]["args"] == {"city": "北京"}
    assert messages[2].content == WEATHER["北京"]
    assert messages[2].tool_call_id == messages[1].tool_calls[0]["id"]
    assert messages[3].content == "北京今天晴, 25°C。"
    assert result["dialect"] == "native"

    first, second = stub.chat_requests()
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert first["messages"] == [{"role": "user", "content": "北京天气怎么样"}]
    # the result goes back as Ollama's tool message after the assistant's call
    assert second["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert second["messages"][2]["role"] == "tool"
    assert second["messages"][2]["content"] == WEATHER["北京"]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_tool_less_model_falls_back_to_react_and_stays(stub, mode: str) -> None:
    graph = create_fncall_graph(
        resolve_model("ollama:gemma3", base_url=stub.url),
        [get_weather],
        checkpointer=InMemorySaver(),
    )

    async def ask(text: str) -> dict[str, Any]:
        payload = {"messages": [("user", text)]}
        if mode == "invoke":
            return graph.invoke(payload, cfg("t"))
        return await graph.ainvoke(payload, cfg("t"))

    stub.reply(action("北京"))
    stub.reply(final("北京晴"))
    first = await ask("北京天气怎么样")
    assert first["messages"][-1].content == "北京晴"
    assert [m.content for m in first["messages"] if isinstance(m, ToolMessage)] == [WEATHER["北京"]]
    state = graph.get_state(cfg("t")).values
    assert state["dialect"] == "react"
    assert "does not support tools" in state["fallback_reason"]

    requests = stub.chat_requests()
    assert len(requests) == 3  # the refused tools request, then two ReAct requests
    assert requests[0]["tools"]
    react_prompt = get_dialect("react").system_prompt([get_weather])
    for sent in requests[1:]:
        assert not sent.get("tools")
        assert sent["messages"][0] == {"role": "system", "content": react_prompt}
        assert sent["options"]["stop"] == ["Observation:"]
    assert requests[1]["messages"][1]["content"] == "Question: 北京天气怎么样\n\n"
    # the second request carries the action and its observation in the scratchpad
    assert WEATHER["北京"] in requests[2]["messages"][1]["content"]

    stub.reply(action("广州"))
    stub.reply(final("广州多云"))
    second = await ask("广州呢")
    assert second["messages"][-1].content == "广州多云"
    later = stub.chat_requests()[3:]
    assert len(later) == 2
    assert not any(r.get("tools") for r in later)  # straight to ReAct, no second refusal


def _streamed(graph: Any, payload: dict[str, Any], config: dict[str, Any] | None = None):
    chunks = []
    for message, meta in graph.stream(payload, config, stream_mode="messages"):
        node = meta.get("langgraph_node")
        if node == "model" and isinstance(message, AIMessageChunk) and message.content:
            chunks.append(message.content)
    return chunks


def test_native_reply_streams_token_by_token(stub) -> None:
    stub.reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "广州"}}])
    stub.reply("广州 今天 多云 30°C")
    graph = create_fncall_graph(resolve_model("ollama:qwen3", base_url=stub.url), [get_weather])
    chunks = _streamed(graph, {"messages": [("user", "广州天气")]})
    # one chunk per token as it comes; a token's trailing space is shown with the next
    # token's text (white space before call markup is never the answer's)
    assert chunks == ["广州", " 今天", " 多云", " 30°C"]
    assert all(r["stream"] is True for r in stub.chat_requests())


def test_react_answer_streams_without_markup(stub) -> None:
    stub.reply(action("北京"))
    stub.reply(final("北京 今天 晴"))
    graph = create_fncall_graph(resolve_model("ollama:gemma3", base_url=stub.url), [get_weather])
    chunks = _streamed(graph, {"messages": [("user", "北京天气")]})
    assert len(chunks) >= 3
    assert "".join(chunks) == "北京 今天 晴"
    assert not any("Action" in c or "Final Answer" in c or "Thought" in c for c in chunks)
