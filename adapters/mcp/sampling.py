"""MCP sampling: a server has the client's chat model write something for it.

Off unless a server's config allows it (``"sampling": {"allow": true, "max_tokens": 512}``)
and the toolkit has a model (``MCPToolkit(..., sampling_model=...)``); then the client
announces the capability to that server, and each request is answered by the model, with
at most ``max_tokens`` (or fewer, if the server asks for fewer), and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from mcp.types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

from .config import SamplingSettings
from .stack import wire

__all__ = []

logger = logging.getLogger("fncall_graph.mcp")


def sampler(
    server: str, model: BaseChatModel, settings: SamplingSettings
) -> Callable[[Any, CreateMessageRequestParams], Awaitable[CreateMessageResult | ErrorData]]:
    """The MCP ``sampling_callback`` for ``server``: ``model`` answers, within ``settings``."""

    async def sample(
        context: Any, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        asked = wire(params)
        messages: list[BaseMessage] = []
        if asked.get("systemPrompt"):
            messages.append(SystemMessage(asked["systemPrompt"]))
        for m in asked["messages"]:
            parts = m["content"] if isinstance(m["content"], list) else [m["content"]]
            if any(p.get("type") != "text" for p in parts):
                kinds = ", ".join(sorted({str(p.get("type")) for p in parts} - {"text"}))
                return ErrorData(
                    code=-32602, message=f"only text can be sampled here, got {kinds} content"
                )
            text = "".join(p["text"] for p in parts)
            messages.append(HumanMessage(text) if m["role"] == "user" else AIMessage(text))
        limit = min(asked["maxTokens"], settings.max_tokens)
        try:
            reply = await model.bind(max_tokens=limit).ainvoke(messages)
        except Exception as exc:  # the server gets the reason, the call goes on
            logger.warning("MCP server %r: sampling failed: %s", server, exc)
            return ErrorData(code=-32603, message=f"the client's model failed: {exc}")
        text = reply.content if isinstance(reply.content, str) else str(reply.text)
        name = (
            getattr(model, "model_name", None)
            or getattr(model, "model", None)
            or type(model).__name__
        )
        logger.info(
            "MCP server %r sampled the client's model %s (max %d tokens): %d characters",
            server,
            name,
            limit,
            len(text),
        )
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=text),
            model=str(name),
            stopReason="endTurn",
        )

    return sample
