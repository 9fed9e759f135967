"""The small protocol every dialect speaks: :class:`Dialect`, and :class:`PromptDialect`.

A dialect sits at the model boundary. The graph keeps the canonical history
(``AIMessage.tool_calls`` plus one ``ToolMessage`` per call); a dialect

* ``render(messages, tools)`` turns that history into the exact model input,
* ``parse(text)`` turns the model's text back into a canonical ``AIMessage``, as the graph
  reads it (never raises),
* ``stream_parser()`` does the same chunk by chunk, and
* ``stop`` lists the stop sequences the dialect needs.

Prompt dialects describe their markup as data (:class:`~.markup.Block` rules and drop
tokens) and implement only :meth:`PromptDialect.read_call`; one scanner,
:class:`~.scanner.MarkupStreamParser`, does the rest.

What a dialect speaks of is here too: a message's text, reasoning and other content
blocks, and a history as the prompt dialects write it (:func:`text_of`,
:func:`group_tool_results`, :func:`split_content`); tools in one canonical shape,
whatever they came as (:class:`ToolSpec`, :func:`to_tool_spec`: LangChain ``BaseTool``s,
plain functions, OpenAI function dicts and MCP tool dicts, their ``parameters`` cleaned to
``type/properties/required``, the shape the Hermes prompt of Qwen-Agent prints); and
markup in text the model did not write, broken so that no reader sees it
(:func:`neutralise`). The events a reading gives and the lenient JSON of arguments are
:mod:`.calls`'; the names other packages take from here are handed on.
"""

from __future__ import annotations

import json
import re
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, ClassVar, Union

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_core.utils.json_schema import dereference_refs

from .calls import (
    ParseEvent,
    StreamParser,
    in_json_string,
    loads_lenient,
)
from .markup import THINK, Block
from .scanner import MarkupStreamParser

__all__ = ["Dialect", "clean_schema", "loads_lenient", "text_of", "to_tool_spec", "to_tool_specs"]


