"""The graph state: the canonical history plus which dialect the thread speaks."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.channels import UntrackedValue
from langgraph.graph.message import add_messages


class FncallState(TypedDict):
    """State of a fncall graph thread.

    Attributes:
        messages: the canonical history: user messages, ``AIMessage``s with
            ``tool_calls``, one ``ToolMessage`` per call. It never holds dialect markup,
            so a thread can change model or dialect half-way.
        dialect: the dialect the thread speaks now (set on the first model call and
            changed by a fallback, so later turns don't retry what failed).
        model_input: the exact input of the latest model call, as OpenAI-style dicts
            (for prompt dialects: the system prompt with tools, calls and results as
            the dialect writes them). Shown in the stream while the run goes on, and
            never checkpointed: it is the history once more, in another form.
        fallback_reason: why the thread last switched dialect.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    dialect: NotRequired[str | None]
    model_input: NotRequired[Annotated[list[dict[str, Any]], UntrackedValue]]
    fallback_reason: NotRequired[str | None]


class FncallDebugState(TypedDict):
    """:class:`FncallState` with ``model_input`` checkpointed, for inspecting threads in
    LangGraph Studio or with ``get_state`` (``create_fncall_graph(keep_model_input=True)``).
    """

    messages: Annotated[list[AnyMessage], add_messages]
    dialect: NotRequired[str | None]
    model_input: NotRequired[list[dict[str, Any]]]
    fallback_reason: NotRequired[str | None]
