"""The one streaming scanner every prompt dialect and reader reads markup with.

A format describes its markup as data (:class:`~.markup.Block` rules and drop tokens)
and reads only the text of its call blocks; :class:`MarkupStreamParser` does the rest.
A dialect's ``parse`` is this scanner fed one chunk, so ``parse(text)`` and any chunking
of ``text`` give the same message by construction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall

from .call_args import TOO_DEEP, invalid
from .events import (
    CallEvent,
    ContentDelta,
    InvalidCallEvent,
    ParseEvent,
    ReasoningDelta,
    ShownMarkup,
    StreamParser,
)
from .markup import Block
from .placement import Placement

__all__ = ["MarkupStreamParser"]


class MarkupReader(Protocol):
    """What the scanner reads a reply by: a prompt dialect, or the auto reader."""

    @property
    def blocks(self) -> tuple[Block, ...]: ...

    @property
    def drop_tokens(self) -> tuple[str, ...]: ...

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]: ...

    def block_may_close(self, block: Block, text: str, marker: str) -> bool: ...


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
    """One incremental scanner for every prompt dialect and the readers.

    Work per chunk is bounded by the chunk plus the longest marker: text is scanned
    once, a suffix that could still become a marker is held back, and a call's text is
    read once, when its block ends.
    """

    def __init__(self, dialect: MarkupReader) -> None:
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
            why = self._placement.shown()
            self._emit_text(shown, events, shown=True)
            if closed and block.consume_close:  # (else its text ran on to the next marker)
                self._placement.after_call(why)  # a call right after it is shown too
            return events
        try:
            produced = list(self._dialect.read_block(block, raw, closed=closed))
        except RecursionError:  # a format's own reader recursing per bracket (Gemma's)
            produced = [invalid(raw, f"could not read tool call: {TOO_DEEP}")]
        except Exception as exc:  # a dialect bug must not lose the reply: report it as a bad call
            produced = [invalid(raw, f"could not read tool call: {exc!r}")]
        self._take(produced, events)
        self._placement.after_call(None)  # a call right after it stands where it does
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
