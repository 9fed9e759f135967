"""Secrets stay out of what the product says and writes: a model URL's password and an MCP
URL's token are not in the error line of a failed connection (a real refused connection
on a loopback port nothing listens on); a key a model server echoes in its 401, and a key
in a tool's exception, are in no checkpoint (real SQLite files, read as bytes); the files
and folders the command creates are 0600 and 0700 under umask 000, the OAuth token
cache's folders too."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from ports import free_port

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.testing import ReplayChatModel

CLI = str(Path(sys.executable).parent / "fncall-graph")
PASSWORD = "pw-Z9q8x7w6"
TOKEN = "tok-A1b2C3d4"
HEADER = "hdr-K5l6M7n8"
API_KEY = "sk-echoed-P0o9I8u7"


def _cli(*args: str, env: dict[str, str] | None = None, **kwargs: Any) -> Any:
    return subprocess.run(
        [CLI, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        **kwargs,
    )


def _everything(files: list[Path]) -> bytes:
    return b"".join(p.read_bytes() for p in files if p.exists())


def _db_files(db: Path) -> list[Path]:
    return [db, Path(f"{db}-wal"), Path(f"{db}-journal")]


def test_a_model_urls_password_is_not_in_the_error_line(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there: the connection is refused
    url = f"http://user:{PASSWORD}@127.0.0.1:{port}/v1?api_key={TOKEN}#m"
    done = _cli("run", "--model", url, "--db", str(tmp_path / "t.sqlite"), "hi")
    assert done.returncode == 1
    assert "cannot reach the model server" in done.stderr, done.stderr
    assert f"127.0.0.1:{port}" in done.stderr  # where, still said
    assert PASSWORD not in done.stderr and TOKEN not in done.stderr, done.stderr


def test_an_mcp_urls_token_is_not_in_the_error_line(tmp_path: Path) -> None:
    port = free_port()
    server = {
        "url": f"http://me:{PASSWORD}@127.0.0.1:{port}/mcp?token={TOKEN}&page=1",
        "headers": {"Authorization": f"Bearer {HEADER}"},
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": server}}), "utf-8")
    done = _cli(
        "run",
        "--model",
        "replay:database-assistant",
        "--mcp",
        str(config),
        "--db",
        str(tmp_path / "t.sqlite"),
        "hi",
    )
    assert done.returncode == 1
    assert "cannot connect to" in done.stderr and f"127.0.0.1:{port}" in done.stderr
    for secret in (PASSWORD, TOKEN, HEADER):
        assert secret not in done.stderr, done.stderr


@pytest.fixture
def echoing_server() -> Iterator[str]:
    """An OpenAI-compatible endpoint on loopback that refuses every request with a 401
    whose message quotes the key it was sent (as some servers do)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            body = json.dumps(
                {"error": {"message": f"Incorrect API key provided: {key}", "code": 401}}
            ).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def test_a_key_a_model_server_echoes_is_in_no_checkpoint_nor_line(
    tmp_path: Path, echoing_server: str
) -> None:
    db = tmp_path / "t.sqlite"
    done = _cli(
        "run", "--model", f"{echoing_server}#m", "--db", str(db), "hi",
        env={"OPENAI_API_KEY": API_KEY},
    )  # fmt: skip
    assert done.returncode == 1
    assert "refused the API key" in done.stderr, done.stderr
    assert API_KEY not in done.stderr
    saved = _everything(_db_files(db))
    assert b"Incorrect API key provided" in saved  # the failed step's __error__ write
    assert API_KEY.encode() not in saved


def test_a_key_in_a_tools_exception_is_in_no_checkpoint(tmp_path: Path) -> None:
    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        raise RuntimeError(
            f"upstream refused: api_key={API_KEY} (Authorization: Bearer {TOKEN}) "
            f"at https://u:{PASSWORD}@api.example/v1?signature={HEADER}"
        )

    call = json.dumps({"name": "lookup", "arguments": {"city": "北京"}})
    model = ReplayChatModel([f"<tool_call>\n{call}\n</tool_call>", "no luck"])
    db = tmp_path / "t.sqlite"
    with sqlite_saver(db) as saver:
        graph = create_fncall_graph(model, [lookup], dialect="hermes", checkpointer=saver)
        out = graph.invoke({"messages": [("user", "北京?")]}, {"configurable": {"thread_id": "1"}})
    answer = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert answer.status == "error" and "upstream refused: api_key=***" in str(answer.content)
    shown_to_model = str(model.inputs[-1])
    saved = _everything(_db_files(db))
    assert b"upstream refused" in saved
    for secret in (API_KEY, TOKEN, PASSWORD, HEADER):
        assert secret.encode() not in saved
        assert secret not in shown_to_model


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


