"""Kimi tool calls: K2 / K2-Thinking sections, and Kimi-K3's XTML ``tools`` channel.

::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{...}<|tool_call_end|><|tool_calls_section_end|>

    <|open|>think<|sep|>…<|close|>think<|sep|>                     K3: reasoning
    <|open|>response<|sep|>Let me look.<|close|>response<|sep|>    K3: answer text
    <|open|>tools<|sep|>
    <|open|>call tool="f" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
    <|open|>argument key="days" type="integer"<|sep|>3<|close|>argument<|sep|>
    <|close|>call<|sep|>
    <|close|>tools<|sep|>

K2-Thinking reasons in ``<think>`` blocks, read by the shared scanner. K3 tags each
argument with its type: a ``string`` is the raw text, any other type is JSON.

Engines: vLLM ``kimi_k2_tool_parser.py`` (K2; index version 63c2b7ab, not re-read) and
llama.cpp ``common/parsers/kimi-k3.cpp`` (K3, read at 78b4c52c: each argument runs to
the first ``<|close|>argument<|sep|>``, whatever markup it holds, so a value is opaque
until its own closer).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..calls import ParseEvent, brackets_closed, invalid, partition_unquoted, split_unquoted
from ..markup import CHATML, TOOL_CALL_END, Block
from .base import Reader, named_call

__all__ = []

SECTION = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
CALL, ARGS, END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", TOOL_CALL_END


class KimiReader(Reader):
    name: ClassVar[str] = "kimi"
    blocks: ClassVar[tuple[Block, ...]] = (
        Block(SECTION[0], (SECTION[1],), "call"),
        # a call written without its section
        Block(CALL, (END,), "call"),
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (SECTION[1], END, CHATML[1])
    examples: ClassVar[tuple[str, ...]] = (
        f'{SECTION[0]}{CALL}functions.get_weather:0{ARGS}{{"city": "Paris"}}{END}'
        f'{CALL}functions.get_time:1{ARGS}{{"zone": "CET"}}{END}{SECTION[1]}',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        if block.open == CALL:
            return _read(CALL + text + (END if closed else ""), closed)
        return _read(text, closed)


def _read(text: str, closed: bool) -> Iterator[ParseEvent]:
    parts = split_unquoted(text, CALL)[1:]
    if not parts:
        yield invalid(SECTION[0] + text, f"no {CALL} in the tool call section")
    for part in parts:
        raw = CALL + part
        body, ended, _ = partition_unquoted(part, END)
        head, sep, args = body.partition(ARGS)
        name = head.strip().removeprefix("functions.").rsplit(":", 1)[0]
        if not sep:
            yield invalid(raw, f"no {ARGS} in the call of {name!r}", name=name or None)
        elif not ended and not closed and not brackets_closed(args, must_open=True):
            yield invalid(raw, f"the reply ended inside the call of {name!r}", name=name or None)
        else:
            yield named_call(name, args, raw)


#: Kimi-K3's XTML tokens: a tag opens, closes, and its head ends
K3_TAGS = ("<|open|>", "<|close|>", "<|sep|>")
_OPEN, _CLOSE, _SEP_TOKEN = K3_TAGS


def _xtml(kind: str) -> tuple[str, str]:
    return f"{_OPEN}{kind}{_SEP_TOKEN}", f"{_CLOSE}{kind}{_SEP_TOKEN}"


K3_TOOLS, K3_THINK, K3_RESPONSE = _xtml("tools"), _xtml("think"), _xtml("response")
K3_MESSAGE_END = _xtml("message")[1]
_SEP = re.escape(_SEP_TOKEN)
_K3_CALL_HEAD = re.compile(
    re.escape(_OPEN) + r"\s*call\s+((?:(?!" + _SEP + r").)*)" + _SEP, re.DOTALL
)
_K3_CALL_END = re.compile(re.escape(_CLOSE) + r"\s*call\s*" + _SEP)
_K3_ARG_HEAD = re.compile(
    re.escape(_OPEN) + r"\s*argument\s+((?:(?!" + _SEP + r").)*)" + _SEP, re.DOTALL
)
_K3_ARG_END = re.compile(re.escape(_CLOSE) + r"\s*argument\s*" + _SEP)
_ATTR = re.compile(r'(\w+)="([^"]*)"')


class KimiK3Reader(Reader):
    """Kimi-K3: calls in the XTML ``tools`` channel; ``think`` is reasoning."""

    name: ClassVar[str] = "kimi-k3"
    blocks: ClassVar[tuple[Block, ...]] = (
        Block(K3_TOOLS[0], (K3_TOOLS[1],), "call"),
        Block(K3_THINK[0], (K3_THINK[1],), "reasoning"),
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (
        *K3_RESPONSE,
        K3_MESSAGE_END,
        K3_TOOLS[1],
        K3_THINK[1],  # the prompt may open the think channel
    )
    channel_tokens: ClassVar[tuple[str, ...]] = (*K3_RESPONSE, K3_MESSAGE_END, K3_THINK[1])
    examples: ClassVar[tuple[str, ...]] = (
        f'{K3_TOOLS[0]}<|open|>call tool="get_weather" index="1"<|sep|>'
        '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
        '<|close|>call<|sep|><|open|>call tool="get_time" index="2"<|sep|>'
        '<|open|>argument key="zone" type="string"<|sep|>CET<|close|>argument<|sep|>'
        f"<|close|>call<|sep|>{K3_TOOLS[1]}",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return _read_k3(text)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        # a value is opaque until its own closer (llama.cpp reads it to the first
        # <|close|>argument<|sep|>): the tools closer inside one is the value's text
        return not _k3_scan(text)[1]


@dataclass
class _K3Call:
    head: re.Match[str]
    args: list[tuple[dict[str, str], str]] = field(default_factory=list)
    end: int = -1  # where its <|close|>call<|sep|> ends; -1: not come


def _k3_scan(text: str) -> tuple[list[_K3Call], bool]:
    """The calls in a ``tools`` block, read in order: each argument's value runs to the
    first ``<|close|>argument<|sep|>`` after it, whatever markup it holds; and whether
    the text ends inside a value."""
    calls: list[_K3Call] = []
    pos = 0
    while (head := _K3_CALL_HEAD.search(text, pos)) is not None:
        call = _K3Call(head)
        calls.append(call)
        pos = head.end()
        while True:
            arg = _K3_ARG_HEAD.search(text, pos)
            stop = _K3_CALL_END.search(text, pos)
            if stop is not None and (arg is None or stop.start() < arg.start()):
                call.end = pos = stop.end()
                break
            if arg is None:
                return calls, False  # the reply ended inside the call
            value_end = _K3_ARG_END.search(text, arg.end())
            if value_end is None:
                return calls, True
            call.args.append((_attrs(arg.group(1)), text[arg.end() : value_end.start()]))
            pos = value_end.end()
    return calls, False


def _read_k3(text: str) -> Iterator[ParseEvent]:
    calls, _ = _k3_scan(text)
    for call in calls:
        name = _attrs(call.head.group(1)).get("tool", "")
        raw = text[call.head.start() : call.end if call.end >= 0 else len(text)]
        if call.end < 0:
            yield invalid(raw, f"the reply ended inside the call of {name!r}; not run", name=name)
            return
        args: dict[str, Any] = {}
        texts: dict[str, str] = {}  # values whose type the call does not give
        for arg_attrs, value in call.args:
            key = arg_attrs.get("key", "")
            typed: Any = value
            if "type" not in arg_attrs:
                texts[key] = value
            if arg_attrs.get("type", "string") != "string":
                with contextlib.suppress(ValueError, RecursionError):  # kept as written
                    typed = json.loads(value)
            args[key] = typed
        yield named_call(name, args, raw, texts=texts)
    if not calls and text.strip():
        yield invalid(text, f"no call inside {K3_TOOLS[0]}")


def _attrs(text: str) -> dict[str, str]:
    return {k: v.replace("&quot;", '"').replace("&amp;", "&") for k, v in _ATTR.findall(text)}
