"""Calls written with no markup around them, read anywhere in a reply: the ``"json"``
and ``"pythonic"`` call formats once they are known.

::

    Let me check. {"name": "get_weather", "parameters": {"city": "Paris"}}   Llama 3.x JSON
    Sure: [get_weather(city="Paris"), get_time(zone="CET")]                   Llama 3.2 / 4

A JSON call object needs a ``name`` and its arguments (``arguments`` or ``parameters``);
other JSON in the answer stays answer text. A call cut short by the reply's end is
reported, never run.

Engines: vLLM ``llama_tool_parser.py`` (``llama3_json``) and ``xlam_tool_parser.py``
(xLAM's ``[TOOL_CALLS]`` and ``<tool_call>`` wrappers, read here when ``json`` is declared),
``pythonic_tool_parser.py``; the versions in the reference index (xlam a2c54740,
pythonic 630fe7e7), value rules not re-read for this caption.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall

from ..base import PromptDialect
from ..calls import (
    CallEvent,
    ContentDelta,
    InvalidCallEvent,
    ParseEvent,
    StreamParser,
    brackets_closed,
    invalid,
)
from ..markup import THINK, TOOL_CALL, Block
from ..scanner import MarkupStreamParser, Placement
from .base import read_json_calls
from .mistral import TOOL_CALLS
from .whole_reply import PYTHONIC, read_pythonic, read_whole_reply

__all__ = []


class _InlineCalls(StreamParser):
    """Calls written with no markup around them, anywhere in the reply: JSON call objects
    (Llama 3.x JSON tool calling, xLAM) or pythonic call lists (Llama 3.2 / 4).

    The answer is held and read when the reply ends (a call object is known whole only
    then, and may stand anywhere); reasoning goes out as it comes.
    """

    def __init__(self, pythonic: bool) -> None:
        self._pythonic = pythonic
        self._calls: list[ToolCall] = []
        self._invalid: list[InvalidToolCall] = []
        self._content = ""
        self._reasoning = MarkupStreamParser(_ThinkOnly())
        self._closed = False

    def feed(self, chunk: str) -> list[ParseEvent]:
        # reasoning goes out as it comes; the answer is read when the reply ends
        return [e for e in self._reasoning.feed(chunk) if not isinstance(e, ContentDelta)]

    def close(self) -> list[ParseEvent]:
        if self._closed:
            return []
        self._closed = True
        events = [e for e in self._reasoning.close() if not isinstance(e, ContentDelta)]
        answer = str(self._reasoning.message().content)
        if not self._pythonic:
            answer = xlam_unwrapped(answer)
        content, found = bare_calls(answer, pythonic=self._pythonic)
        for ev in found:
            if isinstance(ev, CallEvent):
                self._calls.append(ev.call)
            elif isinstance(ev, InvalidCallEvent):
                self._invalid.append(ev.call)
            events.append(ev)
        self._content = content
        if content:
            events.insert(0, ContentDelta(content))
        return events

    def message(self) -> AIMessage:
        reasoning = self._reasoning.message().additional_kwargs
        return AIMessage(
            content=self._content,
            tool_calls=list(self._calls),
            invalid_tool_calls=list(self._invalid),
            additional_kwargs=dict(reasoning),
        )


class _ThinkOnly(PromptDialect):
    name: ClassVar[str] = "think"
    blocks: tuple[Block, ...] = (THINK,)
    drop_tokens: tuple[str, ...] = (THINK.close[0],)

    def render(self, messages: Sequence[BaseMessage], tools: Any) -> list[BaseMessage]:
        raise NotImplementedError

    def write_assistant(self, message: AIMessage) -> str:
        raise NotImplementedError

    def read_call(self, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return ()


class BareCalls(PromptDialect):
    """``"json"`` and ``"pythonic"``: calls with no markup, read anywhere in the reply."""

    name: ClassVar[str] = "known"

    def __init__(self, call_format: str) -> None:
        self.call_format = call_format

    def render(self, messages: Sequence[BaseMessage], tools: Any) -> list[BaseMessage]:
        raise NotImplementedError("a known format's reader renders no prompt")

    def write_assistant(self, message: AIMessage) -> str:
        raise NotImplementedError("a known format's reader writes no reply")

    def read_call(self, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return ()

    def stream_parser(self) -> StreamParser:
        return _InlineCalls(pythonic=self.call_format == "pythonic")

    def __repr__(self) -> str:
        return f"BareCalls({self.call_format!r})"


#: Where a call of a format written with no markup may start: a reply's stream shows
#: no text from there on until the reply is read (xLAM's wrappers included)
BARE_STARTS: dict[str, tuple[str, ...]] = {
    "json": ("{", "```", TOOL_CALLS, TOOL_CALL.open),
    "pythonic": ("[", "```"),
}

# xLAM's wrappers around its JSON call list (vLLM's xlam reader takes each): a
# [TOOL_CALLS] prefix, a <tool_call> tag pair, a code fence (read by bare_calls itself)
_XLAM_PREFIX = re.compile(re.escape(TOOL_CALLS) + r"\s*(?=[\[{])")
_XLAM_TAGS = re.compile(
    re.escape(TOOL_CALL.open) + r"\s*([\[{].*?)\s*(?:" + re.escape(TOOL_CALL.close[0]) + r"|\Z)",
    re.DOTALL,
)


def xlam_unwrapped(text: str) -> str:
    """``text`` with xLAM's wrappers taken from around JSON calls: ``[TOOL_CALLS][…]`` and
    ``<tool_call>[…]</tool_call>`` are the JSON list they wrap.

    >>> xlam_unwrapped('[TOOL_CALLS][{"name": "f", "arguments": {}}]')
    '[{"name": "f", "arguments": {}}]'
    """
    if TOOL_CALLS not in text and TOOL_CALL.open not in text:
        return text
    return _XLAM_TAGS.sub(lambda m: m.group(1), _XLAM_PREFIX.sub("", text))


_JSON_CALL_START = re.compile(r'\{\s*"(?:name|function|type)"\s*:')
_FENCED = re.compile(r"```(?:json|JSON|python|tool_code)?[ \t]*\n?(.*?)\n?```", re.DOTALL)
_DECODER = json.JSONDecoder()


def bare_calls(text: str, *, pythonic: bool) -> tuple[str, list[ParseEvent]]:
    """The calls written bare in ``text`` (anywhere), and the text without them."""
    whole = read_whole_reply(text)
    if whole is not None and any(isinstance(e, CallEvent) for e in whole):
        return "", whole
    events: list[ParseEvent] = []
    kept: list[str] = []
    pos = fed = 0
    placement = Placement()  # a call only shown (in a list item, quoted, …) is text
    finder = PYTHONIC if pythonic else _JSON_CALL_START
    while (found := finder.search(text, pos)) is not None:
        at = found.start()
        placement.feed(text[fed:at])
        fed = at
        span = _call_span(text, at, pythonic=pythonic)
        if span is None:
            if not brackets_closed(text[at:], quotes="\"'", must_open=True):
                if placement.shown():
                    break  # a quotation the reply's end cut short: text
                # the reply ended inside it: a call cut short, never run
                kept.append(text[pos:at])
                events.append(_cut_call(text[at:], pythonic=pythonic))
                pos = len(text)
                break
            kept.append(text[pos : at + 1])
            pos = at + 1
            continue
        end, read = span
        if placement.shown():
            placement.feed(text[at:end])
            kept.append(text[pos:end])
        else:
            kept.append(text[pos:at])
            events += read
        pos = fed = end
    kept.append(text[pos:])
    content = "".join(kept)
    # a code fence left holding nothing was the calls' own
    content = _FENCED.sub(lambda m: "" if not m.group(1).strip() else m.group(0), content)
    return content.strip(), events


_CUT = "the reply ended inside"


def _cut_call(text: str, *, pythonic: bool) -> ParseEvent:
    kind = "pythonic" if pythonic else "JSON"
    return invalid(text, f"{_CUT} a {kind} tool call before it was complete; not run")


def _call_span(text: str, at: int, *, pythonic: bool) -> tuple[int, list[ParseEvent]] | None:
    """Where the call (or call list) written at ``at`` ends, and its calls."""
    if pythonic:
        depth, quote, i = 0, "", at
        while i < len(text):
            ch = text[i]
            if quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    body = text[at : i + 1]
                    try:
                        ast.parse(body, mode="eval")
                    except SyntaxError:
                        return None
                    read = read_pythonic(body)
                    return (i + 1, read) if read else None
            i += 1
        return None
    # a list of call objects may open just before
    start = at - 1 if at > 0 and text[at - 1] == "[" else at
    try:
        value, end = _DECODER.raw_decode(text, start)
    except ValueError:
        if start != at:
            try:
                value, end = _DECODER.raw_decode(text, at)
            except ValueError:
                return None
        else:
            return None
    items = value if isinstance(value, list) else [value]
    if not items or not all(_is_call(i) for i in items):
        return None
    read = list(read_json_calls(json.dumps(value), closed=True, where="the JSON call"))
    return end, read


def _is_call(item: Any) -> bool:
    if isinstance(item, Mapping) and isinstance(item.get("function"), Mapping):
        item = item["function"]
    return (
        isinstance(item, Mapping)
        and isinstance(item.get("name"), str)
        and any(k in item for k in ("arguments", "parameters"))
    )
