"""Repairs made to a call block after its reader read it, for every format.

One for now: a JSON call whose only flaw is the call object's own closing ``}``, missing
at the end of the block (the model stopped right after a whole arguments object). Agent
runtimes close such braces (LiteLLM's and hermes-agent's tool-argument repair); here only
that one brace, and only when the arguments are whole: a call cut inside its arguments is
never completed.

Engine: agent runtimes' argument repair (LiteLLM, hermes-agent); no server makes it.
"""

from __future__ import annotations

from ..calls import CallEvent, InvalidCallEvent, ParseEvent
from ..markup import Block
from .base import Reader

__all__ = []


def json_call_repaired(
    reader: Reader, block: Block, text: str, events: list[ParseEvent], *, closed: bool
) -> list[ParseEvent] | None:
    """The block read again with the call object's missing ``}`` added, or ``None``.

    Only when ``reader`` found one unreadable call and nothing else, the block's text is
    one JSON object left open by exactly one brace, no string is open, and it ends in a
    ``}`` (a whole value just closed).

    Example:
        >>> from fncall_graph.adapters.formats.markup import TOOL_CALL
        >>> from fncall_graph.adapters.formats.readers.tool_call_tag import ToolCallTagReader
        >>> reader, text = ToolCallTagReader(), '{"name": "f", "arguments": {"a": 1}'
        >>> events = list(reader.read_block(TOOL_CALL, text, closed=False))
        >>> [e.call["args"] for e in json_call_repaired(reader, TOOL_CALL, text, events,
        ...                                              closed=False)]
        [{'a': 1}]
    """
    bad = [e for e in events if isinstance(e, InvalidCallEvent)]
    if len(bad) != 1 or any(isinstance(e, CallEvent) for e in events):
        return None
    body = text.rstrip()
    start = body.lstrip()
    if not start.startswith("{") or not body.endswith("}") or _depth(start) != 1:
        return None
    again = list(reader.read_block(block, body + "}", closed=closed))
    if len(again) == 1 and isinstance(again[0], CallEvent):
        return again
    return None


def _depth(text: str) -> int:
    """How many brackets ``text`` leaves open; -1 when it ends inside a string."""
    depth, quoted, escaped = 0, False, False
    for ch in text:
        if escaped:
            escaped = False
        elif quoted:
            if ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return -1 if quoted else depth
