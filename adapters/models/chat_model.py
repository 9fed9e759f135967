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

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForLLMRun,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import ToolCall, tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_core.utils.json import parse_partial_json
from langgraph.constants import TAG_NOSTREAM
from pydantic import field_validator

from ..formats.base import (
    CallEvent,
    ContentDelta,
    Dialect,
    InvalidCallEvent,
    ParseEvent,
    ReasoningDelta,
    StreamParser,
    text_of,
)
from ..formats.normalize import _key, markup_dialect, normalize
from ..formats.readers import AUTO
from ..formats.readers.whole_reply import OPENERS, may_be_calls_only

__all__ = ["MARKUP_FORMAT_KEY", "DialectChatModel", "with_dialect"]

# markup a native reply's stream stops showing at: every format's markers and tokens
_HOLD = sorted(
    {*(b.open for b in AUTO.blocks), *AUTO.drop_tokens, "✿FUNCTION✿"}, key=len, reverse=True
)
_HOLD_MARKERS = re.compile("|".join(map(re.escape, _HOLD)))
_LONGEST = max(map(len, _HOLD)) - 1
_MARKER_PREFIXES = frozenset(m[:j] for m in _HOLD for j in range(1, len(m)))

#: ``response_metadata`` key of a native reply whose calls were read from markup in its
#: content (the server had no tool parser): the format they were written in.
MARKUP_FORMAT_KEY = "fncall_calls_from_content"
# bound with the tools: the tools as given to bind_tools, before conversion
_GIVEN_TOOLS = "dialect_tools"


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
        model: the wrapped chat model.
        dialect: the dialect used at the model boundary.
    """

    model: BaseChatModel
    dialect: Dialect

    @field_validator("dialect", mode="before")
    @classmethod
    def _dialect(cls, value: Any) -> Dialect:
        from .. import get_dialect

        return get_dialect(value)

    @property
    def _llm_type(self) -> str:
        return f"dialect-{self.dialect.name}"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"dialect": repr(self.dialect), "model": self.model.get_name()}

    def __repr_args__(self) -> Any:
        # LangChain puts a model's repr in every run's start event; the wrapped model's
        # full repr (a long replay, say) would be rebuilt on every call
        return [("model", self.model.get_name()), ("dialect", self.dialect)]

    # ------------------------------------------------------------------ tools

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools; the dialect renders them on each call.

        Args:
            tools: LangChain tools, functions, pydantic models or OpenAI tool dicts.
            tool_choice: with a prompt dialect, a prompt cannot force a call, so
                ``None``, ``"auto"``, ``"any"``, ``"required"`` and ``True`` all render
                every tool; ``"none"`` or ``False`` render none (earlier calls stay in
                the history as text); a tool name (or
                ``{"type": "function", "function": {"name": ...}}``) renders only that
                tool. With ``"native"`` it is passed to the model's ``bind_tools``.
            **kwargs: further arguments for every call of the model.
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        # ``tools`` in OpenAI form is what LangChain's and LangGraph's agents read back;
        # the dialect renders the tools as given (an MCP tool's schema as its server wrote it)
        return self.bind(tools=formatted, **{_GIVEN_TOOLS: list(tools)}, **kwargs)

    # ------------------------------------------------------------------ calls

    def invoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AIMessage:
        return self._canonical(super().invoke(input, config, **kwargs), kwargs)

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AIMessage:
        return self._canonical(await super().ainvoke(input, config, **kwargs), kwargs)

    def _canonical(self, message: BaseMessage, kwargs: dict[str, Any]) -> AIMessage:
        """The reply as the graph keeps it, whether it was generated or streamed.

        A streamed native reply has shown its text as it came, call markup included;
        the message it adds up to is read once more, so no markup stays in ``content``.
        """
        if self.dialect.native and isinstance(message, AIMessage):
            return normalize(message, None, tool_names=_names(kwargs.get("tools")))
        return message  # type: ignore[return-value]

    def _prepare(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None,
        kwargs: dict[str, Any],
    ) -> tuple[Runnable[LanguageModelInput, BaseMessage], list[BaseMessage], dict[str, Any]]:
        """The runnable to call, its input and its call arguments (stop and config included)."""
        kwargs = dict(kwargs)
        formatted = kwargs.pop("tools", None) or None
        tools = kwargs.pop(_GIVEN_TOOLS, None) or formatted
        tool_choice = kwargs.pop("tool_choice", None)
        inner: Runnable[LanguageModelInput, BaseMessage] = self.model
        if self.dialect.native:
            rendered = self.dialect.render(messages, tools)
            if tools:
                inner = self.model.bind_tools(tools, tool_choice=tool_choice)
        else:
            rendered = self.dialect.render(messages, _chosen(tools, tool_choice))
        merged = list(dict.fromkeys([*self.dialect.stop, *(stop or [])]))
        if merged:
            kwargs["stop"] = merged
        # BaseChatModel hands ``_stream`` no run manager: then the inner run falls back
        # to the caller's context config and only needs the tag.
        config: RunnableConfig = {"tags": [TAG_NOSTREAM]}
        if run_manager is not None:
            config = {"callbacks": _child(run_manager)}
        kwargs["config"] = config
        return inner, rendered, kwargs

    def _finish(self, reply: BaseMessage, tools: Any) -> AIMessage:
        if not self.dialect.native:
            return normalize(reply, self.dialect)
        message = normalize(reply, None, tool_names=_names(tools))
        markup = markup_dialect(reply)
        if markup is not None and message.tool_calls and not getattr(reply, "tool_calls", None):
            message.response_metadata[MARKUP_FORMAT_KEY] = markup
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        inner, rendered, call = self._prepare(messages, stop, run_manager, kwargs)
        reply = inner.invoke(rendered, **call)
        message = self._finish(reply, kwargs.get("tools"))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        inner, rendered, call = self._prepare(messages, stop, run_manager, kwargs)
        reply = await inner.ainvoke(rendered, **call)
        message = self._finish(reply, kwargs.get("tools"))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        inner, rendered, call = self._prepare(messages, stop, run_manager, kwargs)
        state = _StreamState(self.dialect, kwargs.get("tools"))
        for piece in inner.stream(rendered, **call):
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
        inner, rendered, call = self._prepare(messages, stop, run_manager, kwargs)
        state = _StreamState(self.dialect, kwargs.get("tools"))
        async for piece in inner.astream(rendered, **call):
            if (chunk := state.feed(piece)) is not None:
                yield ChatGenerationChunk(message=chunk)
        yield ChatGenerationChunk(message=state.close())


def with_dialect(model: BaseChatModel, dialect: str | Dialect) -> DialectChatModel:
    """Give ``model`` tool calling through ``dialect``.

    The result is a LangChain chat model: ``bind_tools``, ``invoke``, ``stream``,
    their async forms and ``with_structured_output`` work as for a model with native
    function calling, whatever ``model`` supports.

    Args:
        model: any LangChain chat model, e.g. ``ChatOllama(model="qwen2.5:0.5b")`` or
            ``ChatOpenAI(base_url=...)`` on a server without a tool parser.
        dialect: ``"hermes"`` (alias ``"nous"``), ``"qwen"``, ``"react"``, ``"native"``,
            or a :class:`~fncall_graph.adapters.formats.base.Dialect` instance (e.g.
            ``get_dialect("qwen", lang="zh")``).

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

        >>> from fncall_graph.testing import ReplayChatModel
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
    return DialectChatModel(model=model, dialect=dialect)


