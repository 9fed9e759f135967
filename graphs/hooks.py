"""LangChain agent middleware, read for the graph: its tools, state, wrappers and hooks.

``create_fncall_graph(middleware=[...])`` takes ``AgentMiddleware`` as ``create_agent``
does. This module sorts a list of them into what each part of the graph takes: the tools
node gets the ``wrap_tool_call`` hooks, the model node the composed ``wrap_model_call``,
the graph a node per ``before_agent``/``before_model``/``after_model``/``after_agent``
hook (wired by :func:`~fncall_graph.graphs.factory.create_fncall_graph`), the state the
middleware's ``state_schema`` fields, the tool list its ``tools``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from fncall_graph.nodes.hooks import has_hook

if TYPE_CHECKING:
    # langchain.agents loads create_agent's whole module: imported where middleware
    # or a response_format is in use, not when the graph's face is imported
    from langchain.agents.middleware import AgentMiddleware

__all__ = []


def _own(middleware: AgentMiddleware, name: str) -> Callable[..., Any] | None:
    """``middleware``'s bound ``name`` method when its class defines it."""
    from langchain.agents.middleware import AgentMiddleware

    if getattr(type(middleware), name) is getattr(AgentMiddleware, name):
        return None
    return getattr(middleware, name)


def _composed(hooks: list[Callable[..., Any]]) -> Callable[..., Any] | None:
    """``hooks`` as one ``(request, handler)`` hook, the first outermost."""
    if not hooks:
        return None

    def composed(request: Any, handler: Callable[[Any], Any]) -> Any:
        def at(i: int, req: Any) -> Any:
            if i == len(hooks):
                return handler(req)
            return hooks[i](req, lambda r: at(i + 1, r))

        return at(0, request)

    return composed


def _acomposed(hooks: list[Callable[..., Awaitable[Any]]]) -> Callable[..., Any] | None:
    if not hooks:
        return None

    async def composed(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        async def at(i: int, req: Any) -> Any:
            if i == len(hooks):
                return await handler(req)
            return await hooks[i](req, lambda r: at(i + 1, r))

        return await at(0, request)

    return composed


#: the product's own middleware, and what the graph does in their place
_BUILT_IN = {
    "AtMostOnceMiddleware": "every tool call is claimed once per id; idempotent_tools=, lease=",
    "BoundApprovalMiddleware": "interrupt_on=, interrupt_mode=",
    "DialectMiddleware": "dialect=, fallback=, call_format=",
}


def _missing(name: str, hook: str) -> Callable[..., Any]:
    def refuse(request: Any, handler: Any) -> Any:
        way = "ainvoke/astream" if hook.startswith("wrap") else "invoke/stream"
        raise TypeError(f"middleware {name!r} has no {hook}: run the graph with {way}")

    return refuse


class Middleware:
    """A list of ``AgentMiddleware``, as the graph's parts take it.

    Args:
        middleware: LangChain agent middleware, outermost first (``create_agent``'s order).

    Raises:
        TypeError: an item that is no ``AgentMiddleware``; two with the same ``name``.
    """

    def __init__(self, middleware: Sequence[AgentMiddleware]) -> None:
        items = list(middleware)
        if items:  # whoever passes middleware has loaded langchain.agents already
            from langchain.agents.middleware import AgentMiddleware
        for i, m in enumerate(items):
            if not isinstance(m, AgentMiddleware):
                raise TypeError(
                    f"middleware[{i}] must be a LangChain AgentMiddleware, got {type(m).__name__}"
                )
        for m in items:
            instead = _BUILT_IN.get(type(m).__name__)
            if instead and type(m).__module__.startswith("fncall_graph.middleware"):
                raise TypeError(
                    f"{type(m).__name__} is for create_agent: create_fncall_graph does this "
                    f"itself ({instead})"
                )
        names = [m.name for m in items]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise TypeError(f"middleware names must be unique (they name graph nodes): {twice}")
        self.items = items

    @property
    def tools(self) -> list[Any]:
        """The tools the middleware bring."""
        return [t for m in self.items for t in getattr(m, "tools", None) or ()]

    def state_schemas(self, state_schema: type | None) -> list[type]:
        """``state_schema`` (if any) and the middleware's own state schemas."""
        found = (state_schema, *(m.state_schema for m in self.items))
        return [s for s in found if s is not None]

    @property
    def tool_wrappers(self) -> list[tuple[Callable[..., Any] | None, Callable[..., Any] | None]]:
        """Each middleware's ``(wrap_tool_call, awrap_tool_call)``, where it has either."""
        pairs = [(_own(m, "wrap_tool_call"), _own(m, "awrap_tool_call")) for m in self.items]
        return [p for p in pairs if p != (None, None)]

    @property
    def wrap_model_call(self) -> Callable[..., Any] | None:
        """The ``wrap_model_call`` hooks composed, for ``invoke``/``stream``."""
        return _composed(self._model_hooks("wrap_model_call", "awrap_model_call"))

    @property
    def awrap_model_call(self) -> Callable[..., Any] | None:
        """The ``awrap_model_call`` hooks composed, for ``ainvoke``/``astream``."""
        return _acomposed(self._model_hooks("awrap_model_call", "wrap_model_call"))

    def _model_hooks(self, name: str, other: str) -> list[Callable[..., Any]]:
        hooks: list[Callable[..., Any]] = []
        for m in self.items:
            hook = _own(m, name)
            if hook is not None:
                hooks.append(hook)
            elif _own(m, other) is not None:  # the other form only: say so, never skip it
                hooks.append(_missing(m.name, name))
        return hooks

    def with_hook(self, hook: str) -> list[AgentMiddleware]:
        """The middleware that define ``hook``, in the order the graph runs them
        (``after_*`` hooks in reverse, as ``create_agent`` runs them)."""
        found = [m for m in self.items if has_hook(m, hook)]
        return list(reversed(found)) if hook.startswith("after_") else found
