"""The seam (:mod:`.stack`) on mcp 1.x: sessions opened by langchain-mcp-adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx as http
from mcp import ClientSession
from mcp import McpError as MCPError
from mcp.types import INTERNAL_ERROR, ErrorData, InitializeResult

from fncall_graph._compat import answer_mcp1_request

from .errors import non_object_result

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
    opened: list[ClientSession] = []
    kwargs["message_handler"] = _answering_unreadable(opened, kwargs.get("message_handler"))
    async with create_session({**connection, "session_kwargs": kwargs}) as session:  # type: ignore[arg-type, typeddict-item]
        opened.append(session)
        yield session, await session.initialize()


def _answering_unreadable(opened: list[ClientSession], then: Any) -> Any:
    """The session's message handler: a response whose ``result`` is not an object (the
    transport could not read it, and hands on its validation error) answers its request
    with an error at once, as on mcp 2.x; everything else goes to ``then``."""

    async def handle(message: Any) -> None:
        answered = non_object_result(message) if isinstance(message, Exception) else None
        if answered is not None and opened:
            said = ErrorData(code=INTERNAL_ERROR, message=answered[1])
            if await answer_mcp1_request(opened[0], answered[0], said):
                return
        if then is not None:
            await then(message)

    return handle


def authorization_code(code: str, state: str | None, iss: str | None) -> tuple[str, str | None]:
    """What an OAuth callback handler returns on mcp 1.x: the pair (mcp 1.x does not
    check the redirect's issuer)."""
    return code, state
