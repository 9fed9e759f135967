"""A reply's text read for calls: in a format known beforehand, or in the format detected.

:func:`read_text` reads a reply with a given reader. :func:`auto_read` reads a reply
whose format is not known: the format of its first call marker that is the reply's own
(:func:`markup_dialect`), its thinking put aside in every format's reasoning markers.
Markup the reply only shows (where :mod:`.placement`'s rule says a call is text: in code
or quotations, after a label, in the middle of a sentence, …) is not its own, and a quoted
call does not hide a later one that is (:func:`quotes_its_calls`); calls written while
thinking do not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from langchain_core.messages import AIMessage, BaseMessage

from .base import Dialect
from .events import CallEvent, ParseEvent
from .markup import THINK
from .messages import split_content
from .placement import Placement, explains_its_calls
from .readers import AUTO, NO_CALL_MARKUP
from .readers.harmony import END
from .readers.qwen import FN_NAME
from .readers.whole_reply import OPENERS, whole_reply_format
from .registry import get_dialect

__all__ = ["markup_dialect"]


def read_text(
    dialect: Dialect, text: str
) -> tuple[AIMessage, dict[str, Mapping[str, str]], list[ParseEvent]]:
    """``dialect.parse(text)``, the arguments its calls wrote as text (by call id), and
    the reading's events (for :func:`~.placement.explains_its_calls`)."""
    parser = dialect.stream_parser()
    events = [*parser.feed(text), *parser.close()]
    texts = {e.call["id"]: e.texts for e in events if isinstance(e, CallEvent) and e.texts}
    return parser.message(), texts, events


def markup_dialect(message: BaseMessage | str) -> str | None:
    """The format of the call markup a reply's text is written in, if it holds its own calls.

    The name of a prompt dialect (``"hermes"``, ``"qwen"``) when the model speaks one —
    a native reply with ``<tool_call>`` in its text tells that the model speaks Hermes and
    its server has no tool parser — or of another format the readers know
    (``"mistral"``, ``"deepseek"``, ``"harmony"``, …; see
    :mod:`fncall_graph.adapters.formats.readers`). Markup the reply only quotes (see
    :func:`_own_call_syntax`) and calls written while thinking do not count.

    >>> markup_dialect('<tool_call>\\n{"name": "f", "arguments": {}}\\n</tool_call>')
    'hermes'
    >>> markup_dialect('[TOOL_CALLS][{"name": "f", "arguments": {}}]')
    'mistral'
    >>> markup_dialect("plain answer") is None
    True
    """
    text = message if isinstance(message, str) else split_content(message.content)[0]
    return _markup_format(_without_thinking(opened_thought(text)))


def _markup_format(answer: str) -> str | None:
    """The format of the calls ``answer`` (a reply less its thinking) writes, if any."""
    found = _first_marker(answer)
    return found[2] if found is not None else whole_reply_format(answer)


def _first_marker(text: str) -> tuple[int, str, str] | None:
    """``(index, marker, format)`` of the first call marker that is the reply's own: a
    call the reply only quotes does not hide a later one it makes."""
    for at in _MARKERS.finditer(text):
        marker = at.group()
        if _own_call_syntax(text, at.start()):
            reader = AUTO.reader_of(marker)
            return (
                at.start(),
                marker,
                "qwen" if marker == FN_NAME else reader.name if reader else "",
            )
    return None


def _without_thinking(text: str) -> str:
    """``text`` less its reasoning blocks, in every format's markers (``<think>``,
    ``<seed:think>``, ``[THINK]``, Gemma's thought channel, …), as the scanner reads them:
    a block ends at its first closer; a closer with no block open is not thinking."""
    out: list[str] = []
    pos = 0
    while (opened := _REASONING_OPEN.search(text, pos)) is not None:
        out.append(text[pos : opened.start()])
        block = _REASONING_BLOCK[opened.group()]
        ends = [(i, c) for c in block.close if (i := text.find(c, opened.end())) >= 0]
        if not ends:
            return "".join(out)  # thinking to the end of the reply
        at, closer = min(ends)
        pos = at + (len(closer) if block.consume_close else 0)
    out.append(text[pos:])
    return "".join(out)


def quotes_its_calls(dialect: Dialect, text: str) -> bool:
    """Whether a reply in a prompt dialect only shows the dialect's call syntax: none of
    its call markers stands where :mod:`.placement`'s rule makes a call (a call it only
    quotes does not hide a later one it makes). ReAct's markup may open before its first
    call (``Thought:``): a call whose markup opens after a label is shown too.
    """
    answer = _without_thinking(opened_thought(text))
    markers = {b.open for b in dialect.blocks if b.kind == "call"}
    found = sorted((at, m) for m in markers for at in _occurrences(answer, m))
    if not found:
        return False
    opened = min(at for b in dialect.blocks if (at := answer.find(b.open)) >= 0)
    if opened < found[0][0] and not _own_call_syntax(answer, opened):
        return True
    return not any(_own_call_syntax(answer, at) for at, _ in found)


def _occurrences(text: str, marker: str) -> list[int]:
    out, at = [], text.find(marker)
    while at >= 0:
        out.append(at)
        at = text.find(marker, at + 1)
    return out


