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

    Chunk-invariant: the answer depends only on the text fed so far, not on how it was cut.
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
        self._html = 0  # <code>/<pre> elements open
        self._blank_before = True  # the line before the current one was blank (or none)
        self._listing = False  # the paragraph is a list (its indented lines are items' text)
        self._line = ""  # the current line so far
        self._recent = ""  # the last characters fed, for the example cue
        self._after_token: str | None = None  # why a format's token met here is shown

    def feed(self, text: str) -> None:
        """Take the next piece of the reply's text (outside call blocks)."""
        if not text:
            return
        if self._after_token is not None and text.strip():
            self._after_token = None
        self._recent = (self._recent + text)[-_RECENT:]
        *finished, self._line = (self._line + text).split("\n")
        for line in finished:
            self._end_line(line)

    def token(self) -> None:
        """A token of the format stands here (a wrapper such as ``<tool_call>`` around
        Qwen3-Coder's ``<function=…>``): a call it holds is shown where the token is."""
        if self._after_token is None:
            self._after_token = self.shown()

    def _end_line(self, line: str) -> None:
        blank = not line.strip()
        if _FENCE.match(line):
            self._fence_at_start = self._fences % 2 == 0 and not self._started
            self._fences += 1
            self._ticks = 0
        elif self._fences % 2 == 0:
            # a blank line ends a paragraph, and inline code with it
            self._ticks = 0 if blank else self._ticks + line.count("`")
            self._html += _html_balance(line)
            if _LIST_ITEM.match(line):
                self._listing = True
            elif not blank and not line[:1].isspace():
                self._listing = False
        self._blank_before = blank
        if not blank:
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
        if (self._ticks + line.count("`")) % 2 == 1:
            return "in inline code"
        if self._html + _html_balance(line) > 0:
            return "in an HTML code element"
        head = line.lstrip()
        if not head and line.expandtabs(4).startswith("    ") and self._indented_code():
            return "in a code block"
        if head.startswith((">", "|")):
            return "in a blockquote" if head[0] == ">" else "in a table"
        if _LIST_ITEM.match(line):
            return "in a list item"
        before = line.rstrip()
        if before.endswith("["):
            return "in link text"
        if _in_quotation(before):
            return "in quotation marks"
        if shown_as_example(self._recent):
            return "after an example cue"
        return None

    def _indented_code(self) -> bool:
        """Whether an indented line starting here is an indented code block: after a
        blank line (or at the reply's start), not as a list item's text."""
        return self._blank_before and not self._listing


def _html_balance(line: str) -> int:
    return len(_HTML_CODE_OPEN.findall(line)) - len(_HTML_CODE_CLOSE.findall(line))


def _in_quotation(before: str) -> bool:
    """Whether a line that so far reads ``before`` is inside a quotation."""
    if before.count('"') % 2 == 1:
        return True
    if before.endswith("'") and (len(before) == 1 or not before[-2].isalnum()):
        return True  # an opening single quote, not an apostrophe ("it's")
    return any(before.count(o) > before.count(c) for o, c in _PAIRED_QUOTES.items())
