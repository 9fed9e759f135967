"""``<tool_call>…</tool_call>``: Hermes/Nous and the models that borrowed the tag.

What stands inside the tag differs by model family; all are read here::

    <tool_call>{"name": "f", "arguments": {...}}</tool_call>     Hermes, Qwen2.5/3, QwQ
    <tool_call>{"name": "f", "parameters": {...}}</tool_call>    some fine-tunes
    <tool_call>[{"name": ...}, {"name": ...}]</tool_call>         several in one block
    <tool_call><function=f><parameter=p>v</parameter></function></tool_call>   Qwen3-Coder
    <tool_call>f<arg_key>p</arg_key><arg_value>v</arg_value></tool_call>       GLM-4.5/4.7

The Hermes prompt dialect reads its replies with :func:`read_tool_call` too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..base import Block, ContentDelta, ParseEvent
from .base import Reader, read_json_calls
from .xml_params import read_arg_pairs, read_function_body

__all__ = ["TOOL_CALL", "ToolCallTagReader", "read_tool_call"]

TOOL_CALL = Block("<tool_call>", ("</tool_call>",), "call")
_MARKUP = re.compile(
    "|".join(map(re.escape, ("<tool_call>", "</tool_call>", "<think>", "</think>")))
)


def read_tool_call(text: str, *, closed: bool) -> Iterator[ParseEvent]:
    """Read the text of one ``<tool_call>`` block, whichever family wrote it."""
    body = text.strip()
    if body.startswith("<function="):
        inner, _, after = body[len("<function=") :].partition("</function>")
        yield from read_function_body(inner, closed=closed or bool(_))
        if after.strip():
            yield ContentDelta(_MARKUP.sub("", after).strip())
        return
    if (
        "<arg_key>" in body
        or "<tool_sep>" in body
        or (body and body[0] not in "{[" and "\n" in body and "<" in body)
    ):
        yield from read_arg_pairs(body, closed=closed)
        return
    for event in read_json_calls(text, closed=closed, where="<tool_call>"):
        if isinstance(event, ContentDelta):
            # the scanner does not look for markup inside a block; take it out here
            prose = _MARKUP.sub("", event.text).strip()
            if prose:
                yield ContentDelta(prose)
        else:
            yield event


class ToolCallTagReader(Reader):
    """Hermes/Nous ``<tool_call>`` blocks and the formats that reuse the tag."""

    name: ClassVar[str] = "hermes"
    blocks: ClassVar[tuple[Block, ...]] = (TOOL_CALL,)
    drop_tokens: ClassVar[tuple[str, ...]] = ("</tool_call>",)
    special: ClassVar[bool] = False
    examples: ClassVar[tuple[str, ...]] = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "上海"}}\n</tool_call>',
        '<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_time", "arguments": {"zone": "CET"}}\n</tool_call>',
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_time", "arguments": {"zone": "CET"}}]</tool_call>',
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>北京</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_tool_call(text, closed=closed)