# --------------------------------------------------------------------------- helpers


def _child(
    run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun,
) -> CallbackManager | AsyncCallbackManager:
    """Callbacks for the inner call: traced under this run, kept out of message streams."""
    cls = (
        AsyncCallbackManager
        if isinstance(run_manager, AsyncCallbackManagerForLLMRun)
        else CallbackManager
    )
    manager = cls(handlers=[], parent_run_id=run_manager.run_id)
    manager.set_handlers(run_manager.inheritable_handlers)
    manager.add_tags(run_manager.inheritable_tags)
    manager.add_metadata(run_manager.inheritable_metadata)
    manager.add_tags([TAG_NOSTREAM], inherit=False)
    return manager


def _names(tools: Sequence[Any] | None) -> list[str] | None:
    if not tools:
        return None
    return [convert_to_openai_tool(t)["function"]["name"] for t in tools]


def _chosen(tools: list[Any] | None, tool_choice: Any) -> list[Any] | None:
    """The tools to render for ``tool_choice`` (see :meth:`DialectChatModel.bind_tools`)."""
    if not tools or tool_choice in (None, True, "auto", "any", "required"):
        return tools
    if tool_choice in (False, "none"):
        return None
    name = tool_choice
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or tool_choice).get("name")
    picked = [t for t in tools if convert_to_openai_tool(t)["function"]["name"] == name]
    if not picked:
        raise ValueError(f"tool_choice {tool_choice!r} names none of the bound tools")
    return picked


