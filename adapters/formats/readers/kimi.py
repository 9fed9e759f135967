"""Kimi-K2 tool calls between ``<|tool_calls_section_begin|>`` tokens.

::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{...}<|tool_call_end|><|tool_calls_section_end|>
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..base import Block, ParseEvent, brackets_closed, invalid
from .base import Reader, named_call

__all__ = ["KimiReader"]

SECTION = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
CALL, ARGS, END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


class KimiReader(Reader):
    name: ClassVar[str] = "kimi"
    blocks: ClassVar[tuple[Block, ...]] = (Block(SECTION[0], (SECTION[1],), "call"),)
    drop_tokens: ClassVar[tuple[str, ...]] = (SECTION[1], "<|im_end|>")
    examples: ClassVar[tuple[str, ...]] = (
        f'{SECTION[0]}{CALL}functions.get_weather:0{ARGS}{{"city": "Paris"}}{END}'
        f'{CALL}functions.get_time:1{ARGS}{{"zone": "CET"}}{END}{SECTION[1]}',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return _read(text, closed)


def _read(text: str, closed: bool) -> Iterator[ParseEvent]:
    parts = text.split(CALL)[1:]
    if not parts:
        yield invalid(SECTION[0] + text, f"no {CALL} in the tool call section")
    for part in parts:
        raw = CALL + part
        body, ended, _ = part.partition(END)
        head, sep, args = body.partition(ARGS)
        name = head.strip().removeprefix("functions.").rsplit(":", 1)[0]
        if not sep:
            yield invalid(raw, f"no {ARGS} in the call of {name!r}", name=name or None)
        elif not ended and not closed and not brackets_closed(args, must_open=True):
            yield invalid(raw, f"the reply ended inside the call of {name!r}", name=name or None)
        else:
            yield named_call(name, args, raw)
