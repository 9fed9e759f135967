"""PLaMo 3 tool requests: a name and JSON arguments, each between ``<|plamo:…:plamo|>`` tags.

::

    <|plamo:begin_tool_requests:plamo|>
    <|plamo:begin_tool_request:plamo|>
    <|plamo:begin_tool_name:plamo|>f<|plamo:end_tool_name:plamo|>
    <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{...}<|plamo:end_tool_arguments:plamo|>
    <|plamo:end_tool_request:plamo|>
    <|plamo:end_tool_requests:plamo|>

It thinks between ``<|plamo:begin_think:plamo|>`` and ``<|plamo:end_think:plamo|>`` and
ends its turn with ``<|plamo:tag|>``.

Engine: none read (the model's chat template; no server parser was found).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..calls import ParseEvent, brackets_closed, invalid, partition_unquoted, split_unquoted
from ..markup import Block
from .base import Reader, named_call

__all__ = []


def _tag(name: str) -> str:
    return f"<|plamo:{name}:plamo|>"


REQUESTS = (_tag("begin_tool_requests"), _tag("end_tool_requests"))
REQUEST = (_tag("begin_tool_request"), _tag("end_tool_request"))
NAME = (_tag("begin_tool_name"), _tag("end_tool_name"))
ARGS = (_tag("begin_tool_arguments"), _tag("end_tool_arguments"))

THINK = (_tag("begin_think"), _tag("end_think"))
EOT = "<|plamo:tag|>"

_NAME = re.compile(rf"\s*{re.escape(NAME[0])}(.*?){re.escape(NAME[1])}\s*", re.DOTALL)
# what the arguments are written in, before them: <|plamo:constrain|>json<|plamo:msg|>
_CONSTRAIN = re.compile(r"\s*<\|plamo:constrain\|>\s*\w*\s*<\|plamo:msg\|>")


def _read(text: str, closed: bool) -> Iterator[ParseEvent]:
    parts = split_unquoted(text, REQUEST[0])[1:]
    if not parts:
        yield invalid(REQUESTS[0] + text, f"no {REQUEST[0]} in the tool requests")
    for part in parts:
        raw = REQUEST[0] + part
        named = _NAME.match(part)
        if named is None:
            yield invalid(raw, f"no {NAME[0]}…{NAME[1]} in a tool request")
            continue
        name = named.group(1).strip()
        rest = part[named.end() :]
        if not rest.startswith(ARGS[0]):
            yield invalid(raw, f"no {ARGS[0]} in the request of {name!r}", name=name)
            continue
        args, ended, _ = partition_unquoted(rest[len(ARGS[0]) :], ARGS[1])
        constrain = _CONSTRAIN.match(args)
        if constrain:
            args = args[constrain.end() :]
        if not ended and not closed and not brackets_closed(args, must_open=True):
            yield invalid(raw, f"the reply ended inside the request of {name!r}", name=name)
            continue
        yield named_call(name, args, raw)


class PlamoReader(Reader):
    # the tags are several tokens each, but no prose holds <|plamo:…:plamo|> by accident
    name: ClassVar[str] = "plamo3"
    blocks: ClassVar[tuple[Block, ...]] = (
        Block(REQUESTS[0], (REQUESTS[1], EOT), "call"),
        Block(THINK[0], (THINK[1],), "reasoning"),
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (REQUESTS[1], EOT, THINK[1])
    examples: ClassVar[tuple[str, ...]] = (
        f"{REQUESTS[0]}{REQUEST[0]}{NAME[0]}get_weather{NAME[1]}"
        f'{ARGS[0]}<|plamo:constrain|>json<|plamo:msg|>{{"city": "東京"}}{ARGS[1]}{REQUEST[1]}'
        f"{REQUEST[0]}{NAME[0]}get_time{NAME[1]}"
        f'{ARGS[0]}<|plamo:constrain|>json<|plamo:msg|>{{"zone": "JST"}}{ARGS[1]}{REQUEST[1]}'
        f"{REQUESTS[1]}{EOT}",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return _read(text, closed)
