"""Functionary v3.2: ``>>>NAME`` then its JSON arguments; ``>>>all`` is answer text.

::

    >>>get_weather
    {"city": "Paris"}>>>get_time
    {"zone": "CET"}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..base import Block, ContentDelta, ParseEvent, brackets_closed, invalid
from .base import Reader, named_call

__all__ = ["FunctionaryReader"]


class FunctionaryReader(Reader):
    name: ClassVar[str] = "functionary"
    # each ">>>" ends the text before it and starts the next recipient
    blocks: ClassVar[tuple[Block, ...]] = (Block(">>>", (">>>",), "call", False),)
    special: ClassVar[bool] = False
    examples: ClassVar[tuple[str, ...]] = (
        '>>>get_weather\n{"city": "Paris"}>>>get_time\n{"zone": "CET"}',
        '>>>all\nLet me look that up.>>>get_weather\n{"city": "Paris"}',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return _read(text, closed)


def _read(text: str, closed: bool) -> Iterator[ParseEvent]:
    name, _, args = text.partition("\n")
    name = name.strip()
    if name == "all":
        yield ContentDelta(args)
    elif not closed and not brackets_closed(args, must_open=True):
        yield invalid(">>>" + text, f"the reply ended inside the arguments of {name!r}", name=name)
    else:
        yield named_call(name, args.strip() or "{}", ">>>" + text)