def quoting_answer(text: str) -> str:
    """The answer of a reply that only quotes call syntax: its text less its thinking."""
    return _without_thinking(opened_thought(text)).strip()


def _own_call_syntax(text: str, at: int) -> bool:
    """Whether the markup at ``at`` stands where :mod:`.placement`'s rule makes a call
    (the text before it read as the scanner reads a reply's text: :class:`Placement`).
    Whether the reply goes on to explain its calls is read once they are read
    (:func:`~.placement.explains_its_calls`)."""
    if _quoted(text, at):
        return False  # inside a fenced code block or inline code
    placement = Placement()
    placement.feed(_before_markup(text[:at]))
    return placement.shown() is None


def _before_markup(before: str) -> str:
    """``before`` less the format's own markup that opens right before a call marker
    (Harmony's ``<|start|>assistant``, a wrapper token): the scanner reads no text there."""
    while True:
        last = max(_ANY_MARKUP.finditer(before), key=lambda m: m.start(), default=None)
        rest = before[last.end() :] if last is not None else ""
        if last is None or len(rest) > 24 or (rest and not rest.strip("-_.").isalnum()):
            return before
        before = before[: last.start()]


def _quoted(text: str, at: int) -> bool:
    """Whether ``at`` lies inside a fenced code block or inline code (which may run over
    the lines of one paragraph)."""
    if text.count("```", 0, at) % 2 == 1:
        return True
    paragraph = text.rfind("\n\n", 0, at) + 1
    fence = text.rfind("```", 0, at)
    start = max(paragraph, fence + 3 if fence >= 0 else 0)
    return text[start:at].count("`") % 2 == 1


# --------------------------------------------------------------------------- helpers


def _any_of(markers: Iterable[str]) -> re.Pattern[str]:
    """A pattern finding any of ``markers``, the longest where several start at one place."""
    return re.compile("|".join(map(re.escape, sorted(set(markers), key=len, reverse=True))))


# every format's call markers (Qwen's ✿ format is read by its dialect, not the auto reader)
_MARKERS = _any_of([FN_NAME, *(b.open for b in AUTO.blocks if b.kind == "call")])
#: What starts markup in any format: every block's opening marker and every token
MARKUP_STARTS: frozenset[str] = frozenset(
    {FN_NAME, *(b.open for b in AUTO.blocks), *AUTO.drop_tokens}
)
_ANY_MARKUP = _any_of(MARKUP_STARTS)
# what, without a call marker of the reply's own, still is markup
_OTHER_MARKUP = _any_of([*(b.open for b in NO_CALL_MARKUP.blocks), *NO_CALL_MARKUP.drop_tokens])


_REASONING_BLOCK = {b.open: b for b in AUTO.blocks if b.kind == "reasoning"}
_REASONING_OPEN = _any_of(_REASONING_BLOCK)
# closers a reply shows when its prompt opened the thought: a reasoning block's closer
# that its reader also drops where it stands alone (harmony's ``<|end|>`` ends any message)
_THOUGHT_OPENER = {THINK.close[0]: THINK.open} | {
    b.close[0]: b.open
    for r in AUTO.readers
    for b in reversed(r.blocks)
    if b.kind == "reasoning" and b.close and b.close[0] in r.drop_tokens and b.close[0] != END
}
_THOUGHT_CLOSERS = _any_of(_THOUGHT_OPENER)


def opened_thought(text: str) -> str:
    """``text`` with the thought its prompt opened put back in front.

    QwQ / DeepSeek-R1 templates end the prompt with ``<think>``, Seed-OSS, Magistral,
    Kimi-K3, Gemma 4 and PLaMo with their own thinking opener: the reply starts inside
    the thought and only its closer shows (``</think>``, ``</seed:think>``, ``[/THINK]``,
    ``<channel|>`` …). A closer after a call or other markup (inside a call's arguments,
    after a channel) opened nothing: the text is left as it is.
    """
    closer = _THOUGHT_CLOSERS.search(text)
    if closer is None:
        return text
    opener = _THOUGHT_OPENER[closer.group()]
    before = text[: closer.start()]
    if opener in before or _ANY_MARKUP.search(before):
        return text
    return opener + text


def auto_read(
    text: str,
) -> tuple[AIMessage | None, str | None, dict[str, Mapping[str, str]]]:
    """``text`` read in the format its own call markup is written in, that format, and
    the arguments its calls wrote as text (by call id).

    ``(None, None, {})`` when it holds no markup at all.
    """
    text = opened_thought(text)
    answer = _without_thinking(text)
    found = _first_marker(answer)
    if found is not None:
        reader = get_dialect("qwen") if found[2] == "qwen" else AUTO
        parsed, texts, events = read_text(reader, text)
        if (parsed.tool_calls or parsed.invalid_tool_calls) and explains_its_calls(events):
            # introduced and explained: the reply demonstrates the syntax, its calls are text
            parsed = AIMessage(
                content=quoting_answer(text), additional_kwargs=dict(parsed.additional_kwargs)
            )
            texts = {}
        return parsed, found[2], texts
    other = _OTHER_MARKUP.search(text)
    if answer.lstrip().startswith(OPENERS) or (
        other is not None and not _quoted(text, other.start())
    ):
        return NO_CALL_MARKUP.parse(text), whole_reply_format(answer), {}
    return None, None, {}
