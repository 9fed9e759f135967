"""MCP servers as LangChain tools over persistent sessions.

This module turns the MCP servers of a config file into LangChain tools that any
chat model (and any LangGraph node) can call. It is built on
`langchain-mcp-adapters`: sessions come from its `create_session`, tools from its
`load_mcp_tools` (so MCP results are converted exactly as the adapters convert
them), and each tool is then wrapped to add what a dependable agent needs:

- **one persistent session per server**, opened once and shared by every call
  (the adapters' `MultiServerMCPClient.get_tools()` starts a new server process
  for every call);
- **names `server-tool`** (`sqlite-read_query`) and schemas cleaned to
  `{"type": "object", "properties": ..., "required": [...]}` for prompt dialects;
- **results as text**: text parts joined with `"\\n\\n"`; images and other parts
  kept in the artifact; MCP `isError` results become error `ToolMessage`s;
- **faults handled**: per-call timeout, a dead server restarted and the call
  retried once, a server that cannot start reported at once with its cause;
- **resources** as two more tools per server: `server-list_resources` and
  `server-read_resource`.

Example:
    ```python
    from fncall_graph.adapters.mcp import MCPToolkit

    config = {
        "mcpServers": {
            "sqlite": {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "test.db"]}
        }
    }
    async with MCPToolkit.from_config(config) as toolkit:
        tools = toolkit.tools  # sqlite-read_query, sqlite-list_tables, ...
        list_tables = toolkit.get_tool("sqlite-list_tables")
        print(await list_tables.ainvoke({}))
        # [{'name': 'students'}, {'name': 'sqlite_sequence'}, {'name': 'log'}]
    ```

Sessions always live on one event loop, the owner loop: with `async with` it is
the caller's loop; with `start_sync()` (or `with`) it is a background loop thread.
Calls from any other loop or thread are marshalled to it with
`asyncio.run_coroutine_threadsafe`, so both `tool.invoke` and `tool.ainvoke` work.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypedDict, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx
import pydantic
from langchain_core.messages.content import create_file_block, create_image_block
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_mcp_adapters.sessions import (
    Connection,
    SSEConnection,
    StdioConnection,
    StreamableHttpConnection,
    WebsocketConnection,
    create_session,
)
from langchain_mcp_adapters.tools import load_mcp_tools as _adapters_load_mcp_tools
from mcp import ClientSession, McpError
from mcp.types import (
    CONNECTION_CLOSED,
    BlobResourceContents,
    InitializeResult,
    TextResourceContents,
)

from .schema import clean_schema

__all__ = [
    "MCPArtifact",
    "MCPConfigError",
    "MCPServerError",
    "MCPToolTimeoutError",
    "MCPToolkit",
    "clean_schema",
    "load_mcp_tools",
    "parse_mcp_config",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]]
"""A config: a path to a JSON file, a dict, or Qwen-Agent's list of such dicts."""


# --------------------------------------------------------------------------- errors


class MCPConfigError(ValueError):
    """A config that cannot work, refused before any server starts.

    The message starts with the path of the faulty field, e.g.
    `mcpServers.sqlite.command: must be a string`.

    Attributes:
        where: dotted path of the field (`mcpServers.sqlite.command`).
        problem: what is wrong with it.
    """

    def __init__(self, where: str, problem: str) -> None:
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
        super().__init__(f"MCP server {server!r}: {reason}")
        self.server = server
        self.reason = reason


class MCPToolTimeoutError(ToolException, TimeoutError):
    """A call that took longer than the toolkit's `call_timeout`.

    A `ToolException`, so a tool invoked with a tool call returns
    `ToolMessage(status="error")` naming the server, the tool and the timeout.
    """

    def __init__(self, server: str, what: str, timeout: float) -> None:
        super().__init__(f"MCP server {server!r}: {what} timed out after {timeout:g} s")
        self.server = server
        self.timeout = timeout


class _Disconnected(Exception):
    """Internal: the session is gone (process died, connection dropped)."""

    def __init__(self, cause: BaseException | str) -> None:
        # anyio's ClosedResourceError / EndOfStream have no message: name the type then
        super().__init__(str(cause) or type(cause).__name__)
        self.cause = cause


# --------------------------------------------------------------------------- config

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

# Transport spellings found in mcpServers files (Claude Desktop, Cursor, VS Code,
# Qwen-Agent), mapped to langchain-mcp-adapters' transport names.
_URL_TRANSPORTS = {
    "sse": "sse",
    "streamable-http": "streamable_http",
    "streamable_http": "streamable_http",
    "streamableHttp": "streamable_http",
    "http": "streamable_http",
    "websocket": "websocket",
    "ws": "websocket",
}

_CONNECTION_FIELDS: dict[str, frozenset[str]] = {
    "stdio": frozenset(StdioConnection.__annotations__),
    "sse": frozenset(SSEConnection.__annotations__),
    "streamable_http": frozenset(StreamableHttpConnection.__annotations__),
    "streamable-http": frozenset(StreamableHttpConnection.__annotations__),
    "http": frozenset(StreamableHttpConnection.__annotations__),
    "websocket": frozenset(WebsocketConnection.__annotations__),
}


