"""Nodes that run LangChain agent middleware's graph hooks, one node per hook.

``create_fncall_graph(middleware=[...])`` takes LangChain's ``AgentMiddleware`` as
``create_agent`` does: each middleware's ``before_agent``, ``before_model``,
``after_model`` and ``after_agent`` becomes a node named as ``create_agent`` names it
(``"<middleware name>.before_model"``), run where ``create_agent`` runs it (before the
adapter and model, after the model, at the turn's start and end). A hook returns a state
update or ``None``; an update with ``jump_to`` (``"model"``, ``"tools"``, ``"end"``)
goes there next, as in ``create_agent``. ``wrap_model_call`` and ``wrap_tool_call`` run
inside the ``model`` and ``tools`` nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import get_runtime

if TYPE_CHECKING:
    # langchain.agents loads create_agent's whole module: imported where middleware
    # or a response_format is in use, not when the graph's face is imported
    from langchain.agents.middleware import AgentMiddleware

__all__ = ["HOOKS", "HookNode", "has_hook", "hook_name"]

#: the graph hooks, in the order a turn meets them
HOOKS = ("before_agent", "before_model", "after_model", "after_agent")


def has_hook(middleware: AgentMiddleware, hook: str) -> bool:
    """Whether ``middleware`` defines ``hook`` (sync or async) itself."""
    from langchain.agents.middleware import AgentMiddleware

    cls = type(middleware)
    return getattr(cls, hook) is not getattr(AgentMiddleware, hook) or getattr(
        cls, f"a{hook}"
    ) is not getattr(AgentMiddleware, f"a{hook}")


def hook_name(middleware: AgentMiddleware, hook: str) -> str:
    """The node's name, as ``create_agent`` names it."""
    return f"{middleware.name}.{hook}"


class HookNode:
    """Run ``middleware``'s ``hook`` on the state; its update is the node's."""

    def __init__(self, middleware: AgentMiddleware, hook: str) -> None:
        from langchain.agents.middleware import AgentMiddleware

        self.middleware = middleware
        self.hook = hook
        cls = type(middleware)
        self._sync = getattr(cls, hook) is not getattr(AgentMiddleware, hook)
        self._async = getattr(cls, f"a{hook}") is not getattr(AgentMiddleware, f"a{hook}")

    def invoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        if not self._sync:
            raise TypeError(
                f"{self.middleware.name} has only an async {self.hook} (a{self.hook}): run the "
                "graph with ainvoke/astream"
            )
        return getattr(self.middleware, self.hook)(state, get_runtime()) or {}

    async def ainvoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        if self._async:
            return await getattr(self.middleware, f"a{self.hook}")(state, get_runtime()) or {}
        return self.invoke(state, config)
