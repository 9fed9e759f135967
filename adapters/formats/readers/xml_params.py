"""Qwen3-Coder / Qwen3.5 / Seed-OSS and Llama 3.1 ``<function=NAME>`` calls, and the GLM-4.5
``NAME<arg_key>k</arg_key><arg_value>v</arg_value>`` and MiniMax ``<invoke name=…>`` bodies.

::

    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>

    <function=get_weather>{"city": "Paris"}</function>          (Llama 3.1)

Parameter values carry no types in these formats: a value written as JSON (``5``,
``true``, ``{"a": 1}``) is taken as that JSON value, anything else as a string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..base import Block, ParseEvent, invalid
from .base import Reader, json_value, named_call, read_json_calls

__all__ = [
    "FunctionTagReader",
    "MinimaxReader",
    "read_arg_pairs",
    "read_function_body",
    "read_invokes",
]

_PARAM = re.compile(r"<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>", re.DOTALL)
_PARAM_OPEN = re.compile(r"<parameter=([^>\n]+)>")
_ARG = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)
_INVOKE = re.compile(r'<invoke\s+name="([^"]+)"\s*>(.*?)</invoke>', re.DOTALL)
_INVOKE_PARAM = re.compile(r'<parameter\s+name="([^"]+)"\s*>(.*?)</parameter>', re.DOTALL)


def read_function_body(text: str, *, closed: bool) -> Iterator[ParseEvent]:
    """Read ``NAME>`` followed by ``<parameter=…>`` elements or a JSON object."""
    raw = "<function=" + text
    name, sep, body = text.partition(">")
    name = name.strip()
    if not sep or not name or "\n" in name:
        yield invalid(raw, "unreadable <function=NAME> tag")
        return
    stripped = body.strip()
    if stripped.startswith(("{", "[")):
        yield from read_json_calls(
            '{"name": ' + _quote(name) + ', "arguments": ' + stripped + "}",
            closed=closed,
            where=f"<function={name}>",
            prose_after=False,
        )
        return
    opened = _PARAM_OPEN.findall(body)
    params = _PARAM.findall(body)
    if len(params) < len(opened):
        yield invalid(
            raw,
            f"the reply ended inside a <parameter> of <function={name}>; the call was not run",
            name=name,
        )
        return
    if not closed:
        # more parameters may have been on their way: a cut-short call is never run
        yield invalid(
            raw, f"the reply ended inside <function={name}>; the call was not run", name=name
        )
        return
    yield named_call(name, {k.strip(): json_value(v) for k, v in params}, raw)


def read_arg_pairs(text: str, *, closed: bool) -> Iterator[ParseEvent]:
    """GLM-4.5/4.7: ``NAME`` then ``<arg_key>…</arg_key><arg_value>…</arg_value>`` pairs
    (Hunyuan HY v3 puts ``<tool_sep>`` after the name)."""
    name, _, rest = text.strip().partition("\n")
    if "<arg_key>" in name:
        name, rest = name[: name.index("<arg_key>")], name[name.index("<arg_key>") :] + rest
    name = name.replace("<tool_sep>", "")
    pairs = _ARG.findall(rest)
    if not closed or rest.count("<arg_key>") > len(pairs):
        yield invalid(
            text, f"an <arg_key> of {name.strip()!r} has no <arg_value>; the call was not run"
        )
        return
    yield named_call(name, {k.strip(): json_value(v) for k, v in pairs}, text)


def read_invokes(text: str, *, closed: bool) -> Iterator[ParseEvent]:
    """MiniMax-M2: ``<invoke name="f"><parameter name="p">v</parameter></invoke>`` …"""
    invokes = _INVOKE.findall(text)
    if not closed or text.count("<invoke") > len(invokes):
        yield invalid(text, "the reply ended inside <minimax:tool_call>; no call was run")
        return
    for name, body in invokes:
        params = _INVOKE_PARAM.findall(body)
        yield named_call(name, {k: json_value(v.strip("\n")) for k, v in params}, text)


def _quote(name: str) -> str:
    import json

    return json.dumps(name, ensure_ascii=False)


class FunctionTagReader(Reader):
    """``<function=NAME>…</function>``: Qwen3-Coder, Qwen3.5, Seed-OSS, Llama 3.1."""

    name: ClassVar[str] = "function-tag"
    FUNCTION: ClassVar[Block] = Block("<function=", ("</function>",), "call")
    blocks: ClassVar[tuple[Block, ...]] = (
        FUNCTION,
        Block("<seed:think>", ("</seed:think>",), "reasoning"),
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (
        "<seed:tool_call>",
        "</seed:tool_call>",
        "</function>",
    )
    special: ClassVar[bool] = False
    examples: ClassVar[tuple[str, ...]] = (
        "<function=get_weather>\n<parameter=city>\n巴黎\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>",
        '<function=get_weather>{"city": "Paris"}</function>'
        '<function=get_time>{"zone": "CET"}</function>',
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
        "</function>\n</seed:tool_call>",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_function_body(text, closed=closed)


class MinimaxReader(Reader):
    """MiniMax-M2: ``<minimax:tool_call><invoke name=…>…</invoke></minimax:tool_call>``."""

    name: ClassVar[str] = "minimax"
    blocks: ClassVar[tuple[Block, ...]] = (
        Block("<minimax:tool_call>", ("</minimax:tool_call>",), "call"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
        '</parameter>\n</invoke>\n<invoke name="get_time">\n<parameter name="zone">CET'
        "</parameter>\n</invoke>\n</minimax:tool_call>",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_invokes(text, closed=closed)
