"""A server that answers a request under its id with a ``result`` that is not a JSON
object: the call fails at once, saying so with the server's and the tool's names, over
stdio and streamable HTTP (JSON bodies and SSE streams), and the server's good answers
still come through, on the mcp 1.x stack (tests/mcp/test_mcp_2026.py has mcp 2.x's). The SDK
cannot read such a response: without the toolkit's reading of it, the call waited out
its ``call_timeout`` (300 s unless told); a start answered so, its ``startup_timeout``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fncall_graph.adapters.mcp import MCPServerError, MCPToolkit

pytestmark = pytest.mark.slow

SERVER = Path(__file__).parents[1] / "servers" / "non_object_server.py"

# each tool's result (tests/servers/non_object_server.py) as the error names it
SAID = {
    "as_list": "a JSON list: [1, 2]",
    "as_text": "a JSON str: done",
    "as_number": "a JSON int: 5",
    "as_null": "a JSON null: None",
}


@pytest.fixture(scope="module", params=["stdio", "http-json", "http-sse"])
def config(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    if request.param == "stdio":
        yield {"mcpServers": {"odd": {"command": sys.executable, "args": [str(SERVER)]}}}
        return
    how = request.param.removeprefix("http-")
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", how], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()  # written once it listens
        assert url, f"the server exited with {server.wait()}"
        yield {"mcpServers": {"odd": {"url": url, "type": "streamable-http"}}}
    finally:
        server.terminate()
        server.wait(10)


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": f"c-{tool}", "name": f"odd-{tool}", "args": args}


async def test_a_result_that_is_not_an_object_fails_its_call_at_once(
    config: dict[str, Any],
) -> None:
    # a call that waited for an answer would end in a timeout after 10 s, not these errors;
    # all in flight at once, each error reaches the call it answers
    async with MCPToolkit.from_config(config, call_timeout=10) as toolkit:
        tools = [*SAID, "echo"]
        messages = await asyncio.gather(
            *(toolkit.get_tool(f"odd-{tool}").ainvoke(call(tool, text="hi")) for tool in tools)
        )
    answered = dict(zip(tools, messages, strict=True))
    for tool, said in SAID.items():
        assert (answered[tool].status, answered[tool].content) == (
            "error",
            f"MCP server 'odd': tool '{tool}' failed: the server answered with a result "
            f"that is not an object ({said})",
        ), tool
    assert (answered["echo"].status, answered["echo"].content) == ("success", "hi")


async def test_a_start_answered_with_a_result_that_is_not_an_object_fails_at_once() -> None:
    # a start that waited for an answer would end after startup_timeout (10 s), saying so
    server = {"command": sys.executable, "args": [str(SERVER), "--start-with-list"]}
    toolkit = MCPToolkit.from_config({"mcpServers": {"odd": server}}, startup_timeout=10)
    with pytest.raises(MCPServerError) as failed:
        async with toolkit:
            pass
    assert str(failed.value) == (
        "MCP server 'odd': failed to start: McpError: the server answered with a result "
        "that is not an object (a JSON list: [1, 2])"
    )
