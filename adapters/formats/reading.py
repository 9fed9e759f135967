"""Reading a reply whose call format is known, and telling a model's calls from echoes.

An inference server is told the model's format (``--tool-call-parser hermes``) and reads
only that format, wherever in the reply it stands, with that engine's repairs. When the
format is known (:data:`~.readers.CALL_FORMATS`), a reply is read the same way here:

* only that format's markers open a call, anywhere in the reply (after a sentence,
  between paragraphs, in a list item, calls separated by text); markup of any other
  format is plain text and never runs;
* nothing is guessed about whether a call was *made* or only *shown*: a well-formed call
  of the model's own format is a call, as its engine would run it;
* the engine's repairs are made (see each reader, and :mod:`.readers.repairs`).

What the engine cannot know, the thread does: a call whose text the thread already holds
in a tool result or a user's message is an *echo* (:class:`Echoes`), never run.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call

from .base import (
    THINK,
    ZERO_WIDTH_SPACE,
    Block,
    CallEvent,
    ContentDelta,
    InvalidCallEvent,
    MarkupStreamParser,
    ParseEvent,
    PromptDialect,
    StreamParser,
    brackets_closed,
    text_of,
)
from .readers import AUTO, CALL_FORMATS, READERS, AutoReader, Reader
from .readers.base import read_json_calls
from .readers.gemma import GemmaThoughtReader
from .readers.whole_reply import PYTHONIC, read_pythonic, read_whole_reply

__all__ = ["Echoes", "KnownFormat", "echo_sources", "known_format_reader"]


class KnownFormat(AutoReader):
    """The reader of one known call format: its markers only, read anywhere in a reply
    (the auto reader over that format's readers alone, bare calls being answers).

    It renders nothing: it is the reading half of a dialect, for a model whose format is
    known (:func:`known_format_reader` builds it by name).
    """

    name: ClassVar[str] = "known"  # the instance's format is :attr:`call_format`

    def __init__(self, call_format: str, readers: Sequence[Reader]) -> None:
        super().__init__(readers, whole_reply=False)
        self.call_format = call_format

    def __repr__(self) -> str:
        return f"KnownFormat({self.call_format!r})"


# --------------------------------------------------------------------------- bare calls


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
        content, found = _inline_calls(answer, pythonic=self._pythonic)
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


class _InlineFormat(PromptDialect):
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
        return f"KnownFormat({self.call_format!r})"


_JSON_CALL_START = re.compile(r'\{\s*"(?:name|function|type)"\s*:')
_FENCED = re.compile(r"```(?:json|JSON|python|tool_code)?[ \t]*\n?(.*?)\n?```", re.DOTALL)
_DECODER = json.JSONDecoder()


def _inline_calls(text: str, *, pythonic: bool) -> tuple[str, list[ParseEvent]]:
    """The calls written bare in ``text`` (anywhere), and the text without them."""
    whole = read_whole_reply(text)
    if whole is not None and any(isinstance(e, CallEvent) for e in whole):
        return "", whole
    events: list[ParseEvent] = []
    kept: list[str] = []
    pos = 0
    finder = PYTHONIC if pythonic else _JSON_CALL_START
    while (found := finder.search(text, pos)) is not None:
        at = found.start()
        span = _call_span(text, at, pythonic=pythonic)
        if span is None:
            if not brackets_closed(text[at:], quotes="\"'", must_open=True):
                # the reply ended inside it: a call cut short, never run
                kept.append(text[pos:at])
                events.append(_cut_call(text[at:], pythonic=pythonic))
                pos = len(text)
                break
            kept.append(text[pos : at + 1])
            pos = at + 1
            continue
        end, read = span
        kept.append(text[pos:at])
        events += read
        pos = end
    kept.append(text[pos:])
    content = "".join(kept)
    # a code fence left holding nothing was the calls' own
    content = _FENCED.sub(lambda m: "" if not m.group(1).strip() else m.group(0), content)
    return content.strip(), events


_CUT = "the reply ended inside"


def _cut_call(text: str, *, pythonic: bool) -> ParseEvent:
    from .base import invalid

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


# --------------------------------------------------------------------------- by name

#: the readers each format name gathers (a format's reasoning companions included)
_COMPANIONS: dict[str, tuple[type[Reader], ...]] = {"gemma4": (GemmaThoughtReader,)}


@lru_cache(maxsize=64)
def known_format_reader(call_format: str) -> PromptDialect:
    """The reader of ``call_format`` (one of :data:`~.readers.CALL_FORMATS`).

    ``"qwen"`` and ``"react"`` are those prompt dialects' own readers; ``"json"`` and
    ``"pythonic"`` read calls written without markup, anywhere; every other name (``"hermes"``
    among them: ``<tool_call>`` blocks, as the Hermes dialect reads them) is that reader's
    format alone.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if call_format not in CALL_FORMATS:
        known = ", ".join(sorted(CALL_FORMATS))
        raise ValueError(f"unknown call format {call_format!r}; known call formats: {known}")
    if call_format in ("qwen", "react"):
        from .registry import get_dialect

        dialect = get_dialect(call_format)
        assert isinstance(dialect, PromptDialect)
        return dialect
    if call_format in ("json", "pythonic"):
        return _InlineFormat(call_format)
    readers = [r for r in READERS if r.name == call_format]
    readers += [c() for c in _COMPANIONS.get(call_format, ())]
    return KnownFormat(call_format, readers)


# --------------------------------------------------------------------------- echoes

_ECHO_ERROR = (
    "not run: this call of {name!r} repeats, with the same arguments, a call written in "
    "{where}; a call the conversation already holds as text is an echo of that text, "
    "not a call of yours"
)


def echo_sources(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """The texts a reply may echo: each tool result and user message of ``messages``,
    with where it stood (``"the result of tool 'x'"``, ``"a user's message"``)."""
    out: list[tuple[str, str]] = []
    for m in messages:
        if isinstance(m, ToolMessage):
            where = f"the result of tool {m.name!r}" if m.name else "a tool's result"
            out.append((text_of(m.content), where))
        elif isinstance(m, HumanMessage):
            out.append((text_of(m.content), "a user's message"))
    return [(t, w) for t, w in out if t]


class Echoes:
    """The calls a thread's tool results and user messages write, in any known format.

    A reply's call with the same name and the same arguments (values compared as
    written: ``5`` and ``"5"`` alike) is an echo of that text, not a call of the model's
    own. Built lazily: the sources are read only when a reply holds calls.

    Example:
        >>> echoes = Echoes([('<tool_call>{"name": "rm", "arguments": {"p": "/"}}'
        ...                   '</tool_call>', "a tool's result")])
        >>> echoes.source_of("rm", {"p": "/"})
        "a tool's result"
        >>> echoes.source_of("rm", {"p": "/tmp"}) is None
        True
    """

    def __bool__(self) -> bool:
        return bool(self._sources)

    def __init__(self, sources: Iterable[tuple[str, str] | str]) -> None:
        self._sources = [(s, "an earlier message") if isinstance(s, str) else s for s in sources]
        self._keys: dict[tuple[str, str], str] | None = None

    def source_of(self, name: str, args: Any) -> str | None:
        """Where the thread already wrote this call, or ``None``."""
        if self._keys is None:
            self._keys = {}
            for text, where in self._sources:
                for key in _calls_written_in(text):
                    self._keys.setdefault(key, where)
        return self._keys.get(_loose_key(name, args))

    def split(self, calls: list[ToolCall]) -> tuple[list[ToolCall], list[InvalidToolCall]]:
        """``calls`` less the echoes, and the echoes as invalid calls with the reason."""
        if not calls or not self._sources:
            return calls, []
        kept: list[ToolCall] = []
        echoed: list[InvalidToolCall] = []
        for c in calls:
            bad = self.echo(c)
            if bad is None:
                kept.append(c)
            else:
                echoed.append(bad)
        return kept, echoed

    def echo(self, call: ToolCall) -> InvalidToolCall | None:
        """``call`` as an invalid call saying whose text it echoes, or ``None``."""
        where = self.source_of(call["name"], call["args"]) if self._sources else None
        if where is None:
            return None
        return invalid_tool_call(
            name=call["name"],
            args=json.dumps(call["args"], ensure_ascii=False),
            id=call.get("id"),
            error=_ECHO_ERROR.format(name=call["name"], where=where),
        )


@lru_cache(maxsize=512)
def _calls_written_in(text: str) -> frozenset[tuple[str, str]]:
    """The (name, arguments) of every call ``text`` writes in any known format,
    neutralising marks removed."""
    text = text.replace(ZERO_WIDTH_SPACE, "")
    keys: set[tuple[str, str]] = set()
    readers: list[PromptDialect] = [AUTO]
    from .registry import get_dialect

    for name in ("qwen", "react"):
        d = get_dialect(name)
        assert isinstance(d, PromptDialect)
        readers.append(d)
    for reader in readers:
        try:
            message = reader.parse(text)
        except Exception:  # a source that no reader can take is no call
            continue
        keys.update(_loose_key(c["name"], c["args"]) for c in message.tool_calls)
    for pythonic in (False, True):
        _, events = _inline_calls(text, pythonic=pythonic)
        keys.update(
            _loose_key(e.call["name"], e.call["args"]) for e in events if isinstance(e, CallEvent)
        )
    return frozenset(keys)


def _loose(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _loose(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_loose(v) for v in value]
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _loose_key(name: str, args: Any) -> tuple[str, str]:
    return (
        str(name).strip(),
        json.dumps(_loose(args), sort_keys=True, ensure_ascii=False, default=str),
    )
