"""fncall-graph: dependable tool use over MCP tools for any chat model, on LangGraph.

The public face:

* :func:`create_fncall_graph` — a compiled LangGraph graph for any chat model and tools;
* :func:`get_dialect` — the model-boundary dialects (native, hermes, qwen, react);
* :func:`normalize` and :func:`with_dialect` — canonical replies from any provider, and
  prompt-dialect tool calling for models without native function calling;
* :class:`ToolCallClaimed` and its kinds — what a run is told when another run of the
  same thread already holds a tool call (each call runs at most once per id);
* :class:`CheckpointNotFound` — a config naming a checkpoint its saver deleted
  (``keep_checkpoints``) or never had: refused, nothing run or written;
* :class:`StaleApproval` and :func:`bind_decisions` — approval answers bound to the
  review they answer; :class:`ApprovalPending` — a new input refused while a review
  waits;
* :class:`AtMostOnceMiddleware`, :class:`BoundApprovalMiddleware`,
  :class:`DialectMiddleware` — the same guarantees as LangChain agent middleware, for
  ``create_agent``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# Lazy, so `import fncall_graph.adapters` stays light and optional extras stay optional.
_EXPORTS = {
    "create_fncall_graph": "fncall_graph.graphs",
    "FncallState": "fncall_graph.graphs",
    "get_dialect": "fncall_graph.adapters",
    "Dialect": "fncall_graph.adapters",
    "normalize": "fncall_graph.adapters.formats.normalize",
    "with_dialect": "fncall_graph.adapters.models.chat_model",
    "restore_read_reply": "fncall_graph.adapters.formats.stream_reading",
    "resolve_model": "fncall_graph.adapters.models",
    "ModelServerUnreachable": "fncall_graph.adapters.models",
    "MCPToolkit": "fncall_graph.adapters.mcp",
    "load_mcp_tools": "fncall_graph.adapters.mcp",
    "ToolCallClaimed": "fncall_graph.adapters.checkpoint.claims",
    "ThreadAlreadyResumed": "fncall_graph.adapters.checkpoint.claims",
    "ToolCallInProgress": "fncall_graph.adapters.checkpoint.claims",
    "ToolCallAlreadyRan": "fncall_graph.adapters.checkpoint.claims",
    "ToolCallTakenOver": "fncall_graph.adapters.checkpoint.claims",
    "ThreadBusy": "fncall_graph.adapters.checkpoint.claims",
    "CheckpointNotFound": "fncall_graph.adapters.checkpoint",
    "StaleApproval": "fncall_graph.guarantees",
    "ApprovalPending": "fncall_graph.guarantees",
    "bind_decisions": "fncall_graph.guarantees",
    "AtMostOnceMiddleware": "fncall_graph.middleware",
    "BoundApprovalMiddleware": "fncall_graph.middleware",
    "DialectMiddleware": "fncall_graph.middleware",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'fncall_graph' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
