"""The graph state: the canonical history plus which dialect the thread speaks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage, convert_to_messages
from langgraph.channels import UntrackedValue
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

__all__ = ["FncallDebugState", "FncallInput", "FncallState", "check_input"]


class FncallInput(TypedDict):
    """What a run takes as input: messages only. The other state keys are the graph's
    own (a thread's dialect, why it switched, what the model was sent); input cannot
    set them."""

    messages: Annotated[list[AnyMessage], add_messages]


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
        call_format: the format the thread's model writes calls in (``"hermes"``,
            ``"mistral"``, …), set with the first model call; ``None`` while it is not
            known (then the first call read in a known format sets it).
        call_format_source: where ``call_format`` came from: ``"dialect"`` (a prompt
            dialect's own), ``"declared"``, ``"server"`` (its chat template), ``"name"``
            (the model family table), ``"learned"`` (the thread's first read call) or
            ``"unknown"``.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    dialect: NotRequired[str | None]
    model_input: NotRequired[Annotated[list[dict[str, Any]], UntrackedValue]]
    fallback_reason: NotRequired[str | None]
    call_format: NotRequired[str | None]
    call_format_source: NotRequired[str | None]


class FncallDebugState(TypedDict):
    """:class:`FncallState` with ``model_input`` checkpointed, for inspecting threads in
    LangGraph Studio or with ``get_state`` (``create_fncall_graph(keep_model_input=True)``).
    """

    messages: Annotated[list[AnyMessage], add_messages]
    dialect: NotRequired[str | None]
    model_input: NotRequired[list[dict[str, Any]]]
    fallback_reason: NotRequired[str | None]
    call_format: NotRequired[str | None]
    call_format_source: NotRequired[str | None]


def check_input(input: Any) -> None:
    """Raise ``ValueError`` saying what and where when ``input`` is no valid run input.

    Only ``messages`` may be given (:class:`FncallInput`), and each must be a message
    LangChain can read: a ``{"role": "tool"}`` dict without ``tool_call_id`` would
    otherwise fail deep inside LangChain with a bare ``KeyError``.
    """
    if not isinstance(input, Mapping):
        return
    extra = sorted(set(input) - set(FncallInput.__annotations__))
    if extra:
        raise ValueError(
            f"graph input may only hold 'messages'; got {extra}: that is state the graph "
            "keeps itself (use update_state to change a thread's state on purpose)"
        )
    messages = input.get("messages")
    items = messages if isinstance(messages, list | tuple) else [messages]
    for i, message in enumerate(items):
        if message is None:
            continue
        try:
            convert_to_messages([message])
        except KeyError as exc:
            role = message.get("role") if isinstance(message, Mapping) else None
            raise ValueError(
                f"input messages[{i}]: a {{'role': {role!r}}} message needs a "
                f"{exc.args[0]!r} key"
                + (" (the id of the tool call it answers)" if exc.args[0] == "tool_call_id" else "")
            ) from None
        except (ValueError, TypeError, NotImplementedError) as exc:
            raise ValueError(f"input messages[{i}]: {exc}") from None
