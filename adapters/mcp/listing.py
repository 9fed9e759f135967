"""A server's lists read whole: every page of a listing, and the tools this client can
call among those listed."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .stack import wire

__all__ = ["callable_tools"]

# the sessions' logger, whose records these were before they had a module of their own
logger = logging.getLogger("fncall_graph.adapters.mcp.sessions")

T = TypeVar("T")


def callable_tools(server: str, tools: list[T]) -> list[T]:
    """``tools`` (SDK objects or their :func:`~.stack.wire` form) without those the server
    runs only as tasks, which this client cannot run (each one left out is logged)."""
    kept = []
    for tool in tools:
        listed = wire(tool)
        if (listed.get("execution") or {}).get("taskSupport") == "required":
            logger.info(
                "MCP server %r: tool %r runs only as a task, which this client does not "
                "support; left out",
                server,
                listed["name"],
            )
        else:
            kept.append(tool)
    return kept


async def paginate(
    fetch: Callable[[str | None], Awaitable[Any]], field: str
) -> list[dict[str, Any]]:
    """Every page's ``field`` (its protocol name: ``tools``, ``resourceTemplates``), as
    :func:`~.stack.wire` dicts."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):
        page = wire(await fetch(cursor))
        items.extend(page.get(field) or [])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return items
