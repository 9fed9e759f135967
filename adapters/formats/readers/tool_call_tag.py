"""``<tool_call>…</tool_call>``: Hermes/Nous and the models that borrowed the tag.

What stands inside the tag differs by model family; all are read here::

    <tool_call>{"name": "f", "arguments": {...}}</tool_call>     Hermes, Qwen2.5/3, QwQ
    <tool_call>{"name": "f", "parameters": {...}}</tool_call>    some fine-tunes
    <tool_call>[{"name": ...}, {"name": ...}]</tool_call>         several in one block
    <tool_call><function=f><parameter=p>v</parameter></function></tool_call>   Qwen3-Coder
    <tool_call>f<arg_key>p</arg_key><arg_value>v</arg_value></tool_call>       GLM-4.5/4.6/4.7
    <tool_call>f</tool_call>                                                   GLM, no arguments

A ``</tool_call>`` inside a JSON string or an XML parameter value (source code the call
passes) does not end the block.

The Hermes prompt dialect reads its replies with :func:`read_tool_call` too.

Engines: vLLM ``hermes_tool_parser.py`` (index version 836d1f31), ``glm4_moe_tool_parser.py``
(3e990f4c; a value keeps its spaces, a last ``</arg_value>`` missing where the call's
closer came is repaired) and the Qwen3-Coder body of :mod:`.xml_params`; not re-read for
this caption except as stated in :mod:`.xml_params`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..calls import ContentDelta, ParseEvent, in_json_string
from ..markup import THINK, TOOL_CALL, Block
from .base import Reader, read_json_calls
from .xml_params import FUNCTION, not_inside_value, read_arg_pairs, read_function_calls

__all__ = ["ToolCallTagReader"]

# GLM: a bare tool name, then <arg_key> pairs or nothing
_GLM = re.compile(r"[^\s<>{}\[\]\"']+\s*(?:<tool_sep>\s*)?(?:<arg_key>|$)")
_MARKUP = re.compile(
    "|".join(map(re.escape, (TOOL_CALL.open, *TOOL_CALL.close, THINK.open, *THINK.close)))
)


def read_tool_call(text: str, *, closed: bool) -> Iterator[ParseEvent]:
    """Read the text of one ``<tool_call>`` block, whichever family wrote it."""
    body = text.strip()
    if _GLM.match(body):
        yield from read_arg_pairs(body, closed=closed)
        return
    if FUNCTION in body and not body.startswith(("{", "[")):
        yield from read_function_calls(body, closed=closed)
        return
    for event in read_json_calls(text, closed=closed, where=TOOL_CALL.open):
        if isinstance(event, ContentDelta):
            # the scanner does not look for markup inside a block; take it out here
            prose = _MARKUP.sub("", event.text).strip()
            if prose:
                yield ContentDelta(prose)
        else:
            yield event


def tool_call_may_close(text: str) -> bool:
    """Whether a ``</tool_call>`` after ``text`` ends the block: not when it stands
    inside a JSON string, a GLM ``<arg_value>`` or an XML parameter value of the call."""
    body = text.lstrip()
    if body.startswith(("{", "[")):
        return not in_json_string(body)
    if _GLM.match(body):
        return body.rfind("<arg_value>") <= body.rfind("</arg_value>")
    if FUNCTION in body:
        return not_inside_value(body)
    return True


class ToolCallTagReader(Reader):
    """Hermes/Nous ``<tool_call>`` blocks and the formats that reuse the tag."""

    name: ClassVar[str] = "hermes"
    blocks: ClassVar[tuple[Block, ...]] = (TOOL_CALL,)
    drop_tokens: ClassVar[tuple[str, ...]] = TOOL_CALL.close
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
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>北京</arg_value></tool_call>"
        "<tool_call>get_time<arg_key>zone</arg_key><arg_value>CST</arg_value></tool_call>",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_tool_call(text, closed=closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        return tool_call_may_close(text)