def _expand(value: str, where: str) -> str:
    """Expand `${VAR}` (and `${VAR:-default}`) from os.environ; a missing VAR is an error."""

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise MCPConfigError(where, f"environment variable ${{{name}}} is not set")

    return _VAR_RE.sub(sub, value)


def _get_str(
    spec: Mapping[str, Any], key: str, where: str, *, required: bool = False
) -> str | None:
    if key not in spec or spec[key] is None:
        if required:
            raise MCPConfigError(f"{where}.{key}", "is required")
        return None
    value = spec[key]
    if not isinstance(value, str):
        raise MCPConfigError(f"{where}.{key}", f"must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise MCPConfigError(f"{where}.{key}", "must not be empty")
    return _expand(value, f"{where}.{key}")


def _get_str_list(spec: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = spec.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise MCPConfigError(
            f"{where}.{key}", f"must be a list of strings, got {type(value).__name__}"
        )
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise MCPConfigError(
                f"{where}.{key}[{i}]", f"must be a string, got {type(item).__name__}"
            )
        out.append(_expand(item, f"{where}.{key}[{i}]"))
    return out


def _get_str_dict(spec: Mapping[str, Any], key: str, where: str) -> dict[str, str] | None:
    value = spec.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise MCPConfigError(
            f"{where}.{key}", f"must be an object of strings, got {type(value).__name__}"
        )
    out = {}
    for k, v in value.items():
        if not isinstance(v, str):
            raise MCPConfigError(f"{where}.{key}.{k}", f"must be a string, got {type(v).__name__}")
        out[str(k)] = _expand(v, f"{where}.{key}.{k}")
    return out


def _get_seconds(spec: Mapping[str, Any], key: str, where: str) -> float | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise MCPConfigError(
            f"{where}.{key}", f"must be a positive number of seconds, got {value!r}"
        )
    return float(value)


def _stdio_connection(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    conn: dict[str, Any] = {
        "transport": "stdio",
        "command": _get_str(spec, "command", where, required=True),
        "args": _get_str_list(spec, "args", where),
    }
    env = _get_str_dict(spec, "env", where)
    if env is not None:
        # The MCP SDK would otherwise start the server with a bare environment
        # plus `env`, so PATH, HOME, virtualenv settings etc. would be lost.
        conn["env"] = {**os.environ, **env}
    cwd = _get_str(spec, "cwd", where)
    if cwd is not None:
        conn["cwd"] = cwd
    return conn


def _url_connection(spec: Mapping[str, Any], where: str, transport: str) -> dict[str, Any]:
    url = _get_str(spec, "url", where, required=True)
    assert url is not None
    schemes = ("ws", "wss") if transport == "websocket" else ("http", "https")
    parts = urlsplit(url)
    if parts.scheme not in schemes or not parts.netloc:
        raise MCPConfigError(f"{where}.url", f"must be a {'/'.join(schemes)} URL, got {url!r}")
    conn: dict[str, Any] = {"transport": transport, "url": url}
    if transport == "websocket":
        return conn
    headers = _get_str_dict(spec, "headers", where)
    if headers is not None:
        conn["headers"] = headers
    for key in ("timeout", "sse_read_timeout"):
        seconds = _get_seconds(spec, key, where)
        if seconds is not None:
            conn[key] = seconds
    return conn


def _parse_mcp_servers_entry(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One entry of the `{"mcpServers": {...}}` format (unknown keys are ignored)."""
    kind_key = "type" if "type" in spec else "transport"
    kind = spec.get(kind_key)
    if kind is not None and not isinstance(kind, str):
        raise MCPConfigError(f"{where}.{kind_key}", f"must be a string, got {type(kind).__name__}")
    has_command, has_url = spec.get("command") is not None, spec.get("url") is not None
    if has_command and has_url:
        raise MCPConfigError(
            where, 'give either "command" (stdio) or "url" (sse / streamable-http), not both'
        )
    if has_command:
        if kind not in (None, "stdio"):
            raise MCPConfigError(
                f"{where}.{kind_key}", f'must be "stdio" for a server with "command", got {kind!r}'
            )
        return _stdio_connection(spec, where)
    if has_url:
        if kind is None:
            # No type given: the common convention is SSE for ".../sse" endpoints,
            # streamable HTTP otherwise.
            url = spec["url"]
            path = urlsplit(url).path if isinstance(url, str) else ""
            kind = "sse" if path.rstrip("/").endswith("/sse") else "streamable-http"
        if kind not in _URL_TRANSPORTS:
            raise MCPConfigError(
                f"{where}.{kind_key}",
                f"unknown transport {kind!r}; expected sse, streamable-http, http or websocket",
            )
        return _url_connection(spec, where, _URL_TRANSPORTS[kind])
    raise MCPConfigError(
        where, 'needs "command" (stdio server) or "url" (sse / streamable-http server)'
    )


def _parse_connection(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One langchain-mcp-adapters connection dict (`{"transport": "stdio", ...}`)."""
    transport = spec.get("transport")
    if transport is None:
        raise MCPConfigError(
            f"{where}.transport",
            "is required (stdio, sse, streamable_http or websocket); "
            'or wrap the servers in {"mcpServers": {...}}',
        )
    if not isinstance(transport, str) or transport not in _CONNECTION_FIELDS:
        raise MCPConfigError(
            f"{where}.transport",
            f"unknown transport {transport!r}; expected stdio, sse, streamable_http or websocket",
        )
    allowed = _CONNECTION_FIELDS[transport]
    for key in spec:
        if key not in allowed:
            raise MCPConfigError(f"{where}.{key}", f"unknown field for the {transport} transport")
    if transport == "stdio":
        if "args" not in spec:
            raise MCPConfigError(f"{where}.args", "is required for the stdio transport")
        checked = _stdio_connection(spec, where)
    else:
        checked = _url_connection(spec, where, transport)
    # Fields the adapters accept that need no checking here (session_kwargs, auth, ...).
    return {**dict(spec), **checked}


def _load_config(config: ConfigSource) -> Any:
    if isinstance(config, str | os.PathLike):
        path = Path(config)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise MCPConfigError(
                str(path), f"cannot read config file: {exc.strerror or exc}"
            ) from exc
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise MCPConfigError(str(path), f"invalid JSON: {exc}") from exc
    return config


def parse_mcp_config(config: ConfigSource) -> dict[str, Connection]:
    """Check an MCP config and turn it into langchain-mcp-adapters connections.

    Nothing is started. Two formats are read:

    - `{"mcpServers": {name: {...}}}` as used by Claude Desktop and Qwen-Agent:
      `command` / `args` / `env` / `cwd` for a stdio server; `url` with optional
      `type` (`"sse"`, `"streamable-http"`, `"streamable_http"`, `"http"`,
      `"websocket"`; default: SSE when the URL path ends in `/sse`, streamable
      HTTP otherwise) and `headers` for a remote one. Other keys are ignored.
      Qwen-Agent's list form `[{"mcpServers": {...}}]` is accepted too.
    - langchain-mcp-adapters' own `{name: {"transport": "stdio", ...}}` dicts,
      checked field by field (unknown fields are refused).

    `${VAR}` (or `${VAR:-default}`) in `command`, `args`, `env`, `cwd`, `url` and
    `headers` is expanded from `os.environ`. A stdio `env` is merged over
    `os.environ`, so `PATH` and the rest survive.

    Args:
        config: path of a JSON file, or the parsed dict.

    Returns:
        `{server_name: connection}`, ready for `create_session`.

    Raises:
        MCPConfigError: the message names the server and the field, e.g.
            `mcpServers.sqlite.command: must be a string`.

    Example:
        ```python
        parse_mcp_config({"mcpServers": {"sqlite": {"command": "uvx", "args": ["mcp-server-sqlite"]}}})
        # {'sqlite': {'transport': 'stdio', 'command': 'uvx', 'args': ['mcp-server-sqlite']}}
        ```
    """
    data = _load_config(config)
    if isinstance(data, list):
        merged: dict[str, Any] = {}
        for i, item in enumerate(data):
            if not isinstance(item, Mapping) or not isinstance(item.get("mcpServers"), Mapping):
                raise MCPConfigError(f"[{i}]", 'must be an object with "mcpServers"')
            merged.update(item["mcpServers"])
        data = {"mcpServers": merged}
    if not isinstance(data, Mapping):
        raise MCPConfigError("config", f"must be a JSON object, got {type(data).__name__}")
    if "mcpServers" in data:
        servers, prefix, parse = data["mcpServers"], "mcpServers.", _parse_mcp_servers_entry
        if not isinstance(servers, Mapping):
            raise MCPConfigError("mcpServers", "must be an object mapping server names to settings")
    else:
        servers, prefix, parse = data, "", _parse_connection
    if not servers:
        raise MCPConfigError(prefix.rstrip(".") or "config", "no servers configured")
    out: dict[str, Connection] = {}
    for name, spec in servers.items():
        where = f"{prefix}{name}"
        if not isinstance(name, str) or not name.strip():
            raise MCPConfigError(where, "server name must be a non-empty string")
        if not isinstance(spec, Mapping):
            raise MCPConfigError(where, f"must be an object, got {type(spec).__name__}")
        out[name] = parse(spec, where)  # type: ignore[assignment]
    return out


# --------------------------------------------------------------------------- schemas


# --------------------------------------------------------------------------- results


class MCPArtifact(TypedDict, total=False):
    """The artifact of a tool result (`ToolMessage.artifact`).

    Attributes:
        content: non-text parts as LangChain content blocks
            (`{"type": "image", "base64": ..., "mime_type": ...}`, `"file"` blocks).
        structured_content: the MCP result's `structuredContent`, when present.
        resources: for `list_resources`, the listed resources and templates.
    """

    content: list[dict[str, Any]]
    structured_content: dict[str, Any]
    resources: dict[str, Any]


def _b64_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def _describe_block(block: Mapping[str, Any]) -> str:
    """A short text standing in for a non-text part, so the model knows it is there."""
    kind = block.get("type", "data")
    mime = block.get("mime_type") or "application/octet-stream"
    if block.get("base64") is not None:
        return f"[{kind}: {mime}, {_b64_size(block['base64'])} bytes]"
    if block.get("url"):
        return f"[{kind}: {mime}, {block['url']}]"
    return f"[{kind}: {mime}]"


def _to_content_and_artifact(
    blocks: Sequence[Mapping[str, Any]], structured: Mapping[str, Any] | None
) -> tuple[str, MCPArtifact | None]:
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    others = [dict(b) for b in blocks if b.get("type") != "text"]
    content = "\n\n".join(texts + [_describe_block(b) for b in others])
    artifact: MCPArtifact = {}
    if others:
        artifact["content"] = others
    if structured is not None:
        artifact["structured_content"] = dict(structured)
    return content, (artifact or None)


def _tool_error_content(error: ToolException) -> str:
    """`handle_tool_error` for every tool: the error text the model gets to see."""
    blocks = getattr(error, "tool_content", None)  # set by the adapters for isError results
    if blocks:
        content, _ = _to_content_and_artifact(blocks, None)
        if content:
            return content
    return str(error) or "MCP tool error"


# --------------------------------------------------------------------------- servers


def _leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaf_errors(sub)]
    return [exc]


_DISCONNECT_ERRORS: tuple[type[BaseException], ...] = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx.TransportError,
    ConnectionError,
)


def _startup_cause(exc: BaseException, connection: Mapping[str, Any]) -> str:
    """Say in one line why a server did not start."""
    leaves = [e for e in _leaf_errors(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
    err = leaves[0]
    command = connection.get("command")
    url = connection.get("url")
    if isinstance(err, FileNotFoundError) and command:
        return f"failed to start: command {command!r} not found"
    if isinstance(err, PermissionError) and command:
        return f"failed to start: command {command!r} is not executable"
    if isinstance(err, McpError) and err.error.code == CONNECTION_CLOSED:
        if command:
            return (
                f"failed to start: {command!r} closed the connection during initialization "
                "(the process exited or is not an MCP server; see its stderr)"
            )
        return f"failed to start: {url} closed the connection during initialization"
    if isinstance(err, httpx.ConnectError):
        return f"failed to start: cannot connect to {url}: {err}"
    if isinstance(err, httpx.HTTPStatusError):
        return f"failed to start: HTTP {err.response.status_code} from {url}"
    return f"failed to start: {type(err).__name__}: {err}"


class _Link:
    """One live session of a server, owned by one task (the owner)."""

    def __init__(
        self,
        session: ClientSession,
        init: InitializeResult,
        owner: asyncio.Task[None],
        stop: asyncio.Event,
    ) -> None:
        self.session = session
        self.init = init
        self.owner = owner
        self.stop = stop
        self.alive = True
        self.inflight: set[asyncio.Timeout] = set()

    def lost(self) -> None:
        """The owner left the session: wake the calls still waiting on it."""
        self.alive = False
        loop = asyncio.get_running_loop()
        for timeout in list(self.inflight):
            timeout.reschedule(loop.time())


class _Server:
    """One MCP server: its session, restarts, timeouts and cross-loop calls.

    The session is opened and closed inside one owner task (anyio requires a
    cancel scope to be exited by the task that entered it); calls from any task
    use it while the owner waits for its stop event.
    """

    def __init__(
        self,
        name: str,
        connection: Connection,
        *,
        call_timeout: float | None,
        startup_timeout: float,
    ) -> None:
        self.name = name
        self.connection = connection
        self.call_timeout = call_timeout
        self.startup_timeout = startup_timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self.link: _Link | None = None
        self.restarts = 0
        self._lock: asyncio.Lock | None = None
        self._closed = False

    # -- lifecycle (owner loop only)

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._lock = asyncio.Lock()
        self.link = await self._open()

    async def _open(self) -> _Link:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[_Link] = loop.create_future()
        owner = loop.create_task(self._own(ready), name=f"mcp-server:{self.name}")
        try:
            async with asyncio.timeout(self.startup_timeout):
                return await asyncio.shield(ready)
        except TimeoutError:
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
            raise MCPServerError(
                self.name,
                f"failed to start: no answer to initialization within {self.startup_timeout:g} s",
            ) from None
        except BaseException:
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
            raise

    async def _own(self, ready: asyncio.Future[_Link]) -> None:
        """The owner task: open the session, hand it out, close it when told."""
        link: _Link | None = None
        try:
            async with create_session(self.connection) as session:
                init = await session.initialize()
                link = _Link(session, init, asyncio.current_task(), asyncio.Event())  # type: ignore[arg-type]
                ready.set_result(link)
                await link.stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(MCPServerError(self.name, _startup_cause(exc, self.connection)))
            else:
                logger.debug("MCP server %r: session ended with %r", self.name, exc)
        finally:
            if not ready.done():
                ready.cancel()
            if link is not None:
                link.lost()

    async def close(self, timeout: float = 10.0) -> None:
        self._closed = True
        link, self.link = self.link, None
        if link is not None:
            await self._close_link(link, timeout)

    async def _close_link(self, link: _Link, timeout: float = 10.0) -> None:
        link.stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(link.owner), timeout)
        except TimeoutError:
            logger.warning(
                "MCP server %r did not close within %g s; cancelling", self.name, timeout
            )
            link.owner.cancel()
            await asyncio.gather(link.owner, return_exceptions=True)
        except Exception:  # the owner already logged why the session ended
            pass

    async def _restart(self, failed: _Link, cause: object) -> _Link:
        assert self._lock is not None
        async with self._lock:
            current = self.link
            if current is not None and current is not failed and current.alive:
                return current  # another call restarted it already
            if self._closed:
                raise MCPServerError(self.name, "the toolkit is closed")
            logger.warning("MCP server %r: connection lost (%s); restarting", self.name, cause)
            self.link = None
            await self._close_link(failed, timeout=5.0)
            try:
                self.link = await self._open()
            except MCPServerError as exc:
                raise MCPServerError(
                    self.name, f"connection lost ({cause}) and restart {exc.reason}"
                ) from exc
            self.restarts += 1
            return self.link

    # -- calls

    async def request(self, what: str, op: Callable[[ClientSession], Awaitable[T]]) -> T:
        """Run `op(session)` on the owner loop, with timeout and one restart."""
        loop = self.loop
        if loop is None or self._closed:
            raise MCPServerError(
                self.name, "not running (the toolkit is not started or already closed)"
            )
        if asyncio.get_running_loop() is loop:
            return await self._request(what, op)
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._request(what, op), loop)
        )

    async def _request(self, what: str, op: Callable[[ClientSession], Awaitable[T]]) -> T:
        link = self.link
        if link is None or not link.alive:
            if self._closed:
                raise MCPServerError(self.name, "the toolkit is closed")
            link = (
                await self._restart(link, "session ended")
                if link is not None
                else await self._reopen()
            )
        try:
            return await self._attempt(link, what, op)
        except _Disconnected as first:
            link = await self._restart(link, first)
        try:
            return await self._attempt(link, what, op)
        except _Disconnected as second:
            raise MCPServerError(
                self.name, f"connection lost during {what}, again after a restart: {second}"
            ) from second

    async def _reopen(self) -> _Link:
        assert self._lock is not None
        async with self._lock:
            if self.link is None or not self.link.alive:
                self.link = await self._open()
            return self.link

    async def _attempt(
        self, link: _Link, what: str, op: Callable[[ClientSession], Awaitable[T]]
    ) -> T:
        timeout = asyncio.timeout(self.call_timeout)
        try:
            async with timeout:
                link.inflight.add(timeout)
                try:
                    return await op(link.session)
                finally:
                    link.inflight.discard(timeout)
        except TimeoutError as exc:
            if not link.alive:
                raise _Disconnected("the session ended") from exc
            if self.call_timeout is not None and timeout.expired():
                raise MCPToolTimeoutError(self.name, what, self.call_timeout) from None
            raise
        except McpError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                raise _Disconnected(exc) from exc
            raise ToolException(
                f"MCP server {self.name!r}: {what} failed: {exc.error.message}"
            ) from exc
        except _DISCONNECT_ERRORS as exc:
            raise _Disconnected(exc) from exc
        except BaseExceptionGroup as group:
            if all(isinstance(e, _DISCONNECT_ERRORS) for e in _leaf_errors(group)):
                raise _Disconnected(group) from group
            raise


class _SessionProxy:
    """Stands in for a `ClientSession` in langchain-mcp-adapters' tools.

    The adapters bind each tool to the session object they are given; binding
    them to this proxy routes every call through `_Server.request`, which adds
    the owner loop, the timeout and the restart.
    """

    def __init__(self, server: _Server) -> None:
        self._server = server

    async def list_tools(self, cursor: str | None = None, **kwargs: Any) -> Any:
        return await self._server.request(
            "tools/list", lambda s: s.list_tools(cursor=cursor, **kwargs)
        )

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        return await self._server.request(
            f"tool {name!r}", lambda s: s.call_tool(name, arguments, **kwargs)
        )


async def _paginate(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):
        page = await fetch(cursor)
        items.extend(getattr(page, field) or [])
        cursor = page.nextCursor
        if not cursor:
            break
    return items


# --------------------------------------------------------------------------- toolkit


class _MCPTool(StructuredTool):
    """A `StructuredTool` that skips LangChain's per-call signature inspection.

    On every call LangChain inspects `_arun` and the coroutine (signature and
    type hints) for `run_manager` / `config` parameters; these tools take
    neither, and the inspection alone costs a good part of a local MCP round trip.
    """

    # Unannotated on purpose: LangChain evaluates these hints on every call.
    def _run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert self.func is not None
        return self.func(*args, **kwargs)

    async def _arun(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert self.coroutine is not None
        return await self.coroutine(*args, **kwargs)


class MCPToolkit:
    """LangChain tools for the MCP servers of a config, over persistent sessions.

    Each server gets one session, opened when the toolkit starts and shared by
    all calls; every server's tools are listed once and exposed as
    `StructuredTool`s named `f"{server}{separator}{tool}"`, with cleaned schemas
    (`args_schema` is the cleaned JSON-schema dict) and the server's own
    descriptions. Use it as an async context manager, or from sync code with
    `with` / `start_sync()` + `close()`.

    Tool results (`response_format="content_and_artifact"`):

    - content: the text parts joined with `"\\n\\n"`, plus a short
      `[image: image/png, 68 bytes]` line for each non-text part;
    - artifact: an `MCPArtifact` with the non-text parts as LangChain content
      blocks and the `structuredContent`, or `None`.

    Errors:

    - an MCP `isError` result, a JSON-RPC error from the server, and a call
      over `call_timeout` raise `ToolException`s that the tool turns into
      `ToolMessage(status="error")` when it is invoked with a tool call (with
      plain arguments, the error text is returned);
    - if the server died (process killed, connection dropped), it is restarted
      and the call retried once; if that fails too, `MCPServerError` is raised.
      A server that died in the middle of a call may have done the work
      already, so a retried write can run twice;
    - a server that cannot start raises `MCPServerError` from `__aenter__` /
      `start_sync()`, naming the server and the cause; the others are closed.

    Resources: for every server that declares the resources capability (and
    `include_resources=True`), two more tools: `server-list_resources` (resources
    and resource templates, as JSON) and `server-read_resource(uri)` (text
    contents as text; binary contents as a `[file: mime, size]` line with the
    base64 data in the artifact).

    Example:
        ```python
        from fncall_graph.adapters.mcp import MCPToolkit

        async with MCPToolkit.from_config("mcp.json", call_timeout=30) as toolkit:
            agent = create_react_agent(model, toolkit.tools)
            await agent.ainvoke({"messages": [("user", "数据库有几张表")]})

        # sync code: sessions run on a background event-loop thread
        with MCPToolkit.from_config("mcp.json") as toolkit:
            toolkit.get_tool("sqlite-list_tables").invoke({})
        ```

    Args:
        connections: `{server_name: connection}` as returned by
            `parse_mcp_config` (use `from_config` to read a file or a dict).
        separator: put between server and tool name (`"-"`: `sqlite-read_query`).
        call_timeout: seconds a single call may take; `None` waits for ever.
        include_resources: add the `list_resources` / `read_resource` tools.
        startup_timeout: seconds a server may take to start and initialize.
    """

    def __init__(
        self,
        connections: Mapping[str, Connection],
        *,
        separator: str = "-",
        call_timeout: float | None = None,
        include_resources: bool = True,
        startup_timeout: float = 30.0,
    ) -> None:
        if not isinstance(separator, str) or not separator:
            raise MCPConfigError("separator", "must be a non-empty string")
        for key, value in (("call_timeout", call_timeout), ("startup_timeout", startup_timeout)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
            ):
                raise MCPConfigError(key, f"must be a positive number of seconds, got {value!r}")
        self._connections = dict(connections)
        self.separator = separator
        self.call_timeout = call_timeout
        self.include_resources = include_resources
        self._servers = {
            name: _Server(name, conn, call_timeout=call_timeout, startup_timeout=startup_timeout)
            for name, conn in self._connections.items()
        }
        self._tools: dict[str, list[BaseTool]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._state = "new"

    @classmethod
    def from_config(
        cls,
        config: ConfigSource,
        *,
        separator: str = "-",
        call_timeout: float | None = None,
        include_resources: bool = True,
        startup_timeout: float = 30.0,
    ) -> MCPToolkit:
        """Build a toolkit from an `mcpServers` config (file path or dict).

        The config is checked at once (`MCPConfigError` before anything starts);
        servers start when the toolkit is entered. See `parse_mcp_config` for the
        formats and `MCPToolkit` for the options.

        Example:
            ```python
            async with MCPToolkit.from_config({"mcpServers": {...}}) as toolkit:
                tools = toolkit.tools
            ```
        """
        return cls(
            parse_mcp_config(config),
            separator=separator,
            call_timeout=call_timeout,
            include_resources=include_resources,
            startup_timeout=startup_timeout,
        )

    # -- introspection

    @property
    def servers(self) -> list[str]:
        """Names of the configured servers."""
        return list(self._servers)

    @property
    def connections(self) -> dict[str, Connection]:
        """The checked connection dicts, by server name."""
        return dict(self._connections)

    @property
    def tools(self) -> list[BaseTool]:
        """All tools of all servers, in config order (the toolkit must be started)."""
        return [tool for tools in self._started_tools().values() for tool in tools]

    def get_tools(self, server: str | None = None) -> list[BaseTool]:
        """The tools of one server (all tools when `server` is `None`)."""
        if server is None:
            return self.tools
        tools = self._started_tools()
        if server not in tools:
            raise MCPServerError(server, f"unknown server; configured: {', '.join(self._servers)}")
        return list(tools[server])

    def get_tool(self, name: str) -> BaseTool:
        """The tool called `name` (e.g. `"sqlite-read_query"`)."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(
            f"no MCP tool named {name!r}; tools: {', '.join(t.name for t in self.tools)}"
        )

    def server_info(self, server: str) -> InitializeResult:
        """What the server said at initialization (name, version, capabilities)."""
        srv = self._servers.get(server)
        if srv is None:
            raise MCPServerError(server, f"unknown server; configured: {', '.join(self._servers)}")
        if srv.link is None:
            raise MCPServerError(server, "not running")
        return srv.link.init

    def _started_tools(self) -> dict[str, list[BaseTool]]:
        if self._tools is None:
            raise RuntimeError(
                "the MCP toolkit is not started: use `async with MCPToolkit.from_config(...)` "
                "or `toolkit.start_sync()`"
            )
        return self._tools

    # -- async lifecycle

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start every server and list its tools on the running event loop."""
        if self._state != "new":
            raise RuntimeError(f"the MCP toolkit cannot be started twice (it is {self._state})")
        self._state = "starting"
        self._loop = asyncio.get_running_loop()
        servers = list(self._servers.values())
        results = await asyncio.gather(*(s.start() for s in servers), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        try:
            if failures:
                raise failures[0]
            tools: dict[str, list[BaseTool]] = {}
            for server in servers:
                tools[server.name] = await self._build_tools(server)
            self._check_unique(tools)
        except BaseException:
            await asyncio.gather(*(s.close() for s in servers), return_exceptions=True)
            self._state = "closed"
            raise
        self._tools = tools
        self._state = "running"

    async def aclose(self) -> None:
        """Close every session (and stop every stdio server process)."""
        if self._thread is not None:
            await asyncio.to_thread(self.close)
            return
        if self._state in ("new", "closed"):
            self._state = "closed"
            return
        self._state = "closed"
        await asyncio.gather(*(s.close() for s in self._servers.values()), return_exceptions=True)

    # -- sync lifecycle

    def __enter__(self) -> Self:
        return self.start_sync()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start_sync(self) -> Self:
        """Start the servers on a background event-loop thread, for sync callers.

        The tools then work from `invoke` and, from any event loop, `ainvoke`.
        Call `close()` when done (it is also called at interpreter exit).
        """
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fncall-graph-mcp", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        self._thread = thread
        atexit.register(self.close)
        return self

    def close(self) -> None:
        """Close a toolkit started with `start_sync()` and stop its thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            if self._state == "running":
                raise RuntimeError(
                    "this MCP toolkit runs on an event loop: use `await toolkit.aclose()`"
                )
            return
        self._thread = None
        atexit.unregister(self.close)
        if threading.current_thread() is thread:
            raise RuntimeError("close() cannot be called from the toolkit's own event-loop thread")
        try:
            asyncio.run_coroutine_threadsafe(self.aclose(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    # -- tools

    def _run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a tool coroutine for a sync caller, on the owner loop."""
        loop = self._loop
        if loop is None or self._state != "running":
            coro.close()
            raise RuntimeError("the MCP toolkit is not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError(
                "a sync MCP tool call on the toolkit's own event loop would block it; "
                "use `await tool.ainvoke(...)` there, or call `invoke` from another thread"
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def _make_tool(
        self,
        name: str,
        description: str,
        schema: dict[str, Any],
        acall: Callable[..., Awaitable[tuple[str, Any]]],
        metadata: dict[str, Any],
    ) -> StructuredTool:
        def call(**kwargs: Any) -> tuple[str, Any]:
            return self._run_sync(acall(**kwargs))

        return _MCPTool(
            name=name,
            description=description,
            args_schema=schema,
            func=call,
            coroutine=acall,
            response_format="content_and_artifact",
            handle_tool_error=_tool_error_content,
            metadata=metadata,
        )

    async def _build_tools(self, server: _Server) -> list[BaseTool]:
        proxy = _SessionProxy(server)
        # The adapters' tools, bound to the proxy: their result conversion and
        # isError handling are used as they are; only naming, schema and content
        # layout change below.
        inner_tools = await _adapters_load_mcp_tools(proxy, server_name=server.name)  # type: ignore[arg-type]
        tools: list[BaseTool] = []
        for inner in inner_tools:
            tools.append(self._wrap(server, inner))
        link = server.link
        if (
            self.include_resources
            and link is not None
            and link.init.capabilities.resources is not None
        ):
            taken = {t.name for t in tools}
            for tool in self._resource_tools(server):
                if tool.name in taken:
                    logger.info(
                        "MCP server %r has its own %r tool; not adding ours", server.name, tool.name
                    )
                    continue
                tools.append(tool)
        return tools

    def _wrap(self, server: _Server, inner: BaseTool) -> StructuredTool:
        assert isinstance(inner, StructuredTool) and inner.coroutine is not None
        coroutine = inner.coroutine
        raw_schema = inner.args_schema if isinstance(inner.args_schema, dict) else {}

        async def acall(**kwargs: Any) -> tuple[str, MCPArtifact | None]:
            blocks, artifact = await coroutine(**kwargs)
            structured = artifact.get("structured_content") if artifact else None
            return _to_content_and_artifact(blocks, structured)

        return self._make_tool(
            f"{server.name}{self.separator}{inner.name}",
            inner.description,
            clean_schema(raw_schema),
            acall,
            {**(inner.metadata or {}), "mcp_server": server.name, "mcp_tool": inner.name},
        )

    def _resource_tools(self, server: _Server) -> list[StructuredTool]:
        sep, name = self.separator, server.name

        async def list_resources() -> tuple[str, MCPArtifact]:
            async def op(session: ClientSession) -> dict[str, Any]:
                resources: list[Any] = await _paginate(
                    lambda c: session.list_resources(cursor=c), "resources"
                )
                try:
                    templates: list[Any] = await _paginate(
                        lambda c: session.list_resource_templates(cursor=c), "resourceTemplates"
                    )
                except McpError:  # templates are optional for a server
                    templates = []
                dump = {"mode": "json", "by_alias": True, "exclude_none": True}
                return {
                    "resources": [r.model_dump(**dump) for r in resources],
                    "resource_templates": [t.model_dump(**dump) for t in templates],
                }

            payload = await server.request("resources/list", op)
            return json.dumps(payload, ensure_ascii=False), {"resources": payload}

        async def read_resource(uri: str) -> tuple[str, MCPArtifact | None]:
            try:
                result = await server.request(f"resource {uri!r}", lambda s: s.read_resource(uri))  # type: ignore[arg-type]
            except pydantic.ValidationError as exc:
                raise ToolException(f"MCP server {name!r}: invalid resource URI {uri!r}") from exc
            blocks: list[dict[str, Any]] = []
            for part in result.contents:
                if isinstance(part, TextResourceContents):
                    blocks.append({"type": "text", "text": part.text})
                elif isinstance(part, BlobResourceContents):
                    mime = part.mimeType or "application/octet-stream"
                    make = create_image_block if mime.startswith("image/") else create_file_block
                    block = dict(make(base64=part.blob, mime_type=mime))
                    block["uri"] = str(part.uri)
                    blocks.append(block)
            return _to_content_and_artifact(blocks, None)

        meta = {"mcp_server": name}
        return [
            self._make_tool(
                f"{name}{sep}list_resources",
                f"List the resources and resource templates of MCP server {name!r} "
                "(uri or uriTemplate, name, description, mimeType), as JSON.",
                clean_schema(None),
                list_resources,
                {**meta, "mcp_tool": "list_resources"},
            ),
            self._make_tool(
                f"{name}{sep}read_resource",
                f"Read a resource of MCP server {name!r} by URI (fill in a template's "
                "{placeholders} first). Text comes back as text; binary content as its "
                "MIME type and size.",
                {
                    "type": "object",
                    "properties": {"uri": {"type": "string", "description": "URI of the resource"}},
                    "required": ["uri"],
                },
                read_resource,
                {**meta, "mcp_tool": "read_resource"},
            ),
        ]

    def _check_unique(self, tools: Mapping[str, list[BaseTool]]) -> None:
        seen: dict[str, str] = {}
        for server, server_tools in tools.items():
            for tool in server_tools:
                if tool.name in seen:
                    raise MCPConfigError(
                        f"mcpServers.{server}",
                        f"tool name {tool.name!r} is also made by server {seen[tool.name]!r}; "
                        "rename a server or change the separator",
                    )
                seen[tool.name] = server


@asynccontextmanager
async def load_mcp_tools(
    config: ConfigSource,
    *,
    separator: str = "-",
    call_timeout: float | None = None,
    include_resources: bool = True,
    startup_timeout: float = 30.0,
) -> AsyncIterator[list[BaseTool]]:
    """Async context manager: the tools of an MCP config, sessions open inside.

    A shorthand for `MCPToolkit.from_config(...)` when only the tool list is
    needed. The sessions close (and stdio servers stop) when the block ends.

    Example:
        ```python
        from fncall_graph.adapters.mcp import load_mcp_tools

        async with load_mcp_tools("mcp.json") as tools:
            graph = create_fncall_graph(model, tools)
            await graph.ainvoke({"messages": [("user", "数据库有几张表")]})
        ```
    """
    toolkit = MCPToolkit.from_config(
        config,
        separator=separator,
        call_timeout=call_timeout,
        include_resources=include_resources,
        startup_timeout=startup_timeout,
    )
    async with toolkit:
        yield toolkit.tools
