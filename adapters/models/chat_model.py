"""``with_dialect``: tool calling for any chat model, as a LangChain chat model.

The wrapper puts a dialect between LangChain and a chat model, so that
``bind_tools`` works for a model without native function calling, and so that
LangGraph's and LangChain's own agents (``create_react_agent``, ``create_agent``,
``with_structured_output``) can use it unchanged. Each call renders the canonical
history with the dialect, calls the model with the dialect's stop sequences, and reads
the reply back into an ``AIMessage`` with ``tool_calls``; streaming yields
``AIMessageChunk``s whose sum is that same message.

What the wrapper is as LangChain sees it is here too: the chat model inside it (which
takes LangChain's standard constructor parameters), its name, its serialized dialect, the
parameters that key its cache entries and its tracing parameters. A call is made ready
and read in :mod:`.model_call`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.load.serializable import SerializedConstructor, SerializedNotImplemented
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langchain_core.runnables.configurable import DynamicRunnable
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator, model_validator

from ..formats.base import Dialect
from ..formats.registry import get_dialect
from ..formats.stream_reading import restore_read_reply
from .call_format import check_call_format
from .capabilities import accepts_grammar
from .model_call import ModelCall, NativeBindings, chat_model_in, prepare_call, tool_binding
from .runs import arun_call, astream_call, child_callbacks, run_call, stream_call
from .structured_output import structured_output

__all__ = ["DialectChatModel", "with_dialect"]

#: LangChain's standard chat-model constructor parameters, set on the wrapped model
MODEL_PARAMS = frozenset(
    {
        "temperature",
        "max_tokens",
        "stop",
        "timeout",
        "max_retries",
        "api_key",
        "base_url",
        "streaming",
    }
)


def with_params(model: Any, params: dict[str, Any]) -> BaseChatModel:
    """``model`` rebuilt with LangChain's standard ``params`` set, each by its field's
    name or alias (``timeout`` is ``ChatOpenAI``'s ``request_timeout``); rebuilt, not
    copied, so that clients made from them (timeouts, retries) are made again.

    Raises:
        TypeError: when ``model`` is not a chat model itself (bound or configurable).
        ValueError: for a parameter the model does not have.
    """
    if not isinstance(model, BaseChatModel):
        raise TypeError(
            f"with_dialect: {', '.join(sorted(params))} can be set here only on a chat model; "
            f"set them on the model before binding or making it configurable "
            f"(got {type(model).__name__})"
        )
    fields = type(model).model_fields
    by_name = bool(
        model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name")
    )

    def key(name: str) -> str:
        field = fields[name]
        return name if by_name or field.alias is None else field.alias

    named: dict[str, str] = {}
    for param in params:
        found = next(
            (n for n, f in fields.items() if param in (n, f.alias) and not f.exclude), None
        )
        if found is None:
            raise ValueError(
                f"with_dialect: {type(model).__name__} has no {param!r} parameter; the "
                "wrapper passes it to the wrapped model and has none of its own"
            )
        named[param] = found
    # what was given when it was made, less runtime state (clients are excluded fields)
    kept = {
        key(n): getattr(model, n)
        for n in model.model_fields_set
        if n in fields and not fields[n].exclude and n not in named.values()
    }
    return type(model)(**kept, **{key(named[p]): v for p, v in params.items()})


def model_name_of(chat: BaseChatModel) -> str:
    """``chat``'s model name, e.g. ``"gpt-4o-mini"`` (its class name when it has none)."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(chat, attr, None)
        if isinstance(value, str) and value:
            return value
    return chat.get_name()


def dialect_spec(dialect: Dialect) -> dict[str, Any] | None:
    """``dialect`` as its registry name and options, or ``None`` when those do not make
    the same dialect again (a custom dialect)."""
    options = {k: v for k, v in vars(dialect).items() if not k.startswith("_")}
    try:
        again = get_dialect(dialect.name, **options)
    except (TypeError, ValueError):
        return None
    return {"name": dialect.name, **options} if repr(again) == repr(dialect) else None


def identifying_params(
    model: Runnable, dialect: Dialect, call_format: str | None
) -> dict[str, Any]:
    """The wrapper's cache key: the wrapped model's own parameters, so wrappers of two
    models never share a cache entry, with the dialect and what else reads replies."""
    params: dict[str, Any] = {
        "dialect": repr(dialect),
        "model": chat_model_in(model).asdict(),
    }
    if call_format is not None:  # replies are read in it
        params["call_format"] = call_format
    if isinstance(model, RunnableBinding):  # its arguments go with every call
        params["bound"] = repr(sorted(model.kwargs.items()))
    return params


def ls_params(
    chat: BaseChatModel, model_name: str, stop: list[str] | None, kwargs: dict[str, Any]
) -> LangSmithParams:
    """Tracing parameters of the wrapped model ``chat``, seen through the dialect."""
    provider = type(chat).__name__
    provider = provider[4:] if provider.startswith("Chat") else provider.removesuffix("Chat")
    model = kwargs.get("model")
    params = LangSmithParams(
        ls_provider=provider.lower(),
        ls_model_name=model if isinstance(model, str) else model_name,
        ls_model_type="chat",
    )
    for name, key in (("temperature", "ls_temperature"), ("max_tokens", "ls_max_tokens")):
        value = kwargs.get(name, getattr(chat, name, None))
        if isinstance(value, int | float) and not isinstance(value, bool):
            params[key] = value  # type: ignore[literal-required]
    if stop:
        params["ls_stop"] = stop
    return params


class DialectChatModel(BaseChatModel):
    """A chat model that speaks to ``model`` about tools in ``dialect``.

    Build it with :func:`with_dialect`. Tools bound with :meth:`bind_tools` are kept
    in the bound keyword arguments (OpenAI format, as LangGraph's agents expect) and
    handed to the dialect on every call:

    * prompt dialects (``"hermes"``, ``"qwen"``, ``"react"``): the history and the
      tools are rendered into the prompt, the model is called with the dialect's
      ``stop`` sequences added to the caller's, and the reply is parsed; calls the
      model returned natively anyway are merged in (see
      :func:`~fncall_graph.adapters.formats.normalize.normalize`);
    * ``"native"``: the tools go to ``model.bind_tools`` and the reply is normalised
      (calls a server left as ``<tool_call>`` markup in ``content`` are read too).

    Attributes:
        model: the wrapped chat model; it may be bound (``ChatOpenAI(...).bind(...)``, its
            arguments go with every call) or configurable (``configurable_fields``).
        dialect: the dialect used at the model boundary.
        call_format: the model's call format (one of
            :data:`~fncall_graph.adapters.formats.readers.CALL_FORMATS`, or a model
            family's name): replies are read only in it, as its engine reads them.
            ``None``: with ``"native"``, the model's own, resolved once (see
            :func:`~fncall_graph.adapters.models.call_format.resolve_call_format`), else
            detected in each reply.

    LangChain's standard constructor parameters ``temperature``, ``max_tokens``,
    ``stop``, ``timeout``, ``max_retries``, ``api_key``, ``base_url`` (and ``streaming``)
    are set on the wrapped model, which must have that parameter (by its name or its
    alias: ``ChatOpenAI``'s ``api_key`` is ``openai_api_key``); ``rate_limiter`` and
    the other fields every LangChain chat model has are the wrapper's own; any other
    keyword is refused.
    """

    model_config = ConfigDict(extra="forbid")

    model: Runnable
    dialect: Dialect
    call_format: str | None = None
    # native: the inner model bound to the tools, once per bound tool list
    _bound: NativeBindings = PrivateAttr(default_factory=NativeBindings)

    @model_validator(mode="before")
    @classmethod
    def _params_to_the_model(cls, data: Any) -> Any:
        # LangChain's standard constructor parameters belong to the wrapped model
        if not isinstance(data, dict) or not MODEL_PARAMS.intersection(data):
            return data
        data = dict(data)
        params = {k: data.pop(k) for k in MODEL_PARAMS if k in data}
        data["model"] = with_params(data.get("model"), params)
        return data

    @field_validator("model", mode="before")
    @classmethod
    def _a_chat_model(cls, value: Any) -> Any:
        chat_model_in(value)  # raises for anything else
        return value

    @field_validator("dialect", mode="before")
    @classmethod
    def _dialect(cls, value: Any) -> Dialect:
        if isinstance(value, Mapping):  # as serialized (``lc_attributes``)
            options = dict(value)
            return get_dialect(options.pop("name", None), **options)
        return get_dialect(value)

    @field_validator("call_format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        # a family's name is its format's; an unknown name raises, listing the known ones
        return None if value is None else check_call_format(value)

    @model_validator(mode="after")
    def _profile_of_the_model(self) -> DialectChatModel:
        # what the wrapped model can do (context window, modalities) is what this one can
        if self.profile is None and self.chat_model.profile is not None:
            self.profile = self.chat_model.profile
        if self._json_by_prompt and not self.dialect.native and accepts_grammar(self.chat_model):
            # JSON held to the schema by the server's grammar: structured output of its own
            # (create_agent then asks for it by ``response_format``, see ``_prepare``)
            self.profile = {**(self.profile or {}), "structured_output": True}
        return self

    @property
    def chat_model(self) -> BaseChatModel:
        """The chat model inside :attr:`model` (the model itself unless bound or
        configurable; a configurable one's default)."""
        return chat_model_in(self.model)

    @property
    def _json_by_prompt(self) -> bool:
        # JSON output from the prompt (and a grammar where the server takes one), unless
        # the wrapped model has its own and no grammar of the dialect's is to be preferred
        chat = self.chat_model
        own = type(chat).with_structured_output is not BaseChatModel.with_structured_output
        return not (own and (self.dialect.native or not accepts_grammar(chat)))

    @property
    def model_name(self) -> str:
        """The wrapped model's name, e.g. ``"gpt-4o-mini"`` or ``"qwen3"`` (its class name
        when it has none): what LangChain's agents read to choose a strategy."""
        return model_name_of(self.chat_model)

    # ------------------------------------------------------------------ identity

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """Serializable (``dumpd``/``loads``) when the wrapped model is (see :meth:`to_json`)."""
        return True

    @property
    def lc_attributes(self) -> dict[str, Any]:
        # the dialect as its registry name and options, which the validator reads back
        return {"dialect": dialect_spec(self.dialect)}

    def to_json(self) -> SerializedConstructor | SerializedNotImplemented:
        """LangChain's serialized form: the wrapped model's and the dialect's, or "not
        implemented" when either cannot be rebuilt from it (a replay, a custom dialect)."""
        if self.chat_model.is_lc_serializable() and dialect_spec(self.dialect) is not None:
            return super().to_json()
        unserializable: dict[str, Any] = dict(self.to_json_not_implemented())
        # LangChain's cache keys a model by this form (less its repr): say which model
        # is wrapped, so that wrappers of two models never share a cached reply
        unserializable["identifying_params"] = self._identifying_params
        return unserializable  # type: ignore[return-value]

    @property
    def _llm_type(self) -> str:
        return f"dialect-{self.dialect.name}"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        # read only when a LangChain cache is set
        return identifying_params(self.model, self.dialect, self.call_format)

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """Tracing parameters of the wrapped model, seen through the dialect."""
        return ls_params(self.chat_model, self.model_name, stop, kwargs)

    def __repr_args__(self) -> Any:
        # LangChain puts a model's repr in every run's start event; the wrapped model's
        # full repr (a long replay, say) would be rebuilt on every call
        return [("model", self.chat_model.get_name()), ("dialect", self.dialect)]

    # ------------------------------------------------------------------ tools

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        strict: bool | None = None,
        parallel_tool_calls: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools; the dialect renders them on each call.

        Args:
            tools: LangChain tools, functions, pydantic models or OpenAI tool dicts.
            tool_choice: with a prompt dialect, ``None`` and ``"auto"`` render every
                tool and let the model choose; ``"none"`` or ``False`` render none
                (earlier calls stay in the history as text); ``"any"``, ``"required"``
                and ``True`` render every tool and demand a call, a tool name (or
                ``{"type": "function", "function": {"name": ...}}``) renders only that
                tool and demands a call of it. A demanded call is held to by the
                dialect's calls-only grammar where the model's server takes one
                (``accepts_grammar``); elsewhere a reply without a call is asked again
                once, then raises ``OutputParserException``. With ``"native"`` it is
                passed to the model's ``bind_tools``.
            strict: hold call arguments to the tools' schemas. With ``"native"`` it is
                passed to the model's ``bind_tools``; with a prompt dialect, replies
                follow the dialect's grammar (built from the schemas) where the model's
                server takes one. It also marks the OpenAI tool specs ``strict``.
            parallel_tool_calls: ``False`` allows one call per reply. With ``"native"``
                it is passed to the model's ``bind_tools``; with a prompt dialect the
                first call of a reply runs and the others come back as
                ``invalid_tool_calls`` that say so, so the model makes them one by one.
            **kwargs: further arguments for every call of the model.
        """
        binding = tool_binding(
            tools, tool_choice=tool_choice, strict=strict, parallel_tool_calls=parallel_tool_calls
        )
        return self.bind(**{**kwargs, **binding})

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        method: Literal["function_calling", "json_schema", "json_mode"] = "function_calling",
        include_raw: bool = False,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Replies as ``schema``: a pydantic model, a ``TypedDict`` or a JSON schema.

        Args:
            schema: what to return; a pydantic model's instance, else a dict.
            method: ``"function_calling"``: a forced call of a tool made from ``schema``,
                through the dialect (see :meth:`bind_tools`: held to the dialect's
                calls-only grammar where the server takes one, else asked once more).
                ``"json_schema"`` / ``"json_mode"``: JSON, by the wrapped model's own
                structured output where it has it (the native dialect, or a model with
                its own ``with_structured_output`` whose server takes no grammar);
                else the prompt asks for JSON (following the schema, for
                ``"json_schema"``), held to a grammar made from the schema where the
                server takes one, and the reply is repaired and checked against the schema.
            include_raw: return ``{"raw", "parsed", "parsing_error"}``; a reply that
                cannot be read as ``schema`` then sets ``parsing_error`` instead of raising.
            strict: hold the reply to the schema: passed to the wrapped model's structured
                output or to :meth:`bind_tools`; on the prompt path a grammar already does.
            **kwargs: refused (a clear error rather than silently ignored).

        Raises:
            ValueError: for an unknown ``method`` or unexpected keyword arguments.
            OutputParserException: at call time, for a reply that is not ``schema``
                (without ``include_raw``).
        """
        return structured_output(
            self,
            self.model,
            schema,
            method=method,
            include_raw=include_raw,
            strict=strict,
            json_by_prompt=self._json_by_prompt,
            **kwargs,
        )

    # ------------------------------------------------------------------ calls

    def model_call(
        self,
        messages: Sequence[BaseMessage],
        *,
        config: RunnableConfig | None = None,
        rendered: Sequence[BaseMessage] | None = None,
        **kwargs: Any,
    ) -> ModelCall:
        """One call through the boundary, for a caller that makes it itself: the provider's
        own run is then the only chat-model run (a graph's ``model`` node does this).

        Args:
            messages: the canonical history.
            config: the config the provider is called with (its callbacks see its run).
            rendered: the history as :meth:`render_input` rendered it for this same call
                (then it is not rendered again).
            **kwargs: the call's arguments, as bound (``bind_tools``' among them).

        Returns:
            the call: :meth:`ModelCall.invoke` it with ``call.rendered``, then
            :meth:`ModelCall.read` the reply (or feed a stream to ``call.reading()``).
        """
        call = self._prepare(list(messages), None, kwargs, dict(config or {}), rendered=rendered)
        call.wrapped = False
        return call

    def render_input(self, messages: Sequence[BaseMessage], **kwargs: Any) -> list[BaseMessage]:
        """The history as this call sends it to the model: the dialect's prompt for a
        prompt dialect (tools, calls and results written as its text), the history itself
        for native. ``kwargs``: the call's arguments, as bound."""
        return self._prepare(list(messages), None, kwargs, {}, render_only=True).rendered

    def _prepare(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        config: RunnableConfig,
        *,
        rendered: Sequence[BaseMessage] | None = None,
        render_only: bool = False,
    ) -> ModelCall:
        """Render the history once (unless given); what to call, with what input and
        arguments (see :func:`~fncall_graph.adapters.models.model_call.prepare_call`)."""
        return prepare_call(
            messages,
            stop,
            kwargs,
            config,
            dialect=self.dialect,
            model=self.model,
            call_format=self.call_format,
            json_by_prompt=self._json_by_prompt,
            bindings=self._bound,
            rendered=rendered,
            render_only=render_only,
        )

    def _configured(self, config: RunnableConfig | None) -> DialectChatModel:
        """This wrapper with a configurable model resolved for ``config``."""
        if not (config and isinstance(self.model, DynamicRunnable)):
            return self
        model, _ = self.model.prepare(config)
        return type(self)(
            model=model, dialect=self.dialect, profile=self.profile, call_format=self.call_format
        )

    def invoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        """LangChain's ``invoke``; a reply it added up from a stream gets its unreadable
        calls' errors back (:func:`restore_read_reply`)."""
        if (model := self._configured(config)) is not self:
            return model.invoke(input, config, stop=stop, **kwargs)
        reply = super().invoke(input, config, stop=stop, **kwargs)
        return restore_read_reply(reply)  # type: ignore[return-value]

    async def ainvoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        """As :meth:`invoke`."""
        if (model := self._configured(config)) is not self:
            return await model.ainvoke(input, config, stop=stop, **kwargs)
        reply = await super().ainvoke(input, config, stop=stop, **kwargs)
        return restore_read_reply(reply)  # type: ignore[return-value]

    def stream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> Iterator[AIMessageChunk]:
        """LangChain's ``stream``, a configurable model resolved for ``config`` first."""
        model = self._configured(config)
        if model is not self:
            yield from model.stream(input, config, stop=stop, **kwargs)
        else:
            yield from super().stream(input, config, stop=stop, **kwargs)

    async def astream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[AIMessageChunk]:
        """As :meth:`stream`."""
        model = self._configured(config)
        stream = model.astream if model is not self else super().astream
        async for chunk in stream(input, config, stop=stop, **kwargs):
            yield chunk

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._prepare(messages, stop, kwargs, {"callbacks": child_callbacks(run_manager)})
        return ChatResult(generations=[ChatGeneration(message=run_call(call))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._prepare(messages, stop, kwargs, {"callbacks": child_callbacks(run_manager)})
        return ChatResult(generations=[ChatGeneration(message=await arun_call(call))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        call = self._prepare(messages, stop, kwargs, {"callbacks": child_callbacks(run_manager)})
        for chunk in stream_call(call):
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        call = self._prepare(messages, stop, kwargs, {"callbacks": child_callbacks(run_manager)})
        async for chunk in astream_call(call):
            yield ChatGenerationChunk(message=chunk)


def with_dialect(
    model: BaseChatModel | Runnable[LanguageModelInput, BaseMessage],
    dialect: str | Dialect,
    *,
    call_format: str | None = None,
) -> DialectChatModel:
    """Give ``model`` tool calling through ``dialect``.

    The result is a LangChain chat model: ``bind_tools``, ``invoke``, ``stream``,
    their async forms and ``with_structured_output`` work as for a model with native
    function calling, whatever ``model`` supports.

    Args:
        model: any LangChain chat model, e.g. ``ChatOllama(model="qwen2.5:0.5b")`` or
            ``ChatOpenAI(base_url=...)`` on a server without a tool parser; bound
            (``.bind(...)``) or configurable (``.configurable_fields(...)``) too.
        dialect: ``"hermes"`` (alias ``"nous"``), ``"qwen"``, ``"react"``, ``"native"``,
            or a :class:`~fncall_graph.adapters.formats.base.Dialect` instance (e.g.
            ``get_dialect("qwen", lang="zh")``).
        call_format: the format the model writes its calls in (``"mistral"``,
            ``"harmony"``, … one of
            :data:`~fncall_graph.adapters.formats.readers.CALL_FORMATS`, or a family's
            name such as ``"qwen3-coder"``): its replies are read only in that format,
            anywhere in the text, as its engine reads them; ``None``: with ``"native"``,
            the model's own, asked of its server or told by its name once per process
            (see :func:`~fncall_graph.adapters.models.call_format.resolve_call_format`),
            else detected in each reply.

    Returns:
        A :class:`DialectChatModel` wrapping ``model``.

    Example:
        LangGraph's own ReAct agent over a model that only writes Hermes text:

        ```python
        from langchain_ollama import ChatOllama
        from langgraph.prebuilt import create_react_agent
        from fncall_graph.adapters import with_dialect

        model = with_dialect(ChatOllama(model="qwen:0.5b"), "hermes")
        agent = create_react_agent(model, [get_weather, get_time])
        agent.invoke({"messages": [("user", "Weather and time in 北京?")]})
        ```

        >>> from fncall_graph.replay import ReplayChatModel
        >>> raw = ReplayChatModel(
        ...     ['<tool_call>\\n{"name": "add", "arguments": {"a": 1, "b": 2}}\\n</tool_call>']
        ... )
        >>> model = with_dialect(raw, "hermes").bind_tools(
        ...     [{"name": "add", "description": "Add", "parameters": {"type": "object"}}]
        ... )
        >>> model.invoke("1+2?").tool_calls[0]["args"]
        {'a': 1, 'b': 2}
        >>> raw.inputs[0][0].content.startswith("# Tools")
        True
    """
    if call_format is not None:
        call_format = check_call_format(call_format)
    return DialectChatModel(model=model, dialect=dialect, call_format=call_format)
