"""What one tool call does with what its server sends during it (:class:`CallHooks`).

In a LangGraph run (:func:`call_hooks`), progress notifications become custom stream
events, and a question the server asks (elicitation) pauses the thread with an
``interrupt``; on resume the person's answer goes back to the server as the protocol's
result (:func:`elicit_result`). Outside a run there are no hooks: nothing to tell.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.types import ElicitRequestParams, ElicitResult

from .stack import wire

__all__ = []


@dataclass
class CallHooks:
    """What one tool call does with what its server sends during it.

    ``progress``: reports progress notifications; ``elicit``: answers the server's
    elicitation request at once, or returns ``None`` after recording in ``paused`` the
    interrupt that pauses the thread until a person answers; ``answer``: on resume, given
    every question of the call so far, the person's answer to the last one (``None``,
    with ``paused`` set, when there is none yet); ``key``: the call's thread and tool call id, under
    which a paused call is kept for its resume (``None``: it cannot be resumed into).
    """

    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None
    elicit: Callable[[ElicitRequestParams], ElicitResult | None] | None = None
    answer: Callable[[list[ElicitRequestParams]], ElicitResult | None] | None = None
    key: tuple[str, str] | None = None
    paused: BaseException | None = None


#: The hooks of the tool call being invoked in this context, from the tool's
#: `invoke`/`ainvoke` to its function.
CALL_HOOKS: contextvars.ContextVar[CallHooks | None] = contextvars.ContextVar(
    "fncall_mcp_call_hooks", default=None
)


def call_hooks(tool: str, input: Any) -> CallHooks | None:
    """Hooks for one call in a LangGraph run (``None`` outside one: nothing to tell).

    - progress: ``{"mcp_progress": {"tool_call_id", "tool", "progress", "total",
      "message"}}`` custom stream events;
    - elicitation: the thread pauses with ``interrupt({"mcp_elicitation": {...}})``, the
      question's ``defaults`` offered in it; the call stays open, and on resume the
      person's answer goes to the server as the answer to that same question (see
      :func:`elicit_result`).
    """
    try:
        from langgraph.config import get_config, get_stream_writer

        writer = get_stream_writer()
        thread = get_config().get("configurable", {}).get("thread_id")
    except (RuntimeError, ImportError, KeyError):
        return None
    call_id = input.get("id") if isinstance(input, Mapping) else None
    # LangGraph reads the run from the context it is called in; the server's messages
    # arrive on the session's task (another thread, for sync code): run them in this one
    context = contextvars.copy_context()
    hooks = CallHooks()
    if thread is not None and isinstance(call_id, str):
        hooks.key = (str(thread), call_id)

    async def progress(done: float, total: float | None, message: str | None) -> None:
        event = {"tool_call_id": call_id, "tool": tool, "progress": done}
        context.run(writer, {"mcp_progress": {**event, "total": total, "message": message}})

    def question(params: ElicitRequestParams) -> dict[str, Any]:
        asked = wire(params)
        schema = asked.get("requestedSchema")
        return {
            "mcp_elicitation": {
                "tool_call_id": call_id,
                "tool": tool,
                "message": asked["message"],
                "mode": asked.get("mode") or "form",
                "requested_schema": schema,
                "defaults": schema_defaults(schema),
                "url": asked.get("url"),  # url mode: where the person should go
            }
        }

    def ask(params: ElicitRequestParams) -> Any:
        from langgraph.types import interrupt

        return context.run(interrupt, question(params))

    def elicit(params: ElicitRequestParams) -> ElicitResult | None:
        from langgraph.errors import GraphInterrupt

        try:
            answer = ask(params)
        except GraphInterrupt as paused:
            hooks.paused = paused
            return None  # the thread pauses; the server's request waits for the answer
        return elicit_result(answer, wire(params).get("requestedSchema"))

    def answer(asked: list[ElicitRequestParams]) -> ElicitResult | None:
        # the run's interrupts are counted: the questions asked before the last one
        # get their earlier answers back, the last one this resume's
        for params in asked[:-1]:
            if elicit(params) is None:
                return None
        return elicit(asked[-1])

    hooks.progress, hooks.elicit, hooks.answer = progress, elicit, answer
    return hooks


def schema_defaults(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``default`` of each field of an elicitation's requested schema (SEP-1034)."""
    properties = (schema or {}).get("properties") or {}
    return {
        name: field["default"]
        for name, field in properties.items()
        if isinstance(field, Mapping) and "default" in field
    }


def elicit_result(answer: Any, schema: Mapping[str, Any] | None = None) -> ElicitResult:
    """A person's answer to an MCP elicitation, as the protocol's result.

    ``{"action": "accept", "content": {...}}``, ``{"action": "decline"}`` or
    ``{"action": "cancel"}``; a plain dict of fields is an accepted answer. An accepted
    answer leaves out no field the ``schema`` has a default for: the default is what the
    person accepted (SEP-1034).
    """
    if isinstance(answer, Mapping) and answer.get("action") in ("accept", "decline", "cancel"):
        if answer["action"] != "accept":
            return ElicitResult(action=answer["action"])
        content = answer.get("content") or {}
    elif isinstance(answer, Mapping):
        content = answer
    else:
        raise ValueError(
            "an answer to an MCP elicitation is {'action': 'accept', 'content': {...}}, "
            f"{{'action': 'decline'}}, {{'action': 'cancel'}} or a dict of fields; got {answer!r}"
        )
    if not isinstance(content, Mapping):
        raise ValueError(f"the content of an accepted MCP elicitation is a dict; got {content!r}")
    return ElicitResult(action="accept", content={**schema_defaults(schema), **content} or None)
