"""The model boundary: dialects (canonical history ⇄ model text), tool schemas, MCP and model specs.

Nothing here knows about graphs; nodes call into this package.
"""

from __future__ import annotations

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
from .formats.registry import DIALECT_NAMES, get_dialect
from .formats.schema import ToolLike, ToolSpec, clean_schema, to_tool_spec, to_tool_specs
from .models.chat_model import with_dialect

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
