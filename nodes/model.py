"""The ``model`` node: call the model in the thread's dialect and return a canonical reply.

The call goes through :func:`~fncall_graph.adapters.with_dialect`, the same chat model
that serves LangChain's and LangGraph's own agents, and the one pass through the model
boundary: the history is rendered once for the dialect (native ``tools`` through
``bind_tools``, or the tools and the history written into the prompt), the model is
called (streamed through the dialect's parser, so the ``messages`` stream mode shows
answer text and never call markup), and the reply is read once into canonical calls with
ids unique in the thread. The rendered input is caught as the inner call starts and
returned as ``model_input``, so what Studio and the ``updates`` stream show is what the
model was sent, with no second rendering.

When the thread must change dialect, the switch and its reason come back in the same
update as the reply, saved in the same checkpoint: native calling refused (the call is
made again at once in the fallback dialect, as LangChain's ``ModelFallbackMiddleware``
does), a native reply that writes its calls as a prompt dialect's markup (that dialect
from now on), or replies whose calls cannot be read again and again (ReAct from now on).

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
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import merge_configs

from fncall_graph.adapters import Dialect
from fncall_graph.adapters.formats.base import text_of
from fncall_graph.adapters.formats.grammar import grammar_max_bytes
from fncall_graph.adapters.formats.normalize import MARKUP_FORMAT_KEY
from fncall_graph.adapters.formats.registry import PROMPT_DIALECTS
from fncall_graph.adapters.models import is_tools_unsupported_error, unreachable_server
from fncall_graph.adapters.models.call_format import CallFormat, resolve_call_format
from fncall_graph.adapters.models.chat_model import with_dialect

from ._plan import DialectPlan, model_calls_this_turn, unparsed_streak
from ._repeats import repeat_stop

__all__ = [
    "STOP_REASON_KEY",
    "ModelNode",
    "empty_reply_message",
    "iteration_limit_message",
    "repeat_limit_message",
]

STOP_REASON_KEY = "fncall_stop_reason"


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
    ``count`` times after its result was in (see :mod:`~fncall_graph.nodes._repeats`)."""
    return AIMessage(
        content=(
            f"I stopped: I called {name} again with the same arguments {count} times in "
            f"this turn (max_repeats={limit}), and it would not give anything new. Its "
            "result is in the conversation; ask me again in other words, or use a "
            "stronger model."
        ),
        additional_kwargs={STOP_REASON_KEY: "max_repeats"},
    )


def _room_for(grammar: str, model: BaseChatModel) -> dict[str, Any]:
    """A ``max_tokens`` that lets every reply the grammar admits finish, where the model's is less.

    A reply cut off by ``max_tokens`` half-way through a call is unreadable; a grammar
    whose replies are bounded (calls only) fits in its byte count, since every token
    writes at least one byte.
    """
    limit = getattr(model, "max_tokens", None)
    need = grammar_max_bytes(grammar)
    if isinstance(limit, int) and need is not None and limit < need:
        return {"max_tokens": need}
    return {}


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


class _SentInput(BaseCallbackHandler):
    """Catches what the model was sent: the input of the wrapper's inner chat-model run.

    The wrapper is the first chat-model run this handler sees; the inner run (the
    provider's own model) is its child. Inline, so the input is there when the node ends.
    """

    run_inline = True
    fncall_sees_wrapped_run = True  # SEES_WRAPPED_RUN: the wrapped model's own run too

    def __init__(self) -> None:
        self.wrapper: UUID | None = None
        self.messages: list[BaseMessage] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        if self.wrapper is None:
            self.wrapper = run_id
        elif parent_run_id == self.wrapper and messages:
            self.messages = messages[0]


