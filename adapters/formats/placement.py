"""Where call markup stands in a reply: made by the model, or only shown.

A model that explains its own call syntax writes the markup where Markdown quotes
things: in a code block or inline code, in a ``>`` blockquote, as a list item's text, in
quotation marks, or after "For example:". A model making a call writes it where prose
stands: alone, after a sentence, between paragraphs, on its own line between list items.
One rule tells the two apart, and it looks only at the text *before* a call's opening
marker, so a reply read whole and the same reply read chunk by chunk agree by
construction: :class:`Placement` is fed the reply's text outside call blocks as it comes,
and :meth:`Placement.shown` answers at the moment an opening marker is met.

What the place cannot tell is prose *after* a call saying it was an example ("That is
the format the model uses."): :func:`explains_its_calls` reads the line that follows a
reply's last call, once the reply has ended.
"""

from __future__ import annotations

import re

__all__ = ["Placement", "explains_its_calls", "shown_as_example"]


def shown_as_example(before: str) -> bool:
    """Whether text that ends in ``before`` is introduced as an example of the syntax
    ("For example:", "e.g.", "such as", "the format is") rather than written as a call.
    """
    return _EXAMPLE_CUE.search(before.rstrip()[-40:]) is not None


_EXAMPLE_CUE = re.compile(
    r"(?:\bfor (?:example|instance)|\be\.g\.|\bsuch as|\blike (?:this|so)|\bexample"
    r"|\bsyntax|\bformat(?: is)?|\b(?:reply|respond|answer) with|\bwrites?|\btype"
    r"|例如|比如|示例|格式)\W*$",
    re.IGNORECASE,
)


def explains_its_calls(after: str) -> bool:
    """Whether ``after``, the text after a reply's last call, says the calls were only
    shown: its first line points at them ("this", "that", "above", "以上") and speaks of
    markup or of calling a tool ("That is the format the model uses.", "The model writes
    this to call a tool.", "以上是调用格式。").

    Narrow on purpose: a remark after a call the model made ("I'll report back once I
    have it.", "This should give us the weather.") does not speak of markup.
    """
    first = after.strip().split("\n", 1)[0]
    return bool(_POINTS_AT.search(first) and _ABOUT_MARKUP.search(first))


_POINTS_AT = re.compile(r"\b(?:this|that|these|those|above|here)\b|这|以上|上面|此", re.I)
_ABOUT_MARKUP = re.compile(
    r"\b(?:format|syntax|examples?|markup|template|tags?|how (?:a|an|the|to|you|we|models?)"
    r"|calls? (?:a|the) tool|to call)\b|格式|示例|语法|写法|例子",
    re.IGNORECASE,
)

# a list item's marker at a line's start: "- ", "* ", "+ ", "• ", "1. ", "2) ", "1、"
_LIST_ITEM = re.compile(r"\s*(?:[-*+•·]\s|\d{1,3}[.)](?:\s|$)|\d{1,3}[、．])")
# a fence line opens or closes a fenced code block (CommonMark: three or more)
_FENCE = re.compile(r"\s{0,3}(?:```|~~~)")
# HTML elements that hold code
_HTML_CODE_OPEN = re.compile(r"<(?:code|pre)\b", re.IGNORECASE)
_HTML_CODE_CLOSE = re.compile(r"</(?:code|pre)\s*>", re.IGNORECASE)
# quotation marks that open a quotation, and what closes each
_PAIRED_QUOTES = {"“": "”", "‘": "’", "「": "」", "『": "』", "«": "»"}
_RECENT = 60  # characters of recent text kept for the example cue


class Placement:
    """Reads a reply's text (outside call blocks) as it comes, and tells whether markup
    starting now would stand where Markdown, HTML or prose quotes it.

    Chunk-invariant: the answer depends only on the text fed so far, not on how it was
    cut. A chunk costs its own length: of the current line only its head, its tail and
    running counts are kept.
    """

    __slots__ = (
        "_after_token",
        "_blank_before",
        "_fence_at_start",
        "_fences",
        "_html",
        "_line",
        "_listing",
        "_recent",
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
        self._recent = ""  # the last characters fed, for the example cue
        self._after_token: str | None = None  # why a format's token met here is shown

    def feed(self, text: str) -> None:
        """Take the next piece of the reply's text (outside call blocks)."""
        if not text:
            return
        if self._after_token is not None and text.strip():
            self._after_token = None
        self._recent = (self._recent + text)[-_RECENT:]
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

    def shown(self) -> str | None:
        """Why markup starting here is only shown (``"in a code block"``, ``"in a list
        item"``, …), or ``None`` where it stands as the reply's own.

        A fenced block that opens the reply holds its calls (a model that fences what
        it sends); one opened after other text quotes them.
        """
        if self._after_token is not None:
            return self._after_token
        line = self._line
        if self._fences % 2 == 1:
            return None if self._fence_at_start else "in a code block"
        if (self._ticks + line.ticks) % 2 == 1:
            return "in inline code"
        if self._html + line.html > 0:
            return "in an HTML code element"
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
        if shown_as_example(self._recent):
            return "after an example cue"
        return None

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
