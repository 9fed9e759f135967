"""fncall-graph: dependable tool use over MCP tools for any chat model, on LangGraph."""

from __future__ import annotations

__version__ = "0.1.0"
