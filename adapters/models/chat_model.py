"""``with_dialect``: tool calling for any chat model, as a LangChain chat model.

The wrapper puts a dialect between LangChain and a chat model, so that
``bind_tools`` works for a model without native function calling, and so that
LangGraph's and LangChain's own agents (``create_react_agent``, ``create_agent``,
``with_structured_output``) can use it unchanged. Each call renders the canonical
history with the dialect, calls the model with the dialect's stop sequences, and reads
the reply back into an ``AIMessage`` with ``tool_calls``; streaming yields
``AIMessageChunk``s whose sum is that same message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForLLMRun,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.load.serializable import SerializedConstructor, SerializedNotImplemented
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
)
from langchain_core.output_parsers.openai_tools import JsonOutputKeyToolsParser, PydanticToolsParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig, RunnableLambda
from langchain_core.runnables.config import (
    ensure_config,
    get_callback_manager_for_config,
)
from langchain_core.runnables.configurable import DynamicRunnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from langchain_core.utils.pydantic import is_basemodel_subclass
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator, model_validator

from ..formats.base import (
    Dialect,
    text_of,
)
from ..formats.grammar import schema_to_gbnf
from ..formats.normalize import (
    MARKUP_FORMAT_KEY,
    used_call_ids,
)
from ..formats.reading import Echoes, echo_sources
from ..formats.registry import get_dialect
from ..formats.schema import to_tool_spec, to_tool_specs
from ..formats.stream_reading import READ_REPLY_KEY, StreamReading, restore_read_reply
from .call_format import check_call_format, resolve_call_format
from .capabilities import accepts_grammar
from .pipeline import SEES_WRAPPED_RUN, ModelCall
from .structured_output import (
    JSON_OUTPUT_KEY,
    ReplyWithoutCall,
    asking_for_json,
    called,
    parse_json_reply,
    parsed_or_error,
    requested_json,
)

__all__ = [
    "MARKUP_FORMAT_KEY",
    "READ_REPLY_KEY",
    "SEES_WRAPPED_RUN",
    "DialectChatModel",
    "restore_read_reply",
    "with_dialect",
]


# bound with the tools: the tools as given to bind_tools, before conversion
_GIVEN_TOOLS = "dialect_tools"
# bound with the tools: bind_tools' ``strict`` and ``parallel_tool_calls``
_TOOL_OPTIONS = "dialect_tool_options"


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
    # native: the inner model bound to the tools, per bound tool list (the same list on
    # every call of one binding); binding converts every tool's schema again
    _bound: dict[tuple[int, str], tuple[Any, Runnable[LanguageModelInput, BaseMessage]]] = (
        PrivateAttr(default_factory=dict)
    )

    @model_validator(mode="before")
    @classmethod
    def _params_to_the_model(cls, data: Any) -> Any:
        # LangChain's standard constructor parameters belong to the wrapped model
        if not isinstance(data, dict) or not _MODEL_PARAMS.intersection(data):
            return data
        data = dict(data)
        params = {k: data.pop(k) for k in _MODEL_PARAMS if k in data}
        data["model"] = _with_params(data.get("model"), params)
        return data

    @field_validator("model", mode="before")
    @classmethod
    def _a_chat_model(cls, value: Any) -> Any:
        _chat_model_in(value)  # raises for anything else
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
        return _chat_model_in(self.model)

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
        for attr in ("model_name", "model", "model_id"):
            value = getattr(self.chat_model, attr, None)
            if isinstance(value, str) and value:
                return value
        return self.chat_model.get_name()

    # ------------------------------------------------------------------ identity

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """Serializable (``dumpd``/``loads``) when the wrapped model is (see :meth:`to_json`)."""
        return True

    @property
    def lc_attributes(self) -> dict[str, Any]:
        # the dialect as its registry name and options, which the validator reads back
        return {"dialect": _dialect_spec(self.dialect)}

    def to_json(self) -> SerializedConstructor | SerializedNotImplemented:
        """LangChain's serialized form: the wrapped model's and the dialect's, or "not
        implemented" when either cannot be rebuilt from it (a replay, a custom dialect)."""
        if self.chat_model.is_lc_serializable() and _dialect_spec(self.dialect) is not None:
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
        # the wrapped model's own parameters, so wrappers of two models never share a
        # cache entry (read only when a LangChain cache is set)
        params: dict[str, Any] = {"dialect": repr(self.dialect), "model": self.chat_model.asdict()}
        if self.call_format is not None:  # replies are read in it
            params["call_format"] = self.call_format
        if isinstance(self.model, RunnableBinding):  # its arguments go with every call
            params["bound"] = repr(sorted(self.model.kwargs.items()))
        return params

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """Tracing parameters of the wrapped model, seen through the dialect."""
        provider = type(self.chat_model).__name__
        provider = provider[4:] if provider.startswith("Chat") else provider.removesuffix("Chat")
        model = kwargs.get("model")
        params = LangSmithParams(
            ls_provider=provider.lower(),
            ls_model_name=model if isinstance(model, str) else self.model_name,
            ls_model_type="chat",
        )
        for name, key in (("temperature", "ls_temperature"), ("max_tokens", "ls_max_tokens")):
            value = kwargs.get(name, getattr(self.chat_model, name, None))
            if isinstance(value, int | float) and not isinstance(value, bool):
                params[key] = value  # type: ignore[literal-required]
        if stop:
            params["ls_stop"] = stop
        return params

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
        formatted = [convert_to_openai_tool(t, strict=strict) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        options = {"strict": strict, "parallel_tool_calls": parallel_tool_calls}
        # kept apart from request fields: they shape the tools, never reach a server as is
        kwargs[_TOOL_OPTIONS] = {k: v for k, v in options.items() if v is not None}
        # ``tools`` in OpenAI form is what LangChain's and LangGraph's agents read back;
        # the dialect renders the tools as given (an MCP tool's schema as its server wrote it)
        return self.bind(tools=formatted, **{_GIVEN_TOOLS: list(tools)}, **kwargs)

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
        if kwargs:
            raise ValueError(f"with_structured_output: unexpected arguments {sorted(kwargs)}")
        if method not in ("function_calling", "json_schema", "json_mode"):
            raise ValueError(
                f"with_structured_output: method must be 'function_calling', 'json_schema' "
                f"or 'json_mode', got {method!r}"
            )
        shape = {"kwargs": {"method": method, "strict": strict}, "schema": schema}
        if method == "function_calling":
            name = to_tool_spec(schema).name
            llm = self.bind_tools(
                [schema], tool_choice=name, strict=strict, ls_structured_output_format=shape
            )
            parser: Runnable[Any, Any] = called(name) | (
                PydanticToolsParser(tools=[schema], first_tool_only=True)
                if isinstance(schema, type) and is_basemodel_subclass(schema)
                else JsonOutputKeyToolsParser(key_name=name, first_tool_only=True)
            )
            return parsed_or_error(llm, parser, include_raw=include_raw)
        if not self._json_by_prompt:
            extra = {} if strict is None else {"strict": strict}
            return self.model.with_structured_output(
                schema, method=method, include_raw=include_raw, **extra
            )
        wanted = convert_to_json_schema(schema) if method == "json_schema" else None
        llm = self.bind(**{JSON_OUTPUT_KEY: {"schema": wanted}}, ls_structured_output_format=shape)
        read = RunnableLambda(partial(parse_json_reply, schema=schema))
        return parsed_or_error(llm, read, include_raw=include_raw)

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
        arguments."""
        kwargs = dict(kwargs)
        formatted = kwargs.pop("tools", None) or None
        tools = kwargs.pop(_GIVEN_TOOLS, None) or formatted
        tool_choice = kwargs.pop("tool_choice", None)
        options: dict[str, Any] = kwargs.pop(_TOOL_OPTIONS, None) or {}
        json_output = kwargs.pop(JSON_OUTPUT_KEY, None)
        json_answer = False
        if json_output is not None:
            # with_structured_output: the answer is to be JSON, no tools offered
            formatted = tools = None
        elif self._json_by_prompt and (wanted := requested_json(kwargs.get("response_format"))):
            # an OpenAI ``response_format`` (create_agent's provider strategy) this model
            # cannot take as a request field: asked for in the prompt instead
            del kwargs["response_format"]
            json_output, json_answer = wanted, True
        if json_output is not None:
            if rendered is None:
                messages = asking_for_json(
                    messages, json_output["schema"], beside_tools=bool(tools)
                )
            if not tools and accepts_grammar(self.chat_model):
                grammar = schema_to_gbnf(json_output["schema"] or {"type": "object"})
                _with_grammar(kwargs, grammar, self.model)
        inner: Runnable[LanguageModelInput, BaseMessage] = self.model
        names = None
        forced = False
        if self.dialect.native:
            rendered = self.dialect.render(messages, tools) if rendered is None else rendered
            if tools:
                inner = self._bound_to(tools, tool_choice, options)
                # the OpenAI forms when bound, cheaper to read than the tools as given
                names = [spec.name for spec in to_tool_specs(formatted or tools)]
        else:
            tools = _chosen(tools, tool_choice)
            rendered = self.dialect.render(messages, tools) if rendered is None else rendered
            forced = bool(tools) and _forces_a_call(tool_choice)
            one_call = options.get("parallel_tool_calls") is False
            if (
                (forced or one_call or options.get("strict") or json_answer)
                and accepts_grammar(self.chat_model)
                and "grammar" not in (kwargs.get("extra_body") or {})
            ):
                # the server can hold the reply to the chosen tools' calls and schemas,
                # and an answer asked for as JSON to its schema
                answer = (json_output or {}).get("schema") or {"type": "object"}
                grammar = self.dialect.grammar(
                    tools,
                    require_call=forced,
                    one_call=one_call,
                    answer_json=answer if json_answer else None,
                )
                if grammar is not None:
                    _with_grammar(kwargs, grammar, self.model)
        merged = list(dict.fromkeys([*self.dialect.stop, *(stop or [])]))
        if merged:
            kwargs["stop"] = merged
        kwargs["config"] = config
        call = ModelCall(self.dialect, inner, list(rendered), kwargs, tools, names, set())
        if render_only:
            return call
        call.taken = used_call_ids(messages)
        call.forced = not self.dialect.native and forced
        call.one_call = not self.dialect.native and options.get("parallel_tool_calls") is False
        call.json_answer = json_answer
        call.call_format = (
            resolve_call_format(self.chat_model, declared=self.call_format).name
            if self.dialect.native
            else self.call_format
        )
        call.echoes = Echoes(echo_sources(messages))
        return call

    def _bound_to(
        self, tools: list[Any], tool_choice: Any, options: dict[str, Any]
    ) -> Runnable[LanguageModelInput, BaseMessage]:
        key = (id(tools), repr(tool_choice), repr(sorted(options.items())))
        held = self._bound.get(key)
        if held is None or held[0] is not tools:  # the list is kept, so its id stays its own
            bound = self.chat_model.bind_tools(tools, tool_choice=tool_choice, **options)
            if isinstance(self.model, RunnableBinding):  # the model's own bound arguments
                bound = RunnableBinding(
                    bound=bound, kwargs=self.model.kwargs, config=self.model.config
                )
            held = (tools, bound)
            self._bound[key] = held
            if len(self._bound) > 8:  # callers that bind anew for every call never hit
                del self._bound[next(iter(self._bound))]
        return held[1]

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
        call = self._prepare(messages, stop, kwargs, {"callbacks": _child(run_manager)})
        message = call.read(call.invoke(call.rendered))
        if call.forced and not message.tool_calls:
            insist = [*call.rendered, HumanMessage(_INSIST)]
            message = call.read(call.invoke(insist))
            _require_a_call(message)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._prepare(messages, stop, kwargs, {"callbacks": _child(run_manager)})
        message = call.read(await call.ainvoke(call.rendered))
        if call.forced and not message.tool_calls:
            insist = [*call.rendered, HumanMessage(_INSIST)]
            message = call.read(await call.ainvoke(insist))
            _require_a_call(message)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        call = self._prepare(messages, stop, kwargs, {"callbacks": _child(run_manager)})
        state = StreamReading(call)
        for piece in call.stream():
            if (chunk := state.feed(piece)) is not None:
                yield ChatGenerationChunk(message=chunk)
        yield ChatGenerationChunk(message=state.close())

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        call = self._prepare(messages, stop, kwargs, {"callbacks": _child(run_manager)})
        state = StreamReading(call)
        async for piece in call.astream():
            if (chunk := state.feed(piece)) is not None:
                yield ChatGenerationChunk(message=chunk)
        yield ChatGenerationChunk(message=state.close())


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


# --------------------------------------------------------------------------- helpers


def _child(
    run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None,
) -> CallbackManager | AsyncCallbackManager:
    """Callbacks for the inner call: the handlers that ask to see it (``SEES_WRAPPED_RUN``),
    under this run, kept out of message streams."""
    if run_manager is None:
        # BaseChatModel.stream hands ``_stream`` no run manager: the caller's config's
        manager: CallbackManager | AsyncCallbackManager = get_callback_manager_for_config(
            ensure_config()
        )
        parent, handlers = manager.parent_run_id, manager.inheritable_handlers
        tags, metadata = manager.inheritable_tags, manager.inheritable_metadata
        cls: type[CallbackManager] | type[AsyncCallbackManager] = CallbackManager
    else:
        parent, handlers = run_manager.run_id, run_manager.inheritable_handlers
        tags, metadata = run_manager.inheritable_tags, run_manager.inheritable_metadata
        cls = (
            AsyncCallbackManager
            if isinstance(run_manager, AsyncCallbackManagerForLLMRun)
            else CallbackManager
        )
    manager = cls(handlers=[], parent_run_id=parent)
    manager.set_handlers([h for h in handlers if getattr(h, SEES_WRAPPED_RUN, False)])
    manager.add_tags(tags)
    manager.add_metadata(metadata)
    manager.add_tags([TAG_NOSTREAM], inherit=False)
    return manager


#: LangChain's standard chat-model constructor parameters, set on the wrapped model
_MODEL_PARAMS = frozenset(
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


def _chat_model_in(model: Any) -> BaseChatModel:
    """The chat model a runnable wraps: itself, a binding's, a configurable one's default."""
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


def _with_params(model: Any, params: dict[str, Any]) -> BaseChatModel:
    """``model`` rebuilt with LangChain's standard ``params`` set, each by its field's
    name or alias (``timeout`` is ``ChatOpenAI``'s ``request_timeout``); rebuilt, not
    copied, so that clients made from them (timeouts, retries) are made again."""
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


def _dialect_spec(dialect: Dialect) -> dict[str, Any] | None:
    """``dialect`` as its registry name and options, or ``None`` when those do not make
    the same dialect again (a custom dialect)."""
    options = {k: v for k, v in vars(dialect).items() if not k.startswith("_")}
    try:
        again = get_dialect(dialect.name, **options)
    except (TypeError, ValueError):
        return None
    return {"name": dialect.name, **options} if repr(again) == repr(dialect) else None


def _with_grammar(kwargs: dict[str, Any], grammar: str, model: Runnable) -> None:
    """Put ``grammar`` in the request's ``extra_body`` unless the caller sent one; the
    model's own ``extra_body`` (bound, or its field) is kept."""
    extra = (
        kwargs.get("extra_body")
        or (model.kwargs.get("extra_body") if isinstance(model, RunnableBinding) else None)
        or getattr(_chat_model_in(model), "extra_body", None)
        or {}
    )
    if "grammar" not in extra:
        kwargs["extra_body"] = {**extra, "grammar": grammar}


# asked once more when a forcing tool_choice got an answer without a call
_INSIST = (
    "Answer with a call to one of the tools, written exactly in the format described "
    "above, and nothing else."
)


def _forces_a_call(tool_choice: Any) -> bool:
    """Whether ``tool_choice`` demands a tool call (any, or a named tool)."""
    return tool_choice not in (None, False, "none", "auto")


def _require_a_call(message: AIMessage) -> None:
    """A reply to a forcing ``tool_choice`` that still holds no call is an error, not ``None``."""
    if message.tool_calls:
        return
    text = text_of(message.content)
    why = "; ".join(str(c.get("error")) for c in message.invalid_tool_calls if c.get("error"))
    raise ReplyWithoutCall(
        "tool_choice demanded a tool call, and the model answered twice without a readable "
        f"one{f' ({why})' if why else ''}: {text[:200]!r}",
        reply=message,
    )


def _chosen(tools: list[Any] | None, tool_choice: Any) -> list[Any] | None:
    """The tools to render for ``tool_choice`` (see :meth:`DialectChatModel.bind_tools`)."""
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
