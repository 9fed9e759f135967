"""Functionary v3.2: ``>>>NAME`` then its JSON arguments; ``>>>all`` is answer text.

Replies as the model writes them, as Python strings:

- ``'>>>get_weather\\n{"city": "Paris"}>>>get_time\\n{"zone": "CET"}'``: two calls;
- ``'all\\nLet me look that up.>>>get_weather\\n{"city": "Paris"}'``: the template's
  generation prompt ends with ``>>>``, so a reply starts with its first recipient, bare;
- ``'>>>python\\nprint(2 + 2)'``: the code interpreter, raw code rather than JSON.

Engine: llama.cpp ``common/parsers/functionary-v3-2.cpp`` (index version 5204e210; not
re-read for this caption).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..calls import ContentDelta, ParseEvent, brackets_closed, in_json_string, invalid
from ..markup import Block
from .base import Reader, named_call, named_call_and_text, strict_prefix

__all__ = []

MARKER = ">>>"
_RECIPIENT = re.compile(r"[A-Za-z_][\w.\-]*")
# first lines that open ordinary replies, not a recipient
_NOT_RECIPIENTS = frozenset({"json", "JSON"})
_LONGEST_NAME = 80


class FunctionaryReader(Reader):
    name: ClassVar[str] = "functionary"
    # each ">>>" ends the text before it and starts the next recipient
    blocks: ClassVar[tuple[Block, ...]] = (Block(MARKER, (MARKER,), "call", False),)
    special: ClassVar[bool] = False
    examples: ClassVar[tuple[str, ...]] = (
        '>>>get_weather\n{"city": "Paris"}>>>get_time\n{"zone": "CET"}',
        '>>>all\nLet me look that up.>>>get_weather\n{"city": "Paris"}',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return _read(text, closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        # ">>>" inside a string argument is that argument's text
        _, _, args = text.partition("\n")
        return not args.lstrip().startswith("{") or not in_json_string(args)


def _read(text: str, closed: bool) -> Iterator[ParseEvent]:
    name, _, args = text.partition("\n")
    name = name.strip()
    if name == "all":
        yield ContentDelta(args)
    elif name == "python" and not args.lstrip().startswith("{"):
        # the last recipient runs to the reply's end: its code is whole if it parses
        if args.strip() and (closed or _parses(args)):
            yield named_call(name, {"code": args.strip()}, MARKER + text)
        else:
            yield invalid(MARKER + text, "the reply ended inside the code of 'python'", name=name)
    elif not closed and not strict_prefix(args)[0] and not brackets_closed(args, must_open=True):
        yield invalid(MARKER + text, f"the reply ended inside the arguments of {name!r}", name=name)
    else:
        yield from named_call_and_text(name, args.strip() or "{}", MARKER + text)


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def bare_recipient(head: str, *, final: bool) -> bool | None:
    """Whether a reply starting with ``head`` opens with a bare Functionary recipient
    (``all`` then text, or a tool's name then its JSON arguments); ``None`` while the
    head is too short to tell."""
    head = head.lstrip()
    if not head:
        return None if not final else False
    line, newline, rest = head.partition("\n")
    name = line.strip()
    if len(name) > _LONGEST_NAME:
        return False
    if not _RECIPIENT.fullmatch(name):
        # a name may still be on its way
        return None if not final and not newline and _RECIPIENT.fullmatch(line) else False
    if not newline:
        return None if not final else False
    if name == "all":
        return True
    first = rest.lstrip()[:1]
    if not first:
        return None if not final else False
    return first == "{" and name not in _NOT_RECIPIENTS
