"""The turn's answer in the shape ``response_format`` asks: LangChain's strategies on the
model step, and the ``structured_response`` node for a bare schema.

``ToolStrategy(Schema)`` and ``ProviderStrategy(Schema)`` mean what they mean in
``create_agent`` (:class:`ResponseStrategy`): the schema bound as a tool (listed in a
prompt dialect's prompt) whose call ends the run with ``structured_response``, or the
provider's ``response_format`` sent with each model call (asked for in the prompt, and
held to the schema by the dialect's grammar where the server takes one, for a model with
no structured output of its own) and the answer read as the schema.

With ``create_fncall_graph(response_format=Schema)``, a turn that the model ends with an
answer goes on here: the model is asked once more, through the thread's dialect, for that
answer as ``Schema`` (JSON held to the schema by a grammar where the server takes one,
the model's own structured output where a native model has it, else asked for in the
prompt, repaired and checked), and the result is kept as ``structured_response``, as
LangGraph's ``create_react_agent`` does with its ``response_format``. Any model can give
one, with or without native function calling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from fncall_graph.adapters.models.chat_model import with_dialect
from fncall_graph.guarantees import ModelBoundary

if TYPE_CHECKING:
    # langchain.agents loads create_agent's whole module: imported where middleware
    # or a response_format is in use, not when the graph's face is imported
    from langchain.agents.structured_output import (
        OutputToolBinding,
        ProviderStrategy,
        ToolStrategy,
    )

__all__ = ["ResponseStrategy", "StructuredResponseNode"]

#: the state key the structured answer is kept under (``create_agent``'s name)
STRUCTURED_RESPONSE_KEY = "structured_response"


def response_schema(response_format: Any) -> Any:
    """The schema of ``response_format``: a pydantic model, a ``TypedDict``, a JSON schema,
    or LangChain's ``ToolStrategy``/``ProviderStrategy`` holding one (``create_agent``'s
    forms; the graph asks for the schema its own way, whichever is given)."""
    if response_format is None:
        raise ValueError("response_format is None")
    inner = getattr(response_format, "schema", None)
    if inner is not None and type(response_format).__name__ in (
        "ToolStrategy",
        "ProviderStrategy",
        "AutoStrategy",
    ):
        return inner
    if isinstance(response_format, dict | type):
        return response_format
    raise TypeError(
        "response_format must be a pydantic model, a TypedDict, a JSON schema dict, or "
        f"LangChain's ToolStrategy/ProviderStrategy of one; got {type(response_format).__name__}"
    )


#: what create_agent tells the model when its schema tool's call does not fit
_RETRY = "Error: {error}\n Please fix your mistakes."


def _retry_text(strategy: ToolStrategy, exc: Exception) -> str | None:
    """The ``ToolMessage`` text asking for another try after ``exc``, as the strategy's
    ``handle_errors`` says (``None``: raise)."""
    handle = strategy.handle_errors
    if handle is False:
        return None
    if handle is True:
        return _RETRY.format(error=exc)
    if isinstance(handle, str):
        return handle
    if isinstance(handle, type | tuple):
        return _RETRY.format(error=exc) if isinstance(exc, handle) else None
    return handle(exc)


class ResponseStrategy:
    """LangChain's ``ToolStrategy``/``ProviderStrategy`` as ``create_agent`` applies them,
    for the graph's model step (any other ``response_format``: nothing here).

    Args:
        response_format: ``create_fncall_graph``'s ``response_format``.

    ``ToolStrategy``: each schema is a tool (:attr:`tools`) bound beside the graph's
    (native: with ``tool_choice="any"``, as ``create_agent`` binds it; a prompt dialect
    lists it in the prompt); a reply calling it is answered in the model step
    (:meth:`answer`): one call that fits is the run's ``structured_response`` and the
    run ends; a call that does not fit, or two, get ``handle_errors``' text and the model
    tries again. ``ProviderStrategy``: :meth:`call_kwargs` is the provider's
    ``response_format``, sent with every model call; an answer without calls is read as
    the schema.
    """

    def __init__(self, response_format: Any = None) -> None:
        self.tool_strategy: ToolStrategy | None = None
        self.provider: ProviderStrategy | None = None
        self.bindings: dict[str, OutputToolBinding[Any]] = {}
        if response_format is not None:
            from langchain.agents.structured_output import (
                OutputToolBinding,
                ProviderStrategy,
                ToolStrategy,
            )

            if isinstance(response_format, ToolStrategy):
                self.tool_strategy = response_format
                for spec in response_format.schema_specs:
                    binding = OutputToolBinding.from_schema_spec(spec)
                    self.bindings[binding.tool.name] = binding
            elif isinstance(response_format, ProviderStrategy):
                self.provider = response_format
        self.names = frozenset(self.bindings)

    @property
    def active(self) -> bool:
        """Whether ``response_format`` is one of LangChain's strategies."""
        return self.tool_strategy is not None or self.provider is not None

    @property
    def tools(self) -> list[BaseTool]:
        """The schema tools (``ToolStrategy``), bound beside the graph's; never run."""
        return [b.tool for b in self.bindings.values()]

    def call_kwargs(self, native: bool) -> dict[str, Any]:
        """What every model call is bound with: ``ProviderStrategy``'s ``response_format``;
        ``ToolStrategy``'s ``tool_choice="any"`` for native calling."""
        if self.provider is not None:
            return self.provider.to_model_kwargs()
        if self.tool_strategy is not None and native:
            return {"tool_choice": "any"}
        return {}

    def answer(self, message: AIMessage) -> tuple[list[BaseMessage], Any]:
        """The answers to ``message``'s schema-tool calls, and the structured response
        it gives (``None``: none), as ``create_agent``'s model step makes them.

        Raises:
            StructuredOutputValidationError: a ``ProviderStrategy`` answer that does not
                follow the schema; a ``ToolStrategy`` call that does not when
                ``handle_errors`` does not catch it.
            MultipleStructuredOutputsError: two schema calls, ``handle_errors`` not
                catching it.
        """
        from langchain.agents.structured_output import (
            MultipleStructuredOutputsError,
            ProviderStrategyBinding,
            StructuredOutputValidationError,
        )

        if self.provider is not None:
            if message.tool_calls:
                return [], None
            binding = ProviderStrategyBinding.from_schema_spec(self.provider.schema_spec)
            try:
                return [], binding.parse(message)
            except Exception as exc:
                name = getattr(self.provider.schema_spec.schema, "__name__", "response_format")
                raise StructuredOutputValidationError(name, exc, message) from exc
        strategy = self.tool_strategy
        calls = [c for c in message.tool_calls if c["name"] in self.names]
        if strategy is None or not calls:
            return [], None
        if len(calls) > 1:
            error = MultipleStructuredOutputsError([c["name"] for c in calls], message)
            text = _retry_text(strategy, error)
            if text is None:
                raise error
            return [_answer(c, text) for c in calls], None
        call = calls[0]
        try:
            structured = self.bindings[call["name"]].parse(call["args"])
        except Exception as exc:
            error = StructuredOutputValidationError(call["name"], exc, message)
            text = _retry_text(strategy, error)
            if text is None:
                raise error from exc
            return [_answer(call, text)], None
        text = strategy.tool_message_content or f"Returning structured response: {structured}"
        return [_answer(call, text)], structured

    def answered(self, state: dict[str, Any]) -> bool:
        """Whether the latest model call gave the structured response (the model step
        writes it, or ``None``, on every call, as ``create_agent``'s does): the run ends
        once the reply's other calls are answered."""
        return self.active and state.get(STRUCTURED_RESPONSE_KEY) is not None


def _answer(call: Any, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call["id"] or "", name=call["name"])


class StructuredResponseNode:
    """Ask the model for the turn's answer as ``schema``; see the module docstring.

    Args:
        boundary: the model and the thread's dialects, shared with the ``model`` node.
        schema: what to return (see :func:`response_schema`).
    """

    def __init__(self, boundary: ModelBoundary, schema: Any) -> None:
        self.boundary = boundary
        self.schema = response_schema(schema)
        self._asks: dict[str, Runnable] = {}

    def _ask(self, state: dict[str, Any]) -> Runnable:
        dialect = self.boundary.plan.current(state)
        if dialect.name not in self._asks:
            model = with_dialect(self.boundary.model, dialect)
            self._asks[dialect.name] = model.with_structured_output(
                self.schema, method="json_schema"
            )
        return self._asks[dialect.name]

    def invoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        history = self.boundary.plan.with_system(state["messages"])
        return {STRUCTURED_RESPONSE_KEY: self._ask(state).invoke(history, config)}

    async def ainvoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        history = self.boundary.plan.with_system(state["messages"])
        return {STRUCTURED_RESPONSE_KEY: await self._ask(state).ainvoke(history, config)}
