"""The ``react_fallback`` node: switch a thread whose native tool calling failed.

Entered from the ``model`` node when the model refused native tools (a provider without
``bind_tools``, a server that rejects the ``tools`` field). It switches the thread to
its fallback prompt dialect (ReAct unless chosen otherwise) and says why; the ``adapter``
then renders the history for it and the ``model`` node calls again. The switch is saved
with the thread, so later turns never try the failed way again (as LangChain's
``ModelFallbackMiddleware`` moves on to the next model).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from fncall_graph.guarantees import DialectPlan

__all__ = ["REASON_KEY", "ReactFallbackNode"]

#: the key of the node's input (LangGraph's ``Send`` from the ``model`` node): why
REASON_KEY = "reason"


class ReactFallbackNode:
    """Switch the thread to ``plan.fallback``; its input is ``{"reason": "..."}``.

    Args:
        plan: the thread's dialects (its ``fallback`` is the one switched to).
    """

    def __init__(self, plan: DialectPlan) -> None:
        self.plan = plan

    def invoke(self, input: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"dialect": self.plan.fallback.name, "fallback_reason": input[REASON_KEY]}

    async def ainvoke(self, input: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return self.invoke(input, config)
