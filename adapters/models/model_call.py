"""One model call through the boundary: made ready, sent, its reply read once.

:func:`prepare_call` makes a :class:`ModelCall`: the history rendered once (unless
given), the tools a ``tool_choice`` leaves (:func:`chosen_tools`), the grammar the server
is held to, the provider bound for native calling (:class:`NativeBindings`, per list the
wrapper's ``bind_tools`` bound with :func:`tool_binding`), and what reading the reply
needs (the tools, the ids the history uses, the call format, the echoes). The wrapper
(``with_dialect``) and the graph's ``model`` node both call it: the wrapper inside a run
of its own, the node as the provider's only run.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langchain_core.runnables.config import merge_configs, var_child_runnable_config
from langchain_core.runnables.configurable import DynamicRunnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from ..formats.base import Dialect, text_of, to_tool_spec, to_tool_specs
from ..formats.normalize import normalize, used_call_ids
from ..formats.own_calls import Echoes, echo_sources
from ..formats.readers import get_reader
from ..formats.stream_reading import StreamReading, fitted_call
from .call_format import resolve_call_format
from .capabilities import accepts_grammar
from .structured_output import JSON_OUTPUT_KEY, asking_for_json, repaired_json, requested_json

__all__ = ["SEES_WRAPPED_RUN", "ModelCall"]

# -- the tools bound: what bind_tools binds, and the model bound natively once per list
# bound with the tools: the tools as given to bind_tools, before conversion
GIVEN_TOOLS = "dialect_tools"
# bound with the tools: bind_tools' ``strict`` and ``parallel_tool_calls``
TOOL_OPTIONS = "dialect_tool_options"


def tool_binding(
    tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
    *,
    tool_choice: str | dict[str, Any] | bool | None,
    strict: bool | None,
    parallel_tool_calls: bool | None,
) -> dict[str, Any]:
    """The keyword arguments ``bind_tools`` binds: ``tools`` in OpenAI form (what
    LangChain's and LangGraph's agents read back), the tools as given (what the dialect
    renders: an MCP tool's schema as its server wrote it), the choice and the options."""
    bound: dict[str, Any] = {
        "tools": [convert_to_openai_tool(t, strict=strict) for t in tools],
        GIVEN_TOOLS: list(tools),
    }
    if tool_choice is not None:
        bound["tool_choice"] = tool_choice
    options = {"strict": strict, "parallel_tool_calls": parallel_tool_calls}
    # kept apart from request fields: they shape the tools, never reach a server as is
    bound[TOOL_OPTIONS] = {k: v for k, v in options.items() if v is not None}
    return bound


class NativeBindings:
    """The wrapped model bound to the tools (native calling), per bound tool list: the
    same list comes with every call of one binding, and binding converts every tool's
    schema again."""

    def __init__(self) -> None:
        self._held: dict[tuple[int, str, str], tuple[Any, Runnable]] = {}

    def bound(
        self,
        model: Runnable,
        chat: BaseChatModel,
        tools: list[Any],
        tool_choice: Any,
        options: dict[str, Any],
    ) -> Runnable[LanguageModelInput, BaseMessage]:
        """``chat`` bound to ``tools``, with ``model``'s own bound arguments when it is a
        binding of ``chat``."""
        key = (id(tools), repr(tool_choice), repr(sorted(options.items())))
        held = self._held.get(key)
        if held is None or held[0] is not tools:  # the list is kept, so its id stays its own
            bound = chat.bind_tools(tools, tool_choice=tool_choice, **options)
            if isinstance(model, RunnableBinding):  # the model's own bound arguments
                bound = RunnableBinding(bound=bound, kwargs=model.kwargs, config=model.config)
            held = (tools, bound)
            self._held[key] = held
            if len(self._held) > 8:  # callers that bind anew for every call never hit
                del self._held[next(iter(self._held))]
        return held[1]


def forces_a_call(tool_choice: Any) -> bool:
    """Whether ``tool_choice`` demands a tool call (any, or a named tool)."""
    return tool_choice not in (None, False, "none", "auto")


def chosen_tools(tools: list[Any] | None, tool_choice: Any) -> list[Any] | None:
    """The tools a prompt dialect renders for ``tool_choice`` (see
    :meth:`~fncall_graph.adapters.models.chat_model.DialectChatModel.bind_tools`).

    Raises:
        ValueError: for a ``tool_choice`` naming none of ``tools``.
    """
    if not tools or tool_choice in (None, True, "auto", "any", "required"):
        return tools
    if tool_choice in (False, "none"):
        return None
    name = tool_choice
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or tool_choice).get("name")
    picked = [t for t in tools if to_tool_spec(t).name == name]
    if not picked:
        raise ValueError(f"tool_choice {tool_choice!r} names none of the bound tools")
    return picked


# -- the chat model inside a bound or configurable runnable
def chat_model_in(model: Any) -> BaseChatModel:
    """The chat model a runnable wraps: itself, a binding's, a configurable one's default.

    Raises:
        TypeError: for a runnable that wraps no chat model.
    """
    inner = model
    while not isinstance(inner, BaseChatModel):
        if isinstance(inner, RunnableBinding):
            inner = inner.bound
        elif isinstance(inner, DynamicRunnable):
            inner = inner.default
        else:
            raise TypeError(
                "with_dialect: model must be a chat model (or one bound with .bind(...) or "
                f"made configurable), got {type(model).__name__}"
            )
    return inner


