"""The native dialect: the provider's own function calling (OpenAI ``tools``).

The canonical history already is what an OpenAI-compatible API takes, so rendering
is the identity (but for call markup in results and user text, broken so that a model
echoing it forges no call), and tools travel through the chat model's ``bind_tools`` rather than
the prompt. Replies carry their calls in ``AIMessage.tool_calls``; markup a provider leaves in
``content`` anyway (a server without a tool parser, ``<think>`` blocks) is read by
:func:`fncall_graph.adapters.formats.normalize.normalize`, which ``parse`` is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, BaseMessage

from .base import Dialect, ToolLike, neutralise
from .calls import ContentDelta, ParseEvent, StreamParser
from .normalize import normalize
from .readers import KNOWN_MARKUP
from .readers.qwen import QWEN_MARKERS

__all__ = []


class _TextStreamParser(StreamParser):
    """Passes text through unchanged: a native reply has no markup to read."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[str] = []

    def feed(self, chunk: str) -> list[ParseEvent]:
        if not chunk:
            return []
        self._parts.append(chunk)
        return [ContentDelta(chunk)]

    def close(self) -> list[ParseEvent]:
        return []

    def message(self) -> AIMessage:
        return AIMessage(content="".join(self._parts))


class NativeDialect(Dialect):
    """Tools through the provider's function-calling API.

    ``render`` returns the canonical history as it is (``HumanMessage``, ``AIMessage``
    with ``tool_calls``, one ``ToolMessage`` per call); the tools are not written into
    the prompt but passed with ``model.bind_tools(tools)`` at call time.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> d = NativeDialect()
        >>> d.render([HumanMessage("hi")], tools=[])[0].content
        'hi'
        >>> d.parse("It is sunny.").content
        'It is sunny.'
        >>> d.stop
        ()
    """

    name: ClassVar[str] = "native"
    native: ClassVar[bool] = True
    stop: tuple[str, ...] = ()

    def render(
        self, messages: Sequence[BaseMessage], tools: Sequence[ToolLike] | None
    ) -> list[BaseMessage]:
        """The canonical history (a new list): tool results and user messages that hold
        call markup of any known format are copied with it broken (:func:`neutralise`);
        the other messages are not copied."""
        return [_neutralised(m) if m.type in ("human", "tool") else m for m in messages]

    def parse(self, text: str) -> AIMessage:
        """A reply's text as the graph and ``with_dialect`` read a native reply
        (:func:`~.normalize.normalize`): plain text stays the answer; call markup a
        server without a tool parser left in it is read in the format it is written in."""
        return normalize(AIMessage(content=text), self)

    def stream_parser(self) -> StreamParser:
        """A parser that streams each chunk back as content."""
        return _TextStreamParser()


# what a native model must not see unbroken in text it did not write
_MARKUP = (*KNOWN_MARKUP, *QWEN_MARKERS)


def _neutralised(message: BaseMessage) -> BaseMessage:
    content: Any = message.content
    if isinstance(content, str):
        new: Any = neutralise(content, _MARKUP)
    else:
        new = [
            {**b, "text": neutralise(b["text"], _MARKUP)}
            if isinstance(b, dict) and isinstance(b.get("text"), str)
            else neutralise(b, _MARKUP)
            if isinstance(b, str)
            else b
            for b in content
        ]
    return message if new == content else message.model_copy(update={"content": new})
