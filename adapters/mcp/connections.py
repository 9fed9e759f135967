"""Connection dicts: how to reach one MCP server (langchain-mcp-adapters' format).

Both SDK generations take them (see :mod:`.stack`), so they are defined here rather than
imported from langchain-mcp-adapters, which only the mcp 1.x stack installs.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

__all__ = []


class StdioConnection(TypedDict):
    """A server started as a process, spoken to over its stdin and stdout."""

    transport: Literal["stdio"]
    command: str
    args: list[str]
    env: NotRequired[dict[str, str] | None]
    cwd: NotRequired[str | Path | None]
    encoding: NotRequired[str]
    encoding_error_handler: NotRequired[Literal["strict", "ignore", "replace"]]
    session_kwargs: NotRequired[dict[str, Any] | None]
    """Passed to the SDK's session (mcp 1.x ``ClientSession``, mcp 2.x ``Client``)."""


class SSEConnection(TypedDict):
    """A server at a URL, over the older HTTP+SSE transport."""

    transport: Literal["sse"]
    url: str
    headers: NotRequired[dict[str, Any] | None]
    timeout: NotRequired[float]
    sse_read_timeout: NotRequired[float]
    session_kwargs: NotRequired[dict[str, Any] | None]
    httpx_client_factory: NotRequired[Any]
    auth: NotRequired[Any]
    """An ``httpx.Auth`` (mcp 1.x) or ``httpx2.Auth`` (mcp 2.x)."""


class StreamableHttpConnection(TypedDict):
    """A server at a URL, over streamable HTTP."""

    transport: Literal["streamable_http"]
    url: str
    headers: NotRequired[dict[str, Any] | None]
    timeout: NotRequired[float | timedelta]
    sse_read_timeout: NotRequired[float | timedelta]
    terminate_on_close: NotRequired[bool]
    session_kwargs: NotRequired[dict[str, Any] | None]
    httpx_client_factory: NotRequired[Any]
    auth: NotRequired[Any]
    """An ``httpx.Auth`` (mcp 1.x) or ``httpx2.Auth`` (mcp 2.x)."""


class WebsocketConnection(TypedDict):
    """A server at a ``ws://`` URL (mcp 1.x only)."""

    transport: Literal["websocket"]
    url: str
    session_kwargs: NotRequired[dict[str, Any] | None]


Connection = StdioConnection | SSEConnection | StreamableHttpConnection | WebsocketConnection
