"""Formats that wrap JSON calls between a pair of tags or special tokens.

Each is data: its markers, and the keys its call objects use. The JSON inside may be one
object, a list, or one object per line; see :func:`.base.read_json_calls`.

::

    <tool_calls>[{"name": "f", "arguments": {...}}]</tool_calls>        Jamba
    <tool_calls>
    {"name": "f", "arguments": {...}}
    {"name": "g", "arguments": {...}}
    </tool_calls>                                                      MiniMax-M1
    <|tool_call|>[{"name": "f", "arguments": {...}}]                    Granite 3.x
    <function_call>{"name": "f", "arguments": {...}}                    granite-20b-fc
    functools[{"name": "f", "arguments": {...}}]                        Phi-4-mini, FireFunction
    <|action_start|><|plugin|>{"name": "f", "parameters": {...}}<|action_end|>   InternLM2
    <|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {...}}]<|END_ACTION|>  Command R7B
    <|python_tag|>{"name": "f", "parameters": {...}}                    Llama 3.1/3.2
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..base import Block, ParseEvent
from .base import ARGS_KEYS, Reader, read_json_calls

__all__ = ["JSON_TAG_FORMATS", "JsonTagReader"]


@dataclass(frozen=True)
class JsonTagFormat:
    name: str
    block: Block
    examples: tuple[str, ...]
    name_keys: Sequence[str] = ("name",)
    args_keys: Sequence[str] = ARGS_KEYS
    prefix: str = ""  # text the block's opening marker ate that belongs to the JSON
    special: bool = True
    extra_blocks: tuple[Block, ...] = ()
    drop_tokens: tuple[str, ...] = ()
    channel_tokens: tuple[str, ...] = ()


_W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
_T = '{"name": "get_time", "arguments": {"zone": "CET"}}'

JSON_TAG_FORMATS: tuple[JsonTagFormat, ...] = (
    JsonTagFormat(
        "tool-calls-tag",
        Block("<tool_calls>", ("</tool_calls>",), "call"),
        (f"<tool_calls>[{_W}, {_T}]</tool_calls>", f"<tool_calls>\n{_W}\n{_T}\n</tool_calls>"),
        special=False,
        drop_tokens=("</tool_calls>",),
    ),
    JsonTagFormat(
        "granite",
        Block("<|tool_call|>", ("<|end_of_text|>", "<|end_of_role|>"), "call"),
        (f"<|tool_call|>[{_W}, {_T}]",),
    ),
    JsonTagFormat(
        "granite-fc",
        # the next call's marker ends this one and opens the next
        Block("<function_call>", ("<function_call>", "</function_call>"), "call", False),
        (f"<function_call> {_W} <function_call> {_T}",),
        special=False,
        drop_tokens=("</function_call>", "<|endoftext|>"),
    ),
    JsonTagFormat(
        "functools",
        Block("functools[", (), "call"),
        (f"functools[{_W}, {_T}]",),
        prefix="[",
        special=False,
    ),
    JsonTagFormat(
        "internlm",
        Block("<|action_start|><|plugin|>", ("<|action_end|>",), "call"),
        (
            '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}'
            "<|action_end|>",
        ),
        drop_tokens=("<|action_end|>",),
    ),
    JsonTagFormat(
        "command-r",
        Block("<|START_ACTION|>", ("<|END_ACTION|>",), "call"),
        (
            '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
            '{"city": "Paris"}}, {"tool_call_id": "1", "tool_name": "get_time", "parameters": '
            '{"zone": "CET"}}]<|END_ACTION|>',
        ),
        name_keys=("tool_name", "name"),
        extra_blocks=(Block("<|START_THINKING|>", ("<|END_THINKING|>",), "reasoning"),),
        drop_tokens=("<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|END_ACTION|>"),
        channel_tokens=("<|START_RESPONSE|>", "<|END_RESPONSE|>"),
    ),
    JsonTagFormat(
        "llama-python-tag",
        Block("<|python_tag|>", ("<|eom_id|>", "<|eot_id|>"), "call"),
        (
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; '
            '{"name": "get_time", "parameters": {"zone": "CET"}}',
        ),
        drop_tokens=("<|eom_id|>", "<|eot_id|>"),
    ),
)


class JsonTagReader(Reader):
    """All of :data:`JSON_TAG_FORMATS`, one block each."""

    name: ClassVar[str] = "json-tags"

    def __init__(self, fmt: JsonTagFormat) -> None:
        self.fmt = fmt
        self.name = fmt.name  # type: ignore[misc]
        self.blocks = (fmt.block, *fmt.extra_blocks)  # type: ignore[misc]
        self.drop_tokens = fmt.drop_tokens  # type: ignore[misc]
        self.channel_tokens = fmt.channel_tokens  # type: ignore[misc]
        self.special = fmt.special  # type: ignore[misc]
        self.examples = fmt.examples  # type: ignore[misc]

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_json_calls(
            self.fmt.prefix + text,
            closed=closed,
            where=self.fmt.block.open,
            name_keys=self.fmt.name_keys,
            args_keys=self.fmt.args_keys,
        )

    def __repr__(self) -> str:
        return f"JsonTagReader({self.fmt.name!r})"
