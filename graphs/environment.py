"""Settings from the environment, read the same way by the command line and the graphs
served by ``langgraph dev`` / LangGraph Server.

================================  ===================================================
``FNCALL_MODEL``                  model spec (default ``local``, the bundled model)
``FNCALL_DIALECT``                ``auto`` (default), ``native``, ``hermes``, ``qwen``,
                                  ``react``
``FNCALL_APPROVE``                tools that wait for a person's decision, comma
                                  separated, e.g. ``sqlite-write_query``
``FNCALL_KEEP_MODEL_INPUT``       ``1``: checkpoints keep each model call's exact input
``FNCALL_DB``                     the command line's checkpoint file
``XDG_STATE_HOME``                where state lives (``~/.local/state`` when unset);
                                  fncall-graph keeps its files in ``fncall-graph/``
================================  ===================================================
"""

from __future__ import annotations

import os
from pathlib import Path

from fncall_graph.adapters.models import MODEL_ENV

__all__ = ["DB_ENV", "model_spec", "state_dir"]

DIALECT_ENV = "FNCALL_DIALECT"
APPROVE_ENV = "FNCALL_APPROVE"
KEEP_MODEL_INPUT_ENV = "FNCALL_KEEP_MODEL_INPUT"
DB_ENV = "FNCALL_DB"


def state_dir() -> Path:
    """``$XDG_STATE_HOME/fncall-graph`` (``~/.local/state/fncall-graph`` when unset): the XDG
    place for state that should survive restarts but is not user data."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).expanduser() / "fncall-graph"


def model_spec(explicit: str | None = None, *more_env: str) -> str | None:
    """The model spec: ``explicit``, else the first of ``more_env`` that is set, else
    ``$FNCALL_MODEL``; ``None`` leaves the default (``local``) to ``resolve_model``.

    Example:
        >>> model_spec("ollama:qwen3")
        'ollama:qwen3'
    """
    for value in (explicit, *(os.environ.get(name) for name in (*more_env, MODEL_ENV))):
        if value and value.strip():
            return value.strip()
    return None


def dialect_name(explicit: str | None = None) -> str:
    """The dialect asked for, else ``$FNCALL_DIALECT``, else ``auto``."""
    return explicit or os.environ.get(DIALECT_ENV) or "auto"


def approved_tools(text: str | None = None) -> list[str]:
    """Tool names from a comma-separated list (default: ``$FNCALL_APPROVE``), in order.

    Example:
        >>> approved_tools(" sqlite-write_query, ,sqlite-create_table")
        ['sqlite-write_query', 'sqlite-create_table']
    """
    if text is None:
        text = os.environ.get(APPROVE_ENV, "")
    return list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))


def keep_model_input() -> bool:
    """Whether ``$FNCALL_KEEP_MODEL_INPUT`` asks checkpoints to keep each model input."""
    return os.environ.get(KEEP_MODEL_INPUT_ENV, "").strip().lower() in ("1", "true", "yes")
