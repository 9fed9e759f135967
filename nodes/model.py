"""The ``model`` node: send the model what the ``adapter`` rendered, read its reply once.

The one chat-model run of a model call is the provider's own, as in LangChain's
``create_agent``: callbacks, usage and traces see one run, named as the model. The call
goes through the same boundary pipeline as :func:`~fncall_graph.adapters.with_dialect`
(render → provider → read), without the wrapper's run: for a prompt dialect the call
the ``adapter`` node made ready with its rendering is sent as it is (made ready here
only where it is absent, after a resume); for native, the history with the tools bound.
The reply is read once into canonical calls with ids unique in the thread. While it
streams, the provider's run is kept out of LangGraph's ``messages`` stream (its raw text
may hold call markup) and each chunk is read and written there instead, so that stream
shows answer text and never call markup.

In a native graph, whose plain edges lead here, a call of a thread that now speaks a
prompt dialect goes on to the ``adapter`` first (this step writes nothing), so the
adapter renders it there as everywhere else.

When native calling is refused, the node hands over to the ``react_fallback`` node
(LangGraph's ``Send``, with the reason), which switches the thread; the ``adapter`` and
this node then call again in the fallback dialect. Two other switches come back with the
reply that caused them, in the same update: a native reply that writes its calls as a
prompt dialect's markup (that dialect from now on), and replies whose calls cannot be
read again and again (ReAct from now on).

The thread's call format (how its model writes calls into text, read with it) is known
before the reply is read: a prompt dialect's own, else the model's, resolved once per model
and process (declared, its server's chat template, its name: see
:func:`~fncall_graph.adapters.models.call_format.resolve_call_format`). When none says, the
first call read in a known format in a native reply sets it for the thread, saved with
that reply as the dialect is (``call_format``, ``call_format_source``).

Constrained decoding (prompt dialects, servers that apply a GBNF ``grammar``, such as
llama.cpp): each call carries the dialect's grammar in ``extra_body``, so the model can
only write calls to the listed tools with arguments that fit their schemas, or an answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
    convert_to_openai_messages,
)
from langchain_core.messages.tool import invalid_tool_call
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph.message import push_message
from langgraph.runtime import get_runtime
from langgraph.types import Command, Send

from fncall_graph._compat import streams_tokens
from fncall_graph.adapters import Dialect
from fncall_graph.adapters.formats.base import text_of
from fncall_graph.adapters.formats.normalize import MARKUP_FORMAT_KEY
from fncall_graph.adapters.formats.registry import PROMPT_DIALECTS
from fncall_graph.adapters.formats.stream_reading import read_reply
from fncall_graph.adapters.models.call_format import CallFormat
from fncall_graph.adapters.models.model_call import ModelCall
from fncall_graph.guarantees import (
    ModelBoundary,
    RenderedInput,
    model_calls_this_turn,
    repeat_stop,
    unparsed_streak,
)

from .adapter import RENDERED_KEY
from .react_fallback import REASON_KEY
from .structured_response import STRUCTURED_RESPONSE_KEY, ResponseStrategy

if TYPE_CHECKING:
    # langchain.agents loads create_agent's whole module: imported where a middleware or a
    # response_format is in use, not when the graph's face is imported
    from langchain.agents.middleware import ModelRequest, ModelResponse

__all__ = ["DEFAULT_MAX_CALLS_PER_REPLY", "STOP_REASON_KEY", "ModelNode", "bounded_calls"]

STOP_REASON_KEY = "fncall_stop_reason"

DEFAULT_MAX_CALLS_PER_REPLY = 32
"""Calls of one model reply that run (or are asked about) by default
(``max_calls_per_reply``); the rest are answered "not run"."""


def _as_json(args: Any) -> str:
    try:
        return json.dumps(args, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # arguments no JSON can hold are not shown
        return "<arguments not shown>"


def bounded_calls(message: AIMessage, limit: int | None) -> AIMessage:
    """``message`` with its calls past the first ``limit`` made unreadable calls that
    say why (``invalid_tool_calls``): they never run, and each is answered, as every
    unreadable call is, with an error the model reads. ``None``: no bound."""
    calls = message.tool_calls
    if limit is None or len(calls) <= limit:
        return message
    over = [
        invalid_tool_call(
            name=c["name"],
            args=_as_json(c["args"]),
            id=c["id"],
            error=(
                f"Not run: this reply made {len(calls):,} tool calls, and at most {limit} "
                f"run per reply (max_calls_per_reply); this was call {i:,}. Make it "
                "again in a later reply if it is still needed, after the results of the "
                "calls that ran."
            ),
        )
        for i, c in enumerate(calls[limit:], start=limit + 1)
    ]
    return message.model_copy(
        update={
            "tool_calls": calls[:limit],
            "invalid_tool_calls": [*message.invalid_tool_calls, *over],
        }
    )


def iteration_limit_message(limit: int) -> AIMessage:
    return AIMessage(
        content=(
            f"I stopped after {limit} model calls in this turn without reaching a final answer "
            "(max_iterations). The tool results so far are in the conversation; ask me to "
            "continue, or raise max_iterations."
        ),
        additional_kwargs={STOP_REASON_KEY: "max_iterations"},
    )


def repeat_limit_message(name: str, count: int, limit: int) -> AIMessage:
    """The turn's end when the model called ``name`` again with the same arguments
    ``count`` times after its result was in (see :mod:`~fncall_graph.guarantees`)."""
    return AIMessage(
        content=(
            f"I stopped: I called {name} again with the same arguments {count} times in "
            f"this turn (max_repeats={limit}), and it would not give anything new. Its "
            "result is in the conversation; ask me again in other words, or use a "
            "stronger model."
        ),
        additional_kwargs={STOP_REASON_KEY: "max_repeats"},
    )


def _changed(request: ModelRequest, thread: ModelRequest) -> ModelRequest | None:
    """A middleware's ``request`` when it asks for another call than the thread's."""
    changed = (
        request.model is not thread.model
        or request.messages != thread.messages
        or request.system_message != thread.system_message
        or list(request.tools) != list(thread.tools)
        or request.tool_choice is not None
        or bool(request.model_settings)
    )
    return request if changed else None


def _result(response: Any) -> list[BaseMessage]:
    """The messages a composed ``wrap_model_call`` answered with."""
    from langchain.agents.middleware import ModelResponse

    if isinstance(response, AIMessage):
        return [response]
    if isinstance(response, ModelResponse) and any(
        isinstance(m, AIMessage) for m in response.result
    ):
        return list(response.result)
    raise TypeError(
        "wrap_model_call must return a ModelResponse with an AIMessage (or an AIMessage); "
        f"got {type(response).__name__}. A Command from wrap_model_call is not supported "
        "here: use a before_model/after_model hook with jump_to instead."
    )


def _says_nothing(message: AIMessage) -> bool:
    return not (
        text_of(message.content).strip() or message.tool_calls or message.invalid_tool_calls
    )


def empty_reply_message(reply: AIMessage) -> AIMessage:
    """What the turn ends with when the model's reply was empty twice (reasoning kept)."""
    return AIMessage(
        content=(
            "The model returned an empty reply twice, so this turn has no answer. Ask again, "
            "perhaps in other words, or try another model or dialect."
        ),
        additional_kwargs={**reply.additional_kwargs, STOP_REASON_KEY: "empty_reply"},
        response_metadata=reply.response_metadata,
    )


