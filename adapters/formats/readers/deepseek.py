"""DeepSeek V3 / R1 / V3.1 tool calls between ``<｜tool▁calls▁begin｜>`` tokens.

::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f
    ```json
    {...}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>                       V3, R1
    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}<｜tool▁call▁end｜><｜tool▁calls▁end｜>   V3.1

Models also write the tokens in other spellings, which llama.cpp's DeepSeek parsers take
too and so are read here: ``<｜tool calls begin｜>``, ``<｜tool\\_calls\\_begin｜>``, the short
``<｜tool▁calls｜>``, and ASCII ``|`` for the fullwidth ``｜`` (``<|tool▁calls▁begin|>``).
``<｜tool_calls_begin｜>`` is Step-3's opener too: it opens DeepSeek calls only where the
model's format is known to be DeepSeek's.

Engines: vLLM ``deepseekv3_tool_parser.py`` / ``deepseekv31_tool_parser.py`` and llama.cpp
``common/parsers/deepseek.cpp`` (index versions 98ba358b, 9d6a1c37, a838fb4d; not re-read
for this caption).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..calls import (
    ParseEvent,
    brackets_closed,
    in_json_string,
    invalid,
    partition_unquoted,
    split_unquoted,
)
from ..markup import Block
from .base import Reader, named_call
from .xml_params import STEP_CALLS

__all__ = []

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
END_OF_SENTENCE = "<｜end▁of▁sentence｜>"
# the other spellings of the section's opener and closer (see the module's text)
_OPENERS = (
    "<|tool▁calls▁begin|>",
    "<｜tool calls begin｜>",
    "<｜tool\\_calls\\_begin｜>",
    "<｜tool▁calls｜>",
    STEP_CALLS[0],  # Step-3's own: the AUTO reader gives it to Step-3
)
_CLOSERS = (
    CALLS_END,
    "<|tool▁calls▁end|>",
    "<｜tool calls end｜>",
    "<｜tool\\_calls\\_end｜>",
    STEP_CALLS[1],
)
# a DeepSeek tool token in any spelling: ASCII or fullwidth bars, "▁", "_", "\_" or " "
_TOKEN = re.compile(r"<[|｜](tool(?:\\?[▁_ ](?:calls|call|sep|begin|end))+)[|｜]>")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*(?:```\s*)?$", re.DOTALL)


class DeepSeekReader(Reader):
    name: ClassVar[str] = "deepseek"
    blocks: ClassVar[tuple[Block, ...]] = tuple(
        Block(opener, _CLOSERS, "call") for opener in (CALLS_BEGIN, *_OPENERS)
    )
    # a model that invents its tools' answers: those are dropped with what follows
    drop_tokens: ClassVar[tuple[str, ...]] = (*_CLOSERS, END_OF_SENTENCE)
    examples: ClassVar[tuple[str, ...]] = (
        f"{CALLS_BEGIN}{CALL_BEGIN}function{SEP}get_weather\n```json\n"
        f'{{"city": "北京"}}\n```{CALL_END}{CALLS_END}',
        f'{CALLS_BEGIN}{CALL_BEGIN}get_weather{SEP}{{"city": "Paris"}}{CALL_END}'
        f'{CALL_BEGIN}get_time{SEP}{{"zone": "CET"}}{CALL_END}{CALLS_END}',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return _read(text, closed)


def canonical(text: str) -> str:
    """``text`` with DeepSeek's tool tokens in their one spelling (``<｜tool▁call▁begin｜>``);
    a token's text inside an argument's JSON string is that argument's, left as written."""

    def spelled(m: re.Match[str]) -> str:
        if in_json_string(text[: m.start()]):
            return m.group(0)
        return "<｜" + re.sub(r"\\?[_ ]", "▁", m.group(1)) + "｜>"

    return _TOKEN.sub(spelled, text)


def _read(text: str, closed: bool) -> Iterator[ParseEvent]:
    text = canonical(text)
    parts = split_unquoted(text, CALL_BEGIN)[1:]
    if not parts:
        yield invalid(CALLS_BEGIN + text, f"no {CALL_BEGIN} inside {CALLS_BEGIN}")
    for i, part in enumerate(parts):
        raw = CALL_BEGIN + part
        body, ended, _ = partition_unquoted(part, CALL_END)
        head, sep, args = body.partition(SEP)
        if not sep:
            yield invalid(raw, f"no {SEP} in the call")
            continue
        name = head.strip()
        if name == "function" and not args.lstrip().startswith("{"):  # V3/R1: type, then name
            name, _, args = args.partition("\n")
            name = name.strip()
        fenced = _FENCE.match(args)
        args = fenced.group(1) if fenced else args.strip()
        last = i == len(parts) - 1
        if not ended and last and not closed and not brackets_closed(args, must_open=True):
            yield invalid(raw, f"the reply ended inside the call of {name!r}", name=name or None)
            continue
        yield named_call(name, args, raw)
