"""Where the graph's run goes after each node, and how its nodes and edges run.

:class:`Routes` holds the edges ``create_fncall_graph`` wires, as ``create_agent``'s
edges go: after the model (its reply's open calls to approval or the tools, the
structured answer, the end, or the model again), after approval, after the tools and
after each middleware hook (its ``jump_to`` first). :class:`Step`, :class:`RoutedStep`
and :class:`Route` run a node or an edge as it is, untraced, a routed node saying where
the run goes next in its ``Command``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, AnyMessage, InvalidToolCall, ToolCall, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import END
from langgraph.types import Command, Send

from fncall_graph._compat import messages_delta_reducer
from fncall_graph.guarantees import last_ai_message
from fncall_graph.nodes.model import STOP_REASON_KEY

if TYPE_CHECKING:
    from fncall_graph.guarantees import DialectPlan
    from fncall_graph.nodes.approve import ApproveNode
    from fncall_graph.nodes.structured_response import ResponseStrategy
    from fncall_graph.nodes.tools import ToolDispatchNode

__all__ = []  # for the factory, in this room

#: The graph's node names.
ADAPTER, MODEL, TOOLS, APPROVE = "adapter", "model", "tools", "approve"
REACT_FALLBACK, STRUCTURED = "react_fallback", "structured_response"

State = dict[str, Any]


def open_calls(
    ai: AIMessage, messages: Sequence[AnyMessage], schema_tools: frozenset[str]
) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    """``ai``'s calls (readable, unreadable) that no ``ToolMessage`` after it answers, as
    create_agent's edges find them (a schema tool's call is the model step's own)."""
    answered = set()
    for m in reversed(messages):  # the messages after ``ai`` only: a step's, a hook's
        if m is ai:
            break
        if isinstance(m, ToolMessage):
            answered.add(m.tool_call_id)
    calls = [
        c
        for c in ai.tool_calls
        if (c.get("id") or "") not in answered and c["name"] not in schema_tools
    ]
    invalid = [c for c in ai.invalid_tool_calls if (c.get("id") or "") not in answered]
    return calls, invalid


