"""The repeat guard: a read made again in the same user turn, after its result is in the
thread and nothing has written since, is answered with that result instead of running
again (shared by the nodes).

A weak model often writes the same call reply after reply; each run costs a tool call
and, worse, another model call that sees the same thing. The guard decides from the
history alone (so a resumed thread decides the same), in one function,
:func:`repeat_answers`, which both the ``approve`` node (so no one is asked about a call
that will not run) and :meth:`~fncall_graph.nodes.tools.ToolDispatchNode.dispatch`
(where a reply's calls are sent to the tools node) apply.

What counts as a read is the trusted rule of
:func:`~fncall_graph.adapters.tool_effects.is_read_only`; every other known tool is a
write (a tool that says nothing may write). The rules:

- a read whose name and arguments (JSON with sorted keys) match a read of this turn
  that already has a result that is not a failure is answered with a short note and
  that result, and not run, unless a write that may touch what it reads ran since
  that result's reply (that reply and the one being decided included: calls of one reply
  run at the same time; a write a person rejected ran nothing and changed nothing, so
  it does not count): then it runs again, and its new result is the one repeats are
  answered from. A write touches a read when both are tools of one MCP server (their
  ``metadata["mcp_server"]``); a tool that is not an MCP server's may touch anything, so
  a write of one touches every read, and a read of one is touched by every write;
- a write is never answered from an earlier result: made again after its result is in
  the thread, it runs again (and, when it is gated by ``interrupt_on``, is asked about
  again). The guard never stops a write: a model that loops on a write is stopped by its
  approvals, when gated, and by ``max_iterations``;
- a read that failed may run once more: after two failures (and no success) of the same
  read, a third is answered with the last failure. A result counts as a failure when its
  ``status`` is ``"error"``, or its text starts with ``Error``, ``Exception``, ``Failed``
  or ``Failure`` (most tools and MCP servers that report a failure in their text begin it
  so; a read whose real result begins so runs once more than it needs to);
- the ``max_repeats``-th answered repeat of one read ends the turn: it is answered "not
  run" (``status="error"``), as is every other call of the same reply, as LangChain's
  ``ToolCallLimitMiddleware(exit_behavior="end")`` does; the model node then ends the
  turn with an assistant message saying why (:func:`repeat_stop`), the one place that
  ends a turn with a reason, as it does at ``max_iterations``;
- a new user turn starts afresh: a new question may read the same thing again.

Every answer carries ``artifact={REPEAT_KEY: {...}}``, which is how the guard counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.tools import BaseTool

from fncall_graph.adapters.formats.base import text_of
from fncall_graph.adapters.tool_effects import is_read_only

from .boundary import current_turn
from .error_answers import error_answer, not_run

__all__ = []

DEFAULT_MAX_REPEATS = 2
"""Repeats of one read allowed in a user turn by default; the second repeat (the third
identical call) ends the turn."""

REPEAT_KEY = "fncall_repeat"
"""The key of the ``artifact`` of a ``ToolMessage`` the repeat guard wrote."""

RETRIES_AFTER_FAILURE = 1
"""How many more times a read that failed may run in a turn."""

# how a tool's text says it failed when its status does not (checked at the start only)
_FAILURE_TEXT = re.compile(r"\s*(?:error|exception|failed|failure)\b", re.IGNORECASE)


def call_key(call: ToolCall) -> str:
    """The call's identity for the guard: its name and arguments, canonically."""
    return json.dumps(
        [call["name"], call.get("args") or {}], sort_keys=True, ensure_ascii=False, default=str
    )


def failed(message: ToolMessage) -> bool:
    """Whether a result says its call failed: ``status="error"``, or text that starts
    with ``Error``, ``Exception``, ``Failed`` or ``Failure``."""
    return message.status == "error" or bool(_FAILURE_TEXT.match(text_of(message.content)[:64]))


def _guard_info(message: ToolMessage) -> dict[str, Any] | None:
    artifact = message.artifact
    if isinstance(artifact, dict) and isinstance(artifact.get(REPEAT_KEY), dict):
        return artifact[REPEAT_KEY]
    return None


def _reads(tool: BaseTool | None) -> bool:
    return tool is not None and is_read_only(tool)


def _server(tool: BaseTool) -> Any:
    return (tool.metadata or {}).get("mcp_server")


def _touches(write: BaseTool, read: BaseTool) -> bool:
    """Whether a call of ``write`` may change what ``read`` reads."""
    w, r = _server(write), _server(read)
    return w is None or r is None or w == r


@dataclass
class _Read:
    """What this turn knows of one read (by :func:`call_key`) since the last write
    that touches it."""

    tool: BaseTool
    ok: ToolMessage | None = None
    failures: list[ToolMessage] = field(default_factory=list)