@pytest.mark.slow
def test_the_commands_files_are_private_under_umask_000(tmp_path: Path) -> None:
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"dialect": "hermes", "outputs": ["hello"]}), "utf-8")
    weather = {"command": sys.executable, "args": ["-m", "fncall_graph.examples.weather_server"]}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"weather": weather}}), "utf-8")
    state = tmp_path / "state" / "deep"
    db = state / "threads.sqlite"
    trace = tmp_path / "traces" / "trace.jsonl"
    done = _cli(
        "run", "--model", f"replay:{replay}", "--mcp", str(config), "--db", str(db),
        "--trace-file", str(trace), "hi",
        umask=0,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for folder in (tmp_path / "state", state, trace.parent):
        assert _mode(folder) == "0o700", folder
    for file in (db, state / "mcp-servers.log", trace):
        assert _mode(file) == "0o600", file
    for extra in _db_files(db)[1:]:
        if extra.exists():
            assert _mode(extra) == "0o600", extra


def test_the_oauth_token_caches_folders_are_private_under_umask_000(tmp_path: Path) -> None:
    from mcp.shared.auth import OAuthToken

    from fncall_graph.adapters.mcp.oauth import TokenCache

    path = tmp_path / "cache" / "fncall-graph" / "mcp-oauth" / "srv.json"
    old = os.umask(0)
    try:
        asyncio.run(
            TokenCache("srv", path).set_tokens(OAuthToken(access_token="a", token_type="Bearer"))
        )
    finally:
        os.umask(old)
    for folder in (tmp_path / "cache", path.parent.parent, path.parent):
        assert _mode(folder) == "0o700", folder
    assert _mode(path) == "0o600"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "https://u:p4ss@h/x?access_token=abc123&page=2",
            "https://***@h/x?access_token=***&page=2",
        ),
        (
            '{"api_key": "sk-1234", "client_secret": "s3cr"}',
            '{"api_key": "***", "client_secret": "***"}',
        ),
        ("Authorization: Bearer eyJhbGciOi.x.y", "Authorization: Bearer ***"),
        ("X-Api-Key: abcdef", "X-Api-Key: ***"),
        ("curl -H 'Bearer abcdefghijkl'", "curl -H 'Bearer ***'"),
        ("?X-Amz-Signature=deadbeef&X-Amz-Date=1", "?X-Amz-Signature=***&X-Amz-Date=1"),
        # what is no secret stays: an error's name, token counts, prose about a token
        ("KeyError: 'city'", "KeyError: 'city'"),
        ("max_tokens=1024, tokens: 12", "max_tokens=1024, tokens: 12"),
        ("HTTP 401 invalid_token: the token expired", "HTTP 401 invalid_token: the token expired"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ],
)
def test_redact_masks_secrets_and_keeps_the_rest(text: str, expected: str) -> None:
    from fncall_graph.adapters.secrets import redact

    assert redact(text) == expected


def test_config_and_spec_errors_name_the_url_without_its_secrets() -> None:
    from fncall_graph.adapters.mcp import MCPConfigError, parse_mcp_config
    from fncall_graph.adapters.models import ModelSpecError, resolve_model

    bad = {"mcpServers": {"r": {"url": f"ftp://me:{PASSWORD}@h/mcp?api_key={TOKEN}"}}}
    with pytest.raises(MCPConfigError) as config_error:
        parse_mcp_config(bad)
    with pytest.raises(ModelSpecError) as spec_error:
        resolve_model(f"http://me:{PASSWORD}@h:1/v1?token={TOKEN} x#m")
    for said in (str(config_error.value), str(spec_error.value)):
        assert "***@h" in said, said  # where, still said
        assert PASSWORD not in said and TOKEN not in said, said
