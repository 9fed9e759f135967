"""gpt-oss (OpenAI harmony): calls on the ``commentary`` channel addressed ``to=functions.NAME``.

::

    <|channel|>analysis<|message|>reasoning…<|end|>
    <|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}<|call|>
    <|start|>assistant to=functions.f<|channel|>commentary json<|message|>{...}<|call|>
    <|channel|>final<|message|>the answer<|return|>

The ``analysis`` channel is reasoning, the ``final`` channel (and ``commentary`` without
a recipient) is answer text. Read with the shared scanner rather than ``openai-harmony``'s
token parser, which works on token ids, not on the text a server hands back.

Engines: vLLM ``openai_tool_parser.py`` and llama.cpp ``common/parsers/gpt-oss.cpp``
(index versions 0558e317, 78b4c52c; not re-read for this caption).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..calls import ParseEvent, brackets_closed, invalid
from ..markup import Block
from .base import Reader, named_call

__all__ = []

_NAME = re.compile(r"^\s*(?:functions\.)?([\w.\-]+)")
#: harmony's special tokens; its markers are made of them
START, CHANNEL, MESSAGE = "<|start|>", "<|channel|>", "<|message|>"
END, CALL, RETURN = "<|end|>", "<|call|>", "<|return|>"


class HarmonyReader(Reader):
    name: ClassVar[str] = "harmony"
    blocks: ClassVar[tuple[Block, ...]] = (
        Block(f"{CHANNEL}analysis{MESSAGE}", (END,), "reasoning"),
        Block(f"{CHANNEL}commentary to=", (CALL,), "call"),
        Block(f"{START}assistant to=", (CALL,), "call"),
        Block(f"{CHANNEL}analysis to=", (CALL,), "call"),
    )
    channel_tokens: ClassVar[tuple[str, ...]] = (
        f"{START}assistant",
        f"{CHANNEL}final{MESSAGE}",
        f"{CHANNEL}commentary{MESSAGE}",
        START,
        END,
        RETURN,
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (*channel_tokens, CALL)
    examples: ClassVar[tuple[str, ...]] = (
        "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>"
        'commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
        '{"city": "Paris"}<|call|>',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return _read(text, closed, block.open)


def _read(text: str, closed: bool, opened: str) -> Iterator[ParseEvent]:
    raw = opened + text
    head, sep, args = text.partition(MESSAGE)
    named = _NAME.match(head)
    name = named.group(1) if named else ""
    if not name:
        yield invalid(raw, "no recipient (to=functions.NAME) for the call")
    elif not sep:
        yield invalid(raw, f"no {MESSAGE} with the arguments of {name!r}", name=name)
    elif not closed and not brackets_closed(args, must_open=True):
        yield invalid(raw, f"the reply ended inside the arguments of {name!r}", name=name)
    else:
        yield named_call(name, args.strip() or "{}", raw)
