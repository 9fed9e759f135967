"""Why an MCP session failed, read from the SDK's and the transport's exceptions.

A lost connection (and whether the request had left this process), credentials a remote
server refused (HTTP 401/403), and a server that did not start, said in one line.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from mcp.types import CONNECTION_CLOSED

from .stack import MCPError, http

__all__ = []


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The errors inside ``exc``, exception groups opened all the way down."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaf_errors(sub)]
    return [exc]


DISCONNECT_ERRORS: tuple[type[BaseException], ...] = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    http.TransportError,
    ConnectionError,
)

# Raised by the session's send of a request on a closed stream: the request never left
# this process (a session that ends with requests in flight fails them with an MCPError
# instead), so it is safe to send again after a restart. The one later request of a
# call, the output-schema lookup after a result, is kept from happening by listing the
# tools of every new session (see `Server._restart`).
UNSENT_ERRORS: tuple[type[BaseException], ...] = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
)


def auth_refusal(exc: BaseException | None) -> str | None:
    """What an HTTP 401/403 refusal among ``exc``'s errors says (its ``WWW-Authenticate``
    challenge), or ``None`` when the session did not end on one."""
    for err in leaf_errors(exc) if exc is not None else ():
        if isinstance(err, http.HTTPStatusError) and err.response.status_code in (401, 403):
            code = err.response.status_code
            challenge = dict(
                re.findall(r'(\w+)="([^"]*)"', err.response.headers.get("www-authenticate", ""))
            )
            error = challenge.get("error") or ("invalid_token" if code == 401 else "forbidden")
            text = f"HTTP {code} {error}"
            if challenge.get("scope"):
                text += f" (the scope it needs: {challenge['scope']})"
            if challenge.get("error_description"):
                text += f": {challenge['error_description']}"
            return text
    return None


def startup_cause(exc: BaseException, connection: Mapping[str, Any]) -> str:
    """Say in one line why a server did not start."""
    leaves = [e for e in leaf_errors(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
    err = leaves[0]
    command = connection.get("command")
    url = connection.get("url")
    cwd = connection.get("cwd")
    if isinstance(err, FileNotFoundError | NotADirectoryError) and cwd and not Path(cwd).is_dir():
        return f"failed to start: working directory {cwd!r} does not exist"
    if isinstance(err, FileNotFoundError) and command:
        return f"failed to start: command {command!r} not found"
    if isinstance(err, PermissionError) and command:
        return f"failed to start: command {command!r} is not executable"
    closed = isinstance(err, MCPError) and err.error.code == CONNECTION_CLOSED
    # a process that exits at once may also break the pipe before the SDK sees it close
    if closed or isinstance(
        err, anyio.BrokenResourceError | anyio.ClosedResourceError | anyio.EndOfStream
    ):
        if command:
            return (
                f"failed to start: {command!r} closed the connection during initialization "
                "(the process exited or is not an MCP server; see its stderr)"
            )
        return f"failed to start: {url} closed the connection during initialization"
    if isinstance(err, http.ConnectError):
        return f"failed to start: cannot connect to {url}: {err}"
    refused = auth_refusal(err)
    if refused is not None:
        return f"failed to start: {url} refused the credentials: {refused}"
    if isinstance(err, http.HTTPStatusError):
        return f"failed to start: HTTP {err.response.status_code} from {url}"
    return f"failed to start: {type(err).__name__}: {err}"
