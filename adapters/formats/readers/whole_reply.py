"""Replies that are nothing but calls, with no markup around them.

::

    {"name": "f", "parameters": {...}}                          Llama 3.x (JSON tool calling)
    [{"name": "f", "arguments": {...}}, {"name": "g", ...}]      xLAM
    ```json
    [{"name": "f", "arguments": {...}}]
    ```                                                          the same, fenced
    [get_weather(city="Paris"), get_time(zone="CET")]            Llama 3.2 / Llama 4 pythonic

and the same calls between tags (:class:`PythonicTagReader`)::

    <|python_start|>[get_weather(city="Paris")]<|python_end|>     Llama 4
    <function_calls>
    get_weather(city="Paris")
    get_time(zone="CET")
    </function_calls>                                            OLMo 3 (one call a line)
    <function_calls><invoke name="f"><parameter name="k">v</parameter></invoke></function_calls>

Pythonic arguments are Python literals; ``true``/``false``/``null`` are read as JSON's.

Such a reply is calls only when the *whole* reply (reasoning aside) is calls: an answer
that shows a JSON object or a code block among other words stays an answer. A call
object needs a ``name`` and its arguments (``arguments`` or ``parameters``), so JSON data
that merely has a ``name`` field is not read as a call.

Engines: vLLM ``pythonic_tool_parser.py`` / ``llama4_pythonic_tool_parser.py`` (index
versions 630fe7e7, fb6c0501) and llama.cpp ``lfm2.cpp`` (read at aabb95e9) for the
Python-style strings' repairs; a JSON call list one ``]`` short or over is mended as a
lenient JSON reader (vLLM's ``partial_json_parser``) takes it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from ..calls import (
    TOO_DEEP,
    CallEvent,
    ParseEvent,
    brackets_closed,
    in_json_string,
    invalid,
    literal_value,
    nests_too_deep,
)
from ..markup import Block
from .base import Reader, call_event, named_call, read_json_calls, strict_prefix
from .xml_params import read_invokes

__all__ = []

#: What a reply made only of calls starts with: held back while streaming until it ends.
OPENERS = ("{", "[", "```")

_FENCE = re.compile(r"```(?:json|JSON|python|tool_code)?[ \t]*\n?(.*?)\n?```", re.DOTALL)
PYTHONIC = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
_JSON_CALL = re.compile(r'^\s*\[?\s*\{\s*"(?:name|function)"\s*:')
_ARGS = ("arguments", "parameters")


def may_be_calls_only(head: str) -> bool:
    """Whether a reply whose text starts with ``head`` (stripped) may be only calls."""
    return head.startswith(OPENERS) or any(o.startswith(head) for o in OPENERS)


def read_whole_reply(text: str) -> list[ParseEvent] | None:
    """The calls ``text`` consists of, or ``None`` if it is not just calls."""
    body = text.strip()
    fenced = _FENCE.fullmatch(body)
    if fenced:
        body = fenced.group(1).strip()
    if PYTHONIC.match(body):
        if nests_too_deep(body):  # Python's own parser gives up at 200 levels
            return [invalid(text, f"the reply's pythonic tool call: {TOO_DEEP}; not run")]
        return read_pythonic(body)
    if not body.startswith(("{", "[")):
        return None
    values, rest = strict_prefix(_list_mended(body))
    if rest or not values:
        if _JSON_CALL.match(body) and nests_too_deep(body):
            return [invalid(text, f"the reply's JSON tool call: {TOO_DEEP}; not run")]
        if _JSON_CALL.match(body) and not brackets_closed(body, must_open=True):
            return [
                invalid(
                    text,
                    "the reply ended before its JSON tool call was complete; the call was not run",
                )
            ]
        return None
    items: list[Any] = []
    for value in values:
        items += value if isinstance(value, list) else [value]
    if not items or not all(_is_call(i) for i in items):
        return None
    return [call_event(i, text) for i in items]


def _list_mended(body: str) -> str:
    """A JSON call list one ``]`` short or with one ``]`` too many, mended (the repair
    xLAM's and Llama's servers leave to a lenient JSON reader); other text as it is.

    Only where the items are whole call objects: a list cut inside a call is not mended.
    """
    if not body.startswith("[") or nests_too_deep(body):
        return body
    values, rest = strict_prefix(body)
    if values and rest == "]" and isinstance(values[0], list):
        return body[: body.rstrip().rfind("]")]  # one ] too many
    if values or not brackets_closed(body + "]", must_open=True):
        return body
    mended, more = strict_prefix(body + "]")
    if len(mended) == 1 and not more and isinstance(mended[0], list) and mended[0]:
        return body + "]" if all(_is_call(i) for i in mended[0]) else body
    return body


def whole_reply_format(text: str) -> str | None:
    """``"pythonic"`` or ``"json"`` when ``text`` is made only of readable calls, else ``None``."""
    events = read_whole_reply(text) or []
    if not any(isinstance(e, CallEvent) for e in events):
        return None
    body = text.strip()
    fenced = _FENCE.fullmatch(body)
    return "pythonic" if PYTHONIC.match(fenced.group(1) if fenced else body) else "json"


def _is_call(item: Any) -> bool:
    if isinstance(item, Mapping) and isinstance(item.get("function"), Mapping):
        item = item["function"]
    return (
        isinstance(item, Mapping)
        and isinstance(item.get("name"), str)
        and any(k in item for k in _ARGS)
        and set(item) <= {"name", "id", "type", *_ARGS}
    )


def read_pythonic(body: str) -> list[ParseEvent] | None:
    """The calls of a pythonic list ``[f(a=1), g(b="x")]``, ``None`` if ``body`` is not one.

    A list cut short (brackets or quotes left open) is one invalid call.
    """
    try:
        tree = ast.parse(body, mode="eval").body
    except SyntaxError:
        repaired = _strings_repaired(body)
        try:
            tree = ast.parse(repaired, mode="eval").body if repaired != body else None
        except SyntaxError:
            tree = None
    if tree is None:
        if not brackets_closed(body, quotes="\"'", must_open=True):
            return [
                invalid(body, "the reply ended inside a pythonic tool call; the call was not run")
            ]
        return None
    if not isinstance(tree, ast.List) or not tree.elts:
        return None
    if not all(isinstance(e, ast.Call) and not e.args for e in tree.elts):
        return None
    events: list[ParseEvent] = []
    for call in tree.elts:
        assert isinstance(call, ast.Call)
        name = ast.unparse(call.func)
        try:
            args = {kw.arg: _literal(kw.value) for kw in call.keywords if kw.arg}
        except (ValueError, TypeError) as exc:
            events.append(
                invalid(
                    ast.unparse(call), f"arguments of {name!r} are not literals: {exc}", name=name
                )
            )
            continue
        events.append(named_call(name, args, ast.unparse(call)))
    return events


#: what may follow a string's closing quote in a call list (white space aside)
_AFTER_STRING = ",)]}:"


def _strings_repaired(body: str) -> str:
    """``body`` with the string breakage LFM2 writes mended, as llama.cpp's Python-style
    call reader takes it: a raw newline inside a string is the newline it means, and a
    quote of the string's own kind that no ``,`` ``)`` ``]`` ``}`` ``:`` follows is a
    quote inside it (``'it's'``). Nothing else is changed."""
    out: list[str] = []
    quote, i, n = "", 0, len(body)
    while i < n:
        ch = body[i]
        if not quote:
            if ch in "\"'":
                quote = ch
            out.append(ch)
        elif ch == "\\" and i + 1 < n:
            out.append(body[i : i + 2])
            i += 1
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == quote:
            rest = body[i + 1 :].lstrip(" \t")
            if not rest or rest[0] in _AFTER_STRING:
                quote = ""
                out.append(ch)
            else:
                out.append("\\" + ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _literal(node: ast.expr) -> Any:
    """A Python literal as JSON (:func:`~..calls.python_literal`'s rules), with JSON's
    ``true``/``false``/``null`` taken as theirs."""
    return literal_value(node)


def read_pythonic_calls(text: str, *, closed: bool, where: str) -> list[ParseEvent]:
    """Pythonic calls between tags: a list of calls, or one call a line."""
    body = text.strip()
    if _JSON_CALL.match(body):  # JSON calls between the same tags (Llama 4, fine-tunes)
        return list(read_json_calls(body, closed=closed, where=where))
    if body.startswith("<invoke"):  # <function_calls><invoke name="f">…: XML invokes
        return list(read_invokes(body, closed=closed, where=where))
    if not closed and not brackets_closed(body, quotes="\"'"):
        return [invalid(text, f"the reply ended inside {where}; the call was not run")]
    if not body.startswith("["):
        body = "[" + ", ".join(line.strip() for line in body.splitlines() if line.strip()) + "]"
    events = read_pythonic(body) if PYTHONIC.match(body) else None
    if not events:
        return [invalid(text, f"{where} does not hold pythonic calls")]
    return events


class PythonicTagReader(Reader):
    """Pythonic calls between tags: OLMo 3's ``<function_calls>``, Llama 4's
    ``<|python_start|>``."""

    name: ClassVar[str] = "pythonic-tag"
    blocks: ClassVar[tuple[Block, ...]] = (
        Block("<function_calls>", ("</function_calls>",), "call"),
        Block("<|python_start|>", ("<|python_end|>",), "call"),
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (
        *(b.close[0] for b in blocks),
        "<|eom|>",
        "<|eot|>",
    )
    special: ClassVar[bool] = False
    examples: ClassVar[tuple[str, ...]] = (
        '<function_calls>\nget_weather(city="Paris")\nget_time(zone="CET")\n</function_calls>',
        '<|python_start|>[get_weather(city="Paris"), get_time(zone="CET")]<|python_end|>',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_pythonic_calls(text, closed=closed, where=block.open)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        # the calls are a list whose brackets may be left out: strings count from the start
        return not in_json_string("[" + text)
