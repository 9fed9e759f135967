"""The protocol every call-format reader speaks, and the JSON reading most of them share.

A *reader* knows one family of tool-call formats that open models write into their text:
the markers that announce it (as :class:`~fncall_graph.adapters.formats.base.Block`
rules the shared streaming scanner looks for) and how to read the text between them
(:meth:`Reader.read_block`). Readers render nothing; the prompt dialects that also write
prompts (Hermes, Qwen, ReAct) read with the same code.

A new format is one file with one :class:`Reader` and one line in the registry
(:data:`fncall_graph.adapters.formats.readers.READERS`).

Values read as text are typed once, by the tool's schema, in
:mod:`~fncall_graph.adapters.formats.arg_types` (for every format); arguments JSON cannot
carry make a call unreadable (:func:`~fncall_graph.adapters.formats.calls.coerce_args`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.messages.tool import tool_call

from ..calls import (
    TOO_DEEP,
    CallEvent,
    ContentDelta,
    ParseEvent,
    brackets_closed,
    call_from_object,
    coerce_args,
    in_json_string,
    invalid,
    loads_lenient,
    nests_too_deep,
    new_call_id,
    python_literal,
)
from ..markup import Block

__all__ = []

#: Where formats put a call's arguments, tried in this order.
ARGS_KEYS = ("arguments", "parameters", "args", "input")


class Reader:
    """One family of tool-call formats.

    Attributes:
        name: what the format is called (``"mistral"``, ``"deepseek"``, …); a reply read
            in it records the name in ``response_metadata["fncall_markup_format"]``.
        blocks: the markup stretches the scanner looks for; ``kind="call"`` blocks are
            handed to :meth:`read_block`.
        drop_tokens: markup that carries nothing (end-of-turn tokens, stray closers).
        channel_tokens: those of ``drop_tokens`` that frame a reply even when it holds
            no call (harmony's channels, Command R's response markers).
        special: the markers are the model's special tokens, which prose cannot hold by
            accident; plain-text markers (``<tool_call>``, ``>>>``) count as the reply's
            own calls only at the start of a line (see ``normalize``).
        examples: replies in this format (one call, parallel calls), for the docs and
            the tests.
    """

    name: ClassVar[str]
    blocks: ClassVar[tuple[Block, ...]] = ()
    drop_tokens: ClassVar[tuple[str, ...]] = ()
    channel_tokens: ClassVar[tuple[str, ...]] = ()
    special: ClassVar[bool] = True
    examples: ClassVar[tuple[str, ...]] = ()

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        """Read what stood between ``block``'s markers (``closed=False``: the reply ended
        inside it). Yields call, invalid-call, content or reasoning events."""
        raise NotImplementedError

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        """Whether ``marker``, found after ``text`` inside ``block``, ends the block; a
        closer that stands inside an argument's value (source code quoting one) does not.
        The rule for JSON arguments (:func:`~..base.in_json_string`) unless a format's
        values are written otherwise.
        """
        return not in_json_string(text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class FormatReader(Reader):
    """A reader made from one format's data, for families read by one class
    (:data:`~.json_tags.JSON_TAG_FORMATS`, :data:`~.gemma.GEMMA_FORMATS`, …)."""

    def __init__(
        self,
        name: str,
        blocks: tuple[Block, ...],
        *,
        drop_tokens: tuple[str, ...] = (),
        channel_tokens: tuple[str, ...] = (),
        special: bool = True,
        examples: tuple[str, ...] = (),
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.blocks = blocks  # type: ignore[misc]
        self.drop_tokens = drop_tokens  # type: ignore[misc]
        self.channel_tokens = channel_tokens  # type: ignore[misc]
        self.special = special  # type: ignore[misc]
        self.examples = examples  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


_DECODER = json.JSONDecoder()


def strict_prefix(text: str) -> tuple[list[Any], str]:
    """The strict JSON values at the start of ``text`` (white space or ``;`` between
    them) and what follows them, stripped."""
    values: list[Any] = []
    i, n = 0, len(text)
    if nests_too_deep(text):  # not JSON this reads: the callers report it (loads_lenient)
        return values, text.strip()
    while True:
        while i < n and (text[i].isspace() or (values and text[i] in ";,")):
            i += 1
        if i >= n:
            return values, ""
        if values and text[i] not in "{[":
            return values, text[i:].strip()  # prose after them ("2. Then …"), not a value
        try:
            value, i = _DECODER.raw_decode(text, i)
        except ValueError:
            return values, text[i:].strip()
        values.append(value)


def call_event(
    item: Any,
    raw: str,
    *,
    name_keys: Sequence[str] = ("name",),
    args_keys: Sequence[str] = ARGS_KEYS,
) -> ParseEvent:
    """A call event for one decoded call object, in any of the usual shapes."""
    # some models echo the tools' own shape: {"type": "function", "function": {...}}
    if (
        isinstance(item, Mapping)
        and isinstance(item.get("function"), Mapping)
        and not any(k in item for k in name_keys)
    ):
        item = item["function"]
    if isinstance(item, Mapping):
        key = next((k for k in name_keys if k in item), name_keys[0])
        args = next((k for k in args_keys if k in item), args_keys[0])
        return call_from_object(item, raw=raw, name_key=key, args_key=args, args_keys=())
    return call_from_object(item, raw=raw)


def _calls(
    value: Any,
    raw: str,
    where: str,
    name_keys: Sequence[str],
    args_keys: Sequence[str],
    name_is_key: bool,
) -> Iterator[ParseEvent]:
    if isinstance(value, Mapping) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]  # {"tool_calls": [...]}, as some fine-tunes write
    items = value if isinstance(value, list) else [value]
    if not items:
        yield invalid(raw, f"no tool call inside {where}")
    for item in items:
        if name_is_key and isinstance(item, Mapping) and len(item) == 1:
            [(name, args)] = item.items()  # {"NAME": {arguments}}
            if name not in name_keys:
                yield named_call(str(name), args, raw)
                continue
        yield call_event(item, raw, name_keys=name_keys, args_keys=args_keys)


def read_json_calls(
    text: str,
    *,
    closed: bool,
    where: str,
    name_keys: Sequence[str] = ("name",),
    args_keys: Sequence[str] = ARGS_KEYS,
    prose_after: bool = True,
    name_is_key: bool = False,
) -> Iterator[ParseEvent]:
    """Read one or more JSON call objects (or lists of them, or JSON lines).

    Strict JSON first, then the usual repairs (single quotes, trailing commas, Python
    literals). If the reply ended inside the block, a JSON value cut short is an invalid
    call, never completed: half-written arguments are not run. With ``prose_after``,
    text after the JSON is answer text. With ``name_is_key``, a call may also be written
    ``{"NAME": {arguments}}`` (Apertus).
    """
    if nests_too_deep(text):
        yield invalid(text, f"{where}: {TOO_DEEP}; the call was not run")
        return
    values, rest = strict_prefix(text)
    for value in values:
        yield from _calls(value, text, where, name_keys, args_keys, name_is_key)
    if not rest:
        if not values and text.strip():
            yield invalid(text, f"no tool call inside {where}")
        return  # an empty block is nothing
    if values and rest[0] not in "{[":
        if prose_after:
            yield ContentDelta(rest)
        return
    if not closed and not brackets_closed(rest, quotes="\"'", must_open=True):
        # a list cut short: the calls written whole before the cut are the model's
        items, cut = _whole_items(rest)
        if items:
            yield from _calls(items, text, where, name_keys, args_keys, name_is_key)
        if cut.strip() or not items:
            yield invalid(
                cut if items else text,
                f"the reply ended inside {where} before its JSON was complete; "
                "the call was not run",
            )
        return
    try:
        value = loads_lenient(rest)
    except ValueError as exc:
        yield invalid(text, f"{where} does not hold a JSON call object: {exc}")
        return
    yield from _calls(value, text, where, name_keys, args_keys, name_is_key)


def _whole_items(text: str) -> tuple[list[Any], str]:
    """The complete items at the start of a JSON list cut short, and the rest."""
    items: list[Any] = []
    if not text.startswith("["):
        return items, text
    i = 1
    while True:
        while i < len(text) and (text[i].isspace() or (items and text[i] == ",")):
            i += 1
        try:
            item, i = _DECODER.raw_decode(text, i)
        except ValueError:
            return items, text[i:]
        items.append(item)


def json_value(text: str) -> Any:
    """A parameter value written as text: its JSON value if it is one, else the text.

    XML-style formats (``<parameter=x>5</parameter>``) carry no types; numbers, booleans,
    objects and lists written as JSON are taken as such, anything else is a string.
    """
    stripped = text.strip()
    if nests_too_deep(stripped):
        return text  # not read: :func:`named_call` refuses it with the other arguments
    if stripped and (stripped[0] in '{["-' or stripped[0].isdigit() or stripped in _LITERALS):
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):
            pass
    if stripped[:1] in ("{", "["):
        return _python_container(stripped, text)
    return text


_LITERALS = ("true", "false", "null")


def _python_container(stripped: str, text: str) -> Any:
    """A dict or list written in Python (``{'check': True}``), as models trained on
    Python-rendered templates write them; anything else stays the text it was."""
    try:
        # only what JSON can carry, as JSON would carry it (tuples and sets as lists)
        value = python_literal(stripped)
    except ValueError:
        return text
    return value if isinstance(value, dict | list) else text


def named_call_and_text(name: str, args: str, raw: str) -> Iterator[ParseEvent]:
    """A call whose JSON arguments ``args`` may be followed by answer text."""
    values, rest = strict_prefix(args)
    if values and rest[:1] not in ("{", "["):
        yield named_call(name, values[0], raw)
        if rest:
            yield ContentDelta(rest)
        return
    yield named_call(name, args, raw)


def text_args(pairs: Iterable[tuple[str, str]]) -> tuple[dict[str, Any], dict[str, str]]:
    """Arguments a format writes as untyped text: each read by :func:`json_value`, and the
    texts as written (for :func:`named_call`'s ``texts``)."""
    texts = dict(pairs)
    return {k: json_value(v) for k, v in texts.items()}, texts


def named_call(
    name: str, args: Any, raw: str, *, texts: Mapping[str, str] | None = None
) -> ParseEvent:
    """A call event for a name and arguments read from markup (a dict or JSON text);
    ``texts``: the arguments written as untyped text, as written (see :class:`CallEvent`).
    """
    name = name.strip()
    if not name:
        return invalid(raw, "missing tool name")
    if texts and any(nests_too_deep(t) for t in texts.values()):  # values left unread
        return invalid(raw, f"bad arguments for {name!r}: {TOO_DEEP}", name=name)
    try:
        call = tool_call(name=name, args=coerce_args(args), id=new_call_id())
        return CallEvent(call, texts=dict(texts) if texts else None)
    except ValueError as exc:
        return invalid(raw, f"bad arguments for {name!r}: {exc}", name=name)