class Dialect(ABC):
    """How one family of models is spoken to about tools.

    Attributes:
        name: the registry name (``"hermes"``, ``"qwen"``, ``"react"``, ``"native"``).
        stop: stop sequences to pass with every model call in this dialect.
        native: ``True`` when tools go through the provider's ``bind_tools``
            instead of prompt text.
    """

    name: ClassVar[str]
    native: ClassVar[bool] = False
    stop: tuple[str, ...] = ()

    @abstractmethod
    def render(
        self, messages: Sequence[BaseMessage], tools: Sequence[ToolLike] | None
    ) -> list[BaseMessage]:
        """The exact model input for the canonical ``messages`` and ``tools``."""

    def parse(self, text: str) -> AIMessage:
        """The canonical ``AIMessage`` for a whole reply; never raises.

        Here: what the markup alone says (the stream parser fed once), as the call-format
        readers read it. Each dialect of the registry reads a reply as the graph does
        (``normalize`` with that dialect), so its ``parse`` cannot drift from what runs.
        """
        parser = self.stream_parser()
        parser.feed(text)
        parser.close()
        return parser.message()

    @abstractmethod
    def stream_parser(self) -> StreamParser:
        """A fresh incremental parser, equivalent to :meth:`parse` for any chunking."""

    def fit_to_tools(self, message: AIMessage, tools: Sequence[ToolLike] | None) -> AIMessage:
        """``message`` with calls written in this dialect's loose forms fitted to ``tools``
        (ReAct's bare ``action_input`` string); as it is for most dialects."""
        return message

    @property
    def fits_loose_calls(self) -> bool:
        """Whether :meth:`fit_to_tools` can change a reply (the dialect overrides it): a
        reading skips it, and the message it would be asked about, otherwise."""
        return type(self).fit_to_tools is not Dialect.fit_to_tools

    def grammar(
        self,
        tools: Sequence[ToolLike] | None,
        *,
        require_call: bool = False,
        one_call: bool = False,
        answer_json: Mapping[str, Any] | None = None,
    ) -> str | None:
        """A GBNF grammar constraining replies to this dialect's call format, if it has one.

        With ``require_call`` the grammar admits tool calls only, no plain answer; with
        ``one_call`` at most one call per reply (``parallel_tool_calls=False``); with
        ``answer_json`` (a JSON schema) the plain answer is JSON of that schema, written
        where this dialect writes its answer.
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PromptDialect(Dialect):
    """A dialect that writes tools into the prompt and reads calls out of text.

    Subclasses give ``blocks`` and ``drop_tokens`` as data and implement
    :meth:`read_call`; parsing and streaming come from :class:`MarkupStreamParser`.
    """

    blocks: tuple[Block, ...] = (THINK,)
    drop_tokens: tuple[str, ...] = ()
    #: Markup that, inside a tool result or a user's text, would read as a call, a result
    #: or a turn of the model's own: written broken there (see :meth:`neutralise`).
    control_markers: tuple[str, ...] = ()

    def neutralise(self, text: str) -> str:
        """``text`` with this dialect's control markup (its own, ChatML's and every
        format's the readers know) broken by a zero-width space (:func:`neutralise`).

        A tool result (or a user) holding ``</tool_response><tool_call>...`` would
        otherwise forge a turn in the prompt. The model still reads the same
        characters; no parser of this dialect sees a marker in them.

        Example:
            >>> from fncall_graph.adapters import get_dialect
            >>> get_dialect("qwen").neutralise("✿FUNCTION✿: x") == "✿\u200bFUNCTION✿: x"
            True
        """
        return neutralise(text, self.control_markers)

    @abstractmethod
    def write_assistant(self, message: AIMessage) -> str:
        """One canonical assistant turn as this dialect's model would have written it.

        ``parse(write_assistant(m))`` gives back the calls of ``m``; ``render`` uses it
        to write earlier turns into the prompt.
        """

    @abstractmethod
    def read_call(self, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        """Read the text of one call block.

        Args:
            text: what stood between the block's markers.
            closed: ``False`` when the output ended inside the block.

        Yields call events, invalid-call events, or content that was not part of the call.
        """

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        """Read one call block; a dialect with one kind of call block reads it with
        :meth:`read_call`, a reader of many formats by the block it is."""
        return self.read_call(text, closed=closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        """Whether ``marker``, met after ``text`` inside the call block ``block``, ends it.

        ``False`` when the marker stands inside an argument (a closer in source code the
        call passes): it is then read as the argument's text. The decision looks only at
        the text before the marker, so any chunking gives the same result. The rule for
        JSON arguments (:func:`in_json_string`) unless a dialect knows better.
        """
        return block.kind != "call" or not in_json_string(text)

    def stream_parser(self) -> StreamParser:
        return MarkupStreamParser(self)


# -- a message's text, reasoning and content blocks; a history as prompt dialects write it
_REASONING_BLOCKS = frozenset({"reasoning", "thinking"})
# Blocks that restate what the ``tool_calls`` field already holds.
_CALL_BLOCKS = frozenset(
    {"tool_use", "tool_call", "tool_call_chunk", "function_call", "invalid_tool_call"}
)


def dumps(value: Any) -> str:
    """JSON as the Qwen-Agent prompts write it: ``ensure_ascii=False``, default separators."""
    return json.dumps(value, ensure_ascii=False)


def text_of(content: str | list[Any] | None) -> str:
    """The text of message content, whether a string or a list of content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type", "text") == "text" and "text" in block:
            parts.append(str(block["text"]))
    return "".join(parts)


def reasoning_of(message: BaseMessage) -> str:
    return str(message.additional_kwargs.get("reasoning_content") or "")


