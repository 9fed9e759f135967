"""MCP configs: ``{"mcpServers": {...}}`` (Claude Desktop, Qwen-Agent) and
langchain-mcp-adapters' connection dicts, checked before anything starts.

Each server entry is read into a typed model (:class:`StdioServer`, :class:`RemoteServer`);
every problem is reported as :class:`MCPConfigError` naming the server and the field, in
the words of the config file, not of the validator.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .connections import (
    Connection,
    SSEConnection,
    StdioConnection,
    StreamableHttpConnection,
    WebsocketConnection,
)
from .errors import MCPConfigError
from .oauth import OAuthSettings

__all__ = ["parse_mcp_config"]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

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

    return _no_nul(_VAR_RE.sub(sub, value), where)


def _no_nul(text: str, where: str) -> str:
    if "\x00" in text:
        # the OS refuses it only when the server starts, far from the config
        raise MCPConfigError(where, "must not contain a NUL byte")
    return text


def _split_url(url: str, where: str) -> Any:
    """``urlsplit(url)`` with its port read, or an error naming ``where``."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (reading it checks it: a bad port raises here, not at start)
    except ValueError as exc:
        raise MCPConfigError(where, f"is not a valid URL ({exc}): {url!r}") from None
    return parts


class _Fields(BaseModel):
    """Typed fields shared by both config formats; unknown keys are the caller's business."""

    model_config = ConfigDict(strict=True, extra="ignore")

    @field_validator("command", "url", check_fields=False)
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class StdioServer(_Fields):
    """A server started as a subprocess that speaks MCP over stdin/stdout."""

    command: str
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None


class RemoteServer(_Fields):
    """A server reached over HTTP (SSE or streamable HTTP) or a websocket."""

    url: str
    headers: dict[str, str] | None = None
    timeout: float | None = Field(default=None, gt=0)
    sse_read_timeout: float | None = Field(default=None, gt=0)


def _checked(model: type[M], spec: Mapping[str, Any], where: str) -> M:
    """``spec`` as ``model``, or an :class:`MCPConfigError` naming the first bad field."""
    try:
        return model.model_validate(dict(spec))
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        path = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        if error["type"] == "extra_forbidden":
            known = ", ".join(model.model_fields)
            raise MCPConfigError(path, f"unknown key; {where} may have {known}") from None
        raise MCPConfigError(path, _problem(error)) from None


def _problem(error: Any) -> str:
    value, kind = error.get("input"), error["type"]
    got = type(value).__name__
    if kind == "missing":
        return "is required"
    if kind == "string_type":
        return f"must be a string, got {got}"
    if kind == "list_type":
        return f"must be a list of strings, got {got}"
    if kind == "dict_type":
        return f"must be an object of strings, got {got}"
    if kind in ("greater_than", "float_type", "float_parsing"):
        return f"must be a positive number of seconds, got {value!r}"
    return str(error["msg"]).removeprefix("Value error, ")


def _beside_python(command: str, env: Mapping[str, str] | None) -> str:
    """``command``, or the program of that name next to the running interpreter when it is
    a bare name not on PATH: a script run with a virtualenv's python, the venv not
    activated, finds the servers installed into that venv (``.venv/bin/mcp-server-sqlite``).
    A bare ``python`` (``python3``, ``python3.X`` of this version) is the running
    interpreter itself: ``python -m server`` finds a server installed beside this package."""
    if os.sep in command or (os.altsep and os.altsep in command):
        return command
    if command in ("python", "python3", f"python3.{sys.version_info.minor}"):
        # this interpreter, which has the packages installed with this one, not PATH's
        return sys.executable
    path = (env or {}).get("PATH", os.environ.get("PATH"))
    if shutil.which(command, path=path) is not None:
        return command
    return shutil.which(command, path=str(Path(sys.executable).parent)) or command


