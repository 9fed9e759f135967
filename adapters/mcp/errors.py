"""What goes wrong with MCP servers, as exceptions that say what and where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.tools import ToolException

from ..secrets import redact

__all__ = ["MCPAuthError", "MCPCallOutcomeUnknown", "MCPConfigError", "MCPServerError"]


class MCPConfigError(ValueError):
    """A config that cannot work, refused before any server starts.

    The message starts with the path of the faulty field, e.g.
    `mcpServers.sqlite.command: must be a string`.

    Attributes:
        where: dotted path of the field (`mcpServers.sqlite.command`).
        problem: what is wrong with it.
    """

    def __init__(self, where: str, problem: str) -> None:
        problem = redact(problem)  # a URL with its token, say
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


class MCPServerError(RuntimeError):
    """An MCP server that cannot start, died for good, or is unknown.

    The message starts with `MCP server '<name>'` and says what went wrong.

    Attributes:
        server: the server's name in the config.
        reason: what went wrong, without the server prefix.
    """

    def __init__(self, server: str, reason: str) -> None:
        reason = redact(reason)  # the server's URL and words: its tokens masked
        super().__init__(f"MCP server {server!r}: {reason}")
        self.server = server
        self.reason = reason


class MCPAuthError(MCPServerError, ToolException):
    """A remote server refused this client's credentials (HTTP 401 or 403), after the
    client's OAuth, if any, tried what it could: e.g. ``HTTP 403 insufficient_scope``.

    An :class:`MCPServerError` when the toolkit starts; a `ToolException` in a call, so the
    model is told the call was refused and why (a person must grant the access).
    """


class MCPToolTimeoutError(ToolException, TimeoutError):
    """A call that took longer than the toolkit's `call_timeout`.

    A `ToolException`, so a tool invoked with a tool call returns
    `ToolMessage(status="error")` naming the server, the tool and the timeout.
    """

    def __init__(self, server: str, what: str, timeout: float) -> None:
        super().__init__(
            f"MCP server {server!r}: {what} timed out after {timeout:g} s. The server may "
            "still finish the call, so it may or may not take effect: check its effect "
            "before repeating it"
        )
        self.server = server
        self.timeout = timeout


class MCPCallOutcomeUnknown(ToolException):
    """The server died or the connection dropped while a call ran, and the call was not
    retried (the tool is not read-only or idempotent): it may or may not have happened.

    A `ToolException`, so a tool invoked with a tool call returns
    `ToolMessage(status="error")` with this text.
    """

    def __init__(self, server: str, what: str, cause: object) -> None:
        super().__init__(
            f"Outcome unknown: MCP server {server!r} stopped answering during {what} "
            f"({redact(str(cause))}). The call may or may not have taken effect and it was not run "
            "again. Check its effect (for example with a read) before repeating it, or "
            "tell the user"
        )
        self.server = server


class Disconnected(Exception):
    """Internal: the session is gone (process died, connection dropped)."""

    def __init__(self, cause: BaseException | str, *, unsent: bool = False) -> None:
        # anyio's ClosedResourceError / EndOfStream have no message: name the type then
        super().__init__(str(cause) or type(cause).__name__)
        self.cause = cause
        self.unsent = unsent  # found before the request went out: it did not happen


def non_object_result(invalid: Exception) -> tuple[int | str, str] | None:
    """The request id and the error message for a response whose ``result`` is not a
    JSON object, from the validation error an SDK's transport gave for it, else ``None``.

    MCP's results are objects; neither SDK can read such a response, and both hand on the
    validation error instead, so the request it answers would wait out its timeout. Each
    stack answers the request with this error instead (``_sdk1``, ``_sdk2``).
    """
    errors = getattr(invalid, "errors", None)
    if not callable(errors):
        return None
    for error in errors():
        sent: Any = error.get("input")  # the JSON-RPC envelope the transport could not read
        if (
            isinstance(sent, Mapping)
            and isinstance(sent.get("id"), str | int)
            and not isinstance(sent["id"], bool)
            and "result" in sent
            and not isinstance(sent["result"], Mapping)
        ):
            kind = type(sent["result"]).__name__.replace("NoneType", "null")
            said = f"the server answered with a result that is not an object (a JSON {kind}: "
            return sent["id"], said + f"{str(sent['result'])[:200]})"
    return None
