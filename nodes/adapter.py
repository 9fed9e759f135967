"""The ``adapter`` node: renders the canonical history into what the model will see."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import convert_to_openai_messages

from ._plan import DialectPlan


class AdapterNode:
    """Render ``state["messages"]`` for the thread's current dialect.

    The update carries ``model_input``: the exact model input as OpenAI-style dicts
    (system prompt with tools, calls and results as the dialect writes them). Dicts, not
    message objects, so the ``messages`` stream mode does not replay the prompt as chat.

    Args:
        plan: the thread's dialects, tools and system prompt.
    """

    def __init__(self, plan: DialectPlan) -> None:
        self.plan = plan

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        dialect = self.plan.current(state)
        rendered = dialect.render(self.plan.with_system(state["messages"]), self.plan.tools)
        return {"model_input": convert_to_openai_messages(rendered), "dialect": dialect.name}
