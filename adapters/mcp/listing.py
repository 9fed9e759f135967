"""A server's lists read whole: every page of a listing, and the tools this client can
call among those listed."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .stack import wire

__all__ = []

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


# MCP 2025-11-25, "Tool names": 1 to 128 characters, of A-Z, a-z, 0-9, "_", "-" and "."
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def tool_name_problem(name: str) -> str | None:
    """How ``name`` breaks MCP's naming rule for tools (1 to 128 characters, only ASCII
    letters, digits, ``_``, ``-`` and ``.``), said in a few words; ``None`` if it keeps it.

    Example:
        >>> tool_name_problem("read_query") is None, tool_name_problem("re\u0430d")
        (True, 'it has characters other than A-Z a-z 0-9 _ - . (1 of 4)')
    """
    if _TOOL_NAME.fullmatch(name):
        return None
    if not name:
        return "it is empty"
    problems = []
    if len(name) > 128:
        problems.append(f"it is {len(name)} characters long, more than 128")
    odd = sum(1 for c in name if not _TOOL_NAME.fullmatch(c))
    if odd:
        problems.append(f"it has characters other than A-Z a-z 0-9 _ - . ({odd} of {len(name)})")
    return "; ".join(problems)


def check_tool_names(server: str, tools: list[dict[str, Any]]) -> None:
    """Warn, one line each, of the tools whose names break MCP's naming rule: such a
    name still works, but may look like another (a Cyrillic letter, a control character
    that rewrites the line it is shown on). The name is written out in ASCII, cut short."""
    for tool in tools:
        name = tool.get("name")
        problem = tool_name_problem(name) if isinstance(name, str) else "it is not a string"
        if problem is None:
            continue
        shown = ascii(name[:64] if isinstance(name, str) else name)
        if isinstance(name, str) and len(name) > 64:
            shown += "…"
        logger.warning(
            "MCP server %r: tool name %s breaks MCP's naming rule (%s); it is kept as named",
            server,
            shown,
            problem,
        )


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
