"""MCP servers as tools, against real servers started by the tests.

- mcp-server-sqlite over stdio on seed 000's database;
- seed 003's FastMCP weather server over stdio and over streamable HTTP on a
  free loopback port.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool

from fncall_graph.adapters.formats.base import clean_schema
from fncall_graph.adapters.mcp import (
    MCPCallOutcomeUnknown,
    MCPConfigError,
    MCPServerError,
    MCPToolkit,
    load_mcp_tools,
    parse_mcp_config,
)
from fncall_graph.adapters.mcp.stack import wire

sys.path.insert(0, str(Path(__file__).parents[1]))
from seed_db import SEED_LIST_TABLES, make_database, sqlite_config

pytestmark = pytest.mark.slow

WEATHER_SERVER = Path(__file__).parents[1] / "servers" / "weather_server.py"
# The test servers are built on mcp 1.x: a run on the mcp 2.x stack (test_mcp_stacks.py)
# names the main environment's Python for them
SERVER_PYTHON = os.environ.get("FNCALL_TEST_MCP1_PYTHON") or sys.executable

# The six tools of seed 000, as its pre-processed system prompt lists them.
SEED_TOOL_LINES = [
    '{"type": "function", "function": {"name": "sqlite-read_query", "description": "Execute a SELECT query on the SQLite database", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}}, "required": ["query"]}}}',
    '{"type": "function", "function": {"name": "sqlite-write_query", "description": "Execute an INSERT, UPDATE, or DELETE query on the SQLite database", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "SQL query to execute"}}, "required": ["query"]}}}',
    '{"type": "function", "function": {"name": "sqlite-create_table", "description": "Create a new table in the SQLite database", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "CREATE TABLE SQL statement"}}, "required": ["query"]}}}',
    '{"type": "function", "function": {"name": "sqlite-list_tables", "description": "List all tables in the SQLite database", "parameters": {"type": "object", "properties": {}, "required": []}}}',
    '{"type": "function", "function": {"name": "sqlite-describe_table", "description": "Get the schema information for a specific table", "parameters": {"type": "object", "properties": {"table_name": {"type": "string", "description": "Name of the table to describe"}}, "required": ["table_name"]}}}',
    '{"type": "function", "function": {"name": "sqlite-append_insight", "description": "Add a business insight to the memo", "parameters": {"type": "object", "properties": {"insight": {"type": "string", "description": "Business insight discovered from data analysis"}}, "required": ["insight"]}}}',
]


# --------------------------------------------------------------------------- helpers


def child_processes() -> dict[int, str]:
    """Live (non-zombie) child processes of this test process: pid -> command line."""
    me = os.getpid()
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == me and state != "Z":
            out[int(entry)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return out


def server_pids(marker: str) -> list[int]:
    return [pid for pid, cmd in child_processes().items() if marker in cmd]


def pid_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def call(tool_name: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": tool_name, "args": args}


def weather_stdio_config(**extra: Any) -> dict[str, Any]:
    return {
        "mcpServers": {
            "weather": {"command": SERVER_PYTHON, "args": [str(WEATHER_SERVER)], **extra}
        }
    }


@pytest.fixture
def seed_db(tmp_path: Path) -> Path:
    return make_database(tmp_path / "test.db")


# --------------------------------------------------------------------------- config


def test_mcp_servers_stdio_entry_with_env_merged_over_environ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DB_DIR", "/data")
    monkeypatch.setenv("API_TOKEN", "s3cret")
    config = {
        "mcpServers": {
            "sqlite": {
                "command": "uvx",
                "args": ["mcp-server-sqlite", "--db-path", "${DB_DIR}/test.db"],
                "env": {"TOKEN": "Bearer ${API_TOKEN}", "MODE": "${MODE:-ro}"},
                "cwd": "/tmp",
            }
        }
    }
    conn = parse_mcp_config(config)["sqlite"]
    assert conn["transport"] == "stdio"
    assert conn["command"] == "uvx"
    assert conn["args"] == ["mcp-server-sqlite", "--db-path", "/data/test.db"]
    assert conn["cwd"] == "/tmp"
    env = conn["env"]
    assert env["TOKEN"] == "Bearer s3cret"
    assert env["MODE"] == "ro"
    assert env["PATH"] == os.environ["PATH"]  # the server still finds its interpreter


def test_mcp_servers_stdio_without_env_leaves_env_unset() -> None:
    conn = parse_mcp_config({"mcpServers": {"s": {"command": "x"}}})["s"]
    assert conn == {"transport": "stdio", "command": "x", "args": []}


@pytest.mark.parametrize(
    ("entry", "transport"),
    [
        ({"url": "http://127.0.0.1:8000/sse"}, "sse"),
        ({"url": "http://127.0.0.1:8000/mcp"}, "streamable_http"),
        ({"url": "http://127.0.0.1:8000/mcp", "type": "sse"}, "sse"),
        ({"url": "http://127.0.0.1:8000/mcp", "type": "streamable-http"}, "streamable_http"),
        ({"url": "http://127.0.0.1:8000/mcp", "type": "streamable_http"}, "streamable_http"),
        ({"url": "http://127.0.0.1:8000/mcp", "type": "http"}, "streamable_http"),
        ({"url": "http://127.0.0.1:8000/mcp", "transport": "http"}, "streamable_http"),
    ],
)
def test_mcp_servers_url_entries(entry: dict[str, Any], transport: str) -> None:
    assert parse_mcp_config({"mcpServers": {"remote": entry}})["remote"]["transport"] == transport


def test_headers_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TOKEN", "abc")
    config = {
        "mcpServers": {
            "remote": {
                "url": "https://example.test/mcp",
                "type": "streamable-http",
                "headers": {"Authorization": "Bearer ${API_TOKEN}"},
            }
        }
    }
    assert parse_mcp_config(config)["remote"] == {
        "transport": "streamable_http",
        "url": "https://example.test/mcp",
        "headers": {"Authorization": "Bearer abc"},
    }


def test_langchain_mcp_adapters_connections() -> None:
    config = {
        "math": {"transport": "stdio", "command": "python", "args": ["math_server.py"]},
        "weather": {
            "transport": "streamable_http",
            "url": "http://127.0.0.1:8000/mcp",
            "timeout": 5,
        },
    }
    conns = parse_mcp_config(config)
    # a bare python is the one fncall-graph runs in (docs/mcp.md)
    assert conns["math"] == {
        "transport": "stdio",
        "command": sys.executable,
        "args": ["math_server.py"],
    }
    assert conns["weather"] == {
        "transport": "streamable_http",
        "url": "http://127.0.0.1:8000/mcp",
        "timeout": 5.0,
    }


def test_config_from_json_file_and_qwen_agent_list(tmp_path: Path) -> None:
    config = {"mcpServers": {"sqlite": {"command": "uvx", "args": ["mcp-server-sqlite"]}}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    assert parse_mcp_config(path) == parse_mcp_config(str(path)) == parse_mcp_config([config])


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"mcpServers": {"sqlite": {"command": 42}}},
            "mcpServers.sqlite.command: must be a string",
        ),
        (
            # a setting this client does not have is not silently gone without
            {"mcpServers": {"sqlite": {"command": "uvx", "disabledTools": ["write_query"]}}},
            "mcpServers.sqlite.disabledTools: unknown key 'disabledTools' in the entry of "
            "server 'sqlite'",
        ),
        (
            {"mcpServers": {"web": {"url": "http://h/mcp", "header": {"A": "b"}}}},
            "mcpServers.web.header: unknown key 'header' in the entry of server 'web'",
        ),
        (
            {"mcpServers": {"sqlite": {"command": ""}}},
            "mcpServers.sqlite.command: must not be empty",
        ),
        (
            {"mcpServers": {"sqlite": {"command": "uvx", "args": "mcp-server-sqlite"}}},
            "mcpServers.sqlite.args: must be a list of strings",
        ),
        (
            {"mcpServers": {"sqlite": {"command": "uvx", "args": ["a", 1]}}},
            "mcpServers.sqlite.args[1]: must be a string",
        ),
        (
            {"mcpServers": {"sqlite": {"command": "uvx", "env": ["A=1"]}}},
            "mcpServers.sqlite.env: must be an object",
        ),
        (
            {"mcpServers": {"sqlite": {"command": "uvx", "env": {"A": 1}}}},
            "mcpServers.sqlite.env.A: must be a string",
        ),
        (
            {"mcpServers": {"sqlite": {"command": "uvx", "env": {"A": "${FNCALL_UNSET_VAR}"}}}},
            "mcpServers.sqlite.env.A: environment variable ${FNCALL_UNSET_VAR} is not set",
        ),
        (
            {"mcpServers": {"sqlite": {"command": "uvx", "args": ["${FNCALL_UNSET_VAR}"]}}},
            "mcpServers.sqlite.args[0]: environment variable ${FNCALL_UNSET_VAR} is not set",
        ),
        (
            {"mcpServers": {"sqlite": {"command": "uvx", "type": "sse"}}},
            'mcpServers.sqlite.type: must be "stdio"',
        ),
        ({"mcpServers": {"sqlite": {}}}, 'mcpServers.sqlite: needs "command"'),
        (
            {"mcpServers": {"sqlite": "uvx mcp-server-sqlite"}},
            "mcpServers.sqlite: must be an object",
        ),
        (
            {"mcpServers": {"web": {"url": "http://h/mcp", "command": "x"}}},
            "mcpServers.web: give either",
        ),
        (
            {"mcpServers": {"web": {"url": "ftp://h/mcp"}}},
            "mcpServers.web.url: must be a http/https URL",
        ),
        (
            {"mcpServers": {"web": {"url": "http://h/mcp", "type": "grpc"}}},
            "mcpServers.web.type: unknown transport 'grpc'",
        ),
        (
            {"mcpServers": {"web": {"url": "http://h/mcp", "headers": {"X": None}}}},
            "mcpServers.web.headers.X: must be a string",
        ),
        (
            {
                "mcpServers": {
                    "web": {
                        "url": "http://h/mcp",
                        "headers": {"Authorization": "Bearer ${FNCALL_UNSET_VAR}"},
                    }
                }
            },
            "mcpServers.web.headers.Authorization: environment variable ${FNCALL_UNSET_VAR} is not set",
        ),
        (
            {"mcpServers": {"web": {"url": "http://h/mcp", "timeout": -1}}},
            "mcpServers.web.timeout: must be a positive number",
        ),
        ({"mcpServers": {}}, "mcpServers: no servers configured"),
        ({"mcpServers": []}, "mcpServers: must be an object"),
        ({"math": {"command": "python", "args": []}}, "math.transport: is required"),
        ({"math": {"transport": "pipe"}}, "math.transport: unknown transport 'pipe'"),
        ({"math": {"transport": "stdio", "command": "python"}}, "math.args: is required"),
        (
            {"math": {"transport": "stdio", "command": "python", "args": [], "cmd": "x"}},
            "math.cmd: unknown field for the stdio transport",
        ),
        ({"math": {"transport": "sse", "url": 8000}}, "math.url: must be a string"),
        # refused with the key's path, not a bare ValueError from the URL parser
        (
            {"mcpServers": {"web": {"url": "http://[::1/mcp"}}},
            "mcpServers.web.url: is not a valid URL",
        ),
        (
            {"mcpServers": {"web": {"url": "http://[::1/mcp", "type": "sse"}}},
            "mcpServers.web.url: is not a valid URL",
        ),
        # refused here, not only when the server starts
        (
            {"mcpServers": {"web": {"url": "http://h:99999/mcp"}}},
            "mcpServers.web.url: is not a valid URL",
        ),
        (
            {"mcpServers": {"web": {"url": "http://h:port/mcp"}}},
            "mcpServers.web.url: is not a valid URL",
        ),
        (
            {"mcpServers": {"s": {"command": "py\x00thon"}}},
            "mcpServers.s.command: must not contain a NUL",
        ),
        (
            {"mcpServers": {"s": {"command": "x", "args": ["a\x00"]}}},
            "mcpServers.s.args[0]: must not contain a NUL",
        ),
        (
            {"mcpServers": {"s": {"command": "x", "env": {"K": "v\x00"}}}},
            "mcpServers.s.env.K: must not contain a NUL",
        ),
        (
            {"mcpServers": {"s": {"command": "x", "env": {"K\x00": "v"}}}},
            "mcpServers.s.env: must not contain a NUL",
        ),
        (
            {"mcpServers": {"s": {"command": "x", "cwd": "/tmp\x00"}}},
            "mcpServers.s.cwd: must not contain a NUL",
        ),
        (
            {"mcpServers": {"w": {"url": "http://h/mcp\x00"}}},
            "mcpServers.w.url: must not contain a NUL",
        ),
        (
            {"math": {"transport": "stdio", "command": "x", "args": [], "session_kwargs": 5}},
            "math.session_kwargs: must be an object",
        ),
        (
            {"math": {"transport": "stdio", "command": "x", "args": [], "encoding": "utf-99"}},
            "math.encoding: unknown text encoding 'utf-99'",
        ),
        (
            {
                "math": {
                    "transport": "stdio",
                    "command": "x",
                    "args": [],
                    "encoding_error_handler": "loud",
                }
            },
            "math.encoding_error_handler: must be one of strict, ignore, replace",
        ),
        (
            {
                "math": {
                    "transport": "streamable_http",
                    "url": "http://h/mcp",
                    "terminate_on_close": "yes",
                }
            },
            "math.terminate_on_close: must be true or false",
        ),
        # the place and the name, not a bare ": server name ..."
        (
            {"mcpServers": {"": {"command": "x"}}},
            "mcpServers: server name '' must be a non-empty string",
        ),
        (
            {"mcpServers": {"ok": {"command": "x"}, " ": {"command": "x"}}},
            "mcpServers: server name ' ' must be a non-empty string",
        ),
        (
            {"": {"transport": "stdio", "command": "x", "args": []}},
            "config: server name '' must be a non-empty string",
        ),
        # roots the server would be refused only when it asks for them
        (
            {"mcpServers": {"s": {"command": "x", "roots": [{"uri": "file:///srv", "name": 5}]}}},
            "mcpServers.s.roots[0].name: must be a string, got int",
        ),
        (
            {
                "mcpServers": {
                    "s": {"command": "x", "roots": ["/tmp", {"uri": "/srv", "nmae": "x"}]}
                }
            },
            'mcpServers.s.roots[1].nmae: unknown key; a root may have "uri" and "name"',
        ),
        (
            {"mcpServers": {"s": {"command": "x", "roots": ["https://example.com/data"]}}},
            "mcpServers.s.roots[0]: must be a file:// URI or a path, got 'https://example.com/data'",
        ),
    ],
)
def test_bad_config_is_refused_naming_server_and_field(
    config: dict[str, Any], message: str
) -> None:
    before = child_processes()
    with pytest.raises(MCPConfigError) as info:
        MCPToolkit.from_config(config)
    assert str(info.value).startswith(message), str(info.value)
    assert child_processes() == before  # nothing was started


def test_bad_config_file(tmp_path: Path) -> None:
    with pytest.raises(MCPConfigError, match="cannot read config file"):
        parse_mcp_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MCPConfigError, match="invalid JSON"):
        parse_mcp_config(bad)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"mcpServers": {"s": {"command": "café"}}}'.encode("latin-1"))
    with pytest.raises(MCPConfigError, match=r"latin\.json: config file is not UTF-8 text"):
        parse_mcp_config(latin)
    nul = str(tmp_path / "mcp\x00.json")  # not a bare "embedded null byte" from the OS
    for path in (nul, Path(nul)):
        with pytest.raises(MCPConfigError) as info:
            MCPToolkit.from_config(path)
        assert str(info.value) == f"{nul!r}: config file path must not contain a NUL byte"


def test_bad_roots_and_sampling_models_name_their_key() -> None:
    with pytest.raises(
        MCPConfigError, match=r"mcpServers\.weather\.roots\[1\]: must not contain a NUL"
    ):
        MCPToolkit.from_config(weather_stdio_config(roots=["/tmp", "/tmp/a\x00b"]))
    bad_model = weather_stdio_config(sampling={"allow": True, "model": "nonsense:xyz"})
    with pytest.raises(
        MCPConfigError, match=r"mcpServers\.weather\.sampling\.model: .*unknown provider"
    ):
        MCPToolkit.from_config(bad_model)


def test_from_config_starts_nothing(seed_db: Path) -> None:
    toolkit = MCPToolkit.from_config(sqlite_config(seed_db))
    assert server_pids("mcp-server-sqlite") == []
    with pytest.raises(RuntimeError, match="not started"):
        _ = toolkit.tools


def test_clean_schema() -> None:
    assert clean_schema({"type": "object", "title": "x", "properties": {}}) == {
        "type": "object",
        "properties": {},
        "required": [],
    }
    nested = {
        "type": "object",
        "properties": {"place": {"$ref": "#/$defs/Place"}},
        "required": ["place"],
        "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    assert clean_schema(nested)["properties"]["place"]["properties"] == {"city": {"type": "string"}}


# --------------------------------------------------------------------------- sqlite over stdio


async def test_sqlite_tools_have_seed_names_and_schemas(seed_db: Path) -> None:
    async with MCPToolkit.from_config(sqlite_config(seed_db), include_resources=False) as toolkit:
        lines = [
            json.dumps(convert_to_openai_tool(tool), ensure_ascii=False) for tool in toolkit.tools
        ]
        assert lines == SEED_TOOL_LINES
        for tool in toolkit.tools:
            assert set(tool.args_schema) == {"type", "properties", "required"}


async def test_sqlite_resources_tools(seed_db: Path) -> None:
    async with MCPToolkit.from_config(sqlite_config(seed_db)) as toolkit:
        names = [tool.name for tool in toolkit.tools]
        assert names[-2:] == ["sqlite-list_resources", "sqlite-read_resource"]
        listing = json.loads(await toolkit.get_tool("sqlite-list_resources").ainvoke({}))
        assert [r["uri"] for r in listing["resources"]] == ["memo://insights"]
        memo = await toolkit.get_tool("sqlite-read_resource").ainvoke({"uri": "memo://insights"})
        assert "insights" in memo


async def test_list_tables_matches_seed(seed_db: Path) -> None:
    async with MCPToolkit.from_config(sqlite_config(seed_db)) as toolkit:
        message = await toolkit.get_tool("sqlite-list_tables").ainvoke(
            call("sqlite-list_tables", {})
        )
        assert isinstance(message, ToolMessage)
        assert message.content == SEED_LIST_TABLES
        assert message.status == "success"
        counts = [
            await toolkit.get_tool("sqlite-read_query").ainvoke(
                {"query": f"SELECT COUNT(*) FROM {table}"}
            )
            for table in ("students", "sqlite_sequence", "log")
        ]
        assert counts == ["[{'COUNT(*)': 2}]", "[{'COUNT(*)': 1}]", "[{'COUNT(*)': 1}]"]
        age = await toolkit.get_tool("sqlite-read_query").ainvoke(
            {"query": "SELECT age FROM students WHERE name = '韩梅梅'"}
        )
        assert age == "[{'age': 6}]"


async def test_one_session_is_shared_and_closing_stops_the_server(seed_db: Path) -> None:
    async with MCPToolkit.from_config(sqlite_config(seed_db)) as toolkit:
        list_tables = toolkit.get_tool("sqlite-list_tables")
        [pid] = server_pids("mcp-server-sqlite")
        results = await asyncio.gather(*(list_tables.ainvoke({}) for _ in range(5)))
        assert results == [SEED_LIST_TABLES] * 5
        await toolkit.get_tool("sqlite-read_query").ainvoke({"query": "SELECT 1"})
        assert server_pids("mcp-server-sqlite") == [pid]
    assert pid_gone(pid)
    assert server_pids("mcp-server-sqlite") == []


async def test_killed_server_is_restarted_and_the_call_retried(seed_db: Path) -> None:
    # declared idempotent: a call the server may have died in can run again
    idempotent = ["sqlite-list_tables"]
    async with MCPToolkit.from_config(
        sqlite_config(seed_db), idempotent_tools=idempotent
    ) as toolkit:
        list_tables = toolkit.get_tool("sqlite-list_tables")
        assert await list_tables.ainvoke({}) == SEED_LIST_TABLES
        [old] = server_pids("mcp-server-sqlite")
        os.kill(old, signal.SIGKILL)
        assert await list_tables.ainvoke({}) == SEED_LIST_TABLES
        [new] = server_pids("mcp-server-sqlite")
        assert new != old
        assert pid_gone(old)
        # and the new session is the shared one from now on
        assert await list_tables.ainvoke({}) == SEED_LIST_TABLES
        assert server_pids("mcp-server-sqlite") == [new]
    assert pid_gone(new)


async def test_killed_during_concurrent_calls(seed_db: Path) -> None:
    idempotent = ["sqlite-list_tables"]
    async with MCPToolkit.from_config(
        sqlite_config(seed_db), idempotent_tools=idempotent
    ) as toolkit:
        list_tables = toolkit.get_tool("sqlite-list_tables")
        [old] = server_pids("mcp-server-sqlite")
        os.kill(old, signal.SIGKILL)
        results = await asyncio.gather(*(list_tables.ainvoke({}) for _ in range(4)))
        assert results == [SEED_LIST_TABLES] * 4
        assert len(server_pids("mcp-server-sqlite")) == 1  # restarted once, not per call
    assert server_pids("mcp-server-sqlite") == []


async def test_bad_command_names_the_server(tmp_path: Path) -> None:
    config = {"mcpServers": {"sqlite": {"command": str(tmp_path / "no-such-server")}}}
    with pytest.raises(MCPServerError) as info:
        async with MCPToolkit.from_config(config, startup_timeout=20):
            pass
    assert info.value.server == "sqlite"
    assert str(info.value).startswith("MCP server 'sqlite': failed to start: command")
    assert "not found" in str(info.value)


async def test_server_crashing_at_startup_names_the_server_and_stops_the_others(
    seed_db: Path,
) -> None:
    config = sqlite_config(seed_db)
    config["mcpServers"]["crashy"] = {
        "command": sys.executable,
        "args": ["-c", "import sys; print('no database', file=sys.stderr); sys.exit(3)"],
    }
    with pytest.raises(MCPServerError) as info:
        async with MCPToolkit.from_config(config, startup_timeout=20):
            pass
    assert info.value.server == "crashy"
    assert "closed the connection during initialization" in str(info.value)
    assert server_pids("mcp-server-sqlite") == []


async def test_server_that_never_answers_times_out_at_startup() -> None:
    config = {
        "mcpServers": {
            "mute": {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
        }
    }
    with pytest.raises(
        MCPServerError, match=r"MCP server 'mute': failed to start: no answer .* within 1 s"
    ):
        async with MCPToolkit.from_config(config, startup_timeout=1):
            pass
    assert server_pids("sys.stdin.read") == []


async def test_unknown_server_and_tool(seed_db: Path) -> None:
    async with MCPToolkit.from_config(sqlite_config(seed_db)) as toolkit:
        with pytest.raises(
            MCPServerError, match=r"MCP server 'postgres': unknown server; configured: sqlite"
        ):
            toolkit.get_tools("postgres")
        with pytest.raises(KeyError, match="sqlite-drop_table"):
            toolkit.get_tool("sqlite-drop_table")
        assert toolkit.servers == ["sqlite"]
        assert wire(toolkit.server_info("sqlite"))["serverInfo"]["name"] == "sqlite"


async def test_separator_and_load_mcp_tools(seed_db: Path) -> None:
    async with load_mcp_tools(
        sqlite_config(seed_db), separator="__", include_resources=False
    ) as tools:
        assert [t.name for t in tools][:2] == ["sqlite__read_query", "sqlite__write_query"]
        by_name = {t.name: t for t in tools}
        assert await by_name["sqlite__list_tables"].ainvoke({}) == SEED_LIST_TABLES
    assert server_pids("mcp-server-sqlite") == []


# --------------------------------------------------------------------------- weather


async def test_call_timeout_names_server_tool_and_timeout() -> None:
    async with MCPToolkit.from_config(weather_stdio_config(), call_timeout=0.5) as toolkit:
        slow = toolkit.get_tool("weather-slow_weather")
        message = await slow.ainvoke(call("weather-slow_weather", {"city": "上海", "seconds": 60}))
        assert message.status == "error"
        assert message.content.startswith(
            "MCP server 'weather': tool 'slow_weather' timed out after 0.5 s. "
            "The server may still finish the call"
        )
        # the session survives a timeout
        assert (
            await toolkit.get_tool("weather-get_weather").ainvoke({"city": "上海"})
            == "多云,温度 25°C"
        )


async def test_weather_over_streamable_http(weather_http: str) -> None:
    config = {"mcpServers": {"weather": {"url": weather_http, "type": "streamable-http"}}}
    async with MCPToolkit.from_config(config) as toolkit:
        names = [tool.name for tool in toolkit.tools]
        assert names == [
            "weather-get_weather",
            "weather-weather_icon",
            "weather-broken_tool",
            "weather-slow_weather",
            "weather-forecast",
            "weather-book_hotel",
            "weather-summarize",
            "weather-visible_roots",
            "weather-weather_pack",
            "weather-freeze",
            "weather-list_resources",
            "weather-read_resource",
        ]
        get_weather = toolkit.get_tool("weather-get_weather")
        assert get_weather.description == "获取指定城市的天气信息"
        assert get_weather.args_schema == {
            "type": "object",
            "properties": {"city": {"title": "City", "type": "string"}},
            "required": ["city"],
        }
        message = await get_weather.ainvoke(call("weather-get_weather", {"city": "北京"}))
        assert message.content == "晴天,温度 22°C"
        assert message.artifact == {"structured_content": {"result": "晴天,温度 22°C"}}
        assert await get_weather.ainvoke({"city": "杭州"}) == "杭州 的天气数据暂不可用"


async def test_weather_resources(weather_http: str) -> None:
    async with MCPToolkit.from_config(
        {"mcpServers": {"weather": {"url": weather_http}}}
    ) as toolkit:
        listing = json.loads(await toolkit.get_tool("weather-list_resources").ainvoke({}))
        assert {r["uri"] for r in listing["resources"]} == {
            "resource://cities",
            "resource://icon.png",
        }
        assert [t["uriTemplate"] for t in listing["resource_templates"]] == [
            "resource://{city}/weather"
        ]

        read = toolkit.get_tool("weather-read_resource")
        assert await read.ainvoke({"uri": "resource://cities"}) == "Cities: 北京, 上海, 广州, 深圳"
        assert await read.ainvoke({"uri": "resource://shanghai/weather"}) == "Weather for shanghai"

        icon = await read.ainvoke(call("weather-read_resource", {"uri": "resource://icon.png"}))
        assert icon.content.startswith("[image: image/png, ")
        [block] = icon.artifact["content"]
        assert block["mime_type"] == "image/png"
        assert block["base64"].startswith("iVBORw0KGgo")  # PNG signature

        missing = await read.ainvoke(call("weather-read_resource", {"uri": "resource://nowhere"}))
        assert missing.status == "error"
        assert "resource://nowhere" in missing.content


async def test_image_result_is_kept_as_artifact(weather_http: str) -> None:
    async with MCPToolkit.from_config(
        {"mcpServers": {"weather": {"url": weather_http}}}
    ) as toolkit:
        message = await toolkit.get_tool("weather-weather_icon").ainvoke(
            call("weather-weather_icon", {"city": "深圳"})
        )
        assert message.status == "success"
        text, image = message.content.split("\n\n")
        assert text == "深圳 的天气图标"
        assert image.startswith("[image: image/png, ")
        [block] = message.artifact["content"]
        assert block["type"] == "image"
        assert block["mime_type"] == "image/png"
        assert block["base64"].startswith("iVBORw0KGgo")


async def test_is_error_result_becomes_error_tool_message(weather_http: str) -> None:
    async with MCPToolkit.from_config(
        {"mcpServers": {"weather": {"url": weather_http}}}
    ) as toolkit:
        message = await toolkit.get_tool("weather-broken_tool").ainvoke(
            call("weather-broken_tool", {"reason": "维护中"})
        )
        assert isinstance(message, ToolMessage)
        assert message.status == "error"
        assert message.tool_call_id == "call_1"
        assert "weather service unavailable: 维护中" in message.content


async def test_two_servers_two_transports(seed_db: Path, weather_http: str) -> None:
    config = sqlite_config(seed_db)
    config["mcpServers"]["weather"] = {"url": weather_http, "type": "http"}
    async with MCPToolkit.from_config(config, include_resources=False) as toolkit:
        assert {t.name.split("-")[0] for t in toolkit.tools} == {"sqlite", "weather"}
        results = await asyncio.gather(
            toolkit.get_tool("sqlite-list_tables").ainvoke({}),
            toolkit.get_tool("weather-get_weather").ainvoke({"city": "广州"}),
        )
        assert results == [SEED_LIST_TABLES, "小雨,温度 28°C"]


# --------------------------------------------------------------------------- sync callers


def test_sync_invoke_on_a_background_loop(seed_db: Path) -> None:
    with MCPToolkit.from_config(sqlite_config(seed_db)) as toolkit:
        list_tables = toolkit.get_tool("sqlite-list_tables")
        assert list_tables.invoke({}) == SEED_LIST_TABLES
        [pid] = server_pids("mcp-server-sqlite")
        message = list_tables.invoke(call("sqlite-list_tables", {}))
        assert message.content == SEED_LIST_TABLES
        # ainvoke from another event loop is marshalled to the toolkit's loop
        assert asyncio.run(list_tables.ainvoke({})) == SEED_LIST_TABLES
        assert server_pids("mcp-server-sqlite") == [pid]
    assert pid_gone(pid)


# a coroutine made for a call and never awaited is a fault, not a warning to live with
@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
async def test_sync_invoke_from_a_worker_thread(seed_db: Path) -> None:
    async with MCPToolkit.from_config(sqlite_config(seed_db)) as toolkit:
        list_tables = toolkit.get_tool("sqlite-list_tables")
        assert await asyncio.to_thread(list_tables.invoke, {}) == SEED_LIST_TABLES
        # on the toolkit's own loop a blocking call would deadlock: refused instead
        with pytest.raises(RuntimeError, match="would block it"):
            list_tables.invoke({})
        gc.collect()  # an unawaited coroutine warns when it is collected: here, not later


def test_sync_start_failure_leaves_nothing_behind(tmp_path: Path) -> None:
    config = {"mcpServers": {"sqlite": {"command": str(tmp_path / "missing")}}}
    threads = threading.active_count()
    with pytest.raises(MCPServerError, match="'sqlite'"):
        MCPToolkit.from_config(config).start_sync()
    assert threading.active_count() == threads


def test_a_missing_working_directory_is_named_as_such(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    config = {"mcpServers": {"s": {"command": sys.executable, "args": ["-V"], "cwd": str(missing)}}}
    with pytest.raises(MCPServerError, match=r"working directory .*no-such-dir' does not exist"):
        MCPToolkit.from_config(config).start_sync()


# -- prompts, progress and server logs


async def test_prompts_are_listed_and_open_a_thread() -> None:
    async with MCPToolkit.from_config(weather_stdio_config()) as toolkit:
        [prompt] = toolkit.prompts
        assert (prompt.name, prompt.server, prompt.prompt) == (
            "weather-weather_report",
            "weather",
            "weather_report",
        )
        assert prompt.arguments[0]["name"] == "city" and prompt.arguments[0]["required"]
        [message] = await toolkit.aget_prompt("weather-weather_report", {"city": "北京"})
        assert message.type == "human" and "北京" in message.content
        with pytest.raises(ValueError, match="needs the argument"):
            await toolkit.aget_prompt("weather-weather_report")
        with pytest.raises(KeyError, match="prompts: weather-weather_report"):
            await toolkit.aget_prompt("weather-nope")


def test_prompts_from_sync_code() -> None:
    with MCPToolkit.from_config(weather_stdio_config()) as toolkit:
        [message] = toolkit.get_prompt("weather-weather_report", {"city": "上海"})
        assert "上海" in message.content


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_progress_streams_as_custom_events_and_logs_go_to_python_logging(mode, caplog) -> None:
    from fncall_graph import create_fncall_graph
    from fncall_graph.testing import ReplayChatModel

    outputs = [
        AIMessage(
            content="",
            tool_calls=[
                {"name": "weather-forecast", "args": {"city": "北京", "days": 3}, "id": "c7"}
            ],
        ),
        "晴",
    ]
    caplog.set_level(logging.INFO, logger="fncall_graph.mcp")
    with MCPToolkit.from_config(weather_stdio_config()) as toolkit:
        graph = create_fncall_graph(ReplayChatModel(outputs), toolkit.tools, dialect="native")
        payload = {"messages": [("user", "北京三天预报")]}
        if mode == "sync":
            events = list(graph.stream(payload, stream_mode="custom"))
        else:

            async def run() -> list[Any]:
                return [e async for e in graph.astream(payload, stream_mode="custom")]

            events = asyncio.run(run())
    progress = [e["mcp_progress"] for e in events if "mcp_progress" in e]
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == [
        (1, 3, "day 1"),
        (2, 3, "day 2"),
        (3, 3, "day 3"),
    ]
    assert {(p["tool_call_id"], p["tool"]) for p in progress} == {("c7", "weather-forecast")}
    logged = [r for r in caplog.records if r.name == "fncall_graph.mcp.weather"]
    assert any("forecasting 3 days for 北京" in r.getMessage() for r in logged)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("answer", "result"),
    [
        ({"action": "accept", "content": {"confirm": True, "nights": 2}}, "已在北京预订 2 晚"),
        ({"confirm": True}, "已在北京预订 1 晚"),
        ({"action": "decline"}, "未预订 (decline)"),
    ],
)
def test_a_servers_question_pauses_the_thread_until_a_person_answers(mode, answer, result) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from fncall_graph import create_fncall_graph
    from fncall_graph.testing import ReplayChatModel

    outputs = [
        AIMessage(
            content="",
            tool_calls=[{"name": "weather-book_hotel", "args": {"city": "北京"}, "id": "b1"}],
        ),
        "好的",
    ]
    cfg = {"configurable": {"thread_id": "t"}}
    with MCPToolkit.from_config(weather_stdio_config()) as toolkit:
        graph = create_fncall_graph(
            ReplayChatModel(outputs), toolkit.tools, dialect="native", checkpointer=InMemorySaver()
        )
        payload: Any = {"messages": [("user", "在北京订酒店")]}
        if mode == "sync":
            paused = graph.invoke(payload, cfg)
        else:
            paused = asyncio.run(graph.ainvoke(payload, cfg))
        [pending] = paused["__interrupt__"]
        question = pending.value["mcp_elicitation"]
        assert question["message"] == "在北京订酒店吗?"
        assert (question["tool_call_id"], question["tool"]) == ("b1", "weather-book_hotel")
        assert "confirm" in question["requested_schema"]["properties"]
        if mode == "sync":
            done = graph.invoke(Command(resume=answer), cfg)
        else:
            done = asyncio.run(graph.ainvoke(Command(resume=answer), cfg))
    results = [m.content for m in done["messages"] if isinstance(m, ToolMessage)]
    assert results == [result]


async def test_resource_tools_only_where_the_server_lists_resources() -> None:
    server = Path(__file__).parents[1] / "servers" / "tools_only_server.py"
    config = {"mcpServers": {"plain": {"command": SERVER_PYTHON, "args": [str(server)]}}}
    async with MCPToolkit.from_config(config) as toolkit:
        assert [t.name for t in toolkit.tools] == ["plain-echo"]
        # the server's annotations, as metadata apart from the tool's own, with the
        # user's trust in the server (none: the at-most-once rule does not believe them)
        echo = toolkit.get_tool("plain-echo").metadata
        assert echo["mcp_annotations"] == {"readOnlyHint": True, "idempotentHint": True}
        assert echo["mcp_trust"] is None and "readOnlyHint" not in echo
        assert (echo["mcp_server"], echo["mcp_tool"]) == ("plain", "echo")
    async with MCPToolkit.from_config(weather_stdio_config()) as toolkit:
        assert "weather-list_resources" in [t.name for t in toolkit.tools]


def test_tools_that_run_only_as_tasks_are_left_out(caplog) -> None:
    from mcp.types import Tool, ToolExecution

    from fncall_graph.adapters.mcp.listing import callable_tools

    def tool(name: str, support: str | None) -> Tool:
        execution = ToolExecution(taskSupport=support) if support else None
        return Tool(name=name, inputSchema={"type": "object"}, execution=execution)

    caplog.set_level(logging.INFO)
    listed = callable_tools(
        "tasks", [tool("now", None), tool("maybe", "optional"), tool("later", "required")]
    )
    assert [t.name for t in listed] == ["now", "maybe"]
    assert "'later' runs only as a task" in caplog.text


def test_sampling_is_answered_by_the_clients_model_only_where_allowed(caplog) -> None:
    from fncall_graph.adapters.mcp import MCPConfigError
    from fncall_graph.testing import ReplayChatModel

    allowed = weather_stdio_config(sampling={"allow": True, "max_tokens": 64})
    model = ReplayChatModel(["北京今天晴"])
    caplog.set_level(logging.INFO, logger="fncall_graph.mcp")
    with MCPToolkit.from_config(allowed, sampling_model=model) as toolkit:
        result = toolkit.get_tool("weather-summarize").invoke(
            call("weather-summarize", {"text": "北京:晴天,温度 22°C"})
        )
    assert result.content.startswith("摘要: 北京今天晴 (") and "endTurn" in result.content
    [prompt] = model.inputs
    assert [m.type for m in prompt] == ["system", "human"]
    assert prompt[0].content == "用一句话总结" and "22°C" in prompt[1].content
    assert "sampled the client's model" in caplog.text and "max 64 tokens" in caplog.text

    # not allowed (the default): the server is told the client does not sample
    with MCPToolkit.from_config(weather_stdio_config(), sampling_model=model) as toolkit:
        refused = toolkit.get_tool("weather-summarize").invoke(
            call("weather-summarize", {"text": "x"})
        )
    assert refused.status == "error" and "ampling" in refused.content
    with pytest.raises(MCPConfigError, match="sampling: allows sampling, but names no model"):
        MCPToolkit.from_config(allowed)
    # a model named in the server's own entry
    named = weather_stdio_config(sampling={"allow": True, "model": "replay:weather?in-order"})
    with MCPToolkit.from_config(named) as toolkit:
        by_name = toolkit.get_tool("weather-summarize").invoke(
            call("weather-summarize", {"text": "x"})
        )
    assert by_name.status == "success" and by_name.content.startswith("摘要: ")


def test_roots_are_offered_only_as_configured(tmp_path: Path) -> None:
    config = weather_stdio_config(
        roots=[str(tmp_path), {"uri": "file:///srv/data", "name": "data"}]
    )
    with MCPToolkit.from_config(config) as toolkit:
        shown = toolkit.get_tool("weather-visible_roots").invoke(call("weather-visible_roots", {}))
    assert shown.content.splitlines() == [tmp_path.resolve().as_uri(), "data file:///srv/data"]
    with MCPToolkit.from_config(weather_stdio_config()) as toolkit:
        refused = toolkit.get_tool("weather-visible_roots").invoke(
            call("weather-visible_roots", {})
        )
    assert refused.status == "error"


def test_bad_roots_and_sampling_entries_name_the_field() -> None:
    from fncall_graph.adapters.mcp import MCPConfigError

    with pytest.raises(MCPConfigError, match=r"mcpServers.weather.roots\[0\]"):
        MCPToolkit.from_config(weather_stdio_config(roots=[3]))
    with pytest.raises(MCPConfigError, match=r"mcpServers\.weather\.sampling"):
        MCPToolkit.from_config(weather_stdio_config(sampling={"allow": "yes"}))


async def test_results_keep_the_servers_order_audience_and_resource_names() -> None:
    async with MCPToolkit.from_config(weather_stdio_config()) as toolkit:
        message = await toolkit.get_tool("weather-weather_pack").ainvoke(
            call("weather-weather_pack", {"city": "北京"})
        )
    assert message.content.split("\n\n") == [
        "[image: image/png, 73 bytes]",
        "北京: 晴",
        "[resource resource://北京/weather]\n22°C",
        "[link: cities resource://cities]",
        "[audio: audio/wav, 8 bytes]",
    ]
    assert "只给用户看" not in message.content
    artifact = message.artifact
    assert artifact["for_user"] == [{"type": "text", "text": "只给用户看"}]
    assert [b["type"] for b in artifact["content"]] == ["image", "file", "audio"]
    assert [(r["uri"], r["name"]) for r in artifact["resource_refs"]] == [
        ("resource://%E5%8C%97%E4%BA%AC/weather", None),
        ("resource://cities", "cities"),
    ]


async def test_a_session_stuck_after_a_timeout_is_replaced_before_the_next_call(caplog) -> None:
    others = set(server_pids(str(WEATHER_SERVER)))  # e.g. the HTTP one of other tests
    async with MCPToolkit.from_config(weather_stdio_config(), call_timeout=1) as toolkit:
        [before] = set(server_pids(str(WEATHER_SERVER))) - others
        stuck = await toolkit.get_tool("weather-freeze").ainvoke(
            call("weather-freeze", {"seconds": 600})
        )
        assert stuck.status == "error" and "timed out after 1 s" in stuck.content
        answer = await toolkit.get_tool("weather-get_weather").ainvoke(
            call("weather-get_weather", {"city": "北京"})
        )
        assert answer.content == "晴天,温度 22°C"
        assert pid_gone(before)
        assert "no answer to a ping" in caplog.text


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_tool_result_is_converted_once(mode, monkeypatch) -> None:
    from mcp.types import CallToolResult

    from fncall_graph.adapters.mcp import tools as toolkit_module

    converted: list[Any] = []
    convert = toolkit_module.result_for_model

    def counted(result: Any) -> Any:
        converted.append(result)
        return convert(result)

    monkeypatch.setattr(toolkit_module, "result_for_model", counted)

    with MCPToolkit.from_config(weather_stdio_config()) as toolkit:

        def run(name: str, args: dict[str, Any]) -> ToolMessage:
            tool = toolkit.get_tool(name)
            if mode == "sync":
                return tool.invoke(call(name, args))
            return asyncio.run(tool.ainvoke(call(name, args)))

        answer = run("weather-get_weather", {"city": "北京"})
        assert answer.content == "晴天,温度 22°C"
        assert answer.artifact == {"structured_content": {"result": "晴天,温度 22°C"}}
        assert len(converted) == 1 and isinstance(converted[0], CallToolResult)

        pack = run("weather-weather_pack", {"city": "北京"})
        assert len(converted) == 2
        assert [b["type"] for b in pack.artifact["content"]] == ["image", "file", "audio"]

        failed = run("weather-broken_tool", {"reason": "维护中"})
        assert failed.status == "error" and "weather service unavailable: 维护中" in failed.content
        assert len(converted) == 3 and wire(converted[2])["isError"]


# --------------------------------------------------------------------------- faults: honest outcomes

FAULTY_SERVER = Path(__file__).parents[1] / "servers" / "faulty_server.py"


def faulty_config(effects: Path) -> dict[str, Any]:
    return {
        "mcpServers": {
            "faulty": {"command": SERVER_PYTHON, "args": [str(FAULTY_SERVER), str(effects)]}
        }
    }


def effects_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


async def test_a_call_the_server_died_in_is_not_retried_and_its_outcome_is_unknown(
    tmp_path: Path,
) -> None:
    effects = tmp_path / "effects.txt"
    async with MCPToolkit.from_config(faulty_config(effects)) as toolkit:
        write = toolkit.get_tool("faulty-write")
        [old] = server_pids(str(FAULTY_SERVER))
        Path(f"{effects}.die").touch()
        message = await write.ainvoke(call("faulty-write", {"line": "pay 5"}))
        assert message.status == "error"
        assert message.content.startswith("Outcome unknown: MCP server 'faulty'")
        assert "may or may not have taken effect" in message.content
        assert "not run again" in message.content
        assert effects_of(effects) == ["pay 5"]  # done once, not repeated
        # the server was restarted: the next call works, on a new process
        assert await write.ainvoke({"line": "pay 6"}) == "wrote pay 6"
        [new] = server_pids(str(FAULTY_SERVER))
        assert new != old and pid_gone(old)
    assert effects_of(effects) == ["pay 5", "pay 6"]


async def test_with_plain_arguments_an_unknown_outcome_is_said_too(tmp_path: Path) -> None:
    """A `ToolException` like the other call errors: the tool returns its text."""
    effects = tmp_path / "effects.txt"
    async with MCPToolkit.from_config(faulty_config(effects)) as toolkit:
        Path(f"{effects}.die").touch()
        text = await toolkit.get_tool("faulty-write").ainvoke({"line": "a"})
    assert text.startswith("Outcome unknown: MCP server 'faulty'")
    assert effects_of(effects) == ["a"]
    assert issubclass(MCPCallOutcomeUnknown, ToolException)


@pytest.mark.parametrize(
    "declared", ["annotation of a trusted server", "idempotent_tools", "metadata"]
)
async def test_a_call_of_an_idempotent_tool_the_server_died_in_is_retried(
    tmp_path: Path, declared: str
) -> None:
    effects = tmp_path / "effects.txt"
    trusted = declared == "annotation of a trusted server"
    name = "faulty-write_idempotent" if trusted else "faulty-write"
    idempotent = [name] if declared == "idempotent_tools" else []
    config = faulty_config(effects)
    if trusted:  # a server's annotations count only when the user trusts it
        config["mcpServers"]["faulty"]["trust"] = "annotations"
    async with MCPToolkit.from_config(config, idempotent_tools=idempotent) as toolkit:
        tool = toolkit.get_tool(name)
        if declared == "metadata":
            tool.metadata = {**(tool.metadata or {}), "idempotent": True}
        Path(f"{effects}.die").touch()
        message = await tool.ainvoke(call(name, {"line": "x = 1"}))
        assert message.status == "success"
        assert message.content == "wrote x = 1"
    assert effects_of(effects) == ["x = 1", "x = 1"]  # the retry ran it again, as allowed


async def test_a_server_that_never_answers_times_out_by_default(tmp_path: Path) -> None:
    from fncall_graph.adapters.mcp.toolkit import DEFAULT_CALL_TIMEOUT

    # the default is a limit, not "wait for ever"; the test makes it small via the option
    assert DEFAULT_CALL_TIMEOUT is not None and DEFAULT_CALL_TIMEOUT > 0
    toolkit = MCPToolkit.from_config(faulty_config(tmp_path / "e.txt"))
    assert toolkit.call_timeout == DEFAULT_CALL_TIMEOUT
    # None stays available, explicitly
    assert (
        MCPToolkit.from_config(faulty_config(tmp_path / "e.txt"), call_timeout=None).call_timeout
        is None
    )
    async with MCPToolkit.from_config(faulty_config(tmp_path / "e.txt"), call_timeout=0.5) as kit:
        message = await kit.get_tool("faulty-hang").ainvoke(call("faulty-hang", {}))
        assert message.status == "error"
        assert "tool 'hang' timed out after 0.5 s" in message.content
        assert "may still finish the call" in message.content