def _stdio_connection(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    server = _checked(StdioServer, spec, where)
    conn: dict[str, Any] = {
        "transport": "stdio",
        "command": _expand(server.command, f"{where}.command"),
        "args": [_expand(a, f"{where}.args[{i}]") for i, a in enumerate(server.args or [])],
    }
    if server.env is not None:
        env = {
            _expand(k, f"{where}.env"): _expand(v, f"{where}.env.{k}")
            for k, v in server.env.items()
        }
        # The MCP SDK would otherwise start the server with a bare environment
        # plus `env`, so PATH, HOME, virtualenv settings etc. would be lost.
        conn["env"] = {**os.environ, **env}
    if server.cwd is not None:
        conn["cwd"] = _expand(server.cwd, f"{where}.cwd")
    conn["command"] = _beside_python(conn["command"], conn.get("env"))
    return conn


def _url_connection(spec: Mapping[str, Any], where: str, transport: str) -> dict[str, Any]:
    server = _checked(RemoteServer, spec, where)
    url = _expand(server.url, f"{where}.url")
    schemes = ("ws", "wss") if transport == "websocket" else ("http", "https")
    parts = _split_url(url, f"{where}.url")
    if parts.scheme not in schemes or not parts.netloc:
        raise MCPConfigError(f"{where}.url", f"must be a {'/'.join(schemes)} URL, got {url!r}")
    conn: dict[str, Any] = {"transport": transport, "url": url}
    if transport == "websocket":
        return conn
    if server.headers is not None:
        conn["headers"] = {
            _no_nul(k, f"{where}.headers"): _expand(v, f"{where}.headers.{k}")
            for k, v in server.headers.items()
        }
    for key in ("timeout", "sse_read_timeout"):
        seconds = getattr(server, key)
        if seconds is not None:
            conn[key] = float(seconds)
    return conn


# Every key an `mcpServers` entry may have: the connection's, and this client's own
# settings (read by `sampling_settings`, `root_settings`, `oauth_settings` and
# `trust_settings`).
_ENTRY_KEYS = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "type",
    "transport",
    "headers",
    "timeout",
    "sse_read_timeout",
    "sampling",
    "roots",
    "oauth",
    "trust",
)


def _parse_mcp_servers_entry(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One entry of the `{"mcpServers": {...}}` format (an unknown key is an error: a
    setting this client would silently go without, e.g. a misspelt one)."""
    for key in spec:
        if key not in _ENTRY_KEYS:
            raise MCPConfigError(
                f"{where}.{key}",
                f"unknown key {key!r} in the entry of server {where.removeprefix('mcpServers.')!r}"
                f"; an entry may have {', '.join(_ENTRY_KEYS)}",
            )
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
            path = _split_url(url, f"{where}.url").path if isinstance(url, str) else ""
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
        if key == "trust":  # this client's setting, not the adapters': it has its own place
            raise MCPConfigError(
                f"{where}.{key}",
                "is not a field of the adapters' connection dicts; trust a server with "
                f'MCPToolkit(..., trust={{"{where}": "annotations"}}), or in its '
                '"mcpServers" entry',
            )
        if key not in allowed:
            raise MCPConfigError(f"{where}.{key}", f"unknown field for the {transport} transport")
    if transport == "stdio":
        if "args" not in spec:
            raise MCPConfigError(f"{where}.args", "is required for the stdio transport")
        checked = _stdio_connection(spec, where)
    else:
        checked = _url_connection(spec, where, transport)
    _check_passed_through(spec, where)
    # Fields the adapters accept that need no more checking here (auth, ...).
    return {**dict(spec), **checked}


_ERROR_HANDLERS = ("strict", "ignore", "replace")


def _check_passed_through(spec: Mapping[str, Any], where: str) -> None:
    """The adapters' own fields that would otherwise fail only when the server starts."""
    kwargs = spec.get("session_kwargs")
    if kwargs is not None and not (
        isinstance(kwargs, Mapping) and all(isinstance(k, str) for k in kwargs)
    ):
        raise MCPConfigError(
            f"{where}.session_kwargs",
            f"must be an object of ClientSession keyword arguments, got {type(kwargs).__name__}",
        )
    encoding = spec.get("encoding")
    if encoding is not None:
        try:
            codecs.lookup(encoding)  # type: ignore[arg-type]
        except (LookupError, TypeError):
            raise MCPConfigError(
                f"{where}.encoding", f"unknown text encoding {encoding!r}"
            ) from None
    handler = spec.get("encoding_error_handler")
    if handler is not None and handler not in _ERROR_HANDLERS:
        raise MCPConfigError(
            f"{where}.encoding_error_handler",
            f"must be one of {', '.join(_ERROR_HANDLERS)}, got {handler!r}",
        )
    close = spec.get("terminate_on_close")
    if close is not None and not isinstance(close, bool):
        raise MCPConfigError(f"{where}.terminate_on_close", f"must be true or false, got {close!r}")


def read_config(config: ConfigSource) -> Any:
    """The parsed config: a JSON file read once, or the dict as it is."""
    if isinstance(config, str | os.PathLike):
        path = Path(config)
        if "\x00" in str(path):
            # the OS layer would raise a bare "embedded null byte", naming no path
            raise MCPConfigError(repr(str(path)), "config file path must not contain a NUL byte")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise MCPConfigError(
                str(path), f"cannot read config file: {exc.strerror or exc}"
            ) from exc
        except UnicodeDecodeError as exc:
            raise MCPConfigError(
                str(path), f"config file is not UTF-8 text (byte {exc.start}: {exc.reason})"
            ) from None
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
      HTTP otherwise) and `headers` for a remote one; `sampling`, `roots`, `oauth`
      and `trust` (see `sampling_settings`, `root_settings`, `oauth_settings`,
      `trust_settings`). Any other key is an error.
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
    data = read_config(config)
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
        if not isinstance(name, str) or not name.strip():
            raise MCPConfigError(
                prefix.rstrip(".") or "config",
                f"server name {name!r} must be a non-empty string (it prefixes the "
                "server's tool names)",
            )
        where = f"{prefix}{name}"
        if not isinstance(spec, Mapping):
            raise MCPConfigError(where, f"must be an object, got {type(spec).__name__}")
        out[name] = parse(spec, where)  # type: ignore[assignment]
    return out


