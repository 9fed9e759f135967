"""The graph state: the canonical history plus which dialect the thread speaks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, get_type_hints

from langchain_core.messages import AnyMessage, BaseMessage, convert_to_messages
from langgraph.channels import DeltaChannel, EphemeralValue, UntrackedValue
from langgraph.types import Command
from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

from fncall_graph._compat import messages_delta_reducer
from fncall_graph.guarantees import RenderedInput

__all__ = []

#: Updates of the history between two full copies of it in a checkpoint: a run that
#: goes on from a checkpoint replays at most this many steps' writes, and a saver that
#: keeps a thread's last K checkpoints (``keep_checkpoints``) keeps those back to the
#: last copy (about five turns of one tool call each).
SNAPSHOT_EVERY = 20

#: The history's channel: LangGraph's ``DeltaChannel``, so a checkpoint stores only the
#: messages its step added (a thread's history is the replay of those writes, from the
#: last full copy, taken every ``snapshot_frequency`` updates), where the plain
#: ``add_messages`` channel stores the whole history again with every step. One
#: instance: every schema of a graph must name the same channel.
MESSAGES = DeltaChannel(messages_delta_reducer, snapshot_frequency=SNAPSHOT_EVERY)


class FncallInput(TypedDict):
    """What a run takes as input: messages only. The other state keys are the graph's
    own (a thread's dialect, why it switched, what the model was sent); input cannot
    set them."""

    messages: Annotated[list[AnyMessage], MESSAGES]


class FncallState(TypedDict):
    """State of a fncall graph thread.

    Attributes:
        messages: the canonical history: user messages, ``AIMessage``s with
            ``tool_calls``, one ``ToolMessage`` per call. It never holds dialect markup,
            so a thread can change model or dialect half-way. Its channel is LangGraph's
            ``DeltaChannel`` (:data:`MESSAGES`): a checkpoint stores the messages its
            step added, and a whole copy every :data:`SNAPSHOT_EVERY` updates.
        dialect: the dialect the thread speaks now (set on the first model call and
            changed by a fallback, so later turns don't retry what failed).
        model_input: the exact input of the latest model call, as OpenAI-style dicts
            (for prompt dialects: the system prompt with tools, calls and results as
            the dialect writes them). Shown in the stream while the run goes on, and
            never checkpointed: it is the history once more, in another form.
        model_output: the latest model reply as the model wrote it (an OpenAI-style
            dict: for a prompt dialect, its calls as markup), beside the canonical
            ``AIMessage`` in ``messages``. Shown like ``model_input``, never checkpointed.
        fallback_reason: why the thread last switched dialect.
        call_format: the format the thread's model writes calls in (``"hermes"``,
            ``"mistral"``, …), set with the first model call; ``None`` while it is not
            known (then the first call read in a known format sets it).
        call_format_source: where ``call_format`` came from: ``"dialect"`` (a prompt
            dialect's own), ``"declared"``, ``"server"`` (its chat template), ``"name"``
            (the model family table), ``"learned"`` (the thread's first read call) or
            ``"unknown"``.
        structured_response: the last turn's answer in the shape of the graph's
            ``response_format`` (only with one).
    """

    messages: Annotated[list[AnyMessage], MESSAGES]
    dialect: NotRequired[str | None]
    model_input: NotRequired[Annotated[list[dict[str, Any]], UntrackedValue]]
    model_output: NotRequired[Annotated[dict[str, Any], UntrackedValue]]
    fallback_reason: NotRequired[str | None]
    call_format: NotRequired[str | None]
    call_format_source: NotRequired[str | None]
    structured_response: NotRequired[Any]


class FncallDebugState(TypedDict):
    """:class:`FncallState` with ``model_input`` and ``model_output`` checkpointed, for inspecting threads in
    LangGraph Studio or with ``get_state`` (``create_fncall_graph(keep_model_input=True)``).
    """

    messages: Annotated[list[AnyMessage], MESSAGES]
    dialect: NotRequired[str | None]
    model_input: NotRequired[list[dict[str, Any]]]
    model_output: NotRequired[dict[str, Any]]
    fallback_reason: NotRequired[str | None]
    call_format: NotRequired[str | None]
    call_format_source: NotRequired[str | None]
    structured_response: NotRequired[Any]


class GraphState(FncallState):
    """:class:`FncallState` and what passes between the graph's own steps (not output).

    Attributes:
        rendered_input: the ``adapter`` node's rendering and the model call made ready
            with it, which the ``model`` node sends (one call, prepared once); never
            checkpointed (``model_input`` shows it).
        jump_to: where a middleware hook sends the run next (``"model"``, ``"tools"``,
            ``"end"``), for the next edge only.
    """

    rendered_input: NotRequired[Annotated[RenderedInput, UntrackedValue]]
    # a middleware hook's ``jump_to`` (``create_agent``'s field), read by the next edge
    jump_to: NotRequired[Annotated[str | None, EphemeralValue]]


class GraphDebugState(FncallDebugState):
    """:class:`GraphState` for :class:`FncallDebugState`."""

    rendered_input: NotRequired[Annotated[RenderedInput, UntrackedValue]]
    jump_to: NotRequired[Annotated[str | None, EphemeralValue]]


def with_fields(
    base: type, extras: Sequence[type], name: str, *, exclude: Iterable[str] = ()
) -> type:
    """``base`` with the fields of ``extras`` added (a caller's ``state_schema``, as
    ``create_agent`` takes one, and its middleware's), less ``exclude``: a ``TypedDict``
    LangGraph reads with each field's reducer. ``base``'s own fields stay as they are."""
    if not extras:
        return base
    added: dict[str, Any] = {}
    for extra in extras:
        try:
            added.update(get_type_hints(extra, include_extras=True))
        except TypeError as exc:
            raise TypeError(
                f"state_schema must be a TypedDict class (e.g. a subclass of FncallState or "
                f"LangChain's AgentState), got {extra!r}"
            ) from exc
    own = get_type_hints(base, include_extras=True)
    skip = {*own, *exclude}
    fields = {**{k: v for k, v in added.items() if k not in skip}, **own}
    return TypedDict(name, fields, total=False)  # type: ignore[operator]


_EXAMPLE = "{'messages': [('user', 'hi')]}"


def check_input(
    input: Any, allowed: frozenset[str] = frozenset(FncallInput.__annotations__)
) -> None:
    """Raise ``TypeError`` or ``ValueError`` saying what and where when ``input`` is no
    valid run input, before anything runs.

    A run takes a dict of ``messages`` (:class:`FncallInput`), a ``Command``, or ``None``
    (go on from the thread's last checkpoint). Only ``messages`` may be given, as a
    message or a list of them, each one LangChain can read: a bare string or a
    ``{"messages": None}`` would otherwise fail deep inside LangGraph, a
    ``{"role": "tool"}`` dict without ``tool_call_id`` with a bare ``KeyError``.
    """
    if input is None or isinstance(input, Command):
        return
    if isinstance(input, list | tuple) and any(isinstance(i, Command) for i in input):
        return  # LangGraph applies a list of Commands in turn
    if not isinstance(input, Mapping):
        if hasattr(input, "messages") and not isinstance(input, BaseMessage | str | bytes):
            return  # a state object (a dataclass, a pydantic model): LangGraph reads its fields
        if isinstance(input, str):
            hint = f"; for one user message: {_EXAMPLE}"
        elif isinstance(input, BaseMessage | list | tuple):
            hint = "; put the messages under 'messages': {'messages': [...]}"
        else:
            hint = f", e.g. {_EXAMPLE}"
        raise TypeError(
            "graph input must be a dict of messages, a Command, or None (go on from the "
            f"thread's last checkpoint); got {type(input).__name__} {input!r:.80}{hint}"
        )
    extra = sorted(set(input) - allowed)
    if extra:
        raise ValueError(
            f"graph input may only hold {', '.join(map(repr, sorted(allowed)))}; got {extra}: "
            "that is state the "
            "graph keeps itself (use update_state to change a thread's state on purpose)"
        )
    if "messages" not in input:
        return  # nothing new: the model answers the thread as it is
    messages = input["messages"]
    if messages is None:
        raise ValueError(
            f"input 'messages' is None: give a message or a list of them, e.g. {_EXAMPLE}"
        )
    items = messages if isinstance(messages, list) else [messages]  # as add_messages reads it
    for i, message in enumerate(items):
        if message is None:
            raise ValueError(f"input messages[{i}] is None: each message must be given")
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
