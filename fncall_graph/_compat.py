"""The few things LangGraph and LangChain have no public API for, in one place.

Each entry says what it is for and is checked by ``tests/test_compat.py``, which fails
loudly when a release moves or changes it. An import that breaks here breaks at import
time: nothing falls back silently to a different behaviour.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, Tool
from langchain_openai import ChatOpenAI

# LangGraph reads a run's default durability from this config key when ``invoke`` gets
# no ``durability=``; ``compile()`` and ``with_config`` have no public setting for it.
from langgraph._internal._constants import CONFIG_KEY_DURABILITY

__all__ = ["CONFIG_KEY_DURABILITY", "ChatOpenAIMaxTokens", "has_own_async"]


def has_own_async(tool: BaseTool) -> bool:
    """Whether ``tool`` has an async implementation of its own.

    ``BaseTool.ainvoke`` of a sync-only tool runs it in the event loop's default
    executor, where a call that hangs would hold up the loop's shutdown; the tools node
    runs such tools in threads of its own when they have a timeout. LangChain has no
    public flag for it: ``StructuredTool``/``Tool`` keep ``coroutine``, other tools
    override ``_arun``.
    """
    if isinstance(tool, StructuredTool | Tool):
        return tool.coroutine is not None
    return type(tool)._arun is not BaseTool._arun


class ChatOpenAIMaxTokens(ChatOpenAI):
    """``ChatOpenAI`` that sends a token limit as ``max_tokens``.

    langchain-openai sends it as ``max_completion_tokens`` (OpenAI's name since 2024);
    llama.cpp's and other OpenAI-compatible servers read only ``max_tokens``. The
    request payload has no public hook, so the one private method is overridden here.
    """

    def _get_request_payload(
        self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        if "max_completion_tokens" in payload:
            payload["max_tokens"] = payload.pop("max_completion_tokens")
        return payload