# -- one model call: sent, its reply read once
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


# -- a call made ready
def prepare_call(
    messages: list[BaseMessage],
    stop: list[str] | None,
    kwargs: dict[str, Any],
    config: RunnableConfig,
    *,
    dialect: Dialect,
    model: Runnable,
    call_format: str | None,
    json_by_prompt: bool,
    bindings: NativeBindings,
    rendered: Sequence[BaseMessage] | None = None,
    render_only: bool = False,
) -> ModelCall:
    """What to call, with what input and arguments, and how to read the reply.

    Args:
        messages: the canonical history.
        stop: the caller's stop sequences (the dialect's are added).
        kwargs: the call's arguments, as bound (``bind_tools``' among them).
        config: the config the provider is called with.
        dialect: the wrapper's dialect.
        model: the wrapped model (bound or configurable as given).
        call_format: the wrapper's declared call format, if any.
        json_by_prompt: whether JSON output is asked for in the prompt (and held to a
            grammar where the server takes one) rather than by the model's own.
        bindings: the wrapper's native bindings, reused across calls.
        rendered: the history as already rendered for this same call.
        render_only: stop once the input is rendered (the reading is not set up).
    """
    chat = chat_model_in(model)
    kwargs = dict(kwargs)
    formatted = kwargs.pop("tools", None) or None
    tools = kwargs.pop(GIVEN_TOOLS, None) or formatted
    tool_choice = kwargs.pop("tool_choice", None)
    options: dict[str, Any] = kwargs.pop(TOOL_OPTIONS, None) or {}
    json_output = kwargs.pop(JSON_OUTPUT_KEY, None)
    json_answer = False
    if json_output is not None:
        # with_structured_output: the answer is to be JSON, no tools offered
        formatted = tools = None
    elif json_by_prompt and (wanted := requested_json(kwargs.get("response_format"))):
        # an OpenAI ``response_format`` (create_agent's provider strategy) this model
        # cannot take as a request field: asked for in the prompt instead
        del kwargs["response_format"]
        json_output, json_answer = wanted, True
    if json_output is not None:
        if rendered is None:
            messages = asking_for_json(messages, json_output["schema"], beside_tools=bool(tools))
        if not tools and accepts_grammar(chat):
            # the grammar code loads with the first JSON answer a server constrains
            from ..formats.grammar import schema_to_gbnf

            grammar = schema_to_gbnf(json_output["schema"] or {"type": "object"})
            _with_grammar(kwargs, grammar, model)
    inner: Runnable[LanguageModelInput, BaseMessage] = model
    names = None
    forced = False
    if dialect.native:
        rendered = dialect.render(messages, tools) if rendered is None else rendered
        if tools:
            inner = bindings.bound(model, chat, tools, tool_choice, options)
            # the OpenAI forms when bound, cheaper to read than the tools as given
            names = [spec.name for spec in to_tool_specs(formatted or tools)]
    else:
        tools = chosen_tools(tools, tool_choice)
        rendered = dialect.render(messages, tools) if rendered is None else rendered
        forced = bool(tools) and forces_a_call(tool_choice)
        one_call = options.get("parallel_tool_calls") is False
        if (
            (forced or one_call or options.get("strict") or json_answer)
            and accepts_grammar(chat)
            and "grammar" not in (kwargs.get("extra_body") or {})
        ):
            # the server can hold the reply to the chosen tools' calls and schemas,
            # and an answer asked for as JSON to its schema
            answer = (json_output or {}).get("schema") or {"type": "object"}
            grammar = dialect.grammar(
                tools,
                require_call=forced,
                one_call=one_call,
                answer_json=answer if json_answer else None,
            )
            if grammar is not None:
                _with_grammar(kwargs, grammar, model)
    merged = list(dict.fromkeys([*dialect.stop, *(stop or [])]))
    if merged:
        kwargs["stop"] = merged
    kwargs["config"] = config
    call = ModelCall(dialect, inner, list(rendered), kwargs, tools, names, set())
    if render_only:
        return call
    call.taken = used_call_ids(messages)
    call.forced = not dialect.native and forced
    call.one_call = not dialect.native and options.get("parallel_tool_calls") is False
    call.json_answer = json_answer
    call.call_format = (
        resolve_call_format(chat, declared=call_format).name if dialect.native else call_format
    )
    call.echoes = Echoes(echo_sources(messages))
    return call


def _with_grammar(kwargs: dict[str, Any], grammar: str, model: Runnable) -> None:
    """Put ``grammar`` in the request's ``extra_body`` unless the caller sent one; the
    model's own ``extra_body`` (bound, or its field) is kept."""
    extra = (
        kwargs.get("extra_body")
        or (model.kwargs.get("extra_body") if isinstance(model, RunnableBinding) else None)
        or getattr(chat_model_in(model), "extra_body", None)
        or {}
    )
    if "grammar" not in extra:
        kwargs["extra_body"] = {**extra, "grammar": grammar}
