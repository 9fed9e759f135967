"""The small protocol every dialect speaks, and the streaming scanner the prompt dialects share.

A dialect sits at the model boundary. The graph keeps the canonical history
(``AIMessage.tool_calls`` plus one ``ToolMessage`` per call); a dialect

* ``render(messages, tools)`` turns that history into the exact model input,
* ``parse(text)`` turns the model's text back into a canonical ``AIMessage`` (never raises),
* ``stream_parser()`` does the same chunk by chunk, and
* ``stop`` lists the stop sequences the dialect needs.

Prompt dialects describe their markup as data (:class:`Block` rules and drop tokens) and
implement only :meth:`PromptDialect.read_call`; one scanner, :class:`MarkupStreamParser`,
does the rest. ``parse`` is the scanner fed one chunk, so ``parse(text)`` and any chunking
of ``text`` give the same message by construction.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

import json_repair
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
)
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call, tool_call

from .placement import Placement
from .schema import ToolLike

__all__ = [
    "MAX_ARGS_DEPTH",
    "THINK",
    "TOO_DEEP",
    "ZERO_WIDTH_SPACE",
    "Block",
    "CallEvent",
    "ContentDelta",
    "Dialect",
    "InvalidCallEvent",
    "MarkupStreamParser",
    "ParseEvent",
    "PromptDialect",
    "ReasoningDelta",
    "ShownMarkup",
    "StreamParser",
    "brackets_closed",
    "call_from_object",
    "coerce_args",
    "dumps",
    "find_unquoted",
    "group_tool_results",
    "in_json_string",
    "invalid",
    "loads_lenient",
    "nests_too_deep",
    "new_call_id",
    "partition_unquoted",
    "reasoning_of",
    "split_unquoted",
    "text_after_calls",
    "text_of",
]

# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Answer text, markup already removed."""

    text: str


class ShownMarkup(ContentDelta):
    """Answer text that is call markup the reply only shows (in a list item, a code
    block, quotation marks, …: :mod:`.placement`): text, never a call."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning text (``<think>`` blocks, ReAct thoughts), kept apart from the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class CallEvent:
    """A complete, readable tool call.

    ``texts``: the arguments the format wrote as untyped text (``<parameter=n>5``), as
    written, by name; the tool's schema decides their types (:mod:`.arg_types`).
    """

    call: ToolCall
    texts: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class InvalidCallEvent:
    """A tool call that could not be read, with the reason in ``call["error"]``."""

    call: InvalidToolCall


ParseEvent = ContentDelta | ReasoningDelta | CallEvent | InvalidCallEvent


# --------------------------------------------------------------------------- helpers


def text_after_calls(events: Iterable[ParseEvent]) -> str:
    """The answer text a reply's events give after its last call (``""`` for none)."""
    after: list[str] = []
    for ev in events:
        if isinstance(ev, CallEvent | InvalidCallEvent):
            after = []
        elif isinstance(ev, ContentDelta):
            after.append(ev.text)
    return "".join(after)