class _Turn:
    """The turn's reads, as the guard reads them from the history."""

    def __init__(self, tools: Mapping[str, BaseTool], not_run: set[str]) -> None:
        self.tools = tools
        # calls answered as never run (a person rejected them): their writes changed nothing
        self.not_run = not_run
        self.reads: dict[str, _Read] = {}
        self.calls: dict[str, ToolCall] = {}
        self.repeats: dict[str, int] = {}
        # reads made in a reply beside a write that touches them: their results may be
        # from before or after it, so they answer no repeat
        self.beside_write: set[str] = set()

    def writes_of(self, reply: AIMessage) -> list[BaseTool]:
        """The tools ``reply`` writes with, but for calls answered as never run."""
        tools = (self.tools.get(c["name"]) for c in reply.tool_calls if c["id"] not in self.not_run)
        return [t for t in tools if t is not None and not _reads(t)]

    def reply(self, reply: AIMessage) -> None:
        """A reply of the turn: its writes make the reads they touch stale."""
        writes = self.writes_of(reply)
        for key, read in list(self.reads.items()):
            if any(_touches(w, read.tool) for w in writes):
                del self.reads[key]
        for call in reply.tool_calls:
            self.calls[call["id"] or ""] = call
            tool = self.tools.get(call["name"])
            if _reads(tool) and any(_touches(w, tool) for w in writes):  # type: ignore[arg-type]
                self.beside_write.add(call["id"] or "")

    def result(self, message: ToolMessage) -> None:
        info = _guard_info(message)
        if info is not None:
            if info.get("of"):
                self.repeats[info["of"]] = self.repeats.get(info["of"], 0) + 1
            return
        call = self.calls.get(message.tool_call_id)
        tool = self.tools.get(call["name"]) if call is not None else None
        if call is None or not _reads(tool) or message.tool_call_id in self.beside_write:
            return
        read = self.reads.setdefault(call_key(call), _Read(tool))  # type: ignore[arg-type]
        if read.ok is not None:
            return
        if failed(message):
            read.failures.append(message)
        else:
            read.ok = message

    def earlier(self, call: ToolCall) -> ToolMessage | None:
        """The result a repeat of ``call`` is answered from; ``None``: it runs."""
        read = self.reads.get(call_key(call))
        if read is None:
            return None
        if read.ok is not None:
            return read.ok
        if len(read.failures) > RETRIES_AFTER_FAILURE:
            return read.failures[-1]
        return None


def _the_reply(message: AIMessage, turn: Sequence[AnyMessage]) -> int | None:
    """Where the reply ``message`` is in the turn (it may be a copy holding only some of
    its calls, as after a review), if it is there."""
    for i in range(len(turn) - 1, -1, -1):
        m = turn[i]
        if isinstance(m, AIMessage) and (m is message or (message.id and m.id == message.id)):
            return i
    return None


def repeat_answers(
    message: AIMessage,
    history: Sequence[AnyMessage],
    max_repeats: int | None,
    tools: Mapping[str, BaseTool],
) -> dict[str, ToolMessage]:
    """The answers, by call id, to the calls of ``message`` the guard keeps from running;
    the calls left out run.

    Args:
        message: the reply whose calls are decided (or a copy of it holding only some
            of its calls: its whole self in ``history`` decides what it writes).
        history: the thread (``message`` may be in it, with or without answers).
        max_repeats: answered repeats of one read before the turn ends; ``None`` turns
            the guard off.
        tools: the graph's tools by name (what a call's effects are read from; a call
            of an unknown tool is neither a read nor a write).

    When one call is the ``max_repeats``-th repeat, every call of ``message`` is
    answered (the turn ends after them).
    """
    if max_repeats is None or not message.tool_calls:
        return {}
    turn = current_turn(history)
    at = _the_reply(message, turn)
    whole = turn[at] if at is not None else message
    assert isinstance(whole, AIMessage)
    # a call answered as never run: rejected by a person, or skipped by the guard
    never_ran = {
        m.tool_call_id
        for m in turn
        if isinstance(m, ToolMessage) and (not_run(m) or (_guard_info(m) or {}).get("skipped"))
    }
    seen = _Turn(tools, never_ran)
    for m in turn[:at] if at is not None else turn:
        if isinstance(m, AIMessage):
            seen.reply(m)
        elif isinstance(m, ToolMessage):
            seen.result(m)
    seen.reply(whole)  # its writes make what they touch stale for its own reads
    answers: dict[str, ToolMessage] = {}
    ending: ToolCall | None = None
    for call in message.tool_calls:
        if (call["id"] or "") in seen.beside_write:
            continue
        earlier = seen.earlier(call)
        if earlier is None:
            continue
        count = seen.repeats.get(earlier.tool_call_id, 0) + 1
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
        elif failed(earlier):
            answers[call["id"] or ""] = error_answer(
                call,
                f"Not run again: {call['name']} failed "
                f"{RETRIES_AFTER_FAILURE + 1} times with these arguments in this turn. "
                f"Its last result was:\n{text_of(earlier.content)}\n"
                "Do not call it again now: answer the user, or make a different call.",
                {REPEAT_KEY: info},
            )
        else:
            answers[call["id"] or ""] = ToolMessage(
                content=(
                    f"Not run again: {call['name']} was already called with these "
                    "arguments in this turn, and nothing it reads was written since. "
                    f"Its result was:\n{text_of(earlier.content)}\n"
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


def calls_that_run(
    message: AIMessage,
    calls: Sequence[ToolCall],
    history: Sequence[AnyMessage],
    max_repeats: int | None,
    tools: Mapping[str, BaseTool],
) -> list[ToolCall]:
    """Those of ``calls`` (calls of the reply ``message``) the guard lets run: what a
    review may ask about (:func:`repeat_answers` decides)."""
    if max_repeats is None or not calls:
        return list(calls)
    answered = repeat_answers(
        message.model_copy(update={"tool_calls": list(calls)}), history, max_repeats, tools
    )
    return [c for c in calls if (c["id"] or "") not in answered]


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
