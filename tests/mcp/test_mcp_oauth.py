"""The ``oauth`` key of a remote server's ``mcpServers`` entry: checked with the rest of
the config, tokens kept where only this user can read them, and the browser's way back
(a loopback listener). The flows themselves run against the conformance suite's
authorization servers (``tests/mcp/test_mcp_conformance.py``: every auth scenario but the
signed-key and enterprise grants goes through this key)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.auth import OAuthToken

from fncall_graph.adapters.mcp import MCPAuthError, MCPConfigError, MCPToolkit
from fncall_graph.adapters.mcp.config import oauth_settings
from fncall_graph.adapters.mcp.oauth import OAuthSettings, TokenCache, _Redirect, default_token_dir

URL = "http://127.0.0.1:9/mcp"


def toolkit(entry: dict[str, Any], **kwargs: Any) -> MCPToolkit:
    return MCPToolkit.from_config({"mcpServers": {"api": entry}}, **kwargs)


@pytest.mark.parametrize(
    ("entry", "where", "says"),
    [
        ({"command": "srv", "oauth": {}}, "mcpServers.api.oauth", "servers reached over HTTP"),
        (
            {"url": "ws://127.0.0.1:9/ws", "type": "websocket", "oauth": {}},
            "mcpServers.api.oauth",
            "servers reached over HTTP",
        ),
        ({"url": URL, "oauth": "yes"}, "mcpServers.api.oauth", "must be an object"),
        (
            {"url": URL, "oauth": {"clientID": "x"}},
            "mcpServers.api.oauth.clientID",
            "unknown key; mcpServers.api.oauth may have grant, client_id",
        ),
        (
            {"url": URL, "oauth": {"grant": "client_credentials", "client_id": "svc"}},
            "mcpServers.api.oauth",
            "needs client_id and client_secret",
        ),
        ({"url": URL, "oauth": {"grant": "password"}}, "mcpServers.api.oauth.grant", ""),
        ({"url": URL, "oauth": {"callback_port": 0}}, "mcpServers.api.oauth.callback_port", ""),
        (
            {"url": URL, "oauth": {"client_secret": "${NO_SUCH_SECRET_VAR}"}},
            "mcpServers.api.oauth.client_secret",
            "NO_SUCH_SECRET_VAR",
        ),
    ],
)
def test_a_bad_oauth_entry_is_refused_naming_the_field(
    entry: dict[str, Any], where: str, says: str
) -> None:
    with pytest.raises(MCPConfigError) as err:
        toolkit(entry)
    assert err.value.where == where, err.value
    assert says in str(err.value)


def test_the_entry_becomes_the_sdk_s_oauth_on_the_connection(monkeypatch) -> None:
    monkeypatch.setenv("API_SECRET", "s3cret")
    entry = {
        "url": URL,
        "oauth": {"clientId": "app", "clientSecret": "${API_SECRET}", "callbackPort": 40001},
    }
    settings = oauth_settings({"mcpServers": {"api": entry}})["api"]
    assert (settings.client_id, settings.client_secret) == ("app", "s3cret")
    assert settings.callback_port == 40001
    assert type(toolkit(entry).connections["api"]["auth"]).__name__ == "OAuthClientProvider"  # type: ignore[typeddict-item]
    service = {
        "url": URL,
        "oauth": {
            "grant": "client_credentials",
            "client_id": "a",
            "client_secret": "b",
            "issuer": "https://auth.example",
        },
    }
    auth = toolkit(service).connections["api"]["auth"]  # type: ignore[typeddict-item]
    assert type(auth).__name__ == "ClientCredentialsOAuthProvider"


def test_a_connection_with_its_own_auth_takes_no_oauth_settings() -> None:
    conn = {"transport": "streamable_http", "url": URL, "auth": httpx.BasicAuth("a", "b")}
    with pytest.raises(MCPConfigError, match="has its own auth already"):
        MCPToolkit({"api": conn}, oauth={"api": OAuthSettings()})  # type: ignore[dict-item]
    with pytest.raises(MCPConfigError, match="names no server"):
        MCPToolkit({"api": conn}, oauth={"other": OAuthSettings()})  # type: ignore[dict-item]


def test_tokens_are_kept_in_a_file_only_this_user_can_read(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "api.json"
    cache = TokenCache("api", path)
    token = OAuthToken(access_token="at", token_type="Bearer", refresh_token="rt")
    asyncio.run(cache.set_tokens(token))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = asyncio.run(TokenCache("api", path).get_tokens())  # another process's view
    assert (again.access_token, again.refresh_token) == ("at", "rt")
    assert [p.name for p in path.parent.iterdir()] == ["api.json"]  # no temporary left


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "api.json"
    path.write_text('{"tokens": {"access_token": "at", "token_type": "Bearer"}}')
    os.chmod(path, 0o644)
    with pytest.raises(MCPAuthError, match=r"may be read by other users \(mode 644\); chmod 600"):
        asyncio.run(TokenCache("api", path).get_tokens())


TOKENS = '{"tokens": {"access_token": "at", "token_type": "Bearer"}}'
NOBODY = 65534  # another user's uid (the tests run as root, who may chown to it)


def cache_file(folder: Path, *, folder_mode: int = 0o700) -> Path:
    """A good token file (0600, this user's) in ``folder``, made ``folder_mode``."""
    folder.mkdir(exist_ok=True)
    path = folder / "api.json"
    path.write_text(TOKENS)
    os.chmod(path, 0o600)
    os.chmod(folder, folder_mode)
    return path


def refused(path: Path, says: str) -> None:
    """Reading and writing the cache at ``path`` are both refused with ``says``, and
    nothing is written."""
    before = sorted(p.name for p in path.parent.iterdir())
    with pytest.raises(MCPAuthError, match=says) as read:
        asyncio.run(TokenCache("api", path).get_tokens())
    cache = TokenCache("api", path)
    with pytest.raises(MCPAuthError, match=says):
        asyncio.run(cache.set_tokens(OAuthToken(access_token="new", token_type="Bearer")))
    with pytest.raises(MCPAuthError, match=says):  # every time, not only the first
        asyncio.run(cache.get_tokens())
    assert sorted(p.name for p in path.parent.iterdir()) == before
    assert "MCP server 'api'" in str(read.value)


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702], ids=oct)
def test_a_cache_folder_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "cache"
    path = cache_file(folder, folder_mode=mode)
    refused(
        path,
        rf"folder {folder} may be written by other users \(mode {mode:o}\); chmod 700 {folder}$",
    )
    path.unlink()  # an empty folder too: the first tokens would land there
    refused(path, rf"folder {folder} may be written by other users")


