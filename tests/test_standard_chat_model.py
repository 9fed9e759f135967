"""``with_dialect`` against LangChain's own standard unit tests for chat models.

``langchain-tests``' ``ChatModelUnitTests`` checks what every LangChain chat model must
do (construction, ``bind_tools``, ``with_structured_output``, standard tracing params,
serialisation); each dialect wraps a replayed inner model here.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel

from fncall_graph.adapters.models.chat_model import DialectChatModel
from fncall_graph.replay import ReplayChatModel

unit_tests = pytest.importorskip("langchain_tests.unit_tests")


class _DialectUnitTests(unit_tests.ChatModelUnitTests):
    dialect = "hermes"

    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return DialectChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model": ReplayChatModel(["hello"] * 20), "dialect": self.dialect}

    @property
    def has_tool_choice(self) -> bool:
        return True


class TestNative(_DialectUnitTests):
    dialect = "native"


class TestHermes(_DialectUnitTests):
    dialect = "hermes"


class TestQwen(_DialectUnitTests):
    dialect = "qwen"


class TestReact(_DialectUnitTests):
    dialect = "react"


# -- identity: what LangChain reads of a chat model


def test_create_agent_with_response_format_over_a_wrapped_model() -> None:
    # create_agent reads `model_name or model` to choose a structured-output strategy; the
    # wrapper's name is the wrapped model's, a string (it was the chat model itself)
    from langchain.agents import create_agent
    from pydantic import BaseModel

    from fncall_graph import with_dialect

    class Weather(BaseModel):
        city: str
        sky: str

    call = (
        '<tool_call>\n{"name": "Weather", "arguments": {"city": "北京", "sky": "晴"}}\n</tool_call>'
    )
    model = with_dialect(ReplayChatModel([call, "done"]), "hermes")
    agent = create_agent(model, [], response_format=Weather)
    result = agent.invoke({"messages": [("user", "北京天气?")]})
    assert result["structured_response"] == Weather(city="北京", sky="晴")
    assert model.model_name == "replay"  # the wrapped model's own name


def test_wrappers_of_different_models_do_not_share_cache_entries() -> None:
    from langchain_core.caches import InMemoryCache
    from langchain_openai import ChatOpenAI

    from fncall_graph import with_dialect

    cache = InMemoryCache()
    small = with_dialect(ReplayChatModel(["from the small model"], source="small"), "hermes")
    large = with_dialect(ReplayChatModel(["from the large model"], source="large"), "hermes")
    small.cache = large.cache = cache
    assert small.invoke("hi").content == "from the small model"
    assert large.invoke("hi").content == "from the large model"  # not the cached reply
    assert small.invoke("hi").content == "from the small model"  # cached: no second output

    named = with_dialect(ChatOpenAI(model="gpt-4o-mini", api_key="x", temperature=0.2), "qwen")
    assert named.model_name == "gpt-4o-mini"
    params = named._get_ls_params(stop=["x"])
    assert params["ls_model_name"] == "gpt-4o-mini" and params["ls_provider"] == "openai"
    assert params["ls_temperature"] == 0.2 and params["ls_stop"] == ["x"]
