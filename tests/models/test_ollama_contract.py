"""Contract tests: ``resolve_model("ollama:...")`` against Ollama's documented HTTP API.

No Ollama binary runs here. The real ``ChatOllama`` client (and the ``ollama`` package
under it) talks over loopback HTTP to ``tests/servers/ollama_stub.py``, which answers
with the response bodies of Ollama's API documentation. These tests pin what our code
relies on: where requests go, how replies and ``tool_calls`` come back, and what a
model without tool support raises.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from ollama import ResponseError
from servers.ollama_stub import OllamaStub

from fncall_graph.adapters.models import is_tools_unsupported_error, resolve_model


@tool
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city}: 晴"


@pytest.fixture
def stub():
    with OllamaStub(tool_less={"gemma3"}) as server:
        yield server


def test_plain_reply_via_ollama_host(stub, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", stub.url)
    stub.reply("你好,我是助手")
    model = resolve_model("ollama:qwen3")
    reply = model.invoke([HumanMessage("你好")])
    assert isinstance(reply, AIMessage)
    assert reply.content == "你好,我是助手"
    sent = stub.chat_requests()[-1]
    assert sent["model"] == "qwen3"
    assert sent["messages"] == [{"role": "user", "content": "你好"}]


def test_base_url_argument_wins(stub, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    stub.reply("ok")
    model = resolve_model("ollama:qwen3", base_url=stub.url)
    assert model.invoke("hi").content == "ok"


def test_tool_calls_come_back_as_tool_calls(stub):
    stub.reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "北京"}}])
    model = resolve_model("ollama:qwen3", base_url=stub.url).bind_tools([get_weather])
    reply = model.invoke("北京天气怎么样")
    assert reply.tool_calls and reply.tool_calls[0]["name"] == "get_weather"
    assert reply.tool_calls[0]["args"] == {"city": "北京"}
    sent = stub.chat_requests()[-1]
    assert sent["tools"][0]["function"]["name"] == "get_weather"


def test_non_streamed_reply_with_tool_calls(stub):
    stub.reply("", tool_calls=[{"name": "get_weather", "arguments": {"city": "上海"}}])
    model = resolve_model("ollama:qwen3", base_url=stub.url).bind_tools([get_weather])
    reply = model.invoke("上海天气", stream=False)
    assert stub.chat_requests()[-1]["stream"] is False
    assert reply.tool_calls[0]["args"] == {"city": "上海"}


def test_streamed_reply_arrives_in_chunks(stub):
    stub.reply("one two three four")
    model = resolve_model("ollama:qwen3", base_url=stub.url)
    chunks = list(model.stream("count"))
    texts = [c.content for c in chunks if c.content]
    assert len(texts) == 4
    assert "".join(texts) == "one two three four"
    assert stub.chat_requests()[-1]["stream"] is True


async def test_async_streamed_tool_call(stub):
    stub.reply("", tool_calls=[{"name": "get_weather", "arguments": {"city": "广州"}}])
    model = resolve_model("ollama:qwen3", base_url=stub.url).bind_tools([get_weather])
    reply = await model.ainvoke("广州天气")
    assert reply.tool_calls[0]["args"] == {"city": "广州"}


def test_tool_less_model_raises_recognisable_error(stub):
    model = resolve_model("ollama:gemma3", base_url=stub.url).bind_tools([get_weather])
    with pytest.raises(ResponseError) as info:
        model.invoke("北京天气")
    exc = info.value
    assert exc.status_code == 400
    assert exc.error == "registry.ollama.ai/library/gemma3:latest does not support tools"
    assert is_tools_unsupported_error(exc)
    # Without tools the same model answers normally.
    stub.reply("晴")
    assert resolve_model("ollama:gemma3", base_url=stub.url).invoke("天气").content == "晴"


async def test_tool_less_model_async(stub):
    model = resolve_model("ollama:gemma3", base_url=stub.url).bind_tools([get_weather])
    with pytest.raises(ResponseError) as info:
        await model.ainvoke("北京天气")
    assert is_tools_unsupported_error(info.value)


def test_other_http_errors_are_not_tool_errors(stub):
    stub.fail(404, 'model "nosuch" not found, try pulling it first')
    model = resolve_model("ollama:nosuch", base_url=stub.url)
    with pytest.raises(ResponseError) as info:
        model.invoke("hi")
    assert info.value.status_code == 404
    assert not is_tools_unsupported_error(info.value)


def test_validate_model_on_init_uses_api_tags(stub):
    model = resolve_model("ollama:qwen3", base_url=stub.url, validate_model_on_init=True)
    assert model.model == "qwen3"
    assert ("GET", "/api/tags", None) in stub.requests
    with pytest.raises(ValueError, match="not found in Ollama"):
        resolve_model("ollama:absent", base_url=stub.url, validate_model_on_init=True)


def test_show_reports_capabilities(stub):
    from ollama import Client

    client = Client(host=stub.url)
    assert "tools" in client.show("qwen3").capabilities
    assert "tools" not in client.show("gemma3").capabilities
