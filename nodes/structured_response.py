"""The ``structured_response`` node: the turn's answer in the shape ``response_format`` asks.

With ``create_fncall_graph(response_format=Schema)``, a turn that the model ends with an
answer goes on here: the model is asked once more, through the thread's dialect, for that
answer as ``Schema`` (JSON held to the schema by a grammar where the server takes one,
the model's own structured output where a native model has it, else asked for in the
prompt, repaired and checked), and the result is kept as ``structured_response``, as
LangGraph's ``create_react_agent`` does with its ``response_format``. Any model can give
one, with or without native function calling.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

from fncall_graph.adapters.models.chat_model import with_dialect

from ._boundary import ModelBoundary

__all__ = ["StructuredResponseNode"]

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
