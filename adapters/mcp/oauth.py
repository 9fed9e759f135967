"""OAuth for remote MCP servers named in an ``mcpServers`` config.

The flows are the MCP SDK's own (``OAuthClientProvider``: discovery, dynamic or
pre-registered clients, PKCE, refresh; ``ClientCredentialsOAuthProvider``); this module
adds what an application around them needs: the settings of a config entry's ``oauth``
key, a token cache on disk that only its user can read, and the authorization page
shown to the person, whose browser is sent back to a listener on the loopback address
(RFC 8252).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import logging
import os
import re
import stat
import sys
import tempfile
import webbrowser
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import AliasChoices, AnyUrl, BaseModel, ConfigDict, Field

from ..secrets import private_folder
from .errors import MCPAuthError

__all__ = []

log = logging.getLogger(__name__)

DEFAULT_CALLBACK_PORT = 33418
"""The loopback port the authorization page sends the browser back to, unless the
entry's ``oauth.callback_port`` names another (a pre-registered client's redirect URI
must name this port)."""

AUTHORIZATION_TIMEOUT = 300.0
"""Seconds the person has to finish the authorization page."""

AuthorizePage = Callable[[str, str], Awaitable[None] | None]
"""Shows a server's authorization page to the person: called with the server's name and
the page's URL; the browser that opens it is sent back to this process."""


class OAuthSettings(BaseModel):
    """The ``oauth`` key of a remote server's ``mcpServers`` entry.

    ``{"oauth": {}}`` is enough for a server that registers clients itself: the person
    authorizes once in a browser, the tokens are kept in the token cache and refreshed.
    ``client_id`` (and ``client_secret``) name a pre-registered client;
    ``"grant": "client_credentials"`` is for a service account, with no person.
    Strings may use ``${VAR}``.
    """

    model_config = ConfigDict(strict=True, extra="forbid")

    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    client_id: str | None = Field(
        default=None, validation_alias=AliasChoices("client_id", "clientId")
    )
    client_secret: str | None = Field(
        default=None, validation_alias=AliasChoices("client_secret", "clientSecret")
    )
    scope: str | None = None
    callback_port: int = Field(
        default=DEFAULT_CALLBACK_PORT,
        ge=1,
        le=65535,
        validation_alias=AliasChoices("callback_port", "callbackPort"),
    )
    client_name: str = "fncall-graph"
    client_metadata_url: str | None = None
    """This client's metadata document (an HTTPS URL used as its client id, where the
    authorization server takes such ids), instead of registering."""
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = (
        "client_secret_basic"
    )
    issuer: str | None = None
    """The authorization server the client's credentials belong to (its issuer URL):
    they are then sent nowhere else, whichever server the MCP server names."""
    token_cache: str | bool = True
    """A directory for the tokens, ``true`` for :func:`default_token_dir`, ``false`` to
    keep them in memory only (the person authorizes again in each process)."""


