"""How the graph runs its nodes and edges: as they are, untraced, a node that says where
the run goes next in its ``Command``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.types import Command

from fncall_graph._compat import messages_delta_reducer

__all__ = []  # for the factory, in this room


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
        route: Callable[[dict[str, Any]], Any],
    ) -> None:
        super().__init__(name, func, afunc)
        self.route = route

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._routed(input, self.func(input, config or {}))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._routed(input, await self.afunc(input, config or {}))

    def _routed(self, state: dict[str, Any], update: Any) -> Any:
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
