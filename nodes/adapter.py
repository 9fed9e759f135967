"""The ``adapter`` node: shows the canonical history as the model will see it.

It runs beside the ``model`` node, in the same step: the model call renders the history
itself (through :func:`~fncall_graph.adapters.with_dialect`), and this node writes the
same rendering to ``model_input`` for the stream, Studio and traces. Being in the same
step, it costs no checkpoint of its own.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import convert_to_openai_messages

from ._plan import DialectPlan


class AdapterNode:
    """Render ``state["messages"]`` for the thread's current dialect.

    The update carries ``model_input``: the exact model input as OpenAI-style dicts
    (system prompt with tools, calls and results as the dialect writes them), as the
    ``model`` node's call renders it. Dicts, not message objects, so the ``messages``
    stream mode does not replay the prompt as chat. The state keeps it for the run only
    (see ``create_fncall_graph(keep_model_input=...)``): it is for watching and tracing;
    the model node renders from the canonical history itself, so a thread resumed right
    before a model call needs nothing from here.

    Args:
        plan: the thread's dialects, tools and system prompt.
    """

    def __init__(self, plan: DialectPlan) -> None:
        self.plan = plan

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        dialect = self.plan.current(state)
        rendered = dialect.render(self.plan.with_system(state["messages"]), self.plan.tools)
        return {"model_input": convert_to_openai_messages(rendered)}
