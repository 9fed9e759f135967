"""MCP servers that are odd or refuse: schemas with ``$ref``s the client cannot follow,
credentials refused with HTTP 403, a server's question answered into the same call, and
a server command found next to the running interpreter. Each server is a real FastMCP
server (mcp 1.x), written here and started by the test."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from ports import free_port

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.mcp import MCPAuthError, MCPToolkit
from fncall_graph.testing import ReplayChatModel

pytestmark = pytest.mark.slow

REFS_SERVER = """
from typing import Annotated

from mcp.server.fastmcp import FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP("refs")


class Place(BaseModel):
    city: str


@mcp.tool()
def visit(
    place: Place,
    code: Annotated[str, Field(json_schema_extra={"$ref": "https://example.com/code.json"})],
) -> str:
    \"\"\"Visit a place.\"\"\"
    return f"visited {place.city} with {code}"


@mcp.tool()
def ping() -> str:
    \"\"\"Ping.\"\"\"
    return "pong"


mcp.run()
"""


# The servers here are built on mcp 1.x: a run on the mcp 2.x stack (test_mcp_stacks.py)
# names the main environment's Python for them
SERVER_PYTHON = os.environ.get("FNCALL_TEST_MCP1_PYTHON") or sys.executable


def stdio(tmp_path: Path, name: str, source: str) -> dict[str, Any]:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(source))
    return {"mcpServers": {name: {"command": SERVER_PYTHON, "args": [str(script)]}}}


async def test_a_ref_the_client_cannot_follow_leaves_the_tool_and_the_toolkit_working(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="fncall_graph.adapters.mcp")
    async with MCPToolkit.from_config(stdio(tmp_path, "refs", REFS_SERVER)) as toolkit:
        assert [t.name for t in toolkit.tools] == ["refs-visit", "refs-ping"]
        visit = toolkit.get_tool("refs-visit")
        # the local $defs are resolved; the network $ref left out
        assert visit.args_schema["properties"]["place"]["properties"]["city"]["type"] == "string"
        assert "$ref" not in str(visit.args_schema)
        assert convert_to_openai_tool(visit)["function"]["name"] == "refs-visit"
        done = await visit.ainvoke({"place": {"city": "北京"}, "code": "K1"})
        assert done == "visited 北京 with K1"
    [warning] = [r.getMessage() for r in caplog.records if "cannot follow" in r.getMessage()]
    assert "MCP server 'refs': tool 'visit'" in warning
    assert "'https://example.com/code.json'" in warning


# Schemas as a server may write them by hand (the low-level server sends them as given).
HAND_WRITTEN_SCHEMAS = """
import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("hand")
DANGLING = {
    "type": "object",
    "$defs": {"Day": {"type": "string"}},
    "properties": {
        "day": {"$ref": "#/$defs/Day"},
        "when": {"$ref": "#/$defs/Missing", "description": "a time"},
    },
    "required": ["day"],
}
BROKEN = {"type": "object", "properties": [{"x": {"type": "string"}}]}


@server.list_tools()
async def tools():
    return [
        types.Tool(name="plan", description="Plan a day.", inputSchema=DANGLING),
        types.Tool(name="odd", description="Odd.", inputSchema=BROKEN),
    ]


@server.call_tool(validate_input=False)
async def call(name, arguments):
    return [types.TextContent(type="text", text=f"{name} {arguments}")]


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""


async def test_a_dangling_ref_is_left_out_and_an_unreadable_schema_leaves_out_one_tool(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="fncall_graph.adapters.mcp")
    async with MCPToolkit.from_config(stdio(tmp_path, "hand", HAND_WRITTEN_SCHEMAS)) as toolkit:
        names = [t.name for t in toolkit.tools]
        plan = toolkit.get_tool("hand-plan")
        assert plan.args_schema["properties"] == {
            "day": {"type": "string"},
            "when": {"description": "a time"},
        }
        assert await plan.ainvoke({"day": "周一"}) == "plan {'day': '周一'}"
    said = [r.getMessage() for r in caplog.records]
    assert any("tool 'plan'" in m and "'#/$defs/Missing'" in m for m in said), said
    assert names == ["hand-plan"]
    assert any("MCP server 'hand': tool 'odd' left out" in m for m in said), said


