"""A reply's calls, each once and each with its own id.

The one call-identity rule (:class:`CallIds`): a call keeps its id unless it has none,
or the id is taken by the thread or by an earlier call of the same reply. A call read
from two places (the provider's ``tool_calls`` field and the reply's text) is one call
(:func:`unmatched`); :func:`merge_calls` puts the two together, giving the field's calls
the checks text-read calls get.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call, tool_call

from .call_args import argument_problem, coerce_args, new_call_id

__all__ = []


def used_call_ids(messages: Sequence[BaseMessage]) -> set[str]:
    """The call ids a history already uses: its calls' (readable or not) and its results'."""
    used: set[str] = set()
    for m in messages:
        if isinstance(m, AIMessage):
            used.update(c["id"] for c in m.tool_calls if c.get("id"))
            used.update(c["id"] for c in m.invalid_tool_calls if c.get("id"))
        elif (call_id := getattr(m, "tool_call_id", None)) is not None:
            used.add(call_id)
    return used


class CallIds:
    """The one call-identity rule: a call keeps its id unless it has none, or the id is
    taken (by the thread, or by an earlier call of the same reply); then it gets a new one.

    Example:
        >>> ids = CallIds({"call_0"})
        >>> ids.assign("call_1")
        'call_1'
        >>> ids.assign("call_1") != "call_1", ids.assign("call_0") != "call_0"
        (True, True)
    """

    __slots__ = ("_used",)

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._used = set(taken)

    def assign(self, call_id: str | None) -> str:
        if not call_id or call_id in self._used:
            call_id = new_call_id()
        self._used.add(call_id)
        return call_id


def call_key(name: str | None, args: Any) -> tuple[str, str]:
    """A call's identity for matching one call read from two places: name and arguments."""
    try:
        return (name or "", json.dumps(args, sort_keys=True, ensure_ascii=False, default=str))
    except (ValueError, RecursionError):  # unreadable arguments match no other call
        return (name or "", f"<unreadable {id(args)}>")


def unmatched(calls: Iterable[ToolCall], already: Iterable[ToolCall]) -> list[ToolCall]:
    """The calls of ``calls`` that ``already`` does not hold (same name and arguments),
    each counted once: one call read from two places (the provider's field and the text)
    is one call."""
    pending: dict[tuple[str, str], int] = {}
    for c in already:
        k = call_key(c["name"], c["args"])
        pending[k] = pending.get(k, 0) + 1
    out: list[ToolCall] = []
    for c in calls:
        k = call_key(c["name"], c["args"])
        if pending.get(k):
            pending[k] -= 1
        else:
            out.append(c)
    return out


def merge_calls(
    field: list[ToolCall],
    field_invalid: list[InvalidToolCall],
    markup: list[ToolCall],
    markup_invalid: list[InvalidToolCall],
    known: set[str] | None,
    ids: CallIds,
) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    """Field calls first, then markup calls the field does not already hold; ids by ``ids``."""
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for c in field:
        checked = field_call(c, ids)
        if checked.get("type") == "tool_call":
            calls.append(checked)  # type: ignore[arg-type]
        else:
            invalid.append(checked)  # type: ignore[arg-type]
    invalid.extend(field_unreadable(c, ids) for c in field_invalid)
    for c in unmatched(markup, field):
        if known is not None and c["name"] not in known:
            invalid.append(
                invalid_tool_call(
                    name=c["name"],
                    args=json.dumps(c["args"], ensure_ascii=False),
                    id=ids.assign(c.get("id")),
                    error=f"unknown tool {c['name']!r}; available tools: "
                    + (", ".join(sorted(known)) or "none"),
                )
            )
            continue
        calls.append(tool_call(name=c["name"], args=dict(c["args"]), id=ids.assign(c.get("id"))))
    invalid.extend(
        invalid_tool_call(
            name=c.get("name"), args=c.get("args"), id=ids.assign(c.get("id")), error=c.get("error")
        )
        for c in markup_invalid
    )
    return calls, invalid


def field_call(c: ToolCall, ids: CallIds) -> ToolCall | InvalidToolCall:
    """A call from the provider's ``tool_calls`` field, given the checks a call read from
    text gets: unreadable when its arguments are not plain JSON data; its id by ``ids``."""
    problem = argument_problem(c["args"])
    if problem is None:
        return tool_call(name=c["name"], args=dict(c["args"]), id=ids.assign(c.get("id")))
    return invalid_tool_call(
        name=c["name"],
        args=_shown(c["args"]),
        id=ids.assign(c.get("id")),
        error=f"bad arguments for {c['name']!r}: {problem}",
    )


def field_unreadable(c: InvalidToolCall, ids: CallIds) -> InvalidToolCall:
    """A call the provider's field holds as unreadable, kept so, with why; its id by ``ids``."""
    return invalid_tool_call(
        name=c.get("name"),
        args=c.get("args"),
        id=ids.assign(c.get("id")),
        error=c.get("error") or _why_unreadable(c.get("args")),
    )


def _shown(args: Any, limit: int = 2000) -> str:
    """Refused arguments as text for ``invalid_tool_calls`` (which holds a string)."""
    try:
        text = json.dumps(args, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        text = reprlib.repr(args)  # bounded in depth and length, unlike repr()
    return text if len(text) <= limit else text[:limit] + "…"


def _why_unreadable(args: Any) -> str:
    """The error of a provider's call that came unreadable and without one (LangChain
    gives none when a streamed call's arguments cannot be parsed)."""
    problem = _args_problem(args)
    return "the provider's tool call could not be read" + (f": {problem}" if problem else "")


def _args_problem(args: Any) -> str | None:
    try:
        coerce_args(args)
    except ValueError as error:
        return str(error)
    return None


def unparsed_calls(raw: Any) -> list[dict[str, Any]]:
    """The provider's raw OpenAI calls (``additional_kwargs["tool_calls"]``) whose
    arguments cannot be read, when LangChain parsed none (it drops the calls of a list
    whose parsing raised, as arguments nested too deep make it): unreadable calls."""
    out: list[dict[str, Any]] = []
    for item in raw if isinstance(raw, list) else []:
        function = item.get("function") if isinstance(item, dict) else None
        if isinstance(function, dict):
            args = function.get("arguments")
            if (problem := _args_problem(args)) is not None:
                out.append(
                    {
                        "name": function.get("name"),
                        "args": args if isinstance(args, str) else _shown(args),
                        "id": item.get("id"),
                        "error": f"the provider's tool call could not be read: {problem}",
                    }
                )
    return out
