"""The error ``ToolMessage`` answering a tool call: the one shape of every call that
failed, was refused, was not run or could not be read (shared by the nodes).

The model reads ``status="error"`` as "this call did not do what it asked", and the
repeat guard counts only results that are not errors, so every such answer is built
here, alike.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall

from fncall_graph.adapters.secrets import redact

__all__ = []

NOT_RUN_KEY = "fncall_not_run"
"""The key of the ``artifact`` of an answer to a call that was never run (a person
rejected it): its tool changed nothing, which the repeat guard reads."""


def error_answer(
    call: ToolCall | InvalidToolCall, content: str, artifact: Any = None
) -> ToolMessage:
    """The error ``ToolMessage`` answering ``call`` with ``content``.

    Args:
        call: the call answered; one the parser could not read may lack a name or an
            id (the answer is then named ``"unknown"``, with an empty call id).
        content: what the model is told; secrets in it (a key a server quoted in its
            refusal, a URL's token) are masked, as the history is saved and shown.
        artifact: kept beside the message, not shown to the model.
    """
    return ToolMessage(
        content=redact(content),
        name=call.get("name") or "unknown",
        tool_call_id=call.get("id") or "",
        status="error",
        artifact=artifact,
    )


def not_run(message: ToolMessage) -> bool:
    """Whether ``message`` answers a call that was never run (see :data:`NOT_RUN_KEY`)."""
    artifact = message.artifact
    return isinstance(artifact, dict) and artifact.get(NOT_RUN_KEY) is True
