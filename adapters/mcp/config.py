"""MCP configs: ``{"mcpServers": {...}}`` (Claude Desktop, Qwen-Agent) and
langchain-mcp-adapters' connection dicts, checked before anything starts.

Every problem is reported as :class:`MCPConfigError` naming the server and the field.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from langchain_mcp_adapters.sessions import (
    Connection,
    SSEConnection,
    StdioConnection,
    StreamableHttpConnection,
    WebsocketConnection,
)

from .errors import MCPConfigError

logger = logging.getLogger(__name__)

T = TypeVar("T")

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]]
"""A config: a path to a JSON file, a dict, or Qwen-Agent's list of such dicts."""

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