# The tool counts its runs in a file: a call made twice would show it.
ASKING_SERVER = """
import sys
from pathlib import Path

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP("hotel")
RUNS = Path(sys.argv[1])


class Booking(BaseModel):
    nights: int = Field(default=2, description="nights")
    breakfast: bool = Field(default=True)


@mcp.tool()
async def book(city: str, ctx: Context) -> str:
    \"\"\"Book a hotel.\"\"\"
    runs = int(RUNS.read_text() or 0) + 1 if RUNS.exists() else 1
    RUNS.write_text(str(runs))
    first = await ctx.elicit(f"book in {city}?", Booking)
    if first.action != "accept":
        return f"run {runs}: {first.action}"
    second = await ctx.elicit("a late check-out?", Booking)
    return f"run {runs}: {first.data.nights} nights, breakfast {first.data.breakfast}; " + (
        f"then {second.data.nights}" if second.action == "accept" else second.action
    )


mcp.run()
"""


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_servers_questions_are_answered_into_the_same_call(tmp_path: Path, mode: str) -> None:
    import asyncio

    runs = tmp_path / "runs"
    config = stdio(tmp_path, "hotel", ASKING_SERVER)
    config["mcpServers"]["hotel"]["args"].append(str(runs))
    calls = [{"name": "hotel-book", "args": {"city": "北京"}, "id": "b1"}]
    cfg = {"configurable": {"thread_id": "t"}}

    def step(graph: Any, payload: Any) -> Any:
        if mode == "sync":
            return graph.invoke(payload, cfg)
        return asyncio.run(graph.ainvoke(payload, cfg))

    with MCPToolkit.from_config(config) as toolkit:
        graph = create_fncall_graph(
            ReplayChatModel([AIMessage(content="", tool_calls=calls), "好"]),
            toolkit.tools,
            dialect="native",
            checkpointer=InMemorySaver(),
        )
        paused = step(graph, {"messages": [("user", "订酒店")]})
        question = paused["__interrupt__"][0].value["mcp_elicitation"]
        assert question["message"] == "book in 北京?"
        assert question["defaults"] == {"nights": 2, "breakfast": True}
        # the person accepts the form as offered: the defaults are the answer
        paused = step(graph, Command(resume={"action": "accept", "content": {}}))
        question = paused["__interrupt__"][0].value["mcp_elicitation"]
        assert question["message"] == "a late check-out?"
        done = step(graph, Command(resume={"nights": 3}))
    [result] = [m.content for m in done["messages"] if isinstance(m, ToolMessage)]
    assert result == "run 1: 2 nights, breakfast True; then 3"
    assert runs.read_text() == "1"  # one tools/call, not one per answer


DENYING_SERVER = """
import sys

import uvicorn
from mcp.server.fastmcp import FastMCP
from starlette.responses import JSONResponse

mcp = FastMCP("guarded", stateless_http=True, json_response=True)


@mcp.tool()
def secret() -> str:
    \"\"\"A secret.\"\"\"
    return "s3cret"


@mcp.tool()
def expired() -> str:
    \"\"\"Refused: the token has expired.\"\"\"
    return "never"


app = mcp.streamable_http_app()
REFUSE_ALL = sys.argv[2:] == ["all"]  # every request refused: the toolkit cannot start
CHALLENGE = (
    'Bearer error="insufficient_scope", scope="secrets:read", '
    'error_description="needs secrets:read"'
)


async def guarded(scope, receive, send):
    # every tools/call is refused for want of a scope; the rest goes through
    if scope["type"] != "http":
        return await app(scope, receive, send)
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    if REFUSE_ALL or b'"tools/call"' in body and b'"expired"' in body:
        refusal = JSONResponse(
            {"error": "invalid_token"},
            401,
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
        return await refusal(scope, receive, send)
    if b'"tools/call"' in body:
        refusal = JSONResponse(
            {"error": "insufficient_scope"}, 403, headers={"WWW-Authenticate": CHALLENGE}
        )
        return await refusal(scope, receive, send)
    sent = False

    async def replay():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    await app(scope, replay, send)


uvicorn.run(guarded, host="127.0.0.1", port=int(sys.argv[1]))
"""


@pytest.fixture
def guarded_url(tmp_path: Path) -> Iterator[str]:
    yield from guarded_server(tmp_path)


@pytest.fixture
def refusing_url(tmp_path: Path) -> Iterator[str]:
    yield from guarded_server(tmp_path, "all")