class ModelNode:
    """Call ``model`` for the current dialect and return its reply as a canonical ``AIMessage``.

    Args:
        model: any LangChain chat model.
        plan: the thread's dialects, tools and system prompt.
        max_iterations: model calls allowed per user turn; at the limit the turn ends with
            a message saying so instead of another call.
        constrained: send prompt dialects' grammars with each call (``extra_body``):
            ``False`` never, ``True`` always (calls or an answer), ``"first_call"`` always,
            with the first call of each user turn held to tool calls only.
        call_format: the format the model writes calls into a native reply's text in, as
            declared; ``None``: resolved for the model, else learned in each thread.
    """

    def __init__(
        self,
        model: BaseChatModel,
        plan: DialectPlan,
        *,
        max_iterations: int,
        constrained: bool | Literal["first_call"] = False,
        call_format: str | None = None,
    ) -> None:
        self.model = model
        self.plan = plan
        self.max_iterations = max_iterations
        self.constrained = constrained
        self.call_format = call_format
        self._runnables: dict[tuple[str, bool, str | None], Runnable] = {}

    # -- what to call

    def _runnable(
        self, dialect: Dialect, *, require_call: bool = False, call_format: str | None = None
    ) -> Runnable:
        key = (dialect.name, require_call, call_format)
        if key not in self._runnables:
            tools = list(self.plan.tools)
            options: dict[str, Any] = {}
            grammar = None
            if self.constrained and not dialect.native:
                # the keyword only when needed: a custom dialect may predate it
                grammar = (
                    dialect.grammar(tools, require_call=True)
                    if require_call
                    else dialect.grammar(tools)
                )
            if grammar is not None:
                # the wrapper passes call arguments on to the inner model's request;
                # the model's own extra_body (if any) is kept
                extra = {**(getattr(self.model, "extra_body", None) or {}), "grammar": grammar}
                options = {"extra_body": extra, **_room_for(grammar, self.model)}
            model = with_dialect(self.model, dialect, call_format=call_format)
            self._runnables[key] = model.bind_tools(tools, **options)
        return self._runnables[key]

    def _call_for(self, calls_this_turn: int, dialect: Dialect, state: dict[str, Any]) -> Runnable:
        first = calls_this_turn == 0
        fmt = self._format(dialect, state).name if dialect.native else None
        return self._runnable(
            dialect, require_call=self.constrained == "first_call" and first, call_format=fmt
        )

    def _format(self, dialect: Dialect, state: dict[str, Any]) -> CallFormat:
        """The thread's call format: a prompt dialect's own; one learned in the thread;
        else the model's (declared, from its server, by its name), resolved once."""
        learned = state.get("call_format")
        if dialect.native and learned and state.get("call_format_source") == "learned":
            return CallFormat(learned, "learned", "the thread's first call read")
        return resolve_call_format(self.model, dialect=dialect, declared=self.call_format)

    # -- node

    def invoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        limit = self._at_limit(state)
        if limit is not None:
            return limit
        dialect = self.plan.current(state)
        sent = _SentInput()
        calls = model_calls_this_turn(state["messages"])
        try:
            reply = self._call(*self._request(dialect, calls, state, config, sent))
        except Exception as exc:
            dialect, reason = self._fallback_for(dialect, exc)
            sent = _SentInput()
            reply = self._call(*self._request(dialect, calls, state, config, sent))
            return self._finish(dialect, reply, state, sent, reason)
        return self._finish(dialect, reply, state, sent)

    async def ainvoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        limit = self._at_limit(state)
        if limit is not None:
            return limit
        dialect = self.plan.current(state)
        # the model's call format may be asked of its server (once per process): not on
        # the event loop
        await asyncio.to_thread(self._format, dialect, state)
        sent = _SentInput()
        calls = model_calls_this_turn(state["messages"])
        try:
            reply = await self._acall(*self._request(dialect, calls, state, config, sent))
        except Exception as exc:
            dialect, reason = self._fallback_for(dialect, exc)
            sent = _SentInput()
            reply = await self._acall(*self._request(dialect, calls, state, config, sent))
            return self._finish(dialect, reply, state, sent, reason)
        return self._finish(dialect, reply, state, sent)

    def _request(
        self,
        dialect: Dialect,
        calls: int,
        state: dict[str, Any],
        config: RunnableConfig,
        sent: _SentInput,
    ) -> tuple[Runnable, list[BaseMessage], RunnableConfig]:
        """What one model call sends: the runnable, the history and the config."""
        runnable = self._call_for(calls, dialect, state)
        history = self.plan.with_system(state["messages"])
        return runnable, history, merge_configs(config, {"callbacks": [sent]})

    @staticmethod
    def _call(runnable: Runnable, history: list[BaseMessage], config: RunnableConfig) -> AIMessage:
        reply = runnable.invoke(history, config)
        if _says_nothing(reply):  # a second try often says something
            reply = runnable.invoke(history, config)
        return reply

    @staticmethod
    async def _acall(
        runnable: Runnable, history: list[BaseMessage], config: RunnableConfig
    ) -> AIMessage:
        reply = await runnable.ainvoke(history, config)
        if _says_nothing(reply):  # a second try often says something
            reply = await runnable.ainvoke(history, config)
        return reply

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

    def _fallback_for(self, dialect: Dialect, exc: Exception) -> tuple[Dialect, str]:
        """The dialect to call again in, and why, when native calling was refused."""
        unreachable = unreachable_server(exc, self.model)
        if unreachable is not None:
            raise unreachable from exc
        if not (dialect.native and is_tools_unsupported_error(exc)):
            raise exc
        # BaseChatModel.bind_tools raises a bare NotImplementedError: say what it means
        detail = str(exc) or f"{type(self.model).__name__} does not implement bind_tools"
        return self.plan.fallback, f"native tool calling failed: {type(exc).__name__}: {detail}"

    def _finish(
        self,
        dialect: Dialect,
        message: AIMessage,
        state: dict[str, Any],
        sent: _SentInput,
        reason: str | None = None,
    ) -> dict[str, Any]:
        if _says_nothing(message):
            message = empty_reply_message(message)
        update: dict[str, Any] = {
            "messages": [message],
            "model_input": convert_to_openai_messages(sent.messages),
        }
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
        fmt = self._format(dialect, state)
        if dialect.native and fmt.name is None and markup and message.tool_calls:
            # nothing said the format: the thread's first call read in one tells it
            fmt = CallFormat(markup, "learned", "the thread's first call read")
        if (state.get("call_format"), state.get("call_format_source")) != (fmt.name, fmt.source):
            update["call_format"] = fmt.name
            update["call_format_source"] = fmt.source
        return update
