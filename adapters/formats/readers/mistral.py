"""Mistral ``[TOOL_CALLS]``: a JSON list (v3–v7), or ``NAME[ARGS]{…}`` per call (v11+).

::

    [TOOL_CALLS][{"name": "f", "arguments": {...}}, {"name": "g", "arguments": {...}}]
    [TOOL_CALLS]f[ARGS]{...}[TOOL_CALLS]g[ARGS]{...}
    [TOOL_CALLS]f[CALL_ID]a1b2c3d4e[ARGS]{...}
    [TOOL_CALLS]f{...}                                   (Magistral, Devstral)
    [THINK]…[/THINK]                                     reasoning (Magistral, Ministral 3)

Text after a call's JSON arguments is answer text.

Engines: vLLM ``mistral_tool_parser.py`` and llama.cpp ``common/parsers/ministral3.cpp``
(index versions a5cdcfaa, 5204e210; not re-read for this caption).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..calls import ParseEvent, brackets_closed, in_json_string, invalid
from ..markup import EOS, Block
from .base import Reader, named_call_and_text, read_json_calls, strict_prefix

__all__ = []

#: Mistral's call token (tokenizer v3 and v11+), and its reasoning block (Magistral)
TOOL_CALLS = "[TOOL_CALLS]"
_THINK = Block("[THINK]", ("[/THINK]",), "reasoning")

_NAMED = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*\w+\s*)?(?:\[ARGS\])?\s*(?=[{\[])")


class MistralReader(Reader):
    name: ClassVar[str] = "mistral"
    # the next [TOOL_CALLS] ends a call and opens the next one
    blocks: ClassVar[tuple[Block, ...]] = (
        Block(TOOL_CALLS, (TOOL_CALLS, EOS), "call", False),
        _THINK,
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (EOS, *_THINK.close)
    # a [THINK] the prompt opened leaves its closer in a reply that holds no call
    channel_tokens: ClassVar[tuple[str, ...]] = _THINK.close
    examples: ClassVar[tuple[str, ...]] = (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_time", "arguments": {"zone": "CET"}}]',
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}',
        '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}',
        '[TOOL_CALLS]get_weather{"city": "Paris"}',
        '[THINK]The user wants the weather.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return _read(text, closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        # "[TOOL_CALLS]" written inside a string argument is that argument's text
        return not in_json_string(text)


def _read(text: str, closed: bool) -> Iterator[ParseEvent]:
    body = text.strip()
    if body.startswith(("[", "{")):
        yield from read_json_calls(body, closed=closed, where=TOOL_CALLS)
        return
    named = _NAMED.match(body)
    if named is None:
        yield invalid(TOOL_CALLS + text, f"no tool name after {TOOL_CALLS}")
        return
    args = body[named.end() :].strip()
    raw = TOOL_CALLS + text
    if not closed and not strict_prefix(args)[0] and not brackets_closed(args, must_open=True):
        yield invalid(
            raw,
            f"the reply ended inside the arguments of {named.group(1)!r}; the call was not run",
            name=named.group(1),
        )
        return
    yield from named_call_and_text(named.group(1), args, raw)
