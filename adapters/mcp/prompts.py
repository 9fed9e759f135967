"""An MCP prompt as LangChain messages (:class:`MCPPrompt`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

__all__ = ["MCPPrompt"]


def prompt_message(prompt: str, message: Mapping[str, Any]) -> HumanMessage | AIMessage:
    """One message of an MCP prompt (protocol form) as a LangChain message."""
    content = message["content"]
    if content.get("type") != "text":
        raise ValueError(
            f"MCP prompt {prompt!r}: a {content.get('type')!r} part cannot be a chat message"
        )
    if message["role"] == "assistant":
        return AIMessage(content=content["text"])
    return HumanMessage(content=content["text"])


@dataclass(frozen=True)
class MCPPrompt:
    """A prompt a server offers: ``name`` is ``f"{server}{separator}{prompt}"``.

    ``arguments`` are the server's ``{"name", "description", "required"}`` dicts.
    """

    name: str
    server: str
    prompt: str
    description: str
    arguments: tuple[dict[str, Any], ...]