def _args_text(raw: Any) -> str:
    """The arguments of an unreadable call as chunk text that stays unreadable when merged.

    Chunks are re-parsed with ``parse_partial_json`` when added up; text that parses
    to an object would turn the invalid call into a runnable one, so it is quoted.
    """
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    try:
        readable = isinstance(parse_partial_json(text), dict)
    except Exception:
        readable = False
    return json.dumps(text, ensure_ascii=False) if readable else text


class _StreamState:
    """Turns the inner model's chunks into canonical chunks, one call per tool-call chunk.

    Prompt dialects: the text goes through the dialect's stream parser; each finished
    call becomes one ``tool_call_chunk`` (``args`` as a JSON string, its own ``index``).
    Calls the model streamed natively are merged in at the end, without duplicates.
    Native: content and calls pass through; markup calls found in the whole text are
    added at the end (the content already streamed keeps that markup).
    """

    def __init__(self, dialect: Dialect, tools: Sequence[Any] | None) -> None:
        self.dialect = dialect
        self.tools = tools
        self.parser: StreamParser | None = None if dialect.native else dialect.stream_parser()
        self.display = _HeldMarkup() if dialect.native else None
        self.index = 0
        self.calls: list[ToolCall] = []
        self.inner: AIMessageChunk | None = None  # the model's own stream, added up
        self.provider_reasoning = False
        self.markup_reasoning = False

    def feed(self, piece: BaseMessage) -> AIMessageChunk | None:
        if isinstance(piece, AIMessageChunk):
            self.inner = piece if self.inner is None else self.inner + piece
        text = text_of(piece.content)
        reasoning = piece.additional_kwargs.get("reasoning_content")
        out: dict[str, Any] = {"content": "", "additional_kwargs": {}, "tool_call_chunks": []}
        if isinstance(reasoning, str) and reasoning:
            self._reason(out, reasoning, provider=True)
        if self.parser is None:
            out["content"] = self.display.feed(text) if self.display is not None else text
            for c in getattr(piece, "tool_call_chunks", None) or []:
                out["tool_call_chunks"].append(dict(c))
                if c.get("index") is not None:
                    self.index = max(self.index, int(c["index"]) + 1)
        elif text:
            self._events(out, self.parser.feed(text))
        chunk = _chunk(out, piece)
        return chunk

    def close(self) -> AIMessageChunk:
        out: dict[str, Any] = {"content": "", "additional_kwargs": {}, "tool_call_chunks": []}
        if self.parser is not None:
            self._events(out, self.parser.close())
            extra = self._native_extra([c for c in self.calls])
        else:
            extra = self._markup_extra()
            if self.display is not None and self.display.held:
                # what the held markup was: the rest of the answer, and its reasoning
                text = text_of(self.inner.content) if self.inner is not None else ""
                read = normalize(AIMessage(content=text), None, tool_names=_names(self.tools))
                out["content"] = self.display.rest(text_of(read.content))
                reasoning = read.additional_kwargs.get("reasoning_content")
                if reasoning:
                    self._reason(out, reasoning, provider=False)
        for call in extra:
            self._call(out, call)
        meta = {}
        if self.parser is None and extra and self.inner is not None and not self.inner.tool_calls:
            meta[MARKUP_FORMAT_KEY] = markup_dialect(self.inner)
        return AIMessageChunk(**out, response_metadata=meta, chunk_position="last")

    # -- helpers

    def _reason(self, out: dict[str, Any], text: str, *, provider: bool) -> None:
        # The same separator ``normalize`` puts between provider and <think> reasoning.
        if not provider and self.provider_reasoning and not self.markup_reasoning:
            text = "\n" + text
        if provider:
            self.provider_reasoning = True
        else:
            self.markup_reasoning = True
        kw = out["additional_kwargs"]
        kw["reasoning_content"] = kw.get("reasoning_content", "") + text

    def _events(self, out: dict[str, Any], events: list[ParseEvent]) -> None:
        for ev in events:
            if isinstance(ev, ContentDelta):
                out["content"] += ev.text
            elif isinstance(ev, ReasoningDelta):
                self._reason(out, ev.text, provider=False)
            elif isinstance(ev, CallEvent):
                self.calls.append(ev.call)
                self._call(out, ev.call)
            elif isinstance(ev, InvalidCallEvent):
                bad = ev.call
                out["tool_call_chunks"].append(
                    tool_call_chunk(
                        name=bad.get("name"),
                        args=_args_text(bad.get("args")),
                        id=bad.get("id"),
                        index=self._next(),
                    )
                )

    def _call(self, out: dict[str, Any], call: ToolCall) -> None:
        out["tool_call_chunks"].append(
            tool_call_chunk(
                name=call["name"],
                args=json.dumps(call["args"], ensure_ascii=False),
                id=call["id"],
                index=self._next(),
            )
        )

    def _next(self) -> int:
        self.index += 1
        return self.index - 1

    def _native_extra(self, parsed: list[ToolCall]) -> list[ToolCall]:
        """Calls the model streamed in ``tool_call_chunks`` that the markup did not hold."""
        if self.inner is None or not self.inner.tool_calls:
            return []
        done = [_key(c["name"], c["args"]) for c in parsed]
        extra: list[ToolCall] = []
        for c in self.inner.tool_calls:
            k = _key(c["name"], c["args"])
            if k in done:
                done.remove(k)
            else:
                extra.append(c)
        # their ids are made unique the same way ``normalize`` does it
        reply = normalize(AIMessage(content="", tool_calls=extra), None)
        return list(reply.tool_calls)

    def _markup_extra(self) -> list[ToolCall]:
        """Native mode: calls written as markup in the streamed text, found at the end."""
        if self.inner is None:
            return []
        whole = normalize(self.inner, None, tool_names=_names(self.tools))
        have = [_key(c["name"], c["args"]) for c in self.inner.tool_calls]
        extra: list[ToolCall] = []
        for c in whole.tool_calls:
            k = _key(c["name"], c["args"])
            if k in have:
                have.remove(k)
            else:
                extra.append(c)
        return extra


