"""The repeat guard: a call made again in the same user turn, after its result is in the
thread, is answered with that result instead of running again (shared by the nodes).

A weak model often writes the same call reply after reply; each run costs a tool call
and, worse, another model call that sees the same thing. The guard decides in
:meth:`~fncall_graph.nodes.tools.ToolDispatchNode.dispatch`, where a reply's calls are
sent to the tools node, from the history alone (so a resumed thread decides the same):

- a call whose name and arguments (JSON with sorted keys) match a call of this turn
  that already has a result that is not an error is answered with a short note and
  that result, and not run;
- the ``max_repeats``-th such repeat of one call ends the turn: it is answered "not
  run" (``status="error"``), as is every other call of the same reply, as LangChain's
  ``ToolCallLimitMiddleware(exit_behavior="end")`` does; the model node then ends the
  turn with an assistant message saying why (:func:`repeat_stop`), the one place that
  ends a turn with a reason, as it does at ``max_iterations``;
- a call whose earlier attempts all failed (error results) runs again: the model may
  have waited for something, or the failure may have been transient;
- a new user turn starts afresh: a new question may read the same thing again.

Every answer carries ``artifact={REPEAT_KEY: {...}}``, which is how the guard counts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import ToolCall

from fncall_graph.adapters.formats.base import text_of

from ._error_answer import error_answer
from ._plan import current_turn

__all__ = ["DEFAULT_MAX_REPEATS", "REPEAT_KEY"]

DEFAULT_MAX_REPEATS = 2
"""Repeats of one call allowed in a user turn by default; the second repeat (the third
identical call) ends the turn."""

REPEAT_KEY = "fncall_repeat"
"""The key of the ``artifact`` of a ``ToolMessage`` the repeat guard wrote."""


def call_key(call: ToolCall) -> str:
    """The call's identity for the guard: its name and arguments, canonically."""
    return json.dumps(
        [call["name"], call.get("args") or {}], sort_keys=True, ensure_ascii=False, default=str
    )


def _guard_info(message: ToolMessage) -> dict[str, Any] | None:
    artifact = message.artifact
    if isinstance(artifact, dict) and isinstance(artifact.get(REPEAT_KEY), dict):
        return artifact[REPEAT_KEY]
    return None


def _earlier_results(
    turn: Sequence[AnyMessage],
) -> tuple[dict[str, ToolMessage], dict[str, int]]:
    """For this turn: the first result of each call (by :func:`call_key`) that is not an
    error and not the guard's own, and how often each of those was repeated since."""
    keys: dict[str, str] = {}
    first: dict[str, ToolMessage] = {}
    repeats: dict[str, int] = {}
    for message in turn:
        if isinstance(message, AIMessage):
            keys.update((c["id"] or "", call_key(c)) for c in message.tool_calls)
        elif isinstance(message, ToolMessage):
            info = _guard_info(message)
            if info is not None:
                if info.get("of"):
                    repeats[info["of"]] = repeats.get(info["of"], 0) + 1
                continue
            key = keys.get(message.tool_call_id)
            if key is not None and message.status != "error" and key not in first:
                first[key] = message
    return first, repeats


def repeat_answers(
    message: AIMessage, history: Sequence[AnyMessage], max_repeats: int | None
) -> dict[str, ToolMessage]:
    """The answers, by call id, to the calls of ``message`` the guard keeps from running;
    the calls left out run. ``history`` is the thread (``message`` may be its last
    entry); ``max_repeats=None`` turns the guard off.

    When one call is the ``max_repeats``-th repeat, every call of ``message`` is
    answered (the turn ends after them).
    """
    if max_repeats is None or not message.tool_calls:
        return {}
    first, repeats = _earlier_results(current_turn(history))
    answers: dict[str, ToolMessage] = {}
    ending: ToolCall | None = None
    for call in message.tool_calls:
        earlier = first.get(call_key(call))
        if earlier is None:
            continue
        count = repeats.get(earlier.tool_call_id, 0) + 1
        info = {"of": earlier.tool_call_id, "count": count, "limit": max_repeats}
        if count >= max_repeats:
            ending = ending or call
            answers[call["id"] or ""] = error_answer(
                call,
                f"Not run: {call['name']} was already called with these arguments "
                f"{count} times in this turn, with the same result each time. The turn "
                "ends here.",
                {REPEAT_KEY: {**info, "ends_turn": True}},
            )
        else:
            answers[call["id"] or ""] = ToolMessage(
                content=(
                    f"Not run again: {call['name']} was already called with these "
                    "arguments in this turn. Its result was:\n"
                    f"{text_of(earlier.content)}\n"
                    "Use this result: answer the user, or make a different call."
                ),
                name=call["name"],
                tool_call_id=call["id"] or "",
                artifact={REPEAT_KEY: info},
            )
    if ending is not None:
        # as ToolCallLimitMiddleware(exit_behavior="end"): nothing else of the reply runs
        for call in message.tool_calls:
            if (call["id"] or "") not in answers:
                answers[call["id"] or ""] = error_answer(
                    call,
                    "Not run: the turn ended before this call could run, because "
                    f"another call of the same reply repeated {ending['name']} again.",
                    {REPEAT_KEY: {"ends_turn": True, "skipped": True}},
                )
    return answers


def repeat_stop(messages: Sequence[AnyMessage]) -> dict[str, Any] | None:
    """What the turn ends with when the guard answered the latest reply's calls with an
    end: the repeated call's name, how many times, and the limit; else ``None``."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return None
        if isinstance(message, ToolMessage):
            info = _guard_info(message)
            if info and info.get("ends_turn") and not info.get("skipped"):
                return {"name": message.name, "count": info["count"], "limit": info["limit"]}
    return None
