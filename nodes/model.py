"""The ``model`` node: call the model in the thread's dialect and return a canonical reply.

Native dialect: the tools go through ``bind_tools`` and the reply is normalised, so calls
written into ``content`` (a server without a tool parser) count as calls too. Prompt
dialects: the input the ``adapter`` node rendered goes to the model with the dialect's
stop sequences, and the text comes back parsed — streamed through the dialect's parser,
so the ``messages`` stream mode shows answer text and never call markup.

Constrained decoding (prompt dialects, servers that apply a GBNF ``grammar``, such as
llama.cpp): each call carries the dialect's grammar in ``extra_body``, so the model can
only write calls to the listed tools with arguments that fit their schemas, or an answer.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, convert_to_messages
from langchain_core.runnables import Runnable, RunnableConfig

from fncall_graph.adapters import Dialect
from fncall_graph.adapters.chat_model import with_dialect
from fncall_graph.adapters.constrained import grammar_max_bytes
from fncall_graph.adapters.models import is_tools_unsupported_error, unreachable_server
from fncall_graph.adapters.normalize import markup_dialect, normalize

from ._plan import DialectPlan, model_calls_this_turn, unparsed_streak

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
            if dialect.native:
                # raises NotImplementedError for models without native tools: a fallback case
                runnable = self.model.bind_tools(tools)
            else:
                wrapped = with_dialect(self.model, dialect, prerendered=True)
                grammar = None
                if self.constrained:
                    # the keyword only when needed: a custom dialect may predate it
                    grammar = (
                        dialect.grammar(tools, require_call=True)
                        if require_call
                        else dialect.grammar(tools)
                    )
                if grammar is None:
                    runnable = wrapped.bind_tools(tools)
                else:
                    # the wrapper passes call arguments on to the inner model's request;
                    # the model's own extra_body (if any) is kept
                    extra = {**(getattr(self.model, "extra_body", None) or {}), "grammar": grammar}
                    runnable = wrapped.bind_tools(
                        tools, extra_body=extra, **_room_for(grammar, self.model)
                    )
            self._runnables[key] = runnable
        return self._runnables[key]

    def _call_for(self, calls_this_turn: int, dialect: Dialect) -> Runnable:
        first = calls_this_turn == 0
        return self._runnable(dialect, require_call=self.constrained == "first_call" and first)

    def _input(self, state: dict[str, Any], dialect: Dialect) -> list[Any]:
        if dialect.native:
            return self.plan.with_system(state["messages"])
        return convert_to_messages(state["model_input"])

    # -- node

    def invoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        calls = model_calls_this_turn(state["messages"])
        if calls >= self.max_iterations:
            return {"messages": [iteration_limit_message(self.max_iterations)]}
        dialect = self.plan.current(state)
        try:
            reply = self._call_for(calls, dialect).invoke(self._input(state, dialect), config)
        except Exception as exc:
            return self._failed(dialect, exc)
        return self._finish(dialect, reply, state)

    async def ainvoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        calls = model_calls_this_turn(state["messages"])
        if calls >= self.max_iterations:
            return {"messages": [iteration_limit_message(self.max_iterations)]}
        dialect = self.plan.current(state)
        try:
            reply = await self._call_for(calls, dialect).ainvoke(
                self._input(state, dialect), config
            )
        except Exception as exc:
            return self._failed(dialect, exc)
        return self._finish(dialect, reply, state)

    # -- outcomes

    def _failed(self, dialect: Dialect, exc: Exception) -> dict[str, Any]:
        unreachable = unreachable_server(exc, self.model)
        if unreachable is not None:
            raise unreachable from exc
        if dialect.native and is_tools_unsupported_error(exc):
            # BaseChatModel.bind_tools raises a bare NotImplementedError: say what it means
            detail = str(exc) or f"{type(self.model).__name__} does not implement bind_tools"
            reason = f"native tool calling failed: {type(exc).__name__}: {detail}"
            return {"pending_fallback": {"to": self.plan.fallback.name, "reason": reason}}
        raise exc

    def _finish(self, dialect: Dialect, reply: Any, state: dict[str, Any]) -> dict[str, Any]:
        update: dict[str, Any] = {}
        if dialect.native:
            message = normalize(reply, None)
            markup = markup_dialect(reply)
            if markup is not None and message.tool_calls and not reply.tool_calls:
                # the server has no tool parser and the model writes calls as text:
                # speak that model's own prompt dialect from now on
                update["dialect"] = markup
        else:
            message = reply if isinstance(reply, AIMessage) else normalize(reply, dialect)
        update["messages"] = [message]
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
            update["pending_fallback"] = {"to": "react", "reason": reason}
        return update
