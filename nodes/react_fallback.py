"""The ``react_fallback`` node: switch the thread to a prompt dialect that works.

The model node sends it the switch (``Send("react_fallback", {"to", "reason"[, "reply"]})``)
when native calling fails — the provider refuses tools, ``bind_tools`` is not
implemented — or when a prompt dialect keeps producing replies whose calls cannot be
read (then ``reply`` is the last such reply, added to the history here). The new dialect
and the reason are stored in the state, so later turns of a checkpointed thread go
straight to the dialect that works. Unreadable calls are answered where every call is
answered: the graph sends them on to ``tools``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage


class ReactFallbackNode:
    """Apply a dialect switch the model node asked for."""

    def __call__(self, switch: dict[str, Any]) -> dict[str, Any]:
        update: dict[str, Any] = {"dialect": switch["to"], "fallback_reason": switch["reason"]}
        reply = switch.get("reply")
        if isinstance(reply, AIMessage):
            update["messages"] = [reply]
        return update