def group_tool_results(messages: Sequence[BaseMessage]) -> list[BaseMessage | list[ToolMessage]]:
    """The history with each run of ``ToolMessage``s gathered into one list.

    Results are put in the order of the calls they answer (matched by ``tool_call_id``),
    so parallel results that finished in any order render in call order, as the
    prompt dialects need ("tool_response and tool_call correspond one by one").
    """
    out: list[BaseMessage | list[ToolMessage]] = []
    order: dict[str, int] = {}
    for msg in messages:
        if isinstance(msg, ToolMessage):
            if out and isinstance(out[-1], list):
                out[-1].append(msg)
            else:
                out.append([msg])
            continue
        if out and isinstance(out[-1], list):
            out[-1].sort(key=lambda m: order.get(m.tool_call_id, len(order)))
        if isinstance(msg, AIMessage):
            order = {c["id"]: i for i, c in enumerate(msg.tool_calls) if c.get("id")}
        out.append(msg)
    if out and isinstance(out[-1], list):
        out[-1].sort(key=lambda m: order.get(m.tool_call_id, len(order)))
    return out


def split_content(
    content: str | list[Any] | None,
) -> tuple[str, list[str], list[dict[str, Any]], bool]:
    """``(text, reasoning texts, other blocks, was a list)`` of message content."""
    if content is None:
        return "", [], [], False
    if isinstance(content, str):
        return content, [], [], False
    text: list[str] = []
    reasoning: list[str] = []
    others: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            text.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type", "text")
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind in _REASONING_BLOCKS:
            if r := _reasoning_text(block):
                reasoning.append(r)
        elif kind not in _CALL_BLOCKS:
            others.append(block)
    return "".join(text), reasoning, others, True


def _reasoning_text(block: dict[str, Any]) -> str:
    """The text of a reasoning block in the LangChain v1, Anthropic or OpenAI shape."""
    for key in ("reasoning", "thinking", "text"):
        value = block.get(key)
        if isinstance(value, str) and value:
            return value
    summary = block.get("summary")  # OpenAI Responses: [{"type": "summary_text", "text"}]
    if isinstance(summary, list):
        return "\n".join(
            str(s.get("text")) for s in summary if isinstance(s, dict) and s.get("text")
        )
    return ""


# -- tools in one canonical shape
ToolLike = Union[BaseTool, Mapping[str, Any], Callable[..., Any], "ToolSpec"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as every dialect sees it: a name, a description and a cleaned JSON schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []}
    )

    def as_openai(self) -> dict[str, Any]:
        """The OpenAI ``{"type": "function", "function": {...}}`` form, keys in Qwen-Agent's order."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    @cached_property
    def openai_json(self) -> str:
        """:meth:`as_openai` as the JSON text a prompt lists it in (:func:`.base.dumps`),
        written once: a prompt dialect lists its tools on every model call."""
        return dumps(self.as_openai())


def clean_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Keep ``type``, ``properties`` and ``required`` of an object schema.

    ``required`` is added as ``[]`` when missing, as Qwen-Agent's MCP manager does, so
    models always see the same three keys. Property schemas are kept as they are, except
    that ``$ref``s into ``$defs`` are inlined first, so nested models keep their meaning.

    >>> clean_schema({"type": "object", "properties": {}, "title": "x"})
    {'type': 'object', 'properties': {}, 'required': []}
    """
    schema = dict(schema or {})
    if "$defs" in schema or "definitions" in schema:
        schema = dereference_refs(schema)
    return {
        "type": schema.get("type", "object"),
        "properties": dict(schema.get("properties") or {}),
        "required": list(schema.get("required") or []),
    }


