"""Tools bound to a dialect wrapper: what ``bind_tools`` binds, the tools a
``tool_choice`` renders, and the wrapped model bound natively once per bound list."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from ..formats.schema import to_tool_spec

__all__ = []

# bound with the tools: the tools as given to bind_tools, before conversion
GIVEN_TOOLS = "dialect_tools"
# bound with the tools: bind_tools' ``strict`` and ``parallel_tool_calls``
TOOL_OPTIONS = "dialect_tool_options"


def tool_binding(
    tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
    *,
    tool_choice: str | dict[str, Any] | bool | None,
    strict: bool | None,
    parallel_tool_calls: bool | None,
) -> dict[str, Any]:
    """The keyword arguments ``bind_tools`` binds: ``tools`` in OpenAI form (what
    LangChain's and LangGraph's agents read back), the tools as given (what the dialect
    renders: an MCP tool's schema as its server wrote it), the choice and the options."""
    bound: dict[str, Any] = {
        "tools": [convert_to_openai_tool(t, strict=strict) for t in tools],
        GIVEN_TOOLS: list(tools),
    }
    if tool_choice is not None:
        bound["tool_choice"] = tool_choice
    options = {"strict": strict, "parallel_tool_calls": parallel_tool_calls}
    # kept apart from request fields: they shape the tools, never reach a server as is
    bound[TOOL_OPTIONS] = {k: v for k, v in options.items() if v is not None}
    return bound


class NativeBindings:
    """The wrapped model bound to the tools (native calling), per bound tool list: the
    same list comes with every call of one binding, and binding converts every tool's
    schema again."""

    def __init__(self) -> None:
        self._held: dict[tuple[int, str, str], tuple[Any, Runnable]] = {}

    def bound(
        self,
        model: Runnable,
        chat: BaseChatModel,
        tools: list[Any],
        tool_choice: Any,
        options: dict[str, Any],
    ) -> Runnable[LanguageModelInput, BaseMessage]:
        """``chat`` bound to ``tools``, with ``model``'s own bound arguments when it is a
        binding of ``chat``."""
        key = (id(tools), repr(tool_choice), repr(sorted(options.items())))
        held = self._held.get(key)
        if held is None or held[0] is not tools:  # the list is kept, so its id stays its own
            bound = chat.bind_tools(tools, tool_choice=tool_choice, **options)
            if isinstance(model, RunnableBinding):  # the model's own bound arguments
                bound = RunnableBinding(bound=bound, kwargs=model.kwargs, config=model.config)
            held = (tools, bound)
            self._held[key] = held
            if len(self._held) > 8:  # callers that bind anew for every call never hit
                del self._held[next(iter(self._held))]
        return held[1]


def forces_a_call(tool_choice: Any) -> bool:
    """Whether ``tool_choice`` demands a tool call (any, or a named tool)."""
    return tool_choice not in (None, False, "none", "auto")


def chosen_tools(tools: list[Any] | None, tool_choice: Any) -> list[Any] | None:
    """The tools a prompt dialect renders for ``tool_choice`` (see
    :meth:`~fncall_graph.adapters.models.chat_model.DialectChatModel.bind_tools`).

    Raises:
        ValueError: for a ``tool_choice`` naming none of ``tools``.
    """
    if not tools or tool_choice in (None, True, "auto", "any", "required"):
        return tools
    if tool_choice in (False, "none"):
        return None
    name = tool_choice
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or tool_choice).get("name")
    picked = [t for t in tools if to_tool_spec(t).name == name]
    if not picked:
        raise ValueError(f"tool_choice {tool_choice!r} names none of the bound tools")
    return picked
