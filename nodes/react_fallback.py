"""The ``react_fallback`` node: switch the thread to a prompt dialect that works.

The model node asks for it (``state["pending_fallback"]``) when native calling fails —
the provider refuses tools, ``bind_tools`` is not implemented — or when a prompt dialect
keeps producing replies whose calls cannot be read. The switch is stored in the state,
so later turns of a checkpointed thread go straight to the dialect that works.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from .tools import invalid_call_message


class ReactFallbackNode:
    """Apply a pending dialect switch and answer the unreadable calls that caused it."""

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        pending = state.get("pending_fallback") or {}
        update: dict[str, Any] = {
            "dialect": pending.get("to"),
            "pending_fallback": None,
            "fallback_reason": pending.get("reason"),
        }
        last = state["messages"][-1] if state.get("messages") else None
        if isinstance(last, AIMessage) and last.invalid_tool_calls and not last.tool_calls:
            # every call needs an answer before the next model call, even unreadable ones
            update["messages"] = [invalid_call_message(c) for c in last.invalid_tool_calls]
        return update
