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

The events a reading gives (:mod:`.events`), the text of a message (:mod:`.messages`)
and the lenient JSON of arguments (:mod:`.call_args`) have modules of their own; the
names other packages take from here are handed on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, BaseMessage

from .call_args import loads_lenient
from .events import (
    CallEvent,
    ContentDelta,
    InvalidCallEvent,
    ParseEvent,
    ReasoningDelta,
    StreamParser,
)
from .json_text import in_json_string
from .markup import THINK, Block
from .messages import text_of
from .neutralise import neutralise
from .scanner import MarkupStreamParser
from .schema import ToolLike

__all__ = [
    "CallEvent",
    "ContentDelta",
    "Dialect",
    "InvalidCallEvent",
    "PromptDialect",
    "ReasoningDelta",
    "loads_lenient",
    "text_of",
]


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
