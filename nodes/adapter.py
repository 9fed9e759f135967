"""The ``adapter`` node: render the canonical history as a prompt dialect's text, once.

For a thread that speaks a prompt dialect (Hermes ``<tool_call>``, Qwen ``✿FUNCTION✿``,
ReAct), the history's ``tool_calls`` and ``ToolMessage``s become the text the model
reads: the tools in the system prompt, calls and results in the dialect's own markup.
The ``model`` node sends exactly this rendering. Native threads do not pass here: their
model takes the history and the tools as they are.

The update carries the rendering twice, for two readers, neither of them checkpointed:
``model_input`` (OpenAI-style dicts, what Studio and the ``updates`` stream show) and
``rendered_input`` (the messages themselves and the call made ready with them, for the
``model`` node, which sends that call: one call is prepared once). After a resume
neither is there, and the ``model`` node renders and prepares again.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import convert_to_openai_messages
from langchain_core.runnables import RunnableConfig

from fncall_graph.guarantees import ModelBoundary

__all__ = ["AdapterNode"]

#: the state key the ``model`` node reads the rendering from
RENDERED_KEY = "rendered_input"


class AdapterNode:
    """Render the thread's history for its prompt dialect; see the module docstring.

    Args:
        boundary: the model as bound for each dialect, shared with the ``model`` node.
    """

    def __init__(self, boundary: ModelBoundary) -> None:
        self.boundary = boundary

    def invoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        dialect = self.boundary.plan.current(state)
        if dialect.native:  # a thread saved by another graph: nothing to render
            return {}
        rendered = self.boundary.render(dialect, state)
        return {
            "model_input": convert_to_openai_messages(list(rendered.messages)),
            RENDERED_KEY: rendered,
        }

    async def ainvoke(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return self.invoke(state, config)