def default_token_dir() -> Path:
    """Where tokens are kept unless an entry says otherwise:
    ``$XDG_CACHE_HOME/fncall-graph/mcp-oauth`` (``~/.cache/...`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "fncall-graph" / "mcp-oauth"


def _owner_problem(st: os.stat_result) -> str | None:
    """What is wrong with who owns a file (``None``: this user does)."""
    me = os.geteuid() if hasattr(os, "geteuid") else None  # no owners to check on Windows
    if me is None or st.st_uid == me:
        return None
    return f"belongs to uid {st.st_uid}, not to this user (uid {me})"


class TokenCache:
    """The MCP SDK's ``TokenStorage`` for one server: its tokens and client registration,
    in memory and, unless ``path`` is ``None``, in a JSON file only this user may read
    (mode 0600 in a 0700 directory). As ssh does with its keys, the cache is refused
    (:class:`MCPAuthError` naming the path and the fix) unless the file and its folder
    belong to this user and no other user may write to them, and the file is a regular
    file no other user may read (a symbolic link, a FIFO or a device is never opened).
    ``client``: the pre-registered client the config names, used instead of any stored."""

    def __init__(self, server: str, path: Path | None, client: Any = None) -> None:
        self.server, self.path = server, path
        self.client = client  # a pre-registered client: never registered, never stored
        self._data: dict[str, Any] | None = None

    def _refuse(self, problem: str) -> MCPAuthError:
        return MCPAuthError(self.server, problem)

    def _check_folder(self, folder: Path) -> None:
        """Refuse a folder another user owns or may write to: they could put their own
        tokens (and so their account) in place of this user's."""
        try:
            st = folder.stat()
        except FileNotFoundError:
            return  # created 0700 on the first save
        owner = _owner_problem(st)
        if owner:
            raise self._refuse(
                f"the token cache folder {folder} {owner}; set oauth.token_cache to a "
                "folder of your own, or chown it to this user"
            )
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o022:
            # a sticky folder (/tmp) is shared on purpose: never suggest closing it
            fix = (
                "set oauth.token_cache to a folder of your own"
                if mode & stat.S_ISVTX
                else f"chmod 700 {folder}"
            )
            raise self._refuse(
                f"the token cache folder {folder} may be written by other users (mode "
                f"{mode:o}); {fix}"
            )

    def _check_file(self, st: os.stat_result) -> None:
        path = self.path
        if stat.S_ISLNK(st.st_mode):
            raise self._refuse(
                f"the token cache {path} is a symbolic link; delete it to authorize again"
            )
        if not stat.S_ISREG(st.st_mode):
            raise self._refuse(
                f"the token cache {path} is not a regular file; delete it to authorize again"
            )
        owner = _owner_problem(st)
        if owner:
            raise self._refuse(f"the token cache {path} {owner}; delete it to authorize again")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            what = "read" if mode & 0o044 else "written"
            raise self._refuse(
                f"the token cache {path} may be {what} by other users (mode {mode:o}); "
                "chmod 600 it, or delete it to authorize again"
            )

    def _read(self) -> bytes | None:
        """The cache file's bytes (``None``: no file yet), once it and its folder pass
        the checks; checked on the open file too, so nothing swapped in between is read."""
        assert self.path is not None
        self._check_folder(self.path.parent)
        try:
            self._check_file(self.path.lstat())  # a FIFO or device is never even opened
        except FileNotFoundError:
            return None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning(
                "MCP server %r: token cache %s unreadable (%s); ignored",
                self.server,
                self.path,
                exc,
            )
            return b""
        with os.fdopen(fd, "rb") as file:
            self._check_file(os.fstat(file.fileno()))
            return file.read()

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            # a refused cache raises on every call (nothing remembered, nothing saved over it)
            raw = self._read() if self.path is not None else None
            data: dict[str, Any] = {}
            if raw:
                try:
                    data = json.loads(raw.decode("utf-8"))
                    if not isinstance(data, dict):
                        raise ValueError(f"a JSON object expected, got {type(data).__name__}")
                except ValueError as exc:
                    data = {}
                    log.warning(
                        "MCP server %r: token cache %s unreadable (%s); ignored",
                        self.server,
                        self.path,
                        exc,
                    )
            self._data = data
        return self._data

    def _save(self) -> None:
        if self.path is None:
            return
        private_folder(self.path.parent)  # each folder made 0700, whatever the umask
        self._check_folder(self.path.parent)  # one that was there already
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-")  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self._data, out)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._load().get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: Any) -> None:
        self._load()["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        self._save()

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self.client is not None:
            return self.client
        raw = self._load().get("client")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: Any) -> None:
        if self.client is not None:
            self.client = client_info
            return
        self._load()["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._save()


def open_in_browser(server: str, url: str) -> None:
    """The default :data:`AuthorizePage`: print the page's address on stderr and open
    it in the system's browser, if there is one."""
    print(
        f"MCP server {server!r} asks you to authorize fncall-graph: open\n  {url}",
        file=sys.stderr,
        flush=True,
    )
    with contextlib.suppress(webbrowser.Error):
        webbrowser.open(url)


class _Redirect:
    """The loopback listener the authorization page sends the browser back to: it
    answers one request carrying ``code`` (or ``error``) on the redirect path."""

    def __init__(self, server: str, port: int) -> None:
        self.server, self.port = server, port
        self.uri = f"http://127.0.0.1:{port}/callback"
        self._listener: asyncio.Server | None = None
        self._answer: asyncio.Future[dict[str, list[str]]] | None = None
        self.issuer: str | None = None  # the redirect's `iss`, once it came back

    async def listen(self) -> None:
        await self.close()
        self._answer = asyncio.get_running_loop().create_future()
        try:
            self._listener = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        except OSError as exc:
            raise MCPAuthError(
                self.server,
                f"cannot listen on 127.0.0.1:{self.port} for the authorization's redirect "
                f"({exc}); set oauth.callback_port to a free port",
            ) from exc

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await reader.readline()).decode("latin-1")
            while (await reader.readline()).strip():  # the headers: not needed
                pass
            match = re.match(r"GET (\S+) HTTP/", line)
            parts = urlsplit(match.group(1)) if match else None
            query = parse_qs(parts.query) if parts else {}
            done = (
                parts is not None
                and parts.path == "/callback"
                and ("code" in query or "error" in query)
            )
            body = (
                "Authorization received; you may close this page."
                if done
                else "Not the authorization's redirect."
            )
            writer.write(
                f"HTTP/1.1 {200 if done else 404} OK\r\nContent-Type: text/plain; charset=utf-8"
                f"\r\nContent-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n{body}".encode()
            )
            await writer.drain()
            if done and self._answer is not None and not self._answer.done():
                self._answer.set_result(query)
        finally:
            writer.close()

    async def code(self) -> tuple[str, str | None]:
        """The redirect's code and state; its issuer (RFC 9207 ``iss``, which the SDK
        checks against the authorization server it talked to) is then ``issuer``."""
        assert self._answer is not None, "listen() first"
        try:
            query = await asyncio.wait_for(self._answer, AUTHORIZATION_TIMEOUT)
        except TimeoutError:
            raise MCPAuthError(
                self.server,
                f"the authorization page was not completed within {AUTHORIZATION_TIMEOUT:g} s",
            ) from None
        finally:
            await self.close()
        if "error" in query:
            said = " ".join(query.get("error_description") or [])
            raise MCPAuthError(
                self.server,
                f"authorization refused: {query['error'][0]}{': ' + said if said else ''}",
            )
        self.issuer = (query.get("iss") or [None])[0]
        return query["code"][0], (query.get("state") or [None])[0]

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()
            self._listener = None


