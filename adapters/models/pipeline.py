"""One model call through the boundary: rendered once, the provider called, read once.

:class:`ModelCall` is what :func:`~fncall_graph.adapters.models.prepare.prepare_call`
makes: the rendered input, the provider bound for the dialect, the call's arguments, and
what its reading needs (the tools, the ids the history uses, the call format, the
echoes). The
wrapper (``with_dialect``) and the graph's ``model`` node both call it: the wrapper inside
a run of its own, the node as the provider's only run.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
)
from langchain_core.messages.tool import (
    InvalidToolCall,
    ToolCall,
    invalid_tool_call,
)
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import merge_configs, var_child_runnable_config

from ..formats.base import Dialect, text_of
from ..formats.normalize import normalize
from ..formats.readers import get_reader
from ..formats.reading import Echoes
from ..formats.stream_reading import StreamReading, fitted_call
from .structured_output import repaired_json

__all__ = ["SEES_WRAPPED_RUN", "ModelCall"]


#: A callback handler with this attribute set to ``True`` also sees the wrapped model's
#: own run (the rendered prompt it was sent, its reply before reading). Every other
#: handler (usage counters, tracers, ``astream_events``) sees one chat-model run per
#: call, the wrapper's, with its input, its read reply and the usage once.
SEES_WRAPPED_RUN = "fncall_sees_wrapped_run"

_ONE_CALL = (
    "parallel_tool_calls=False: one call per reply, and this reply's first call runs; "
    "call {name} again once its result is back"
)


@dataclass(slots=True)
class ModelCall:
    """One model call through the boundary: rendered once, its reply read once."""

    dialect: Dialect
    runnable: Runnable[LanguageModelInput, BaseMessage]
    rendered: list[BaseMessage]
    kwargs: dict[str, Any]
    tools: list[Any] | None  # as given to bind_tools
    tool_names: list[str] | None  # the offered tools' names, for calls read from markup
    taken: set[str]  # call ids the history already uses
    forced: bool = False  # a prompt dialect whose tool_choice demands a call
    one_call: bool = False  # a prompt dialect bound with parallel_tool_calls=False
    # the tools' parameter schemas by name, made when a call first needs them
    schemas: dict[str, Any] | None = None
    json_answer: bool = False  # an answer asked for as JSON by ``response_format``
    call_format: str | None = None  # the model's call format, when known
    echoes: Echoes | None = None  # the calls the history's results and user texts write
    # the wrapper's own run is the call's: handlers set in context see it, not the inner one
    wrapped: bool = True

    @property
    def reader(self) -> Dialect:
        """What reads the reply: the known call format's reader, else the dialect."""
        return self.dialect if self.call_format is None else get_reader(self.call_format)

    def invoke(
        self, messages: list[BaseMessage], config: RunnableConfig | None = None
    ) -> BaseMessage:
        """The provider's reply to ``messages`` (usually :attr:`rendered`); ``config``
        is merged into the call's own (more callbacks, say)."""
        with _context_handlers_muted() if self.wrapped else nullcontext():
            return self.runnable.invoke(messages, **self._with(config))

    async def ainvoke(
        self, messages: list[BaseMessage], config: RunnableConfig | None = None
    ) -> BaseMessage:
        """As :meth:`invoke`."""
        with _context_handlers_muted() if self.wrapped else nullcontext():
            return await self.runnable.ainvoke(messages, **self._with(config))

    def sent_with(self, config: RunnableConfig) -> ModelCall:
        """This call, the provider called with ``config``: a call made ready in one step
        (a graph's ``adapter``) and sent from another (its ``model``), whose run the
        provider's is."""
        return replace(self, kwargs={**self.kwargs, "config": dict(config)})

    def _with(self, config: RunnableConfig | None) -> dict[str, Any]:
        if not config:
            return self.kwargs
        return {**self.kwargs, "config": merge_configs(self.kwargs.get("config"), config)}

    def reading(self) -> StreamReading:
        """The reading of this call's reply as it streams: ``feed`` each chunk of the
        provider's, then ``close``; the chunks it returns add up to the read reply
        (:func:`restore_read_reply` puts back what chunks cannot carry)."""
        return StreamReading(self)

    def stream(self) -> Iterator[BaseMessage]:
        pieces = iter(self.runnable.stream(self.rendered, **self.kwargs))
        with _context_handlers_muted():  # the inner run starts at the first piece
            first = next(pieces, None)
        if first is not None:
            yield first
            yield from pieces

    async def astream(self) -> AsyncIterator[BaseMessage]:
        pieces = aiter(self.runnable.astream(self.rendered, **self.kwargs))
        with _context_handlers_muted():  # the inner run starts at the first piece
            first = await anext(pieces, None)
        if first is not None:
            yield first
            async for piece in pieces:
                yield piece

    def read(self, reply: BaseMessage) -> AIMessage:
        """The reply as the graph keeps it: calls from the field and the text merged,
        ids unique against the history, arguments read from text typed by the tools'
        schemas, loose call forms fitted to the tools."""
        if self.dialect.native:
            message = normalize(
                reply,
                None,
                tool_names=self.tool_names,
                taken_ids=self.taken,
                tools=self.tools,
                call_format=self.call_format,
                echo_sources=self.echoes,
            )
        else:
            # read at once into the message its stream would add up to: one reading
            return StreamReading(self).whole(reply)
        if self.json_answer and not message.tool_calls:
            fixed = repaired_json(text_of(message.content))
            if fixed is not None:  # read with json.loads by the caller: repaired here
                message = message.model_copy(update={"content": fixed})
        if self.one_call and len(message.tool_calls) > 1:
            first, *rest = message.tool_calls
            extra = [self.not_run(c) for c in rest]
            invalid = [*message.invalid_tool_calls, *extra]
            message = message.model_copy(
                update={"tool_calls": [first], "invalid_tool_calls": invalid}
            )
        return message

    @staticmethod
    def not_run(call: ToolCall) -> InvalidToolCall:
        """A call past the first, under ``parallel_tool_calls=False``."""
        return invalid_tool_call(
            name=call["name"],
            args=json.dumps(call["args"], ensure_ascii=False),
            id=call["id"],
            error=_ONE_CALL.format(name=call["name"]),
        )

    @staticmethod
    def repaired_answer(text: str) -> str | None:
        """An answer asked for as JSON, repaired (``None``: nothing to repair it into)."""
        return repaired_json(text)

    def fit(self, call: ToolCall, texts: Mapping[str, str] | None = None) -> ToolCall:
        """One call read from a stream (``texts``: its arguments written as text), typed
        and fitted to the tools as :meth:`read` types and fits a reply's."""
        return fitted_call(self, call, texts)


@contextmanager
def _context_handlers_muted() -> Iterator[None]:
    """While the inner run starts: the callback handlers set in context variables
    (``get_usage_metadata_callback()`` and the like attach theirs to every run started
    while they are set) and the callbacks of the chain step being run unset, so they
    see one run per call, as handlers passed with the call do; those with
    ``SEES_WRAPPED_RUN`` stay."""
    muted = [
        (var, var.set(None))
        for var, value in contextvars.copy_context().items()
        if isinstance(value, BaseCallbackHandler) and not getattr(value, SEES_WRAPPED_RUN, False)
    ]
    # inside a chain (``with_structured_output``'s), a bound model merges the chain
    # step's config from context into the one it is given: its callbacks too
    outer = var_child_runnable_config.get()
    if outer and outer.get("callbacks") is not None:
        quiet = {**outer, "callbacks": None}
        muted.append((var_child_runnable_config, var_child_runnable_config.set(quiet)))  # type: ignore[arg-type]
    try:
        yield
    finally:
        for var, token in reversed(muted):
            var.reset(token)