def test_a_shared_sticky_folder_is_refused_without_suggesting_to_close_it(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    path = cache_file(folder, folder_mode=0o1777)  # as /tmp
    refused(
        path,
        rf"folder {folder} may be written by other users \(mode 1777\); set oauth.token_cache to a folder of your own$",
    )


def test_a_cache_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    path = cache_file(folder)
    os.chown(folder, NOBODY, NOBODY)
    refused(path, rf"folder {folder} belongs to uid {NOBODY}, not to this user .*oauth.token_cache")


def test_a_token_file_of_another_user_is_refused(tmp_path: Path) -> None:
    path = cache_file(tmp_path / "cache")
    os.chown(path, NOBODY, NOBODY)  # still mode 0600
    refused(path, rf"token cache {path} belongs to uid {NOBODY}, not to this user .*delete it")


def test_a_token_file_others_can_write_is_refused(tmp_path: Path) -> None:
    path = cache_file(tmp_path / "cache")
    os.chmod(path, 0o620)
    refused(path, rf"{path} may be written by other users \(mode 620\); chmod 600 it")


def test_a_fifo_in_place_of_the_token_file_is_refused_without_blocking(tmp_path: Path) -> None:
    import threading

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    path = folder / "api.json"
    os.mkfifo(path, 0o600)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            asyncio.run(TokenCache("api", path).get_tokens())
            outcome.append(None)
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)  # a bound on a hang, not a wait for something to happen
    if reader.is_alive():  # blocked opening the FIFO: a writer releases it
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail(f"reading the token cache blocked on the FIFO {path}")
    [exc] = outcome
    assert isinstance(exc, MCPAuthError)
    assert f"the token cache {path} is not a regular file; delete it" in str(exc)