class _ShownReply(BaseCallbackHandler):
    """Reads the provider's chunks as they stream and writes the read chunks to
    LangGraph's ``messages`` stream (``push_message``), under the provider's message id.

    Inline, so chunks are shown in order and the last is in before the node ends.
    """

    run_inline = True

    def __init__(self, call: ModelCall, config: RunnableConfig) -> None:
        self.call = call
        self.reading: Any = None  # opened at the first chunk: most calls are not streamed
        self.chunks: list[AIMessageChunk] = []
        self.id: str | None = None
        # push_message reads the stream's handlers from the node's callbacks
        self.shows = config.get("callbacks") is not None

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        """Nothing to do (defined so LangChain does not write the prompt out as text for
        ``on_llm_start`` on every call)."""

    def on_llm_new_token(
        self, token: str, *, chunk: ChatGenerationChunk | None = None, **kwargs: Any
    ) -> None:
        piece = chunk.message if chunk is not None else AIMessageChunk(content=token)
        self.id = self.id or piece.id
        if self.reading is None:
            self.reading = self.call.reading()
        out = self.reading.feed(piece)
        if out is not None:
            self._show(out)

    def _show(self, chunk: AIMessageChunk) -> None:
        chunk.id = self.id
        self.chunks.append(chunk)
        if self.shows and self.id is not None:
            push_message(chunk, state_key=None)

    def reply(self) -> AIMessage | None:
        """The read reply, when the provider streamed it (else ``None``)."""
        if self.reading is None:
            return None
        self._show(self.reading.close())
        return read_reply(self.chunks)


