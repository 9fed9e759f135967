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
    <|tool_call_start|>[f(a=1, b="x")]<|tool_call_end|>                 LFM2 (or a JSON list)
    <|tools_prefix|>[{"f": {...}}, {"g": {...}}]<|tools_suffix|>         Apertus (thinks in <|inner_prefix|>…<|inner_suffix|>)
    <TOOLCALL>[{"name": "f", "arguments": {...}}]</TOOLCALL>             Nemotron Nano v2
    <longcat_tool_call>{"name": "f", "arguments": {...}}</longcat_tool_call>   LongCat
    …<|message_sep|>function call<|role_sep|>
    {"name": "f", "arguments": {...}}                                   GigaChat 3

Hunyuan's ``<tool_calls>`` may hold ``<tool_call>`` elements instead of JSON (HY v3:
``<tool_call>f<tool_sep><arg_key>k</arg_key><arg_value>v</arg_value></tool_call>``, HY v4
the same without ``<tool_sep>``); those are read as Hermes/GLM ``<tool_call>`` blocks.
Hy3/Hy4 tokenizers may label every marker of the family (``<tool_calls:opensource>``,
``<arg_key:opensource>``, ``<think:opensource>`` …; vLLM finds the label in the
tokenizer's added vocabulary): the labelled block is read as the plain one.

Engines, per format: vLLM ``granite_tool_parser.py`` (``<|tool_call|>`` or ``<tool_call>``
before the list), ``granite_20b_fc_tool_parser.py``, ``jamba_tool_parser.py``,
``internlm2_tool_parser.py``, ``phi4mini_tool_parser.py``, ``apertus_tool_parser.py``,
``longcat_tool_parser.py``, ``hunyuan_a13b_tool_parser.py``, ``gigachat3_tool_parser.py``
(read at 11c3997a: GigaChat 3's ``function call<|role_sep|>`` and 3.1's
``<|function_call|>``); llama.cpp ``common/parsers/lfm2.cpp`` (read at aabb95e9:
Python-style calls, JSON literals allowed), Command R7B and Nemotron V2 in
``common/chat.cpp``. The others' index versions were not re-read for this caption.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..calls import ParseEvent, invalid
from ..markup import CHATML, EOS, THINK, TOOL_CALL, TOOL_CALL_END, Block
from .base import ARGS_KEYS, FormatReader, named_call, read_json_calls
from .tool_call_tag import read_tool_call
from .whole_reply import PYTHONIC, read_pythonic

__all__ = []


@dataclass(frozen=True)
class JsonTagFormat:
    """One format of JSON (or pythonic) calls between markers, and its call objects' keys."""

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
    pythonic: bool = False  # a pythonic call list may stand instead of the JSON
    name_is_key: bool = False  # calls written {"NAME": {arguments}}
    nested: bool = False  # <tool_call> elements may stand instead of the JSON
    label: str = ""  # carried by every marker inside the block too (Hunyuan's ":opensource")


_W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
HY_LABEL = ":opensource"


def _labelled(marker: str, label: str = HY_LABEL) -> str:
    return marker[:-1] + label + ">"


_HY_STEMS = ("tool_calls", "tool_call", "tool_sep", "arg_key", "arg_value", "think")
_T = '{"name": "get_time", "arguments": {"zone": "CET"}}'

# each format's markers, written once; the table below is made of them
_TOOL_CALLS = ("<tool_calls>", "</tool_calls>")  # Jamba, MiniMax-M1, Hunyuan
_ANSWER = ("<answer>", "</answer>")  # Hunyuan A13B's answer frame
_GRANITE = "<|tool_call|>"
_GRANITE_ENDS = ("<|end_of_text|>", "<|end_of_role|>")
_GRANITE_FC = ("<function_call>", "</function_call>")
_FUNCTOOLS = "functools["
_INTERNLM = ("<|action_start|><|plugin|>", "<|action_end|>")
_COMMAND_R_ACTION = ("<|START_ACTION|>", "<|END_ACTION|>")
_COMMAND_R_THINKING = ("<|START_THINKING|>", "<|END_THINKING|>")
_COMMAND_R_RESPONSE = ("<|START_RESPONSE|>", "<|END_RESPONSE|>")
_PYTHON_TAG = "<|python_tag|>"
_LLAMA_ENDS = ("<|eom_id|>", "<|eot_id|>")
_LFM2 = ("<|tool_call_start|>", TOOL_CALL_END)
_APERTUS_TOOLS = ("<|tools_prefix|>", "<|tools_suffix|>")
_APERTUS_INNER = ("<|inner_prefix|>", "<|inner_suffix|>")
_NEMOTRON = ("<TOOLCALL>", "</TOOLCALL>")
_LONGCAT = ("<longcat_tool_call>", "</longcat_tool_call>")
#: GigaChat 3's role and message separators (a call is the role "function call")
GIGACHAT_SEPS = ("<|role_sep|>", "<|message_sep|>")
#: GigaChat 3.1's call marker (vLLM's gigachat3 reader takes it beside GigaChat 3's role)
GIGACHAT31_CALL = "<|function_call|>"


def _tags(pair: tuple[str, str]) -> Block:
    """A call block between the opening and closing marker of ``pair``."""
    return Block(pair[0], (pair[1],), "call")


JSON_TAG_FORMATS: tuple[JsonTagFormat, ...] = (
    JsonTagFormat(
        "tool-calls-tag",
        _tags(_TOOL_CALLS),
        examples=(
            f"<tool_calls>[{_W}, {_T}]</tool_calls>",
            f"<tool_calls>\n{_W}\n{_T}\n</tool_calls>",
        ),
        special=False,
        # Hunyuan A13B frames its answer, calls or not, in <answer>…</answer>
        drop_tokens=(_TOOL_CALLS[1], *_ANSWER),
        channel_tokens=_ANSWER,
        nested=True,
    ),
    JsonTagFormat(
        "hunyuan-labelled",
        _tags((_labelled(_TOOL_CALLS[0]), _labelled(_TOOL_CALLS[1]))),
        examples=(
            "<tool_calls:opensource><tool_call:opensource>get_weather<tool_sep:opensource>"
            "<arg_key:opensource>city</arg_key:opensource>"
            "<arg_value:opensource>Paris</arg_value:opensource></tool_call:opensource>"
            "</tool_calls:opensource>",
        ),
        extra_blocks=(Block(_labelled(THINK.open), (_labelled(THINK.close[0]),), "reasoning"),),
        drop_tokens=(_labelled(_TOOL_CALLS[1]), _labelled(THINK.close[0])),
        nested=True,
        label=HY_LABEL,
    ),
    JsonTagFormat(
        "granite",
        Block(_GRANITE, _GRANITE_ENDS, "call"),
        examples=(f"<|tool_call|>[{_W}, {_T}]",),
    ),
    JsonTagFormat(
        "granite-fc",
        # the next call's marker ends this one and opens the next
        Block(_GRANITE_FC[0], _GRANITE_FC, "call", False),
        examples=(f"<function_call> {_W} <function_call> {_T}",),
        special=False,
        drop_tokens=(_GRANITE_FC[1], "<|endoftext|>"),
    ),
    JsonTagFormat(
        "functools",
        Block(_FUNCTOOLS, (), "call"),
        examples=(f"functools[{_W}, {_T}]",),
        prefix="[",
        special=False,
    ),
    JsonTagFormat(
        "internlm",
        _tags(_INTERNLM),
        examples=(
            '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}'
            "<|action_end|>",
        ),
        drop_tokens=(_INTERNLM[1],),
    ),
    JsonTagFormat(
        "command-r",
        _tags(_COMMAND_R_ACTION),
        examples=(
            '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
            '{"city": "Paris"}}, {"tool_call_id": "1", "tool_name": "get_time", "parameters": '
            '{"zone": "CET"}}]<|END_ACTION|>',
        ),
        name_keys=("tool_name", "name"),
        extra_blocks=(Block(_COMMAND_R_THINKING[0], (_COMMAND_R_THINKING[1],), "reasoning"),),
        drop_tokens=(*_COMMAND_R_RESPONSE, _COMMAND_R_ACTION[1]),
        channel_tokens=_COMMAND_R_RESPONSE,
    ),
    JsonTagFormat(
        "llama-python-tag",
        Block(_PYTHON_TAG, _LLAMA_ENDS, "call"),
        examples=(
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; '
            '{"name": "get_time", "parameters": {"zone": "CET"}}',
        ),
        drop_tokens=_LLAMA_ENDS,
    ),
    JsonTagFormat(
        "lfm2",
        _tags(_LFM2),
        examples=(
            '<|tool_call_start|>[get_weather(city="巴黎", days=3)]<|tool_call_end|>',
            '<|tool_call_start|>[get_weather(city="Paris"), get_time(zone="CET")]<|tool_call_end|>',
            f"<|tool_call_start|>[{_W}, {_T}]<|tool_call_end|>",
        ),
        drop_tokens=(_LFM2[1], CHATML[1]),
        pythonic=True,
    ),
    JsonTagFormat(
        "apertus",
        _tags(_APERTUS_TOOLS),
        examples=(
            '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}, '
            '{"get_time": {"zone": "CET"}}]<|tools_suffix|>',
        ),
        extra_blocks=(Block(_APERTUS_INNER[0], (_APERTUS_INNER[1],), "reasoning"),),
        drop_tokens=(_APERTUS_TOOLS[1], _APERTUS_INNER[1]),
        name_is_key=True,
    ),
    JsonTagFormat(
        "nemotron",
        _tags(_NEMOTRON),
        examples=(f"<TOOLCALL>[{_W}, {_T}]</TOOLCALL>",),
        drop_tokens=(_NEMOTRON[1],),
    ),
    JsonTagFormat(
        "longcat",
        _tags(_LONGCAT),
        examples=(
            f"<longcat_tool_call>\n{_W}\n</longcat_tool_call>\n"
            f"<longcat_tool_call>\n{_T}\n</longcat_tool_call>",
        ),
        special=False,
        drop_tokens=(_LONGCAT[1],),
    ),
    JsonTagFormat(
        "gigachat3",
        Block("function call" + GIGACHAT_SEPS[0], (EOS, GIGACHAT_SEPS[1]), "call"),
        examples=(
            f"function call<|role_sep|>\n{_W}",
            f"Checking.<|message_sep|>\n\nfunction call<|role_sep|>\n{_W}</s>",
            f"Checking.{GIGACHAT31_CALL}{_W}</s>",
        ),
        # GigaChat 3.1 writes its one call after <|function_call|> (no closer of its own)
        extra_blocks=(Block(GIGACHAT31_CALL, (EOS, GIGACHAT_SEPS[1]), "call"),),
        drop_tokens=(GIGACHAT_SEPS[1], EOS),
        channel_tokens=(GIGACHAT_SEPS[1],),  # ends the answer part, call or not
    ),
)


class JsonTagReader(FormatReader):
    """All of :data:`JSON_TAG_FORMATS`, one block each."""

    def __init__(self, fmt: JsonTagFormat) -> None:
        self.fmt = fmt
        super().__init__(
            fmt.name,
            (fmt.block, *fmt.extra_blocks),
            drop_tokens=fmt.drop_tokens,
            channel_tokens=fmt.channel_tokens,
            special=fmt.special,
            examples=fmt.examples,
        )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        if self.fmt.label:
            text = _unlabelled(text, self.fmt.label)
        body = text.strip()
        listed = body if body.startswith("[") else f"[{body}]"  # the list's brackets left out
        if self.fmt.pythonic and PYTHONIC.match(listed):
            return read_pythonic(listed) or [
                invalid(block.open + text, f"{block.open} holds no pythonic call list")
            ]
        if self.fmt.nested and body.startswith(TOOL_CALL.open):
            return _read_nested(body, closed=closed)
        return read_json_calls(
            self.fmt.prefix + text,
            closed=closed,
            where=self.fmt.block.open,
            name_keys=self.fmt.name_keys,
            args_keys=self.fmt.args_keys,
            name_is_key=self.fmt.name_is_key,
        )


def _unlabelled(text: str, label: str) -> str:
    """``text`` with the family's labelled markers written plain."""
    return re.sub(rf"<(/?)({'|'.join(_HY_STEMS)}){re.escape(label)}>", r"<\1\2>", text)


_BARE_NAME = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(?:<tool_sep>)?\s*")


def _read_nested(body: str, *, closed: bool) -> Iterator[ParseEvent]:
    """Hunyuan: ``<tool_call>`` elements inside ``<tool_calls>``."""
    for part in body.split(TOOL_CALL.open)[1:]:
        inner, ended, _ = part.partition(TOOL_CALL.close[0])
        bare = _BARE_NAME.fullmatch(inner)
        if bare and (ended or closed):
            yield named_call(bare.group(1), {}, TOOL_CALL.open + part)  # a call without arguments
        else:
            yield from read_tool_call(inner, closed=closed or bool(ended))
