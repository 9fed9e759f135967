"""What an approval review covers: the tools whose calls a person reviews
(``interrupt_on``, checked), and the calls of the latest reply that no answer has yet.

Not a node: the ``approve`` node, the graph's factory and the command line share it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from langchain.agents.middleware.human_in_the_loop import InterruptOnConfig
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import ToolCall

__all__ = []

DecisionType = Literal["approve", "edit", "reject", "respond"]
InterruptMode = Literal["batched", "per_call"]
"""One interrupt per model reply listing its gated calls, or one per gated call."""
DEFAULT_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
"""What ``interrupt_on={"tool": True}`` allows."""

_KNOWN_DECISIONS = {"approve", "edit", "reject", "respond"}


def normalize_interrupt_on(
    interrupt_on: Mapping[str, bool | InterruptOnConfig],
) -> dict[str, InterruptOnConfig]:
    """Check ``interrupt_on`` and return a config for every gated tool.

    ``True`` allows approve, edit and reject; ``False`` leaves the tool ungated; a dict
    names its ``allowed_decisions`` and, optionally, a ``description`` (a string, or a
    function ``(tool_call, state, runtime) -> str``) and ``when``, LangChain's predicate
    ``(ToolCallRequest) -> bool``: a call is reviewed only when it returns ``True`` (it
    runs again on resume, so it must answer the same for the same call).

    Example:
        >>> normalize_interrupt_on({"sqlite-write_query": True, "sqlite-read_query": False})
        {'sqlite-write_query': {'allowed_decisions': ['approve', 'edit', 'reject']}}
    """
    out: dict[str, InterruptOnConfig] = {}
    for name, config in interrupt_on.items():
        if isinstance(config, bool):
            if config:
                out[name] = InterruptOnConfig(allowed_decisions=list(DEFAULT_DECISIONS))
            continue
        if not isinstance(config, Mapping):
            raise ValueError(
                f"interrupt_on[{name!r}] must be True, False or a dict with "
                f"'allowed_decisions'; got {config!r}"
            )
        unknown_keys = set(config) - {"allowed_decisions", "description", "when"}
        if unknown_keys:
            # a key we do not apply must not pass silently
            raise ValueError(
                f"interrupt_on[{name!r}] has unsupported keys {sorted(unknown_keys)}; "
                "supported: 'allowed_decisions', 'description', 'when'"
            )
        if config.get("when") is not None and not callable(config["when"]):
            raise ValueError(
                f"interrupt_on[{name!r}]: 'when' must be a function (ToolCallRequest) -> bool"
            )
        allowed = config.get("allowed_decisions")
        if not allowed or isinstance(allowed, str):
            raise ValueError(
                f"interrupt_on[{name!r}]: 'allowed_decisions' must be a non-empty list of "
                f"{sorted(_KNOWN_DECISIONS)}; got {allowed!r}"
            )
        bad = [d for d in allowed if d not in _KNOWN_DECISIONS]
        if bad:
            raise ValueError(
                f"interrupt_on[{name!r}]: unknown decision types {bad}; "
                f"known: {sorted(_KNOWN_DECISIONS)}"
            )
        description = config.get("description")
        if description is not None and not (isinstance(description, str) or callable(description)):
            raise ValueError(
                f"interrupt_on[{name!r}]: 'description' must be a string or a function"
            )
        out[name] = dict(config)  # type: ignore[assignment]
        out[name]["allowed_decisions"] = list(dict.fromkeys(allowed))
    return out


def unknown_tool(names: Iterable[str], tool_names: Iterable[str]) -> str | None:
    """The first of ``names`` that names no tool, said with a close match and the tools.

    A gate on a name that is no tool would gate nothing, silently.

    Example:
        >>> unknown_tool(["write_query"], ["sqlite-write_query"])
        "'write_query', which is not one of the graph's tools; did you mean 'sqlite-write_query'? Tools: sqlite-write_query"
    """
    tools = sorted(set(tool_names))
    for name in names:
        if name in tools:
            continue
        close = difflib.get_close_matches(name, tools, n=1, cutoff=0.5)
        close += [t for t in tools if t.endswith(f"-{name}")][:1]
        hint = f"; did you mean {close[-1]!r}?" if close else "."
        listed = ", ".join(tools) or "none"
        return f"{name!r}, which is not one of the graph's tools{hint} Tools: {listed}"
    return None


def last_ai_message(messages: Sequence[AnyMessage]) -> AIMessage | None:
    """The latest ``AIMessage`` of the history (rejections may follow it)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None


def unanswered_calls(messages: Sequence[AnyMessage]) -> tuple[AIMessage, list[ToolCall]] | None:
    """The latest ``AIMessage`` and those of its calls no ``ToolMessage`` answers yet."""
    ai = last_ai_message(messages)
    if ai is None:
        return None
    index = max(i for i, m in enumerate(messages) if m is ai)
    answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
    return ai, [c for c in ai.tool_calls if c.get("id") not in answered]