@dataclass
class _Asked:
    """What the pipeline did for one model call (kept for the node's update)."""

    call: ModelCall | None = None
    raw: BaseMessage | None = None
    rendered_here: bool = True


class ModelNode:
    """Call the model in the thread's dialect and return its reply as a canonical ``AIMessage``.

    Args:
        boundary: the model as bound for each dialect, shared with the ``adapter`` node.
        max_iterations: model calls allowed per user turn; at the limit the turn ends with
            a message saying so instead of another call.
        fallback_node: the node to hand over to when native tool calling is refused.
        render_node: where a call of a prompt dialect's thread goes first when it
            arrives without the ``adapter``'s rendering of this history (in a native
            graph, whose edges lead straight here, a thread that switched dialect); with
            ``None`` this node renders it itself (after a resume).
        wrap_model_call: LangChain ``wrap_model_call`` hooks (``AgentMiddleware``'s),
            composed, outermost first: ``(request, handler) -> ModelResponse``. The
            handler is this node's call through the boundary: the adapter's rendering
            when the request is the thread's as it stands, else the request's model,
            messages, system message, tools and settings rendered for the dialect.
        awrap_model_call: the same, async.
        strategy: ``response_format``'s ``ToolStrategy``/``ProviderStrategy``, as
            ``create_agent``'s model step applies it: its schema tools bound beside the
            graph's (not in a middleware's ``request.tools``, as there), a reply's
            schema call answered here, ``structured_response`` written on every call.
        max_calls_per_reply: calls of one reply that go on to be run (or reviewed);
            those past it become unreadable calls saying why (:func:`bounded_calls`).
            ``None``: no bound.
    """

    def __init__(
        self,
        boundary: ModelBoundary,
        *,
        max_iterations: int,
        fallback_node: str,
        render_node: str | None = None,
        wrap_model_call: Callable[..., Any] | None = None,
        awrap_model_call: Callable[..., Any] | None = None,
        strategy: ResponseStrategy | None = None,
        max_calls_per_reply: int | None = DEFAULT_MAX_CALLS_PER_REPLY,
    ) -> None:
        self.boundary = boundary
        self.max_calls_per_reply = max_calls_per_reply
        self.plan = boundary.plan
        self.model = boundary.model
        self.max_iterations = max_iterations
        self.fallback_node = fallback_node
        self.render_node = render_node
        self.wrap = wrap_model_call
        self.awrap = awrap_model_call
        self.strategy = strategy

    # -- node

    def invoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any] | Command:
        limit = self._at_limit(state)
        if limit is not None:
            return limit
        dialect = self.plan.current(state)
        if self._unrendered(dialect, state):
            return Command(goto=self.render_node)
        fmt = self.boundary.format(dialect, state)
        asked = _Asked()

        def handler(request: ModelRequest | None) -> AIMessage:
            asked.call, asked.rendered_here = self._prepared(dialect, state, config, fmt, request)
            message, asked.raw = self._reply(asked.call, config)
            if _says_nothing(message):  # a second try often says something
                message, asked.raw = self._reply(asked.call, config)
            return message

        try:
            if self.wrap is None:
                result: list[BaseMessage] = [handler(None)]
            else:
                from langchain.agents.middleware import ModelResponse

                thread = self._request(state)
                result = _result(
                    self.wrap(thread, lambda r: ModelResponse([handler(_changed(r, thread))]))
                )
        except Exception as exc:
            return self._fallback_for(dialect, exc)
        return self._finish(dialect, fmt, result, state, asked)

    async def ainvoke(
        self, state: dict[str, Any], config: RunnableConfig
    ) -> dict[str, Any] | Command:
        limit = self._at_limit(state)
        if limit is not None:
            return limit
        dialect = self.plan.current(state)
        if self._unrendered(dialect, state):
            return Command(goto=self.render_node)
        # the model's call format may be asked of its server (once per process): not on
        # the event loop
        fmt = await asyncio.to_thread(self.boundary.format, dialect, state)
        asked = _Asked()

        async def handler(request: ModelRequest | None) -> AIMessage:
            asked.call, asked.rendered_here = self._prepared(dialect, state, config, fmt, request)
            message, asked.raw = await self._areply(asked.call, config)
            if _says_nothing(message):  # a second try often says something
                message, asked.raw = await self._areply(asked.call, config)
            return message

        thread = self._request(state) if self.awrap is not None else None

        async def respond(request: ModelRequest) -> ModelResponse:
            from langchain.agents.middleware import ModelResponse

            assert thread is not None
            return ModelResponse([await handler(_changed(request, thread))])

        try:
            if self.awrap is None:
                result: list[BaseMessage] = [await handler(None)]
            else:
                result = _result(await self.awrap(thread, respond))
        except Exception as exc:
            return self._fallback_for(dialect, exc)
        return self._finish(dialect, fmt, result, state, asked)

    def _unrendered(self, dialect: Dialect, state: dict[str, Any]) -> bool:
        """Whether this call of a prompt dialect goes to the ``adapter`` first: nothing
        was rendered for the history as it stands (a rendering of it for another binding
        is rendered again here, so the two nodes never send a call back and forth)."""
        if self.render_node is None or dialect.native:
            return False
        given = state.get(RENDERED_KEY)
        return not (isinstance(given, RenderedInput) and given.renders(state))

    def _request(self, state: dict[str, Any]) -> ModelRequest:
        """The model call as LangChain middleware sees it: the thread as it stands."""
        from langchain.agents.middleware import ModelRequest

        messages = list(state["messages"])
        system = SystemMessage(self.plan.system_prompt) if self.plan.system_prompt else None
        if messages and isinstance(messages[0], SystemMessage):  # the thread's own wins
            system, messages = messages[0], messages[1:]
        return ModelRequest(
            model=self.model,
            messages=messages,
            system_message=system,
            tools=self._tools(),
            response_format=self.strategy.response_format if self.strategy else None,
            state=state,  # type: ignore[arg-type]
            runtime=get_runtime(),
        )

    def _tools(self) -> list[Any]:
        """The graph's tools, as a middleware's request shows them (no schema tools)."""
        names = self.strategy.names if self.strategy else frozenset()
        return [t for t in self.plan.tools if t.name not in names]

    def _prepared(
        self,
        dialect: Dialect,
        state: dict[str, Any],
        config: RunnableConfig,
        fmt: CallFormat,
        request: ModelRequest | None = None,
    ) -> tuple[ModelCall, bool]:
        """The call: the adapter's, made ready with its rendering, when it is for this
        call, else made ready here; and whether it was rendered here. ``request``: a
        middleware's request that changed the call (another model, messages, tools or
        settings), rendered for here."""
        boundary, history, extra = self.boundary, None, {}
        if request is not None:
            tools = list(request.tools)
            if self.strategy is not None:  # the schema tools, bound as the graph's are
                tools += self.strategy.tools
            if request.model is not self.model or tools != list(self.plan.tools):
                plan = replace(self.plan, tools=tools)
                boundary = ModelBoundary(
                    request.model,
                    plan,
                    constrained=self.boundary.constrained,
                    call_format=self.boundary.call_format,
                )
                fmt = boundary.format(dialect, state)
            history = [request.system_message] if request.system_message else []
            history += list(request.messages)
            extra = dict(request.model_settings)
            if request.tool_choice is not None:
                extra["tool_choice"] = request.tool_choice
        binding = boundary.binding(dialect, state, fmt)
        given = state.get(RENDERED_KEY)
        rendered = None
        if (
            history is None
            and isinstance(given, RenderedInput)
            and given.key == boundary.key(dialect, state, binding)
        ):
            if given.call is not None:  # prepared once, in the adapter
                return given.call.sent_with(config), False
            rendered = given.messages
        if history is None:
            history = self.plan.with_system(state["messages"])
        call = boundary.wrapper(binding).model_call(
            history, config=config, rendered=rendered, **{**binding.kwargs, **extra}
        )
        return call, rendered is None

    @staticmethod
    def _reply(call: ModelCall, config: RunnableConfig) -> tuple[AIMessage, BaseMessage]:
        """The read reply and the provider's own. When the run's tokens are watched (the
        ``messages`` stream, ``astream_events``), the provider's raw stream stays out of
        them (``nostream``) and :class:`_ShownReply` shows it read; else the provider is
        called as it is, as ``create_agent`` calls it."""
        if not streams_tokens(config.get("callbacks")):
            reply = call.invoke(call.rendered)
            return call.read(reply), reply
        shown = _ShownReply(call, config)
        reply = call.invoke(call.rendered, {"tags": [TAG_NOSTREAM], "callbacks": [shown]})
        return shown.reply() or call.read(reply), reply

    @staticmethod
    async def _areply(call: ModelCall, config: RunnableConfig) -> tuple[AIMessage, BaseMessage]:
        if not streams_tokens(config.get("callbacks")):
            reply = await call.ainvoke(call.rendered)
            return call.read(reply), reply
        shown = _ShownReply(call, config)
        reply = await call.ainvoke(call.rendered, {"tags": [TAG_NOSTREAM], "callbacks": [shown]})
        return shown.reply() or call.read(reply), reply

    def _at_limit(self, state: dict[str, Any]) -> dict[str, Any] | None:
        """The notice that ends a turn at ``max_iterations``, or after a call repeated
        ``max_repeats`` times, if it is reached."""
        repeated = repeat_stop(state["messages"])
        if repeated is not None:
            return {"messages": [repeat_limit_message(**repeated)]}
        if model_calls_this_turn(state["messages"]) >= self.max_iterations:
            return {"messages": [iteration_limit_message(self.max_iterations)]}
        return None

    # -- outcomes

    def _fallback_for(self, dialect: Dialect, exc: Exception) -> Command:
        """The hand-over to the fallback node, with why, when native calling was refused
        (any other failure is raised)."""
        _, reason = self.plan.fallback_for(dialect, exc, self.model)
        return Command(goto=Send(self.fallback_node, {REASON_KEY: reason}))

    def _finish(
        self,
        dialect: Dialect,
        fmt: CallFormat,
        result: list[BaseMessage],
        state: dict[str, Any],
        asked: _Asked,
    ) -> dict[str, Any]:
        at = max(i for i, m in enumerate(result) if isinstance(m, AIMessage))
        message = result[at]
        assert isinstance(message, AIMessage)
        if _says_nothing(message):
            message = empty_reply_message(message)
        message = bounded_calls(message, self.max_calls_per_reply)
        answers, structured = [], None
        if self.strategy is not None and not message.additional_kwargs.get(STOP_REASON_KEY):
            answers, structured = self.strategy.answer(message)
        update: dict[str, Any] = {"messages": [*result[:at], message, *answers, *result[at + 1 :]]}
        if self.strategy is not None:  # as create_agent: this call's, or None
            update[STRUCTURED_RESPONSE_KEY] = structured
        if asked.raw is not None:
            # the reply as the model wrote it, beside the canonical one (shown, not saved)
            update["model_output"] = _output_shown(asked.raw)
        if asked.call is not None and asked.rendered_here:
            # native, a prompt rendered again after a resume, or a middleware's request
            update["model_input"] = convert_to_openai_messages(asked.call.rendered)
        reason = None
        markup = message.response_metadata.get(MARKUP_FORMAT_KEY)
        if dialect.native and markup in PROMPT_DIALECTS:
            # the server has no tool parser and the model writes calls as text:
            # speak that model's own prompt dialect from now on, and say why. Other
            # formats are read from every reply (the reply records which); there is no
            # prompt dialect of theirs to switch to.
            dialect = self.plan.dialect(markup)
            reason = f"the model wrote its calls into content as {markup} markup"
        elif (
            not dialect.native
            and dialect.name != "react"
            and message.invalid_tool_calls
            and not message.tool_calls
            and unparsed_streak([*state["messages"], message]) >= self.plan.unparsed_limit
        ):
            # its unreadable calls are answered as every call is; the next call speaks ReAct
            reason = (
                f"{self.plan.unparsed_limit} replies in a row had tool calls that could not "
                f"be read in the {dialect.name} format"
            )
            dialect = self.plan.dialect("react")
        if reason is not None:
            update["fallback_reason"] = reason
        if reason is not None or state.get("dialect") != dialect.name:
            update["dialect"] = dialect.name  # the thread's dialect, from its first call on
        if reason is not None:  # the thread speaks another dialect from now on
            fmt = self.boundary.format(dialect, state)
        if dialect.native and fmt.name is None and markup and message.tool_calls:
            # nothing said the format: the thread's first call read in one tells it
            fmt = CallFormat(markup, "learned", "the thread's first call read")
        if (state.get("call_format"), state.get("call_format_source")) != (fmt.name, fmt.source):
            update["call_format"] = fmt.name
            update["call_format_source"] = fmt.source
        return update


def _output_shown(raw: BaseMessage) -> Any:
    """The reply as the model wrote it, for people; one whose calls JSON cannot write
    (arguments nested past Python's stack, a provider's odd values) is shown without
    them: the read reply holds them as unreadable calls."""
    try:
        return convert_to_openai_messages(raw)
    except (RecursionError, TypeError, ValueError):
        return {"role": "assistant", "content": text_of(raw)}