class SamplingSettings(BaseModel):
    """May a server have the client's model write for it (MCP sampling), and how much.

    In an ``mcpServers`` entry: ``"sampling": {"allow": true, "max_tokens": 512}``, and
    optionally ``"model": "ollama:qwen3"`` (a model spec) to answer with instead of the
    toolkit's ``sampling_model``.
    """

    model_config = ConfigDict(strict=True, extra="forbid")

    allow: bool = False
    max_tokens: int = Field(default=1024, gt=0)
    model: str | None = None


def _server_entries(config: ConfigSource) -> dict[str, Any]:
    """The raw entries of an ``mcpServers`` config (``{}`` for adapters-format configs)."""
    data = read_config(config)
    servers: dict[str, Any] = {}
    if isinstance(data, list):
        for item in data:
            if isinstance(item, Mapping) and isinstance(item.get("mcpServers"), Mapping):
                servers.update(item["mcpServers"])
    elif isinstance(data, Mapping) and isinstance(data.get("mcpServers"), Mapping):
        servers = dict(data["mcpServers"])
    return {k: v for k, v in servers.items() if isinstance(v, Mapping)}


def _entries_with(
    config: ConfigSource, key: str
) -> Iterator[tuple[str, Any, str, Mapping[str, Any]]]:
    """Each server entry that sets ``key``: its name, that value, the value's place in
    the config (for errors) and the entry."""
    for name, spec in _server_entries(config).items():
        if spec.get(key) is not None:
            yield name, spec[key], f"mcpServers.{name}.{key}", spec


def sampling_settings(config: ConfigSource) -> dict[str, SamplingSettings]:
    """The ``sampling`` settings of an ``mcpServers`` config's servers (none: not allowed).

    Raises:
        MCPConfigError: a ``sampling`` entry that is not ``{"allow": bool, "max_tokens": int}``.
    """
    out: dict[str, SamplingSettings] = {}
    for name, sampling, where, _ in _entries_with(config, "sampling"):
        if not isinstance(sampling, Mapping):
            raise MCPConfigError(where, 'must be an object like {"allow": true, "max_tokens": 512}')
        out[name] = _checked(SamplingSettings, sampling, where)
    return out


def oauth_settings(config: ConfigSource) -> dict[str, OAuthSettings]:
    """The ``oauth`` settings of an ``mcpServers`` config's remote servers (see
    :class:`~fncall_graph.adapters.mcp.oauth.OAuthSettings`); ``${VAR}`` is expanded.

    Raises:
        MCPConfigError: an ``oauth`` entry on a stdio or websocket server, an unknown
            key in it, or a client-credentials grant without its client.
    """
    out: dict[str, OAuthSettings] = {}
    for name, oauth, where, spec in _entries_with(config, "oauth"):
        if not isinstance(oauth, Mapping):
            raise MCPConfigError(where, 'must be an object like {"client_id": "..."} or {}')
        if spec.get("url") is None or spec.get("type", spec.get("transport")) in (
            "websocket",
            "ws",
        ):
            raise MCPConfigError(where, "is for servers reached over HTTP (a url entry)")
        settings = _checked(OAuthSettings, oauth, where)
        for field in ("client_id", "client_secret", "scope"):
            value = getattr(settings, field)
            if value is not None:
                setattr(settings, field, _expand(value, f"{where}.{field}"))
        if isinstance(settings.token_cache, str):
            settings.token_cache = _expand(settings.token_cache, f"{where}.token_cache")
        if settings.grant == "client_credentials" and not (
            settings.client_id and settings.client_secret
        ):
            raise MCPConfigError(
                where, "the client_credentials grant needs client_id and client_secret"
            )
        out[name] = settings
    return out