class _HeldMarkup:
    """What a native reply shows while it streams: its text, until markup starts.

    A server without a tool parser streams a model's call markup (or ``<think>``) as
    text. Answer text is shown as it comes; from the first marker on (or from the start,
    for a reply that may be only calls), the text is held, and when the reply ends it
    is read, and only what the reading leaves as answer is shown.
    """

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.pending = ""
        self.held = False
        self.started = False

    def feed(self, text: str) -> str:
        if self.held:
            return ""
        buf = self.pending + text
        if not self.started:
            head = buf.lstrip()
            if not head or may_be_calls_only(head[: len(OPENERS[-1])]):
                if head.startswith(OPENERS):
                    self.held = True  # a reply that may be only calls: decided at the end
                self.pending = "" if self.held else buf
                return ""
            self.started = True
        hit = _HOLD_MARKERS.search(buf)
        if hit is not None:
            self.held = True
            return self._show(buf[: hit.start()])
        keep = next(
            (j for j in range(min(_LONGEST, len(buf)), 0, -1) if buf[-j:] in _MARKER_PREFIXES), 0
        )
        self.pending = buf[len(buf) - keep :]
        return self._show(buf[: len(buf) - keep])

    def _show(self, text: str) -> str:
        self.shown.append(text)
        return text

    def rest(self, content: str) -> str:
        """The end of the reply: what of its read ``content`` is still to show."""
        shown = "".join(self.shown)
        if content.startswith(shown):
            return content[len(shown) :]
        core = shown.strip()  # the read content is trimmed; what was shown may not be
        if not content.startswith(core):
            return ""
        rest, tail = content[len(core) :], shown[len(shown.rstrip()) :]
        return rest[len(tail) :] if rest.startswith(tail) else rest


def _chunk(out: dict[str, Any], piece: BaseMessage) -> AIMessageChunk | None:
    """An output chunk, or ``None`` when it carries nothing (text held back by the parser)."""
    meta = dict(piece.response_metadata)
    usage = getattr(piece, "usage_metadata", None)
    if not (out["content"] or out["additional_kwargs"] or out["tool_call_chunks"] or meta or usage):
        return None
    return AIMessageChunk(**out, response_metadata=meta, usage_metadata=usage)