def to_tool_spec(tool: ToolLike) -> ToolSpec:
    """Turn any supported tool description into a :class:`ToolSpec`.

    Raises:
        TypeError: for an object that is none of the supported forms, naming its type.
    """
    if isinstance(tool, ToolSpec):
        return tool
    if isinstance(tool, Mapping):
        if "inputSchema" in tool:  # MCP tool dict
            return ToolSpec(
                name=str(tool["name"]),
                description=str(tool.get("description") or ""),
                parameters=clean_schema(tool["inputSchema"]),
            )
        fn = tool.get("function", tool)
        if isinstance(fn, Mapping) and "name" in fn:
            return ToolSpec(
                name=str(fn["name"]),
                description=str(fn.get("description") or ""),
                parameters=clean_schema(fn.get("parameters")),
            )
    if isinstance(tool, BaseTool) and isinstance(tool.args_schema, Mapping):
        # MCP tools carry a dict schema already; convert_to_openai_tool would rebuild it
        return ToolSpec(tool.name, tool.description or "", clean_schema(tool.args_schema))
    if isinstance(tool, BaseTool):
        return _described(tool)
    if isinstance(tool, Mapping) or callable(tool):
        return _converted(tool)
    raise TypeError(f"cannot describe a tool of type {type(tool).__name__}: {tool!r}")


def _converted(tool: Any) -> ToolSpec:
    fn = convert_to_openai_tool(tool)["function"]
    return ToolSpec(
        name=fn["name"],
        description=fn.get("description") or "",
        parameters=clean_schema(fn.get("parameters")),
    )


# A BaseTool described once while its name, description and schema stay as they are:
# a prompt dialect describes its tools on every model call, and building the JSON schema
# of a pydantic ``args_schema`` is most of a call's own cost.
_described_tools: dict[int, tuple[weakref.ref[BaseTool], tuple[Any, ...], ToolSpec]] = {}


def _described(tool: BaseTool) -> ToolSpec:
    ident = id(tool)
    seen = _described_tools.get(ident)
    stamp = (tool.name, tool.description, id(tool.args_schema))
    if seen is not None and seen[0]() is tool and seen[1] == stamp:
        return seen[2]
    spec = _converted(tool)
    try:
        ref = weakref.ref(tool, lambda _: _described_tools.pop(ident, None))
    except TypeError:  # a tool that takes no weak reference: described each time
        return spec
    _described_tools[ident] = (ref, stamp, spec)
    return spec


def to_tool_specs(tools: Iterable[ToolLike] | None) -> list[ToolSpec]:
    """:func:`to_tool_spec` over a list; ``None`` is no tools."""
    return [to_tool_spec(t) for t in tools or ()]


#: What breaks a marker: the model reads the same characters, no reader sees the marker.
# -- markup in text the model did not write, broken so that no reader sees it
ZERO_WIDTH_SPACE = "\u200b"


def neutralise(text: str, markers: Sequence[str]) -> str:
    """``text`` with every one of ``markers`` broken by a zero-width space.

    Text the model did not write (a tool result, a user's message) may hold call markup
    of any format the readers know, or ChatML turn markers; echoed by the model, it would
    read as a call of the model's own. Broken, the model still reads the same characters
    and no reader sees a marker in them (the dialects pass every format's markers,
    :data:`~fncall_graph.adapters.formats.readers.KNOWN_MARKUP`, and their own).

    Example:
        >>> neutralise("[TOOL_CALLS][]", ["[TOOL_CALLS]"]) == "[\u200bTOOL_CALLS][]"
        True
    """
    pattern = _breaker(tuple(markers))
    if pattern is None:
        return text
    while True:  # a marker inside a longer one (``<tool_call>`` in MiniMax's) too
        broken = pattern.sub(_break, text)
        if broken == text:
            return text
        text = broken


def _break(match: re.Match[str]) -> str:
    marker = match.group()
    return marker[0] + ZERO_WIDTH_SPACE + marker[1:]


@lru_cache(maxsize=16)
def _breaker(markers: tuple[str, ...]) -> re.Pattern[str] | None:
    # a one-character marker cannot be broken (and no format has one)
    usable = sorted({m for m in markers if len(m.strip()) > 1}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, usable))) if usable else None
