"""Which dialect a thread speaks now, shared by the nodes (not a node itself)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool

from fncall_graph.adapters import Dialect, get_dialect
from fncall_graph.adapters.models import is_tools_unsupported_error, unreachable_server
from fncall_graph.adapters.secrets import redact_exception, secrets_of

__all__ = ["DialectPlan"]


@dataclass(frozen=True)
class DialectPlan:
    """The thread's first dialect and where it falls back to.

    The current dialect lives in the graph state (``state["dialect"]``) once a fallback
    happened, so a checkpointed thread never tries the failed way again.
    """

    initial: Dialect
    fallback: Dialect
    tools: Sequence[BaseTool]
    system_prompt: str | None = None
    unparsed_limit: int = 2
    _known: dict[str, Dialect] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._known.setdefault(self.initial.name, self.initial)
        self._known.setdefault(self.fallback.name, self.fallback)

    def current(self, state: Mapping[str, Any]) -> Dialect:
        """The dialect the thread speaks now."""
        name = state.get("dialect")
        return self.dialect(name) if name else self.initial

    def dialect(self, name: str) -> Dialect:
        """The dialect called ``name``, built once per graph."""
        if name not in self._known:
            # a thread saved by another graph may name a dialect this graph was not built with
            self._known[name] = get_dialect(name)
        return self._known[name]

    def fallback_for(self, dialect: Dialect, exc: Exception, model: Any) -> tuple[Dialect, str]:
        """The dialect to call ``model`` again in, and why, when it refused native calling
        in ``dialect`` (``exc``); any other failure is raised (a server that cannot be
        reached as :class:`~fncall_graph.adapters.models.ModelServerUnreachable`).
        Its message is redacted first: what LangGraph saves of a failed step (the
        checkpoint's ``__error__`` write) is its ``repr``, and a server may quote a key."""
        redact_exception(exc, secrets_of(model))
        unreachable = unreachable_server(exc, model)
        if unreachable is not None:
            raise unreachable from exc
        if not (dialect.native and is_tools_unsupported_error(exc)):
            raise exc
        # BaseChatModel.bind_tools raises a bare NotImplementedError: say what it means
        detail = str(exc) or f"{type(model).__name__} does not implement bind_tools"
        return self.fallback, f"native tool calling failed: {type(exc).__name__}: {detail}"

    def with_system(self, messages: Sequence[AnyMessage]) -> list[AnyMessage]:
        """The history with the graph's system prompt in front, unless it has its own."""
        msgs = list(messages)
        if self.system_prompt and not (msgs and isinstance(msgs[0], SystemMessage)):
            msgs.insert(0, SystemMessage(self.system_prompt))
        return msgs


def current_turn(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages since the last user message (the turn being worked on)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return list(messages[i + 1 :])
    return list(messages)


def model_calls_this_turn(messages: Sequence[AnyMessage]) -> int:
    return sum(isinstance(m, AIMessage) for m in current_turn(messages))


def unparsed_streak(messages: Sequence[AnyMessage]) -> int:
    """How many of this turn's last replies held only calls that could not be read."""
    streak = 0
    for m in reversed(current_turn(messages)):
        if not isinstance(m, AIMessage):
            continue
        if m.invalid_tool_calls and not m.tool_calls:
            streak += 1
        else:
            break
    return streak
