"""A message's text, reasoning and other content blocks, and a history as the prompt dialects
write it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = ["dumps", "text_of"]

_REASONING_BLOCKS = frozenset({"reasoning", "thinking"})
# Blocks that restate what the ``tool_calls`` field already holds.
_CALL_BLOCKS = frozenset(
    {"tool_use", "tool_call", "tool_call_chunk", "function_call", "invalid_tool_call"}
)


def dumps(value: Any) -> str:
    """JSON as the Qwen-Agent prompts write it: ``ensure_ascii=False``, default separators."""
    return json.dumps(value, ensure_ascii=False)


def text_of(content: str | list[Any] | None) -> str:
    """The text of message content, whether a string or a list of content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type", "text") == "text" and "text" in block:
            parts.append(str(block["text"]))
    return "".join(parts)


def reasoning_of(message: BaseMessage) -> str:
    return str(message.additional_kwargs.get("reasoning_content") or "")


def group_tool_results(messages: Sequence[BaseMessage]) -> list[BaseMessage | list[ToolMessage]]:
    """The history with each run of ``ToolMessage``s gathered into one list.

    Results are put in the order of the calls they answer (matched by ``tool_call_id``),
    so parallel results that finished in any order render in call order, as the
    prompt dialects need ("tool_response and tool_call correspond one by one").
    """
    out: list[BaseMessage | list[ToolMessage]] = []
    order: dict[str, int] = {}
    for msg in messages:
        if isinstance(msg, ToolMessage):
            if out and isinstance(out[-1], list):
                out[-1].append(msg)
            else:
                out.append([msg])
            continue
        if out and isinstance(out[-1], list):
            out[-1].sort(key=lambda m: order.get(m.tool_call_id, len(order)))
        if isinstance(msg, AIMessage):
            order = {c["id"]: i for i, c in enumerate(msg.tool_calls) if c.get("id")}
        out.append(msg)
    if out and isinstance(out[-1], list):
        out[-1].sort(key=lambda m: order.get(m.tool_call_id, len(order)))
    return out


def split_content(
    content: str | list[Any] | None,
) -> tuple[str, list[str], list[dict[str, Any]], bool]:
    """``(text, reasoning texts, other blocks, was a list)`` of message content."""
    if content is None:
        return "", [], [], False
    if isinstance(content, str):
        return content, [], [], False
    text: list[str] = []
    reasoning: list[str] = []
    others: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            text.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type", "text")
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind in _REASONING_BLOCKS:
            if r := _reasoning_text(block):
                reasoning.append(r)
        elif kind not in _CALL_BLOCKS:
            others.append(block)
    return "".join(text), reasoning, others, True


def _reasoning_text(block: dict[str, Any]) -> str:
    """The text of a reasoning block in the LangChain v1, Anthropic or OpenAI shape."""
    for key in ("reasoning", "thinking", "text"):
        value = block.get(key)
        if isinstance(value, str) and value:
            return value
    summary = block.get("summary")  # OpenAI Responses: [{"type": "summary_text", "text"}]
    if isinstance(summary, list):
        return "\n".join(
            str(s.get("text")) for s in summary if isinstance(s, dict) and s.get("text")
        )
    return ""