def test_a_symbolic_link_in_place_of_the_token_file_is_refused(tmp_path: Path) -> None:
    elsewhere = cache_file(tmp_path / "elsewhere")
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    path = folder / "api.json"
    path.symlink_to(elsewhere)
    with pytest.raises(MCPAuthError, match=rf"token cache {path} is a symbolic link"):
        asyncio.run(TokenCache("api", path).get_tokens())


def test_tokens_go_to_the_user_s_cache_unless_told_otherwise(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_token_dir() == tmp_path / "fncall-graph" / "mcp-oauth"
    assert OAuthSettings().token_cache is True
    memory = TokenCache("api", None)
    token = OAuthToken(access_token="at", token_type="Bearer")
    asyncio.run(memory.set_tokens(token))
    assert asyncio.run(memory.get_tokens()).access_token == "at"
    assert list(tmp_path.iterdir()) == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def flow(port: int, browser: Any) -> tuple[Any, Any]:
    """The authorization-code flow's two ends as the SDK calls them (its redirect and
    callback handlers): show the page, then wait for the browser to come back."""
    redirect = _Redirect("api", port)

    async def show(page: str) -> None:
        await redirect.listen()
        shown = browser("api", page)
        if shown is not None:
            await shown

    return show, redirect.code


def test_the_browser_comes_back_to_a_loopback_listener() -> None:
    port = free_port()
    seen: list[tuple[str, str]] = []

    async def browser(server: str, page: str) -> None:
        seen.append((server, page))
        async with httpx.AsyncClient() as client:
            stray = await client.get(f"http://127.0.0.1:{port}/favicon.ico")
            assert stray.status_code == 404  # not the redirect: still waiting
            back = await client.get(f"http://127.0.0.1:{port}/callback?code=c0de&state=s1")
            assert back.status_code == 200

    show, came_back = flow(port, browser)

    async def run() -> Any:
        await show("https://auth.example/authorize?x=1")
        return await came_back()

    assert asyncio.run(run()) == ("c0de", "s1")
    assert seen == [("api", "https://auth.example/authorize?x=1")]


def test_a_refused_authorization_says_what_the_server_said() -> None:
    port = free_port()

    async def browser(server: str, page: str) -> None:
        async with httpx.AsyncClient() as client:
            await client.get(
                f"http://127.0.0.1:{port}/callback?error=access_denied"
                "&error_description=the+user+said+no"
            )

    show, came_back = flow(port, browser)

    async def run() -> Any:
        await show("https://auth.example/authorize")
        return await came_back()

    with pytest.raises(
        MCPAuthError, match="authorization refused: access_denied: the user said no"
    ):
        asyncio.run(run())


def test_a_busy_callback_port_is_named() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        show, _ = flow(port, lambda server, page: None)
        with pytest.raises(MCPAuthError, match=f"cannot listen on 127.0.0.1:{port}.*callback_port"):
            asyncio.run(show("https://auth.example/authorize"))


# An MCP server behind its own small authorization server: protected-resource and
# authorization-server metadata, dynamic registration, an authorization page that
# approves at once, a token endpoint that checks PKCE and counts what it issued.
PROTECTED_SERVER = r'''
import base64, hashlib, json, secrets, sys
from urllib.parse import parse_qs, urlencode

import uvicorn
from mcp.server.fastmcp import FastMCP
from starlette.responses import JSONResponse, RedirectResponse

port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}"
mcp = FastMCP("crm", stateless_http=True)


@mcp.tool()
def whoami() -> str:
    """Who the token belongs to."""
    return "the person who authorized"


app = mcp.streamable_http_app()
codes, tokens, issued = {}, set(), {"code": 0, "refresh": 0}


async def read(receive):
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    return body


async def server(scope, receive, send):
    if scope["type"] != "http":
        return await app(scope, receive, send)
    path, query = scope["path"], scope["query_string"].decode()
    if path.startswith("/.well-known/oauth-protected-resource"):
        answer = JSONResponse({"resource": f"{base}/mcp", "authorization_servers": [base]})
    elif path.startswith("/.well-known/oauth-authorization-server"):
        answer = JSONResponse({
            "issuer": base, "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token", "registration_endpoint": f"{base}/register",
            "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
        })
    elif path == "/register":
        answer = JSONResponse({**json.loads(await read(receive)), "client_id": "registered"}, 201)
    elif path == "/authorize":
        asked = {k: v[0] for k, v in parse_qs(query).items()}
        code = secrets.token_hex(8)
        codes[code] = asked["code_challenge"]
        back = {"code": code, "state": asked.get("state", "")}
        answer = RedirectResponse(f"{asked['redirect_uri']}?{urlencode(back)}", 302)
    elif path == "/token":
        got = {k: v[0] for k, v in parse_qs((await read(receive)).decode()).items()}
        if got.get("grant_type") == "authorization_code":
            challenge = codes.pop(got.get("code"), None)
            verifier = got.get("code_verifier", "").encode()
            made = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            if challenge is None or made.decode() != challenge:
                answer = JSONResponse({"error": "invalid_grant"}, 400)
                return await answer(scope, receive, send)
            issued["code"] += 1
        else:
            issued["refresh"] += 1
        token = secrets.token_hex(8)
        tokens.add(token)
        answer = JSONResponse({"access_token": token, "token_type": "Bearer",
                               "expires_in": 3600, "refresh_token": "r-" + token})
    elif path == "/issued":
        answer = JSONResponse(issued)
    else:
        header = dict(scope["headers"]).get(b"authorization", b"").decode()
        if header.removeprefix("Bearer ") in tokens:
            return await app(scope, receive, send)
        metadata = f"{base}/.well-known/oauth-protected-resource/mcp"
        answer = JSONResponse({"error": "invalid_token"}, 401, headers={
            "WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'})
    await answer(scope, receive, send)


uvicorn.run(server, host="127.0.0.1", port=port, log_level="warning")
'''


@pytest.fixture
def protected_url(tmp_path: Path) -> Iterator[str]:
    from ports import free_port as port_for
    from test_mcp import SERVER_PYTHON

    script = tmp_path / "protected.py"
    script.write_text(PROTECTED_SERVER)
    port = port_for()
    proc = subprocess.Popen([SERVER_PYTHON, str(script), str(port)], stderr=subprocess.PIPE)
    try:
        # up when it answers; a server that died says why
        for _ in range(300):
            if proc.poll() is not None:
                raise AssertionError(f"the protected server exited: {proc.stderr.read()!r}")  # type: ignore[union-attr]
            try:
                httpx.get(f"http://127.0.0.1:{port}/issued", timeout=0.1)
                break
            except httpx.TransportError:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(0.1)  # the server's exit, or a tenth of a second
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_the_person_authorizes_once_and_the_tokens_serve_the_next_process(
    protected_url: str, tmp_path: Path
) -> None:
    pages: list[str] = []

    async def browser(server: str, page: str) -> None:
        pages.append(page)
        async with httpx.AsyncClient() as client:  # the authorization server approves at once
            answer = await client.get(page)
            assert answer.status_code == 302
            (await client.get(answer.headers["location"])).raise_for_status()

    cache = tmp_path / "tokens"
    entry = {
        "url": protected_url,
        "oauth": {"callback_port": free_port(), "token_cache": str(cache)},
    }
    config = {"mcpServers": {"crm": entry}}
    for run in range(2):  # each run is what a new process would do: a new toolkit
        async with MCPToolkit.from_config(config, authorize=browser) as kit:
            assert await kit.get_tool("crm-whoami").ainvoke({}) == "the person who authorized"
        assert len(pages) == 1, f"run {run + 1} showed the page again"
    issued = httpx.get(protected_url.removesuffix("/mcp") + "/issued").json()
    assert issued == {"code": 1, "refresh": 0}
    files = list(cache.iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert "code_challenge_method=S256" in pages[0]
