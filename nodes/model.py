"""The ``model`` node: call the model in the thread's dialect and return a canonical reply.

The call goes through :func:`~fncall_graph.adapters.with_dialect`, the same chat model
that serves LangChain's and LangGraph's own agents: native dialect, the tools go through
``bind_tools`` and the reply is normalised, so calls written into ``content`` (a server
without a tool parser) count as calls too; prompt dialects, the history is rendered with
the tools into the prompt, sent with the dialect's stop sequences, and the text comes
back parsed — streamed through the dialect's parser, so the ``messages`` stream mode
shows answer text and never call markup.

When the thread must change dialect (native calling refused, or replies whose calls
cannot be read again and again), the node hands over to ``react_fallback`` with
``Command(goto=Send(...))`` carrying where to and why; the reason stays in the state.

Constrained decoding (prompt dialects, servers that apply a GBNF ``grammar``, such as
llama.cpp): each call carries the dialect's grammar in ``extra_body``, so the model can
only write calls to the listed tools with arguments that fit their schemas, or an answer.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.types import Command, Send

from fncall_graph.adapters import Dialect
from fncall_graph.adapters.formats.base import new_call_id, text_of
from fncall_graph.adapters.models import is_tools_unsupported_error, unreachable_server
from fncall_graph.adapters.models.chat_model import MARKUP_FORMAT_KEY, with_dialect
from fncall_graph.adapters.models.constrained import grammar_max_bytes

from ._plan import DialectPlan, model_calls_this_turn, unparsed_streak

STOP_REASON_KEY = "fncall_stop_reason"
# formats read in native replies that are also prompt dialects the thread can switch to
PROMPT_DIALECTS = frozenset({"hermes", "qwen"})


def iteration_limit_message(limit: int) -> AIMessage:
    return AIMessage(
        content=(
            f"I stopped after {limit} model calls in this turn without reaching a final answer "
            "(max_iterations). The tool results so far are in the conversation; ask me to "
            "continue, or raise max_iterations."
        ),
        additional_kwargs={STOP_REASON_KEY: "max_iterations"},
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


def unique_call_ids(message: AIMessage, history: list[Any]) -> AIMessage:
    """``message`` with call ids the thread already used replaced by new ones.

    A call id names one call in a thread: its result, and its claim (a call runs at most
    once per id). Models that number their calls ``call_0``, ``call_1`` in every reply
    would otherwise repeat them.
    """
    if not (message.tool_calls or message.invalid_tool_calls):
        return message
    used = {
        c["id"] for m in history if isinstance(m, AIMessage) for c in m.tool_calls if c.get("id")
    }
    if not any(c.get("id") in used for c in [*message.tool_calls, *message.invalid_tool_calls]):
        return message

    def fresh(calls: list[Any]) -> list[Any]:
        return [{**c, "id": new_call_id()} if c.get("id") in used else c for c in calls]

    kwargs = {k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"}
    return message.model_copy(
        update={
            "tool_calls": fresh(message.tool_calls),
            "invalid_tool_calls": fresh(message.invalid_tool_calls),
            "additional_kwargs": kwargs,
        }
    )


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
    """

    def __init__(
        self,
        model: BaseChatModel,
        plan: DialectPlan,
        *,
        max_iterations: int,
        constrained: bool | Literal["first_call"] = False,
    ) -> None:
        self.model = model
        self.plan = plan
        self.max_iterations = max_iterations
        self.constrained = constrained
        self._runnables: dict[tuple[str, bool], Runnable] = {}

    # -- what to call

    def _runnable(self, dialect: Dialect, *, require_call: bool = False) -> Runnable:
        key = (dialect.name, require_call)
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
            self._runnables[key] = with_dialect(self.model, dialect).bind_tools(tools, **options)
        return self._runnables[key]

    def _call_for(self, calls_this_turn: int, dialect: Dialect) -> Runnable:
        first = calls_this_turn == 0
        return self._runnable(dialect, require_call=self.constrained == "first_call" and first)

    # -- node

    def invoke(self, state: dict[str, Any], config: RunnableConfig) -> Any:
        call = self._next_call(state)
        if isinstance(call, AIMessage):
            return {"messages": [call]}
        dialect, runnable, history = call
        try:
            reply = runnable.invoke(history, config)
            if _says_nothing(reply):  # a second try often says something
                reply = runnable.invoke(history, config)
        except Exception as exc:
            return self._failed(dialect, exc)
        return self._finish(dialect, reply, state)

    async def ainvoke(self, state: dict[str, Any], config: RunnableConfig) -> Any:
        call = self._next_call(state)
        if isinstance(call, AIMessage):
            return {"messages": [call]}
        dialect, runnable, history = call
        try:
            reply = await runnable.ainvoke(history, config)
            if _says_nothing(reply):  # a second try often says something
                reply = await runnable.ainvoke(history, config)
        except Exception as exc:
            return self._failed(dialect, exc)
        return self._finish(dialect, reply, state)

    def _next_call(self, state: dict[str, Any]) -> AIMessage | tuple[Dialect, Runnable, list[Any]]:
        """What to call with what, or the notice that ends a turn at ``max_iterations``."""
        calls = model_calls_this_turn(state["messages"])
        if calls >= self.max_iterations:
            return iteration_limit_message(self.max_iterations)
        dialect = self.plan.current(state)
        return dialect, self._call_for(calls, dialect), self.plan.with_system(state["messages"])

    # -- outcomes

    def _failed(self, dialect: Dialect, exc: Exception) -> Command:
        unreachable = unreachable_server(exc, self.model)
        if unreachable is not None:
            raise unreachable from exc
        if dialect.native and is_tools_unsupported_error(exc):
            # BaseChatModel.bind_tools raises a bare NotImplementedError: say what it means
            detail = str(exc) or f"{type(self.model).__name__} does not implement bind_tools"
            reason = f"native tool calling failed: {type(exc).__name__}: {detail}"
            return Command(
                goto=Send("react_fallback", {"to": self.plan.fallback.name, "reason": reason})
            )
        raise exc

    def _finish(self, dialect: Dialect, message: AIMessage, state: dict[str, Any]) -> Any:
        if _says_nothing(message):
            message = empty_reply_message(message)
        message = unique_call_ids(dialect.fit_to_tools(message, self.plan.tools), state["messages"])
        markup = message.response_metadata.get(MARKUP_FORMAT_KEY)
        if dialect.native and markup in PROMPT_DIALECTS:
            # the server has no tool parser and the model writes calls as text:
            # speak that model's own prompt dialect from now on, and say why. Other
            # formats are read from every reply (the reply records which); there is no
            # prompt dialect of theirs to switch to.
            reason = f"the model wrote its calls into content as {markup} markup"
            return {"messages": [message], "dialect": markup, "fallback_reason": reason}
        update: dict[str, Any] = {"messages": [message]}
        if state.get("dialect") != dialect.name:
            update["dialect"] = dialect.name  # the thread's dialect, from its first call on
        if (
            not dialect.native
            and dialect.name != "react"
            and message.invalid_tool_calls
            and not message.tool_calls
            and unparsed_streak([*state["messages"], message]) >= self.plan.unparsed_limit
        ):
            reason = (
                f"{self.plan.unparsed_limit} replies in a row had tool calls that could not "
                f"be read in the {dialect.name} format"
            )
            switch = {"to": "react", "reason": reason, "reply": message}
            return Command(goto=Send("react_fallback", switch))
        return update
