"""JSON a model wrote, as text: where its strings stand, whether its brackets close.

Markup a call's arguments quote (``</tool_call>`` in code a call passes) is the
argument's text: :func:`in_json_string` tells where a string is open, and
:func:`find_unquoted`, :func:`split_unquoted` and :func:`partition_unquoted` find markers
outside strings. :func:`brackets_closed` tells whether a value was written whole, and
:func:`bracket_depth` how deep it nests.
"""

from __future__ import annotations

import re

__all__ = [
    "find_unquoted",
    "in_json_string",
    "split_unquoted",
]


def in_json_string(text: str) -> bool:
    r"""Whether ``text`` (a call's text so far) ends inside a JSON string.

    The one rule for markup written inside an argument's string (``</tool_call>``,
    ``✿RESULT✿``, ``Observation:`` in code or prose a call passes): it is that argument's
    text and never ends the call, nor splits it. The scanner asks it of a closer
    (:meth:`~.base.PromptDialect.block_may_close`); readers that split a call's text on markers
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


def bracket_depth(text: str) -> int:
    """How deep the brackets of ``text`` nest, brackets in JSON strings not counted.

    Example:
        >>> bracket_depth('[{"a": "[[["}]'), bracket_depth("x")
        (2, 0)
    """
    state = _StringState()
    state.read(text, 0, len(text))
    return state.deepest