class Routes:
    """The graph's edges that read the state, over its nodes and hook chains.

    Args:
        plan: the thread's dialects (a prompt dialect's thread is rendered first).
        strategy: ``response_format``'s tool or provider strategy (its schema tools'
            calls are the model step's own; its answer ends the run).
        tools: the tools node, which sends each open call to a task of its own.
        approve: the approval node (``interrupt_on``), or ``None``.
        structured: whether the graph has a ``structured_response`` step.
        before_model: the first ``before_model`` hook node, where a model call starts.
        after_agent: the first ``after_agent`` hook node, where the run ends.
        native: whether the graph starts native (its threads skip the adapter).
    """

    def __init__(
        self,
        *,
        plan: DialectPlan,
        strategy: ResponseStrategy,
        tools: ToolDispatchNode,
        approve: ApproveNode | None,
        structured: bool,
        before_model: str | None,
        after_agent: str | None,
        native: bool,
    ) -> None:
        self.plan, self.strategy, self.tools, self.approve = plan, strategy, tools, approve
        self.structured = structured
        self.before_model, self.after_agent = before_model, after_agent
        # where the run and each tool round go on, by plain edges (LangGraph takes them
        # without reading the state): a prompt dialect's graph at the adapter (its thread
        # never speaks native again, as a switch goes to another prompt dialect; a thread
        # another graph saved native passes the adapter, which leaves it as it is); a
        # native graph at the model, which sends a thread that switched dialect on to the
        # adapter
        self.first = before_model or (MODEL if native else ADAPTER)
        # where a model call starts, drawn: where an edge chooses (it reads the state
        # anyway), the adapter for a prompt dialect's thread, else the model
        self.entries = [before_model] if before_model else [ADAPTER, MODEL][: 2 if native else 1]
        self.ends = [after_agent or END]

    def to_model(self, state: State) -> str:
        # a prompt dialect's thread is rendered by the adapter first; native skips it
        return MODEL if self.plan.current(state).native else ADAPTER

    def enter_model(self, state: State) -> str:
        return self.before_model or self.to_model(state)

    def leave(self, state: State) -> str:
        return self.after_agent or END

    def to_tools(self, ai: AIMessage, state: State) -> str | list[Send]:
        # the reply's calls no answer has yet, each to the tools; none: the model again
        calls, invalid = open_calls(ai, state["messages"], self.strategy.names)
        pending = ai.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid})
        return self.tools.dispatch(pending, state["messages"]) or self.enter_model(state)

    def calls_of(self, ai: AIMessage, state: State) -> str | list[Send]:
        if self.approve is not None and self.approve.needs_review(state):
            return APPROVE
        return self.to_tools(ai, state)

    def route_after_model(self, state: State) -> str | list[Send]:
        # as create_agent's model-to-tools edge: the latest reply's calls that no answer
        # (a hook's, a structured answer's) has yet go on; all answered: the model again,
        # unless a structured answer ended the run; no calls: the end
        messages = state["messages"]
        ai = last_ai_message(messages)
        if ai is None:
            return self.leave(state)
        if not (ai.tool_calls or ai.invalid_tool_calls):
            if (
                self.structured
                and ai is messages[-1]
                and not ai.additional_kwargs.get(STOP_REASON_KEY)
            ):
                return STRUCTURED  # the model's answer, in the shape asked for
            return self.leave(state)
        if any(open_calls(ai, messages, self.strategy.names)):
            return self.calls_of(ai, state)
        if self.strategy.answered(state):
            return self.leave(state)  # the schema tool's call, taken: the structured answer
        return self.enter_model(state)

    def route_after_approve(self, state: State) -> str | list[Send]:
        # run every call not answered by a rejection; all rejected: back to the model
        ai = last_ai_message(state["messages"])
        return self.enter_model(state) if ai is None else self.to_tools(ai, state)

    def after_tools(self, state: State) -> str:
        # a reply's schema call gave the answer: the run ends once its tools ran
        return self.leave(state) if self.strategy.answered(state) else self.first

    def after_hook(self, hook: str, following: str | None) -> Callable[[State], Any]:
        """The edge after a node of ``hook``: the hook's ``jump_to`` first (as in
        create_agent), else ``following`` (the chain's next hook), else where the
        chain leads."""
        ending = hook == "after_agent"
        then: Callable[[State], Any]
        if following or ending:
            then = lambda state: following or END  # noqa: E731
        else:
            then = {
                "before_agent": self.enter_model,
                "before_model": self.to_model,
                "after_model": self.route_after_model,
            }[hook]

        def route(state: State) -> Any:
            jump = state.get("jump_to")
            if jump == "end":
                return END if ending else self.leave(state)
            if jump == "model":
                return self.enter_model(state)
            if jump == "tools":
                ai = last_ai_message(state["messages"])
                return self.calls_of(ai, state) if ai is not None else self.enter_model(state)
            return then(state)

        return route


class Step(Runnable[Any, Any]):
    """A node with a sync and an async implementation.

    RunnableLambda would inspect signatures and open a nested run on every call (a third
    of the graph's overhead); LangGraph already traces each node as its own run.
    """

    def __init__(
        self, name: str, func: Callable[..., Any], afunc: Callable[..., Awaitable[Any]]
    ) -> None:
        self.name = name
        self.func, self.afunc = func, afunc

    @classmethod
    def of(cls, name: str, node: Any, **kwargs: Any) -> Any:
        """``node`` (one with ``invoke(state, config)`` and ``ainvoke``) as a step."""
        return cls(name, node.invoke, node.ainvoke, **kwargs)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.func(input, config or {})

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self.afunc(input, config or {})


class RoutedStep(Step):
    """A node that says where the run goes next, as its conditional edge would, in its
    ``Command``: LangGraph reads a conditional edge's state as a fresh copy of every
    channel with the node's writes applied, on every step; ``route`` reads the node's
    input with its update applied to the history only (what the routes read). A
    ``Command`` of the node's own goes as it is.
    """

    def __init__(
        self,
        name: str,
        func: Callable[..., Any],
        afunc: Callable[..., Awaitable[Any]],
        route: Callable[[State], Any],
    ) -> None:
        super().__init__(name, func, afunc)
        self.route = route

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._routed(input, self.func(input, config or {}))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._routed(input, await self.afunc(input, config or {}))

    def _routed(self, state: State, update: Any) -> Any:
        if not isinstance(update, dict):
            return update
        messages = messages_delta_reducer(state["messages"], [update.get("messages", [])])
        return Command(update=update, goto=self.route({**state, **update, "messages": messages}))


class Route(Runnable[Any, Any]):
    """A conditional edge's function, run as it is: LangGraph would trace a plain function
    as a chain run of its own on every step (``create_agent`` passes its edges untraced)."""

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func
        self.name = getattr(func, "__name__", "route")

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.func(input)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.func(input)
