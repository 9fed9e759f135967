"""The seam (:mod:`.stack`) on mcp 1.x: sessions opened by langchain-mcp-adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx as http
from mcp import ClientSession
from mcp import McpError as MCPError
from mcp.types import InitializeResult

if TYPE_CHECKING:
    from .handlers import Handlers

__all__ = ["MCPError", "authorization_code", "http", "http_refusal", "open_session"]


def http_refusal(session: Any) -> None:
    """mcp 1.x raises an HTTP refusal itself: the session ends on it."""
    return None


@asynccontextmanager
async def open_session(
    connection: Mapping[str, Any], handlers: Handlers
) -> AsyncIterator[tuple[ClientSession, InitializeResult]]:
    """An initialized session of ``connection`` (a langchain-mcp-adapters connection dict)."""
    try:
        from langchain_mcp_adapters.sessions import create_session
    except ImportError as exc:  # mcp 1.x installed without the extra that brings it
        raise RuntimeError(
            "MCP on mcp 1.x needs langchain-mcp-adapters (fncall-graph's mcp1 extra): "
            "pip install 'langchain-mcp-adapters>=0.3.2,<0.4', or 'mcp>=2.3,<3' for the "
            "mcp 2.x stack"
        ) from exc
    kwargs: dict[str, Any] = {
        **(connection.get("session_kwargs") or {}),
        "logging_callback": handlers.logging,
        "elicitation_callback": handlers.elicitation,
    }
    if handlers.sampling is not None:
        kwargs["sampling_callback"] = handlers.sampling
    if handlers.list_roots is not None:
        kwargs["list_roots_callback"] = handlers.list_roots
    async with create_session({**connection, "session_kwargs": kwargs}) as session:  # type: ignore[arg-type, typeddict-item]
        yield session, await session.initialize()


def authorization_code(code: str, state: str | None, iss: str | None) -> tuple[str, str | None]:
    """What an OAuth callback handler returns on mcp 1.x: the pair (mcp 1.x does not
    check the redirect's issuer)."""
    return code, state