def root_settings(config: ConfigSource) -> dict[str, list[dict[str, str]]]:
    """The ``roots`` each server of an ``mcpServers`` config may see (none by default).

    An entry is a list of ``file://`` URIs or paths, or ``{"uri": ..., "name": ...}``
    (``name`` a string); paths become ``file://`` URIs.

    Raises:
        MCPConfigError: a ``roots`` entry that is not such a list (another key, a name
            that is not a string, a URI that is not ``file://``), here rather than when
            the server asks for its roots.
    """
    out: dict[str, list[dict[str, str]]] = {}
    for name, roots, where, _ in _entries_with(config, "roots"):
        if not isinstance(roots, list):
            raise MCPConfigError(where, "must be a list of file:// URIs or paths")
        checked: list[dict[str, str]] = []
        for i, root in enumerate(roots):
            entry = {"uri": root} if isinstance(root, str) else root
            uri = entry.get("uri") if isinstance(entry, Mapping) else None
            if not isinstance(uri, str) or not uri:
                raise MCPConfigError(
                    f"{where}[{i}]", 'must be a URI, a path or {"uri": ..., "name": ...}'
                )
            for key in entry:
                if key not in ("uri", "name"):
                    raise MCPConfigError(
                        f"{where}[{i}].{key}", 'unknown key; a root may have "uri" and "name"'
                    )
            root_name = entry.get("name")
            if root_name is not None and not isinstance(root_name, str):
                raise MCPConfigError(
                    f"{where}[{i}].name", f"must be a string, got {type(root_name).__name__}"
                )
            uri = _expand(uri, f"{where}[{i}]")
            scheme = uri.partition("://")[0] if "://" in uri else None
            if scheme is not None and scheme.lower() != "file":
                raise MCPConfigError(
                    f"{where}[{i}]", f"must be a file:// URI or a path, got {uri!r}"
                )
            if scheme is None:
                try:
                    uri = Path(uri).expanduser().resolve().as_uri()
                except (OSError, RuntimeError, ValueError) as exc:
                    raise MCPConfigError(f"{where}[{i}]", f"is not a usable path: {exc}") from None
            item = {"uri": uri}
            if root_name is not None:
                item["name"] = root_name
            checked.append(item)
        out[name] = checked
    return out


TRUST = ("annotations",)
"""What a server may be trusted with: ``"annotations"``, its tools' annotations."""


def checked_trust(value: Any, where: str) -> str:
    """``value`` as a server's trust setting, or an error naming ``where``."""
    if not isinstance(value, str) or value not in TRUST:
        raise MCPConfigError(
            where,
            'must be "annotations" (believe the server\'s tool annotations; leave the key '
            f"out to believe none), got {value!r}",
        )
    return value


def trust_settings(config: ConfigSource) -> dict[str, str]:
    """The servers of an ``mcpServers`` config that the user trusts, and with what:
    ``"trust": "annotations"`` in a server's entry has its tools' MCP annotations believed
    (``readOnlyHint``: the call runs without a question under
    ``interrupt_on="annotations"``; ``readOnlyHint``/``idempotentHint``: a call the
    server died in is sent again). Without it a server's annotations count for nothing,
    as the MCP spec has clients treat them: untrusted unless the server is trusted.

    Example:
        >>> trust_settings({"mcpServers": {
        ...     "weather": {"command": "weather-server", "trust": "annotations"},
        ...     "sqlite": {"command": "mcp-server-sqlite"},
        ... }})
        {'weather': 'annotations'}

    Raises:
        MCPConfigError: a ``trust`` entry other than ``"annotations"``.
    """
    return {
        name: checked_trust(trust, where)
        for name, trust, where, _ in _entries_with(config, "trust")
    }
