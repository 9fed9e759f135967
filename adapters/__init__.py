"""The model boundary: dialects (canonical history ⇄ model text), tool schemas, MCP and model specs.

Nothing here knows about graphs; nodes call into this package.
"""

from __future__ import annotations

from .formats.base import Dialect
from .formats.normalize import normalize
from .formats.registry import get_dialect
from .models.chat_model import with_dialect

__all__ = ["Dialect", "get_dialect", "normalize", "with_dialect"]