def guarded_server(tmp_path: Path, *refuse: str) -> Iterator[str]:
    script = tmp_path / "guarded.py"
    script.write_text(textwrap.dedent(DENYING_SERVER))
    port = free_port()
    proc = subprocess.Popen(
        [SERVER_PYTHON, str(script), str(port), *refuse],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "Uvicorn running on" in line:
                started.set()
        started.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        assert started.wait(30) and proc.poll() is None, "the guarded server did not start"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_refused_credentials_are_reported_as_such_not_as_a_lost_connection(
    guarded_url: str,
) -> None:
    config = {"mcpServers": {"guarded": {"url": guarded_url}}}
    async with MCPToolkit.from_config(config) as toolkit:
        secret = toolkit.get_tool("guarded-secret")
        with pytest.raises(MCPAuthError) as refused:
            await secret.coroutine()  # type: ignore[misc]
        message = str(refused.value)
        assert "HTTP 403 insufficient_scope" in message and "secrets:read" in message
        assert "connection lost" not in message
        # as a tool call, the model is told the call was refused
        reply = await secret.ainvoke(
            {"type": "tool_call", "name": secret.name, "args": {}, "id": "x"}
        )
        assert reply.status == "error" and "insufficient_scope" in reply.content
        # a token refused outright (HTTP 401) is said as such too
        said = await toolkit.get_tool("guarded-expired").ainvoke({})
        assert "refused the credentials: HTTP 401 invalid_token" in said


async def test_credentials_refused_at_the_start_are_said_as_such(refusing_url: str) -> None:
    config = {"mcpServers": {"guarded": {"url": refusing_url}}}
    with pytest.raises(MCPAuthError) as refused:
        async with MCPToolkit.from_config(config):
            pass
    assert (
        f"'guarded': failed to start: {refusing_url} refused the credentials: HTTP 401 invalid_token"
        in str(refused.value)
    )


def test_a_server_command_is_found_next_to_the_running_python(tmp_path: Path) -> None:
    """The README's quick start run as `.venv/bin/python snippet.py`, the venv not active."""
    server = Path(sys.executable).parent / "mcp-server-sqlite"
    assert server.exists(), f"{server} is missing: the demo extra installs it"
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from fncall_graph import MCPToolkit

            config = {"mcpServers": {"sqlite": {
                "command": "mcp-server-sqlite", "args": ["--db-path", "test.db"]}}}
            with MCPToolkit.from_config(config) as toolkit:
                print(toolkit.get_tool("sqlite-list_tables").invoke({}))
            """
        )
    )
    path = os.pathsep.join(p for p in ("/usr/bin", "/bin") if Path(p).is_dir())
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PATH": path}
    done = subprocess.run(
        [sys.executable, str(snippet)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("[")  # the tables of a new database


def test_a_question_whose_process_ended_is_answered_when_the_call_runs_again(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    config = stdio(tmp_path, "hotel", ASKING_SERVER)
    config["mcpServers"]["hotel"]["args"].append(str(runs))
    calls = [{"name": "hotel-book", "args": {"city": "上海"}, "id": "b1"}]
    cfg = {"configurable": {"thread_id": "t"}}
    saver = InMemorySaver()

    def graph_on(toolkit: MCPToolkit, *replies: Any) -> Any:
        model = ReplayChatModel(list(replies))
        return create_fncall_graph(model, toolkit.tools, dialect="native", checkpointer=saver)

    with MCPToolkit.from_config(config) as toolkit:
        graph = graph_on(toolkit, AIMessage(content="", tool_calls=calls))
        paused = graph.invoke({"messages": [("user", "订酒店")]}, cfg)
    assert paused["__interrupt__"][0].value["mcp_elicitation"]["message"] == "book in 上海?"
    # the toolkit (as if its process) is gone; another one resumes the thread
    with MCPToolkit.from_config(config) as toolkit:
        graph = graph_on(toolkit, "好")
        paused = graph.invoke(Command(resume={"nights": 4}), cfg)
        assert paused["__interrupt__"][0].value["mcp_elicitation"]["message"] == (
            "a late check-out?"
        )
        done = graph.invoke(Command(resume={"action": "decline"}), cfg)
    [result] = [m.content for m in done["messages"] if isinstance(m, ToolMessage)]
    assert result == "run 2: 4 nights, breakfast True; decline"
    assert runs.read_text() == "2"
