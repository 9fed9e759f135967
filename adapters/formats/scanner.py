"""The one streaming scanner every prompt dialect and reader reads markup with.

A format describes its markup as data (:class:`~.markup.Block` rules and drop tokens)
and reads only the text of its call blocks; :class:`MarkupStreamParser` does the rest.
A dialect's ``parse`` is this scanner fed one chunk, so ``parse(text)`` and any chunking
of ``text`` give the same message by construction.

While it scans, it tells where call markup stands in a reply: made by the model, or
only shown (:class:`Placement`). The rule, by structure only (no list of cue words):

    A call is made where a chat template puts the assistant's calls: in the reply's own
    voice, at the end of what it says. Own voice: outside code (fenced, indented, inline,
    ``<code>``/``<pre>``), quotations (``>`` blockquotes, quotation marks), tables, list
    items' text, link text, ``<details>``, HTML comments and reasoning; on a line of its
    own or after a finished sentence on its line (text glued to it in Chinese or Japanese
    counts as finished), not in the middle of a sentence, not after an abbreviation
    ("i.e.", "e.g."), not in a log record (a line that starts with a timestamp or a
    ``[TAG]``), and not as the value of a label (a line or a line's head of at most two
    words and a colon, or a heading that short: "Usage:", "Output:", "Sample output:",
    "### Example"). And a reply that *introduces* its calls (the text before its first
    call ends in a colon) and then goes on in prose after its last call demonstrates the
    syntax: introduced, shown, explained (unless what follows is the next item of a list:
    a plan), its calls are all text. Anything else is text.

Everything but the last clause looks only at the text *before* a call's opening marker,
so a reply read whole and the same reply read chunk by chunk agree by construction:
:class:`Placement` is fed the reply's text outside call blocks as it comes, and
:meth:`Placement.shown` answers at the moment an opening marker is met. The last clause
needs what follows the last call: :func:`explains_its_calls` reads a reply's events once
it has ended, and the readings hold their calls until then.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall

from .calls import (
    TOO_DEEP,
    CallEvent,
    ContentDelta,
    InvalidCallEvent,
    ParseEvent,
    ReasoningDelta,
    ShownMarkup,
    StreamParser,
    invalid,
    text_after_calls,
)
from .markup import Block

__all__ = []


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


# -- placement: where call markup stands in a reply, made by the model or only shown
def shown_as_example(before: str) -> bool:
    """Whether text that ends in ``before`` presents what follows as a sample: its last
    line with text is a label ("Usage:", "For example:", "Output:", "例如：", a short
    heading; :func:`is_label`), or ends in an abbreviation that introduces ("e.g.")."""
    lines = [x for x in before.split("\n") if x.strip()]
    return bool(lines) and (
        is_label(lines[-1]) or _ABBREVIATION.search(lines[-1].rstrip()) is not None
    )


def explains_its_calls(events: Iterable[ParseEvent]) -> bool:
    """Whether a read reply only demonstrates its calls: the text before its first call
    introduces them (ends in a colon) and prose follows its last call ("A call looks
    like this:", the call, "Here get_weather is the tool's name.").

    A reply also only demonstrates its calls when the first line after its last call
    points back at them and speaks of their syntax ("That is the format the model
    uses.", "以上就是调用方式。"): the one thing the place before a call cannot tell.

    A call after a sentence and followed by a remark ("Let me check.", the call, "I'll
    report back.", "This should give us the weather.") is made, and so is one that the
    reply only introduces (no prose after it: "I'll call it in the right format:", the
    call).
    """
    events = list(events)
    before: list[str] = []
    for ev in events:
        if isinstance(ev, CallEvent | InvalidCallEvent):
            break
        if isinstance(ev, ContentDelta):
            before.append(ev.text)
    else:
        return False  # no call
    intro = "".join(before).rstrip()
    after = text_after_calls(events).strip()
    # the next item of a list the calls stand in goes on with a plan, not about the calls
    if intro.endswith((":", "：")) and after and not _LIST_ITEM.match(after):
        return True
    first = after.split("\n", 1)[0]
    return bool(_POINTS_AT.search(first) and _ABOUT_MARKUP.search(first))


# a remark after a call that is about the call's syntax: it points back at it, and
# names markup or calling (narrow: "This should give us the weather." is neither)
_POINTS_AT = re.compile(r"\b(?:this|that|these|those|above|here)\b|这|以上|上面|此", re.I)
_ABOUT_MARKUP = re.compile(
    r"\b(?:format|syntax|examples?|markup|template|tags?|how (?:a|an|the|to|you|we|models?))"
    r"\b|格式|示例|语法|写法|例子|调用方式|呼び出し方",
    re.IGNORECASE,
)


def is_label(line: str) -> bool:
    """Whether ``line`` (a whole line, or a line's head up to a call) is a label that
    names what follows it: at most two words and a colon ("Output:", "Sample output:",
    "**Usage:**", "例如：", "出力例："), or a heading that short ("### Example")."""
    text = line.strip().strip("*_").strip()
    heading = text.startswith("#")
    text = text.lstrip("#").strip().strip("*_").strip()
    if text.endswith((":", "：")):
        text = text[:-1].strip().strip("*_").strip()
    elif not heading:
        return False
    if not text:
        return heading
    if _CJK.search(text):
        return len(text.replace(" ", "")) <= 3
    return len(text.split()) <= 2


# a character of Chinese, Japanese (kana) or Korean text, or their full-width punctuation
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")
# what a finished sentence ends with
_SENTENCE_END = ".!?…。！？"
# the last word before a full stop is an abbreviation ("i.e.", "e.g.", "etc.", "vs.")
_ABBREVIATION = re.compile(r"(?:^|[\s(])(?:\w\.){2,}$|(?:^|\s)(?:etc|vs|cf|viz)\.$", re.I)
# a log record's head: a timestamp, or a bracketed tag ("[INFO]", "[DEBUG]")
_LOG_LINE = re.compile(
    r"\s*(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}|\[?\d{1,2}:\d{2}:\d{2}|\[[A-Z][A-Z0-9_ -]{1,14}\])"
)


def _line_position(head: str, tail: str) -> str | None:
    """Why markup after ``tail`` (the end of its line so far; ``head``: the line's start)
    is shown by where it stands on the line, or ``None``."""
    if _LOG_LINE.match(head):
        return "in a log line"
    before = tail.rstrip().rstrip("*_").rstrip()
    if not before:
        return None
    last = before[-1]
    if last in ":：":
        return "after a label" if len(head) < _KEPT and is_label(head) else None
    if last in _SENTENCE_END:
        return "after an abbreviation" if _ABBREVIATION.search(before) else None
    if _CJK.match(last):
        return None  # glued to Chinese or Japanese text: no space ends its sentences
    return "in the middle of a sentence"


# a list item's marker at a line's start: "- ", "* ", "+ ", "• ", "1. ", "2) ", "1、"
_LIST_ITEM = re.compile(r"\s*(?:[-*+•·]\s|\d{1,3}[.)](?:\s|$)|\d{1,3}[、．])")
# a fence line opens or closes a fenced code block (CommonMark: three or more)
_FENCE = re.compile(r"\s{0,3}(?:```|~~~)")
# HTML elements that hold code or hide what they hold, and comments
_HTML_CODE_OPEN = re.compile(r"<(?:code|pre|details)\b|<!--", re.IGNORECASE)
_HTML_CODE_CLOSE = re.compile(r"</(?:code|pre|details)\s*>|-->", re.IGNORECASE)
# quotation marks that open a quotation, and what closes each
_PAIRED_QUOTES = {"“": "”", "‘": "’", "「": "」", "『": "』", "«": "»"}


class Placement:
    """Reads a reply's text (outside call blocks) as it comes, and tells whether markup
    starting now would stand where Markdown, HTML or prose quotes it.

    Chunk-invariant: the answer depends only on the text fed so far, not on how it was
    cut. A chunk costs its own length: of the current line only its head, its tail and
    running counts are kept.
    """

    __slots__ = (
        "_after_shown",
        "_after_token",
        "_blank_before",
        "_fence_at_start",
        "_fences",
        "_html",
        "_label",
        "_line",
        "_listing",
        "_started",
        "_ticks",
    )

    def __init__(self) -> None:
        self._started = False  # any text other than white space so far
        self._fences = 0  # fence lines met: odd inside a fenced block
        self._fence_at_start = False  # the open fence was the reply's first text
        self._ticks = 0  # backticks in the paragraph's finished lines (outside fences)
        self._html = 0  # <code>/<pre> elements open in finished lines
        self._blank_before = True  # the line before the current one was blank (or none)
        self._listing = False  # the paragraph is a list (its indented lines are items' text)
        self._line = _Line()  # the current line so far
        self._label = False  # the last line with text was a label ("Usage:")
        self._after_token: str | None = None  # why a format's token met here is shown
        self._after_shown: str | None = None  # why the call just before was shown

    def feed(self, text: str) -> None:
        """Take the next piece of the reply's text (outside call blocks)."""
        if not text:
            return
        if text.strip():
            self._after_token = self._after_shown = None
        first, *rest = text.split("\n")
        self._line.add(first)
        for piece in rest:
            self._end_line(self._line)
            self._line = _Line()
            self._line.add(piece)

    def token(self) -> None:
        """A token of the format stands here (a wrapper such as ``<tool_call>`` around
        Qwen3-Coder's ``<function=…>``): a call it holds is shown where the token is."""
        if self._after_token is None:
            self._after_token = self.shown()

    def after_call(self, shown: str | None) -> None:
        """A call block ended here, shown for ``shown`` (or made, ``None``). A call right
        after it (white space between) belongs with it: shown after a shown one; after a
        made one (or the format's own text a block handed back, Functionary's ``>>>all``)
        it stands as if its line started there."""
        self._after_shown = shown
        if shown is None:
            self._line = _Line()

    def _end_line(self, line: _Line) -> None:
        if _FENCE.match(line.head):
            self._fence_at_start = self._fences % 2 == 0 and not self._started
            self._fences += 1
            self._ticks = 0
        elif self._fences % 2 == 0:
            # a blank line ends a paragraph, and inline code with it
            self._ticks = 0 if line.blank else self._ticks + line.ticks
            self._html += line.html
            if _LIST_ITEM.match(line.head):
                self._listing = True
            elif not line.blank and not line.head[:1].isspace():
                self._listing = False
        self._blank_before = line.blank
        if not line.blank:
            self._started = True
            self._label = len(line.head) < _KEPT and is_label(line.head)

    def shown(self) -> str | None:
        """Why markup starting here is only shown (``"in a code block"``, ``"in a list
        item"``, ``"after a label"``, ``"in the middle of a sentence"``, …), or ``None``
        where it stands as the reply's own.

        A fenced block that opens the reply holds its calls (a model that fences what
        it sends); one opened after other text quotes them.
        """
        if self._after_token is not None:
            return self._after_token
        if self._after_shown is not None:
            return self._after_shown
        line = self._line
        if self._fences % 2 == 1:
            return None if self._fence_at_start else "in a code block"
        if (self._ticks + line.ticks) % 2 == 1:
            return "in inline code"
        if self._html + line.html > 0:
            return "in an HTML element"
        head = line.head.lstrip()
        if line.blank and line.head.expandtabs(4).startswith("    ") and self._indented_code():
            return "in a code block"
        if head.startswith((">", "|")):
            return "in a blockquote" if head[0] == ">" else "in a table"
        if _LIST_ITEM.match(line.head):
            return "in a list item"
        if line.tail.rstrip().endswith("["):
            return "in link text"
        if line.in_quotation():
            return "in quotation marks"
        if line.blank:
            return "after a label" if self._label else None
        return _line_position(line.head, line.tail)

    def _indented_code(self) -> bool:
        """Whether an indented line starting here is an indented code block: after a
        blank line (or at the reply's start), not as a list item's text."""
        return self._blank_before and not self._listing


_KEPT = 64  # characters of a line's head and tail kept


class _Line:
    """One line of the reply as far as it has come: its head and tail, and running counts
    of what quotes (backticks, quotation marks, HTML code elements)."""

    __slots__ = ("blank", "head", "html", "quotes", "tail", "ticks")

    def __init__(self) -> None:
        self.head = ""
        self.tail = ""
        self.blank = True
        self.ticks = 0
        self.html = 0  # <code>/<pre> opened less closed
        self.quotes: dict[str, int] = {}  # '"' and each opening mark: opened less closed

    def add(self, piece: str) -> None:
        if not piece:
            return
        if len(self.head) < _KEPT:
            self.head = (self.head + piece)[:_KEPT]
        # a tag cut by the chunking is counted once whole: count in the joined tail
        joined = self.tail + piece
        self.html += _html_balance(joined) - _html_balance(self.tail)
        self.tail = joined[-_KEPT:]
        self.blank = self.blank and not piece.strip()
        self.ticks += piece.count("`")
        if '"' in piece:
            self.quotes['"'] = self.quotes.get('"', 0) + piece.count('"')
        for opener, closer in _PAIRED_QUOTES.items():
            if opener in piece or closer in piece:
                gone = piece.count(opener) - piece.count(closer)
                self.quotes[opener] = self.quotes.get(opener, 0) + gone

    def in_quotation(self) -> bool:
        """Whether the line so far is inside a quotation."""
        if self.quotes.get('"', 0) % 2 == 1:
            return True
        before = self.tail.rstrip()
        if before.endswith("'") and (len(before) == 1 or not before[-2].isalnum()):
            return True  # an opening single quote, not an apostrophe ("it's")
        return any(n > 0 for mark, n in self.quotes.items() if mark != '"')


def _html_balance(line: str) -> int:
    return len(_HTML_CODE_OPEN.findall(line)) - len(_HTML_CODE_CLOSE.findall(line))
