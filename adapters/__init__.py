"""The model boundary: dialects (canonical history ⇄ model text), tool schemas, MCP and model specs.

Nothing here knows about graphs; nodes call into this package.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .formats.base import (
    Block,
    CallEvent,
    ContentDelta,
    Dialect,
    InvalidCallEvent,
    ParseEvent,
    PromptDialect,
    ReasoningDelta,
    StreamParser,
)
from .formats.normalize import normalize
from .formats.schema import ToolLike, ToolSpec, clean_schema, to_tool_spec, to_tool_specs
from .models.chat_model import with_dialect

# name -> (module, class); aliases point at the same entry
_DIALECTS: dict[str, tuple[str, str]] = {
    "hermes": ("formats.hermes", "HermesDialect"),
    "nous": ("formats.hermes", "HermesDialect"),
    "qwen": ("formats.qwen", "QwenDialect"),
    "react": ("formats.react", "ReActDialect"),
    "native": ("formats.native", "NativeDialect"),
}

DIALECT_NAMES: tuple[str, ...] = tuple(_DIALECTS)


def get_dialect(name: str | Dialect, **options: Any) -> Dialect:
    """Return the dialect called ``name``, built with ``options``.

    Args:
        name: ``"hermes"`` (alias ``"nous"``), ``"qwen"``, ``"react"`` or ``"native"``;
            a :class:`Dialect` instance is returned as it is.
        **options: dialect options, e.g. ``lang="zh"`` and ``parallel=False`` for ``"qwen"``.

    Raises:
        ValueError: for an unknown name, listing the known ones.

    Example:
        >>> d = get_dialect("qwen", lang="zh")
        >>> d.stop
        ('✿RESULT✿', '✿RETURN✿')
    """
    if isinstance(name, Dialect):
        if options:
            raise ValueError("options apply to a dialect name, not to a Dialect instance")
        return name
    key = str(name).strip().lower()
    if key not in _DIALECTS:
        known = ", ".join(sorted(_DIALECTS))
        raise ValueError(f"unknown dialect {name!r}; known dialects: {known}")
    module, cls = _DIALECTS[key]
    return getattr(import_module(f"{__name__}.{module}"), cls)(**options)


__all__ = [
    "DIALECT_NAMES",
    "Block",
    "CallEvent",
    "ContentDelta",
    "Dialect",
    "InvalidCallEvent",
    "ParseEvent",
    "PromptDialect",
    "ReasoningDelta",
    "StreamParser",
    "ToolLike",
    "ToolSpec",
    "clean_schema",
    "get_dialect",
    "normalize",
    "to_tool_spec",
    "to_tool_specs",
    "with_dialect",
]
