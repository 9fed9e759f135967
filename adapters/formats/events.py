"""What reading a reply gives: events, and the stream parser that yields them.

A reply is read into events (:data:`ParseEvent`): answer text, reasoning, complete calls
and calls that could not be read. A :class:`StreamParser` yields them chunk by chunk, as
soon as they are certain; its :meth:`~StreamParser.message` is the read reply.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall

__all__ = [
    "MARKUP_FORMAT_KEY",
    "CallEvent",
    "ContentDelta",
    "InvalidCallEvent",
    "ParseEvent",
    "ReasoningDelta",
    "ShownMarkup",
    "StreamParser",
]


#: ``response_metadata`` key of a native reply whose calls were read from markup in its
#: content (its server had no tool parser): the format they were written in.
MARKUP_FORMAT_KEY = "fncall_markup_format"


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Answer text, markup already removed."""

    text: str


class ShownMarkup(ContentDelta):
    """Answer text that is call markup the reply only shows (in a list item, a code
    block, quotation marks, …: :mod:`.placement`): text, never a call."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning text (``<think>`` blocks, ReAct thoughts), kept apart from the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class CallEvent:
    """A complete, readable tool call.

    ``texts``: the arguments the format wrote as untyped text (``<parameter=n>5``), as
    written, by name; the tool's schema decides their types (:mod:`.arg_types`).
    """

    call: ToolCall
    texts: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class InvalidCallEvent:
    """A tool call that could not be read, with the reason in ``call["error"]``."""

    call: InvalidToolCall


ParseEvent = ContentDelta | ReasoningDelta | CallEvent | InvalidCallEvent


def text_after_calls(events: Iterable[ParseEvent]) -> str:
    """The answer text a reply's events give after its last call (``""`` for none)."""
    after: list[str] = []
    for ev in events:
        if isinstance(ev, CallEvent | InvalidCallEvent):
            after = []
        elif isinstance(ev, ContentDelta):
            after.append(ev.text)
    return "".join(after)


class StreamParser(ABC):
    """Fed chunks of a model's text, yields events as soon as they are certain."""

    @abstractmethod
    def feed(self, chunk: str) -> list[ParseEvent]:
        """Take the next chunk; return what it completes."""

    @abstractmethod
    def close(self) -> list[ParseEvent]:
        """End of output: flush what was held back (an unclosed last call included)."""

    @abstractmethod
    def message(self) -> AIMessage:
        """The canonical ``AIMessage`` for everything fed so far (call after :meth:`close`)."""