def new_call_id() -> str:
    """A tool-call id unique across turns and threads (never "1", "2" again)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def dumps(value: Any) -> str:
    """JSON as the Qwen-Agent prompts write it: ``ensure_ascii=False``, default separators."""
    return json.dumps(value, ensure_ascii=False)


def loads_lenient(text: str) -> Any:
    """Read JSON a model wrote, repairing the usual breakage.

    Strict JSON first; then json-repair for single quotes, trailing commas, Python
    literals, missing closing brackets and the like.

    Raises:
        ValueError: when nothing JSON-like can be recovered.
    """
    text = text.strip()
    if not text:
        raise ValueError("empty JSON")
    if nests_too_deep(text):  # never handed to a reader that recurses per bracket
        raise ValueError(TOO_DEEP)
    try:
        return json.loads(text)
    except ValueError:
        pass
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    try:
        value = json_repair.repair_json(text, return_objects=True, skip_json_loads=True)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except Exception as exc:  # json-repair is best effort; anything it throws is "unreadable"
        raise ValueError(f"unreadable JSON: {exc}") from exc
    if value == "" or value is None:
        raise ValueError(f"unreadable JSON: {_clip(text)}")
    return value


def coerce_args(value: Any) -> dict[str, Any]:
    """Arguments as a dict, whether given as an object or as a JSON string.

    Raises:
        ValueError: when the arguments are not a JSON object.
    """
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        value = loads_lenient(value)
        if isinstance(value, str):  # arguments double-encoded as a JSON string
            value = loads_lenient(value)
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    _check_plain(value, "arguments", 0)
    return value


#: How deep call arguments may nest; deeper is refused as unreadable, not recursed into.
MAX_ARGS_DEPTH = 64
#: The error of a call whose arguments nest deeper than :data:`MAX_ARGS_DEPTH`.
TOO_DEEP = f"arguments nest deeper than {MAX_ARGS_DEPTH} levels"
# JSON text deeper than this holds no readable call: arguments, and the call object or
# list around them (``{"tool_calls": [{"function": {"arguments": …}}]}``)
_TEXT_DEPTH = MAX_ARGS_DEPTH + 8


def nests_too_deep(text: str) -> bool:
    """Whether the JSON in ``text`` nests deeper than a call's arguments may, with the
    call's own wrapping (brackets in strings do not count).

    Such text is refused before any reader sees it: JSON's readers recurse per bracket,
    and a model (or provider) writing thousands of them would exhaust Python's stack.

    Example:
        >>> nests_too_deep("[" * 100 + "]" * 100), nests_too_deep('{"a": "' + "[" * 100 + '"}')
        (True, False)
    """
    if text.count("[") + text.count("{") <= _TEXT_DEPTH:
        return False
    state = _StringState()
    state.read(text, 0, len(text))
    return state.deepest > _TEXT_DEPTH


def argument_problem(args: Any) -> str | None:
    """Why a call's decoded arguments cannot go to a tool, or ``None`` when they can.

    The same check text-read calls get: a provider's ``tool_calls`` field can carry
    NaN or infinities (Python's JSON reader takes them) and nesting deep enough to
    break the checkpoint's serializer.

    >>> argument_problem({"x": float("nan")})
    'arguments.x is nan, which is not a JSON number'
    >>> argument_problem({"city": "Paris"}) is None
    True
    """
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    try:
        _check_plain(args, "arguments", 0)
    except ValueError as error:
        return str(error)
    return None


def _check_plain(value: Any, where: str, depth: int) -> None:
    """Refuse what JSON cannot carry to a tool: NaN, infinities, absurd nesting."""
    if depth > MAX_ARGS_DEPTH:
        raise ValueError(TOO_DEEP)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} is {value!r}, which is not a JSON number")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_plain(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]", depth + 1)


def call_from_object(
    obj: Any,
    *,
    raw: str,
    name_key: str = "name",
    args_key: str = "arguments",
    args_keys: Sequence[str] = ("parameters", "args"),
) -> ParseEvent:
    """Turn a decoded ``{"name": ..., "arguments": ...}`` object into a call event."""
    if not isinstance(obj, dict):
        return invalid(raw, f"expected a JSON object with {name_key!r}, got {type(obj).__name__}")
    name = obj.get(name_key)
    if not isinstance(name, str) or not name.strip():
        return invalid(raw, f"missing tool name ({name_key!r})")
    args = obj.get(args_key)
    for key in args_keys:
        if args is None:
            args = obj.get(key)
    try:
        return CallEvent(tool_call(name=name.strip(), args=coerce_args(args), id=new_call_id()))
    except ValueError as exc:
        return invalid(raw, f"bad arguments for {name.strip()!r}: {exc}", name=name.strip())


def invalid(raw: str, error: str, *, name: str | None = None) -> InvalidCallEvent:
    return InvalidCallEvent(invalid_tool_call(name=name, args=raw, id=new_call_id(), error=error))


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def text_of(content: str | list[Any] | None) -> str:
    """The text of message content, whether a string or a list of content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type", "text") == "text" and "text" in block:
            parts.append(str(block["text"]))
    return "".join(parts)


def reasoning_of(message: BaseMessage) -> str:
    return str(message.additional_kwargs.get("reasoning_content") or "")


def group_tool_results(messages: Sequence[BaseMessage]) -> list[BaseMessage | list[ToolMessage]]:
    """The history with each run of ``ToolMessage``s gathered into one list.

    Results are put in the order of the calls they answer (matched by ``tool_call_id``),
    so parallel results that finished in any order render in call order, as the
    prompt dialects need ("tool_response and tool_call correspond one by one").
    """
    out: list[BaseMessage | list[ToolMessage]] = []
    order: dict[str, int] = {}
    for msg in messages:
        if isinstance(msg, ToolMessage):
            if out and isinstance(out[-1], list):
                out[-1].append(msg)
            else:
                out.append([msg])
            continue
        if out and isinstance(out[-1], list):
            out[-1].sort(key=lambda m: order.get(m.tool_call_id, len(order)))
        if isinstance(msg, AIMessage):
            order = {c["id"]: i for i, c in enumerate(msg.tool_calls) if c.get("id")}
        out.append(msg)
    if out and isinstance(out[-1], list):
        out[-1].sort(key=lambda m: order.get(m.tool_call_id, len(order)))
    return out


# --------------------------------------------------------------------------- protocol


class StreamParser(ABC):
    """Fed chunks of a model's text, yields events as soon as they are certain."""

    @abstractmethod
    def feed(self, chunk: str) -> list[ParseEvent]:
        """Take the next chunk; return what it completes."""

    @abstractmethod
    def close(self) -> list[ParseEvent]:
        """End of output: flush what was held back (an unclosed last call included)."""

    @abstractmethod
    def message(self) -> AIMessage:
        """The canonical ``AIMessage`` for everything fed so far (call after :meth:`close`)."""


class Dialect(ABC):
    """How one family of models is spoken to about tools.

    Attributes:
        name: the registry name (``"hermes"``, ``"qwen"``, ``"react"``, ``"native"``).
        stop: stop sequences to pass with every model call in this dialect.
        native: ``True`` when tools go through the provider's ``bind_tools``
            instead of prompt text.
    """

    name: ClassVar[str]
    native: ClassVar[bool] = False
    stop: tuple[str, ...] = ()

    @abstractmethod
    def render(
        self, messages: Sequence[BaseMessage], tools: Sequence[ToolLike] | None
    ) -> list[BaseMessage]:
        """The exact model input for the canonical ``messages`` and ``tools``."""

    def parse(self, text: str) -> AIMessage:
        """The canonical ``AIMessage`` for a whole reply; never raises."""
        parser = self.stream_parser()
        parser.feed(text)
        parser.close()
        return parser.message()

    @abstractmethod
    def stream_parser(self) -> StreamParser:
        """A fresh incremental parser, equivalent to :meth:`parse` for any chunking."""

    def fit_to_tools(self, message: AIMessage, tools: Sequence[ToolLike] | None) -> AIMessage:
        """``message`` with calls written in this dialect's loose forms fitted to ``tools``
        (ReAct's bare ``action_input`` string); as it is for most dialects."""
        return message

    def grammar(
        self,
        tools: Sequence[ToolLike] | None,
        *,
        require_call: bool = False,
        one_call: bool = False,
        answer_json: Mapping[str, Any] | None = None,
    ) -> str | None:
        """A GBNF grammar constraining replies to this dialect's call format, if it has one.

        With ``require_call`` the grammar admits tool calls only, no plain answer; with
        ``one_call`` at most one call per reply (``parallel_tool_calls=False``); with
        ``answer_json`` (a JSON schema) the plain answer is JSON of that schema, written
        where this dialect writes its answer.
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# --------------------------------------------------------------------------- scanner


@dataclass(frozen=True)
class Block:
    """A stretch of markup in a prompt dialect's output.

    Attributes:
        open: the marker that starts it (``"<tool_call>"``, ``"✿FUNCTION✿"``, ``"Action:"``).
        close: markers that end it; the end of output ends it too.
        kind: ``"call"`` (text read by :meth:`PromptDialect.read_call`), ``"reasoning"``
            (streamed as reasoning) or ``"drop"`` (discarded, e.g. an invented observation).
        consume_close: ``False`` when the end marker also starts what follows
            (Qwen's next ``✿FUNCTION✿``, ReAct's ``Action:`` after a thought).
    """

    open: str
    close: tuple[str, ...]
    kind: Literal["call", "reasoning", "drop"]
    consume_close: bool = True


THINK = Block("<think>", ("</think>",), "reasoning")
ZERO_WIDTH_SPACE = "\u200b"
#: ChatML's turn markers: a prompt rendered by any chat template may be read by them.
CHATML = ("<|im_start|>", "<|im_end|>")


def neutralise(text: str, markers: Sequence[str]) -> str:
    """``text`` with every one of ``markers`` broken by a zero-width space.

    Text the model did not write (a tool result, a user's message) may hold call markup
    of any format the readers know, or ChatML turn markers; echoed by the model, it would
    read as a call of the model's own. Broken, the model still reads the same characters
    and no reader sees a marker in them (the dialects pass every format's markers,
    :data:`~fncall_graph.adapters.formats.readers.KNOWN_MARKUP`, and their own).

    Example:
        >>> neutralise("[TOOL_CALLS][]", ["[TOOL_CALLS]"]) == "[\u200bTOOL_CALLS][]"
        True
    """
    pattern = _breaker(tuple(markers))
    if pattern is None:
        return text
    while True:  # a marker inside a longer one (``<tool_call>`` in MiniMax's) too
        broken = pattern.sub(_break, text)
        if broken == text:
            return text
        text = broken


def _break(match: re.Match[str]) -> str:
    marker = match.group()
    return marker[0] + ZERO_WIDTH_SPACE + marker[1:]


@lru_cache(maxsize=16)
def _breaker(markers: tuple[str, ...]) -> re.Pattern[str] | None:
    # a one-character marker cannot be broken (and no format has one)
    usable = sorted({m for m in markers if len(m.strip()) > 1}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, usable))) if usable else None


class _Trimmed:
    """Joins text deltas as if the whole were ``.strip()``-ed, without seeing the whole.

    Leading white space is dropped; trailing white space is held until more text follows.
    """

    __slots__ = ("held", "parts", "started")

    def __init__(self) -> None:
        self.started = False
        self.held = ""
        self.parts: list[str] = []

    def push(self, text: str) -> str:
        if not self.started:
            text = text.lstrip()
            if not text:
                return ""
            self.started = True
        body = text.rstrip()
        if not body:
            self.held += text
            return ""
        out = self.held + body
        self.held = text[len(body) :]
        self.parts.append(out)
        return out

    def value(self) -> str:
        return "".join(self.parts)


class MarkupStreamParser(StreamParser):
    """One incremental scanner for every prompt dialect.

    Work per chunk is bounded by the chunk plus the longest marker: text is scanned
    once, a suffix that could still become a marker is held back, and a call's text is
    read once, when its block ends.
    """

    def __init__(self, dialect: PromptDialect) -> None:
        self._dialect = dialect
        self._blocks = dialect.blocks
        self._drops = dialect.drop_tokens
        self._outside = tuple(b.open for b in self._blocks) + self._drops
        self._outside_table = _marker_table(self._outside)
        # the first block listed for a marker wins; a drop token opens no block
        self._opened_by: dict[str, Block | None] = dict.fromkeys(self._drops)
        for b in reversed(self._blocks):
            self._opened_by[b.open] = b
        self._pending = ""
        self._block: Block | None = None
        self._block_text: list[str] = []
        # where the reply's text stands; a call opened where it quotes is only shown
        self._placement = Placement()
        self._shown: str | None = None  # the opening marker of a call block only shown
        self._content = _Trimmed()
        self._reasoning = _Trimmed()
        self._calls: list[ToolCall] = []
        self._invalid: list[InvalidToolCall] = []
        self._closed = False
        self._reread = True  # False in a parser reading text a call block handed back

    # -- public

    def feed(self, chunk: str) -> list[ParseEvent]:
        if self._closed:
            raise RuntimeError("feed() after close()")
        self._pending += chunk
        return self._scan(final=False)

    def close(self) -> list[ParseEvent]:
        if self._closed:
            return []
        events = self._scan(final=True)
        if self._block is not None:
            self._block_text.append(self._pending)
            self._pending = ""
            events += self._end_block(closed=False)
        self._closed = True
        return events

    def message(self) -> AIMessage:
        kwargs: dict[str, Any] = {}
        reasoning = self._reasoning.value()
        if reasoning:
            kwargs["reasoning_content"] = reasoning
        return AIMessage(
            content=self._content.value(),
            tool_calls=list(self._calls),
            invalid_tool_calls=list(self._invalid),
            additional_kwargs=kwargs,
        )

    # -- scanning

    def _scan(self, *, final: bool) -> list[ParseEvent]:
        # Works on offsets into the pending text and slices it once at the end, so a
        # long chunk holding many blocks is scanned in one pass, not copied per block.
        events: list[ParseEvent] = []
        text, pos = self._pending, 0
        while True:
            block = self._block
            if block is None:
                table, sink = self._outside_table, self._emit_text
            else:
                table, sink = _marker_table(block.close), self._inside
            if table.first is None or table.first(text, pos) is None:
                # no marker can start in the rest (the usual chunk): all of it is text
                sink(text[pos:], events)
                self._pending = ""
                return events
            hit = _find_from(text, pos, table, final)
            if hit is None or hit[2]:
                # no marker yet (hold back what could start one), or one that may still grow
                end = hit[0] if hit else (len(text) if final else _held_from(text, pos, table))
                sink(text[pos:end], events)
                self._pending = text[end:]
                return events
            at, marker, _ = hit
            sink(text[pos:at], events)
            if block is None:
                pos = at + len(marker)
                self._open_block(marker)
            elif block.kind == "call" and not self._may_close(block, marker):
                # the closer stands inside an argument: it is the argument's text
                self._block_text.append(marker)
                pos = at + len(marker)
            else:
                pos = at + (len(marker) if block.consume_close else 0)
                events += self._end_block(closed=True, closer=marker)

    def _open_block(self, marker: str) -> None:
        """Enter the block ``marker`` opens (a drop token opens none)."""
        self._block = self._opened_by[marker]
        self._block_text = []
        if self._block is None:
            self._placement.token()  # a wrapper: the call it holds stands where it does
        elif self._block.kind == "call":
            # a call opened where the reply quotes (a list item, a code block, …) is shown
            self._shown = marker if self._placement.shown() else None

    def _may_close(self, block: Block, marker: str) -> bool:
        try:
            return self._dialect.block_may_close(block, "".join(self._block_text), marker)
        except Exception:  # a dialect bug must not lose the reply: the closer closes
            return True

    def _emit_text(self, text: str, events: list[ParseEvent], *, shown: bool = False) -> None:
        if text:
            self._placement.feed(text)
            delta = self._content.push(text)
            if delta:
                events.append(ShownMarkup(delta) if shown else ContentDelta(delta))

    def _inside(self, text: str, events: list[ParseEvent]) -> None:
        if not text or self._block is None:
            return
        if self._block.kind == "reasoning":
            delta = self._reasoning.push(text)
            if delta:
                events.append(ReasoningDelta(delta))
        elif self._block.kind == "call":
            self._block_text.append(text)

    def _end_block(self, *, closed: bool, closer: str = "") -> list[ParseEvent]:
        block, self._block = self._block, None
        if block is None or block.kind != "call":
            return []
        raw = "".join(self._block_text)
        self._block_text = []
        events: list[ParseEvent] = []
        if self._shown is not None:  # quoted, not made: the markup is the answer's text
            shown = self._shown + raw + (closer if block.consume_close else "")
            self._shown = None
            self._emit_text(shown, events, shown=True)
            return events
        try:
            produced = list(self._dialect.read_block(block, raw, closed=closed))
        except RecursionError:  # a format's own reader recursing per bracket (Gemma's)
            produced = [invalid(raw, f"could not read tool call: {TOO_DEEP}")]
        except Exception as exc:  # a dialect bug must not lose the reply: report it as a bad call
            produced = [invalid(raw, f"could not read tool call: {exc!r}")]
        self._take(produced, events)
        return events

    def _take(
        self, produced: Iterable[ParseEvent], events: list[ParseEvent], *, reread: bool = True
    ) -> None:
        for ev in produced:
            if isinstance(ev, CallEvent):
                self._calls.append(ev.call)
                events.append(ev)
            elif isinstance(ev, InvalidCallEvent):
                self._invalid.append(ev.call)
                events.append(ev)
            elif isinstance(ev, ContentDelta):
                search = self._outside_table.search
                if reread and self._reread and search is not None and search(ev.text, 0):
                    # text a call block handed back (after Qwen's ✿RETURN✿, say) can hold
                    # markup of its own: read it (once) as the rest of a reply
                    inner = MarkupStreamParser(self._dialect)
                    inner._reread = False
                    self._take([*inner.feed(ev.text), *inner.close()], events, reread=False)
                else:
                    self._emit_text(ev.text, events)
            elif isinstance(ev, ReasoningDelta):
                delta = self._reasoning.push(ev.text)
                if delta:
                    events.append(ReasoningDelta(delta))


def _find_from(
    text: str, pos: int, table: _MarkerTable, final: bool
) -> tuple[int, str, bool] | None:
    """Earliest marker in ``text[pos:]`` (longest on a tie), as ``(index, marker, wait)``,
    the index counted in ``text``.

    ``wait`` is true when the match could still grow into a longer marker with more
    text, so the caller holds it back instead of deciding too soon.
    """
    found = table.search(text, pos) if table.search is not None else None
    if found is None:
        return None
    at, marker = found.start(), found.group()
    # only a rest no longer than the longest marker can still grow into one
    # (the match is the longest marker there, so a longer one would still be growing)
    wait = not final and len(text) - at <= table.longest and text[at:] in table.growing
    return (at, marker, wait)


def _held_from(text: str, pos: int, table: _MarkerTable) -> int:
    """Where the held-back suffix of ``text[pos:]`` starts (``len(text)`` for none).

    Called once per chunk, so suffixes are looked up in the table built once per marker
    set, and only where a marker's first character stands.
    """
    n = len(text)
    start = max(pos, n - table.longest)
    if table.first is None or start >= n:
        return n
    first = table.first(text, start)
    while first is not None:
        at = first.start()
        if text[at:] in table.growing:  # (a whole marker there would have been found)
            return at
        first = table.first(text, at + 1)
    return n


@dataclass(frozen=True, slots=True)
class _MarkerTable:
    """What the scanner needs to know about one set of markers, computed once.

    Attributes:
        search: ``search(text, pos)`` finds the earliest marker, the longest one on a tie
            (alternatives are tried longest first); ``None`` for no markers.
        first: ``first(text, pos)`` finds the next character a marker starts with.
        longest: the longest marker's length minus one (the most text ever held back).
        growing: every proper prefix of a marker (text that may still become one).
    """

    search: Callable[[str, int], re.Match[str] | None] | None
    first: Callable[[str, int], re.Match[str] | None] | None
    longest: int
    growing: frozenset[str]


@lru_cache(maxsize=256)
def _marker_table(markers: tuple[str, ...]) -> _MarkerTable:
    by_length = sorted(markers, key=len, reverse=True)
    search = re.compile("|".join(map(re.escape, by_length))).search if markers else None
    firsts = sorted({m[0] for m in markers if m})
    first = re.compile("|".join(map(re.escape, firsts))).search if firsts else None
    longest = max((len(m) for m in markers), default=1) - 1
    growing = frozenset(m[:j] for m in markers for j in range(1, len(m)))
    return _MarkerTable(search, first, longest, growing)


class PromptDialect(Dialect):
    """A dialect that writes tools into the prompt and reads calls out of text.

    Subclasses give ``blocks`` and ``drop_tokens`` as data and implement
    :meth:`read_call`; parsing and streaming come from :class:`MarkupStreamParser`.
    """

    blocks: tuple[Block, ...] = (THINK,)
    drop_tokens: tuple[str, ...] = ()
    #: Markup that, inside a tool result or a user's text, would read as a call, a result
    #: or a turn of the model's own: written broken there (see :meth:`neutralise`).
    control_markers: tuple[str, ...] = ()

    def neutralise(self, text: str) -> str:
        """``text`` with this dialect's control markup (its own, ChatML's and every
        format's the readers know) broken by a zero-width space (:func:`neutralise`).

        A tool result (or a user) holding ``</tool_response><tool_call>...`` would
        otherwise forge a turn in the prompt. The model still reads the same
        characters; no parser of this dialect sees a marker in them.

        Example:
            >>> from fncall_graph.adapters import get_dialect
            >>> get_dialect("qwen").neutralise("✿FUNCTION✿: x") == "✿\u200bFUNCTION✿: x"
            True
        """
        return neutralise(text, self.control_markers)

    @abstractmethod
    def write_assistant(self, message: AIMessage) -> str:
        """One canonical assistant turn as this dialect's model would have written it.

        ``parse(write_assistant(m))`` gives back the calls of ``m``; ``render`` uses it
        to write earlier turns into the prompt.
        """

    @abstractmethod
    def read_call(self, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        """Read the text of one call block.

        Args:
            text: what stood between the block's markers.
            closed: ``False`` when the output ended inside the block.

        Yields call events, invalid-call events, or content that was not part of the call.
        """

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        """Read one call block; a dialect with one kind of call block reads it with
        :meth:`read_call`, a reader of many formats by the block it is."""
        return self.read_call(text, closed=closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        """Whether ``marker``, met after ``text`` inside the call block ``block``, ends it.

        ``False`` when the marker stands inside an argument (a closer in source code the
        call passes): it is then read as the argument's text. The decision looks only at
        the text before the marker, so any chunking gives the same result. The rule for
        JSON arguments (:func:`in_json_string`) unless a dialect knows better.
        """
        return block.kind != "call" or not in_json_string(text)

    def stream_parser(self) -> StreamParser:
        return MarkupStreamParser(self)


def in_json_string(text: str) -> bool:
    r"""Whether ``text`` (a call's text so far) ends inside a JSON string.

    The one rule for markup written inside an argument's string (``</tool_call>``,
    ``✿RESULT✿``, ``Observation:`` in code or prose a call passes): it is that argument's
    text and never ends the call, nor splits it. The scanner asks it of a closer
    (:meth:`PromptDialect.block_may_close`); readers that split a call's text on markers
    use :func:`find_unquoted`, :func:`split_unquoted` and :func:`partition_unquoted`.

    The text is read from its first bracket: a ``"`` opens a string only inside ``{…}`` or
    ``[…]``, so quotes in the markup or prose around the JSON (``Action: "search"``) do
    not count; escapes inside a string (``\"``, ``\\``) are followed.

    Example:
        >>> in_json_string('{"code": "</tool_call>'), in_json_string(r'{"say": "\"hi\" ')
        (True, True)
        >>> in_json_string(r'{"dir": "C:\\"'), in_json_string(r'{"dir": "C:\\')
        (False, True)
        >>> in_json_string('Said "hi'), in_json_string('{"a": 1} and "')
        (False, False)
    """
    state = _StringState()
    state.read(text, 0, len(text))
    return state.quoted


def find_unquoted(text: str, marker: str, start: int = 0) -> int:
    """The index of the first ``marker`` at or after ``start`` that stands outside the
    JSON strings of ``text`` (read from its beginning, see :func:`in_json_string`), or -1.

    Example:
        >>> find_unquoted('{"a": "x<e>"}<e>', "<e>")
        13
    """
    state = _StringState()
    done = 0
    at = text.find(marker, start)
    while at >= 0:
        state.read(text, done, at)
        done = at
        if not state.quoted:
            return at
        at = text.find(marker, at + 1)
    return -1


def split_unquoted(text: str, marker: str) -> list[str]:
    """``text.split(marker)``, but a ``marker`` inside a JSON string does not split.

    Example:
        >>> split_unquoted('a|{"b": "|"}|c', "|")
        ['a', '{"b": "|"}', 'c']
    """
    parts: list[str] = []
    start = 0
    while (at := find_unquoted(text, marker, start)) >= 0:
        parts.append(text[start:at])
        start = at + len(marker)
    parts.append(text[start:])
    return parts


def partition_unquoted(text: str, marker: str) -> tuple[str, str, str]:
    """``text.partition(marker)``, but a ``marker`` inside a JSON string does not count."""
    at = find_unquoted(text, marker)
    if at < 0:
        return text, "", ""
    return text[:at], marker, text[at + len(marker) :]


class _StringState:
    """The bracket depth and string state of JSON text read so far (see :func:`in_json_string`)."""

    __slots__ = ("deepest", "depth", "escaped", "quoted")

    def __init__(self) -> None:
        self.depth = 0
        self.deepest = 0
        self.quoted = False
        self.escaped = False  # a backslash in a string ended the text read so far

    def read(self, text: str, start: int, end: int) -> None:
        """Read ``text[start:end]``, the stretch after what was read before."""
        if start >= end:
            return
        depth, quoted, deepest = self.depth, self.quoted, self.deepest
        if self.escaped:
            start += 1  # the character the backslash escapes
            self.escaped = False
        for match in _JSON_SIGNS.finditer(text, start, end):
            sign = match.group()
            if sign[0] == "\\":
                # an escape pair inside a string; a lone backslash ends the stretch
                self.escaped = quoted and len(sign) == 1
            elif quoted:
                quoted = sign != '"'
            elif sign == '"':
                quoted = depth > 0
            elif sign in "{[":
                depth += 1
                deepest = max(deepest, depth)
            else:
                depth = max(depth - 1, 0)
        self.depth, self.quoted, self.deepest = depth, quoted, deepest


# what changes the string state: an escape pair, a quote, a bracket
_JSON_SIGNS = re.compile(r'\\.|\\|["{}\[\]]', re.DOTALL)


def brackets_closed(text: str, *, quotes: str = '"', must_open: bool = False) -> bool:
    """Whether every bracket opened in ``text`` is closed, strings taken into account.

    Args:
        text: JSON-ish text.
        quotes: the characters that open and close a string (``"\"'"`` for Python-style
            dicts as well).
        must_open: also require at least one bracket.

    Example:
        >>> brackets_closed('{"a": "}"}'), brackets_closed('{"a": [1'), brackets_closed("x")
        (True, False, True)
    """
    depth, quote, escaped, opened = 0, "", False, False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in quotes:
            quote = ch
        elif ch in "{[":
            depth += 1
            opened = True
        elif ch in "}]":
            depth -= 1
    return (opened or not must_open) and depth <= 0 and not quote
