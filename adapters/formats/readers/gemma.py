"""Gemma 4 and FunctionGemma ``call:NAME{key:value,…}`` calls between special tokens.

::

    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>          Gemma 4
    <start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>   FunctionGemma

The arguments are not JSON: keys are bare, strings are wrapped in one delimiter token
(``<|"|>`` or ``<escape>``) with nothing escaped inside, numbers, ``true``/``false`` and
``null`` are bare, and objects and lists nest with ``{…}`` and ``[…]``. Several calls are
several blocks, one after the other. Gemma 4 thinks in ``<|channel>thought … <channel|>``
(a call may follow the thought without the ``<channel|>``), and sometimes writes its
arguments in parentheses, ``call:NAME(key:value)``. A string whose closing delimiter is
missing runs to the call's closing ``}`` when the call's closer came, as vLLM reads it.
A value written in Python's quotes (``'Paris'``) is the string inside them, without a
delimiter token stuck to either quote.

Engines: llama.cpp ``common/parsers/gemma4.cpp`` (read at 3a10bf62: a string runs to its
closing ``<|"|>``, so call tokens inside it are its text) and vLLM's ``functiongemma``
and Gemma 4 parsers (not re-read for this caption).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from ..calls import ParseEvent, invalid
from ..markup import Block
from .base import FormatReader, Reader, json_value, named_call

__all__ = []


@dataclass(frozen=True)
class GemmaFormat:
    """One ``call:NAME{…}`` format: its call block and the token its strings are wrapped in."""

    name: str
    block: Block
    quote: str  # the token that opens and closes a string
    examples: tuple[str, ...]
    drop_tokens: tuple[str, ...] = ()


_Q4, _QF = '<|"|>', "<escape>"
# Gemma 4's call tokens (some checkpoints end a call with <turn|> instead of <tool_call|>)
# and its thought channel's; FunctionGemma's call tokens
_GEMMA4_CALL = "<|tool_call>"
_GEMMA4_ENDS = ("<tool_call|>", "<turn|>", "<|tool_response>")
_CHANNEL = ("<|channel>", "<channel|>")
_FUNCTION_CALL = "<start_function_call>"
_FUNCTION_ENDS = ("<end_function_call>", "<start_function_response>")

GEMMA_FORMATS: tuple[GemmaFormat, ...] = (
    GemmaFormat(
        "gemma4",
        Block(_GEMMA4_CALL, _GEMMA4_ENDS, "call"),
        _Q4,
        examples=(
            f"<|tool_call>call:get_weather{{city:{_Q4}巴黎{_Q4},days:3}}<tool_call|>",
            f"<|tool_call>call:get_weather{{city:{_Q4}Paris{_Q4}}}<tool_call|>"
            f"<|tool_call>call:get_time{{zone:{_Q4}CET{_Q4}}}<tool_call|>",
        ),
        drop_tokens=_GEMMA4_ENDS,
    ),
    GemmaFormat(
        "functiongemma",
        Block(_FUNCTION_CALL, _FUNCTION_ENDS, "call"),
        _QF,
        examples=(
            f"<start_function_call>call:get_weather{{city:{_QF}Paris{_QF}}}<end_function_call>",
            f"<start_function_call>call:get_weather{{city:{_QF}Paris{_QF}}}<end_function_call>"
            f"<start_function_call>call:get_time{{zone:{_QF}CET{_QF}}}<end_function_call>",
        ),
        drop_tokens=_FUNCTION_ENDS,
    ),
)

_CALL = re.compile(r"\s*(?:call:)?\s*([A-Za-z_][\w.\-]*)\s*(?=[{(])")
_CLOSE = {"{": "}", "(": ")"}  # Gemma 4 sometimes writes call:NAME(key:value)


class _Cut(Exception):
    """The text ended inside a value."""


class _Args:
    """A recursive-descent reader of one ``{key:value,…}`` argument object."""

    def __init__(self, text: str, quote: str) -> None:
        self.text, self.quote, self.n = text, quote, len(text)

    def _skip(self, i: int, also: str = "") -> int:
        while i < self.n and (self.text[i].isspace() or self.text[i] in also):
            i += 1
        if i >= self.n:
            raise _Cut
        return i

    def object(self, i: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        close = _CLOSE[self.text[i]]
        i += 1  # past "{"
        while True:
            i = self._skip(i, ",")
            if self.text[i] == close:
                return out, i + 1
            colon = self.text.find(":", i)
            if colon < 0:
                raise _Cut
            key = self.text[i:colon].strip().removeprefix(self.quote).removesuffix(self.quote)
            key = key.strip('"')
            if not key or any(c in key for c in "{}[],"):
                raise ValueError(f"expected a key before ':' at {self.text[i:colon]!r}")
            out[key], i = self.value(colon + 1)

    def array(self, i: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        i += 1  # past "["
        while True:
            i = self._skip(i, ",")
            if self.text[i] == "]":
                return out, i + 1
            item, i = self.value(i)
            out.append(item)

    def value(self, i: int) -> tuple[Any, int]:
        i = self._skip(i)
        text = self.text
        if text.startswith(self.quote, i):
            end = text.find(self.quote, i + len(self.quote))
            if end < 0:
                raise _Cut
            return text[i + len(self.quote) : end], end + len(self.quote)
        if text[i] == "{":
            return self.object(i)
        if text[i] == "[":
            return self.array(i)
        if text[i] == '"':  # a plain JSON string, as some templates write
            try:
                return json.JSONDecoder().raw_decode(text, i)
            except ValueError:
                if text.find('"', i + 1) >= 0:
                    return self._quoted(i)
                raise _Cut from None
        if text[i] == "'":  # a Python-quoted string, as Gemma 4 sometimes writes one
            return self._quoted(i)
        end = i
        while end < self.n and text[end] not in ",}])":
            end += 1
        if end >= self.n:
            raise _Cut  # a bare value may still be growing
        bare = text[i:end].strip()
        # some Gemma templates print a null argument as Python's None
        return (None if bare == "None" else json_value(bare)), end

    def _quoted(self, i: int) -> tuple[str, int]:
        """The string quoted by ``'`` (or ``"``) at ``i``: it ends at the first such quote
        that a ``,`` ``}`` ``]`` ``)`` (or the end) follows; a delimiter token stuck to
        either quote is the model's stray, not the string's."""
        text, mark = self.text, self.text[i]
        j = i + 1
        while True:
            end = text.find(mark, j)
            if end < 0:
                raise _Cut
            after = end + 1
            if text.startswith(self.quote, after):
                after += len(self.quote)
            rest = text[after:].lstrip()
            if not rest or rest[0] in ",}])":
                value = text[i + 1 : end].removeprefix(self.quote).removesuffix(self.quote)
                return value, after
            j = end + 1


def read_gemma_calls(text: str, *, quote: str, where: str, closed: bool) -> Iterator[ParseEvent]:
    """Read ``call:NAME{…}`` (one or more) from the text of one call block."""
    i = 0
    while True:
        head = _CALL.match(text, i)
        if head is None:
            rest = text[i:].strip()
            if rest or i == 0:
                yield invalid(where + text, f"expected call:NAME{{…}} inside {where}")
            return
        name = head.group(1)
        try:
            try:
                args, i = _Args(text, quote).object(head.end())
            except _Cut:
                text = _string_closed(text, quote, head.end(), closed=closed)
                args, i = _Args(text, quote).object(head.end())
        except _Cut:
            yield invalid(
                where + text,
                f"the reply ended inside the arguments of {name!r}; the call was not run"
                if not closed
                else f"the arguments of {name!r} are not closed",
                name=name,
            )
            return
        except ValueError as exc:
            yield invalid(where + text, f"bad arguments for {name!r}: {exc}", name=name)
            return
        yield named_call(name, args, where + text)
        if not text[i:].strip().strip("}])").strip():  # a stray closing bracket is no call
            return


def _string_closed(text: str, quote: str, start: int, *, closed: bool) -> str:
    """A call whose last string's closing delimiter is missing, read as vLLM's Gemma 4
    parser reads it: the string runs to the call's closing ``}`` (only in a block its
    closer ended; a reply that ended inside a string was cut short)."""
    end = text.rstrip().rfind("}")
    if not closed or text.count(quote, start) % 2 == 0 or end <= start:
        raise _Cut
    return text[:end] + quote + text[end:]


class GemmaReader(FormatReader):
    """All of :data:`GEMMA_FORMATS`, one block each."""

    def __init__(self, fmt: GemmaFormat) -> None:
        self.fmt = fmt
        super().__init__(fmt.name, (fmt.block,), drop_tokens=fmt.drop_tokens, examples=fmt.examples)

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        tail = text.rstrip()
        if not closed and text.count(self.fmt.quote) % 2 and tail.endswith(block.close):
            # a string left open (its closing delimiter missing) kept the call's closer
            # inside it; the closer that ends the reply is the call's own
            closer = next(c for c in block.close if tail.endswith(c))
            text, closed = tail.removesuffix(closer), True
        return read_gemma_calls(text, quote=self.fmt.quote, where=block.open, closed=closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        # a value is opaque until its own closer: a call token inside a string (its
        # quote tokens left open) is the string's text, as llama.cpp reads a string to
        # its closing <|"|>
        return text.count(self.fmt.quote) % 2 == 0


class GemmaThoughtReader(Reader):
    """Gemma 4's thought channel: reasoning until ``<channel|>``, or until a call starts
    without it (the ``<|tool_call>`` is left to open the call)."""

    name: ClassVar[str] = "gemma4-thought"
    blocks: ClassVar[tuple[Block, ...]] = tuple(
        Block(opener, (_CHANNEL[1], _GEMMA4_CALL), "reasoning", consume_close=False)
        for opener in (_CHANNEL[0] + "thought", _CHANNEL[0])
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (_CHANNEL[1],)
    examples: ClassVar[tuple[str, ...]] = (
        f"<|channel>thought\nThe user wants the weather.<channel|>"
        f"<|tool_call>call:get_weather{{city:{_Q4}Paris{_Q4}}}<tool_call|>",
        f"<|channel>thought\nThe weather, then.<|tool_call>call:get_weather{{city:{_Q4}Paris{_Q4}}}"
        "<tool_call|>",
    )
