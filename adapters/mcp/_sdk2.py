"""The seam (:mod:`.stack`) on mcp 2.x: the SDK's own ``Client``, which negotiates
2026-07-28 (``server/discover``) and falls back to the 2025-11-25 handshake."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import anyio
import httpx2 as http
import pydantic
from mcp import Client, MCPError, StdioServerParameters
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult
from mcp.shared.message import SessionMessage
from mcp.types import (
    INTERNAL_ERROR,
    ErrorData,
    Implementation,
    InitializeResult,
    JSONRPCError,
    JSONRPCResponse,
)

from .errors import non_object_result

if TYPE_CHECKING:
    from .handlers import Handlers

__all__ = ["MCPError", "authorization_code", "http", "http_refusal", "open_session"]

logger = logging.getLogger(__name__)


class _Client(Client):
    """mcp 2.x's ``Client``, keeping the HTTP refusal of the latest request it sent: the
    SDK answers a refused request with a bare "Server returned an error response"."""

    refused: http.HTTPStatusError | None = None


def http_refusal(session: Any) -> http.HTTPStatusError | None:
    """The HTTP 401/403 the latest request of ``session`` was refused with, if it was."""
    return getattr(session, "refused", None)


# Connection keys with no counterpart in mcp 2.x, said when used rather than ignored
_NO_TRANSPORT = "the websocket transport is not in mcp 2.x; use streamable_http"


def _seconds(value: float | timedelta | None, default: float) -> float:
    if value is None:
        return default
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


async def _http_client(
    connection: Mapping[str, Any], stack: AsyncExitStack, noted: list[_Client]
) -> http.AsyncClient:
    headers = connection.get("headers")
    timeout = http.Timeout(
        _seconds(connection.get("timeout"), 30.0),
        read=_seconds(connection.get("sse_read_timeout"), 300.0),
    )
    factory = connection.get("httpx_client_factory")
    if factory is not None:
        client = factory(headers=headers, timeout=timeout, auth=connection.get("auth"))
    else:
        client = http.AsyncClient(
            headers=headers, timeout=timeout, auth=connection.get("auth"), follow_redirects=True
        )

    async def note(response: http.Response) -> None:
        # an auth flow may retry after a refusal: the latest response is what counts
        if noted:
            refused = response.status_code in (401, 403)
            noted[0].refused = (
                http.HTTPStatusError("refused", request=response.request, response=response)
                if refused
                else None
            )

    client.event_hooks["response"] = [*client.event_hooks["response"], note]
    return await stack.enter_async_context(client)


class _StartingStderr:
    """A stdio server's stderr, held back while its session starts, then passed on.

    The client first asks for 2026-07-28 (``server/discover``); a server on mcp 1.x logs
    that request it does not know as ~90 lines of validation errors on its stderr, which
    is the user's terminal. What the server writes before its session is open is
    therefore held: logged at debug level once it started, written out as it was when it
    did not (its own words on why). After the start, its stderr goes to this process's,
    as before. A mark written into the same pipe when the start ends says where that
    is: everything the server wrote before comes ahead of it."""

    _MARK = "\n\x00fncall-graph: {}\x00\n"
    #: seconds a failed start waits for the held text to be written out (it is read from
    #: a local pipe, at once; the bound only keeps a stuck terminal from holding the error)
    _PASS_ON = 5.0

    def __init__(self, command: str) -> None:
        self.command = command
        read, write = os.pipe()
        self.file = os.fdopen(write, "w", encoding="utf-8", errors="replace")
        self._passed = threading.Event()  # the held text is passed on
        self._reader = threading.Thread(
            target=self._pump, args=(read,), name="mcp-stderr", daemon=True
        )
        self._reader.start()

    def started(self, ok: bool) -> None:
        """The session opened (``ok``) or did not: pass on what was held accordingly.

        When it did not, this returns once the server's words are written out: the error
        that follows may end the program, and the reader is a daemon thread."""
        self.file.write(self._MARK.format("started" if ok else "failed"))
        self.file.flush()
        if not ok:
            self._passed.wait(self._PASS_ON)

    def close(self) -> None:
        self.file.close()  # the reader ends once the server's end is closed too

    def _pump(self, fd: int) -> None:
        held: list[str] | None = []
        marks = {self._MARK.format(word).strip("\n"): word for word in ("started", "failed")}
        with os.fdopen(fd, encoding="utf-8", errors="replace") as pipe:
            for line in pipe:
                word = marks.get(line.rstrip("\n"))
                if held is not None and word is not None:
                    for said in held:
                        if word == "started":
                            logger.debug("MCP server %r wrote on stderr: %s", self.command, said)
                        else:
                            sys.stderr.write(said + "\n")
                    sys.stderr.flush()
                    held = None
                    self._passed.set()
                elif word is not None:
                    continue
                elif held is not None:
                    if line.strip():
                        held.append(line.rstrip("\n"))
                else:
                    sys.stderr.write(line)
                    sys.stderr.flush()
        if held:  # the start was cut short (cancelled): what the server said is not lost
            sys.stderr.write("".join(said + "\n" for said in held))
            sys.stderr.flush()


def _read_as_mcp_says(message: SessionMessage | Exception) -> SessionMessage | Exception:
    """One message from the server, read as MCP says a client reads it where mcp 2.x
    does not: a result without ``resultType`` is complete (the SDK refuses it on a
    2026-07-28 session), and a response whose ``result`` is not an object answers its
    request with an error (the SDK drops it, and the request would wait out its timeout).
    """
    if isinstance(message, SessionMessage):
        response = message.message
        if isinstance(response, JSONRPCResponse) and "resultType" not in response.result:
            completed = JSONRPCResponse(
                jsonrpc="2.0", id=response.id, result={**response.result, "resultType": "complete"}
            )
            return SessionMessage(completed, metadata=message.metadata)
        return message
    if isinstance(message, pydantic.ValidationError):
        answered = non_object_result(message)
        if answered is not None:
            said = ErrorData(code=INTERNAL_ERROR, message=answered[1])
            return SessionMessage(JSONRPCError(jsonrpc="2.0", id=answered[0], error=said))
    return message


@asynccontextmanager
async def _read_by_the_spec(transport: Transport) -> AsyncIterator[Any]:
    """``transport``, its messages from the server passed through
    :func:`_read_as_mcp_says` (a Transport on the SDK's public protocol)."""
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def forward() -> None:
            async with send:
                async for message in read:
                    await send.send(_read_as_mcp_says(message))

        async with anyio.create_task_group() as group:
            group.start_soon(forward)
            try:
                yield receive, write
            finally:
                group.cancel_scope.cancel()


@asynccontextmanager
async def open_session(
    connection: Mapping[str, Any], handlers: Handlers
) -> AsyncIterator[tuple[Client, InitializeResult]]:
    """An open ``Client`` of ``connection`` (a connection dict as for mcp 1.x), and what
    the server said at the start, as an ``InitializeResult``."""
    transport = connection["transport"]
    async with AsyncExitStack() as stack:
        noted: list[_Client] = []  # the client, once made, for the HTTP client's hook
        server: Any
        stderr: _StartingStderr | None = None
        if transport == "stdio":
            stderr = _StartingStderr(connection["command"])
            stack.callback(stderr.close)
            server = stdio_client(
                StdioServerParameters(
                    command=connection["command"],
                    args=list(connection.get("args") or ()),
                    env=connection.get("env"),
                    cwd=connection.get("cwd"),
                    encoding=connection.get("encoding") or "utf-8",
                    encoding_error_handler=connection.get("encoding_error_handler") or "strict",
                ),
                errlog=stderr.file,
            )
        elif transport in ("streamable_http", "streamable-http", "http"):
            server = streamable_http_client(
                connection["url"],
                http_client=await _http_client(connection, stack, noted),
                terminate_on_close=connection.get("terminate_on_close", True),
            )
        elif transport == "sse":
            server = sse_client(
                connection["url"],
                headers=connection.get("headers"),
                timeout=_seconds(connection.get("timeout"), 5.0),
                sse_read_timeout=_seconds(connection.get("sse_read_timeout"), 300.0),
                auth=connection.get("auth"),
            )
        else:
            raise ValueError(_NO_TRANSPORT if transport == "websocket" else transport)
        client = _Client(
            _read_by_the_spec(server),
            logging_callback=handlers.logging,
            # the server decides what to send, as on a 2025-11-25 session
            log_level="debug",
            elicitation_callback=handlers.elicitation,
            sampling_callback=handlers.sampling,
            list_roots_callback=handlers.list_roots,
            **(connection.get("session_kwargs") or {}),
        )
        noted.append(client)
        try:
            await stack.enter_async_context(client)
        except Exception as exc:
            if stderr is not None:
                stderr.started(False)
            if client.refused is not None:  # the bare error hides it: say the refusal
                raise client.refused from exc
            raise
        if stderr is not None:
            stderr.started(True)
        init = InitializeResult(
            protocolVersion=client.protocol_version,
            capabilities=client.server_capabilities,
            # a 2026-07-28 server need not name itself
            serverInfo=client.server_info or Implementation(name="", version=""),
            instructions=client.instructions,
        )
        yield client, init


def authorization_code(code: str, state: str | None, iss: str | None) -> AuthorizationCodeResult:
    """What an OAuth callback handler returns on mcp 2.x: a model, with the redirect's
    issuer, which the SDK compares with the authorization server's (RFC 9207)."""
    return AuthorizationCodeResult(code=code, state=state, iss=iss)