def oauth_for(
    server: str, url: str, settings: OAuthSettings, authorize: AuthorizePage = open_in_browser
) -> Any:
    """The ``httpx.Auth`` that gets ``server`` (at ``url``) its tokens, as ``settings``
    say; ``authorize`` shows the authorization page (authorization-code grant only)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    from .stack import authorization_code

    where = settings.token_cache
    folder = default_token_dir() if where is True else Path(where).expanduser() if where else None
    key = hashlib.sha256(f"{settings.grant} {url} {settings.client_id}".encode()).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", server)
    path = folder / f"{safe}-{key}.json" if folder else None
    if settings.grant == "client_credentials":
        # positional: the scope parameter is `scopes` in mcp 1.x, `scope` in 2.x
        return ClientCredentialsOAuthProvider(
            url,
            TokenCache(server, path),
            settings.client_id or "",
            settings.client_secret or "",
            settings.token_endpoint_auth_method,
            settings.scope,
            **({"issuer": settings.issuer} if settings.issuer else {}),
        )
    redirect = _Redirect(server, settings.callback_port)

    async def show_page(page: str) -> None:
        await redirect.listen()  # before the browser can come back
        shown = authorize(server, page)
        if inspect.isawaitable(shown):
            await shown

    async def came_back() -> Any:
        code, state = await redirect.code()
        return authorization_code(code, state, redirect.issuer)

    client = None
    if settings.client_id is not None:
        client = OAuthClientInformationFull(
            client_id=settings.client_id,
            client_secret=settings.client_secret,
            redirect_uris=[AnyUrl(redirect.uri)],
            token_endpoint_auth_method=(
                settings.token_endpoint_auth_method if settings.client_secret else "none"
            ),
        )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name=settings.client_name,
            redirect_uris=[AnyUrl(redirect.uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=settings.scope,
        ),
        storage=TokenCache(server, path, client),
        redirect_handler=show_page,
        callback_handler=came_back,
        client_metadata_url=settings.client_metadata_url,
    )
