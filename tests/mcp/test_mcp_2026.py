"""What the toolkit does on the mcp 2.x stack that the 2026-07-28 protocol decides.

Run in ``.venv-mcp2`` (mcp 2.x); from the main environment (mcp 1.x), the one test there
runs this module in ``.venv-mcp2`` (``make install-mcp2``).

- a server's question is attributed to the call it came with, whatever runs beside it;
- a server's result that is not a JSON object fails its call at once, naming the server
  and the tool (the SDK drops such a response, and the call waited out its timeout);
- starting against a server on mcp 1.x prints nothing (it complained of the 2026-07-28
  probe, ``server/discover``, in ~90 lines on the user's terminal), while a server that
  does not start still shows what it wrote.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.adapters.mcp.stack import GENERATION
from fncall_graph.testing import ReplayChatModel

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
SERVERS = Path(__file__).parents[1] / "servers"
MCP2_PYTHON = ROOT / ".venv-mcp2" / "bin" / "python"

if GENERATION == 1:

    def test_this_module_passes_on_the_mcp2_stack() -> None:
        if not MCP2_PYTHON.exists():
            pytest.fail(f"{MCP2_PYTHON} is missing: `make install-mcp2` builds it")
        done = subprocess.run(
            [str(MCP2_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
            cwd=ROOT,
            env={**os.environ, "FNCALL_TEST_MCP1_PYTHON": sys.executable},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
        assert " passed" in done.stdout.splitlines()[-1]

else:

    async def appears(path: Path) -> None:
        """Wait for ``path`` to exist (a server creates it)."""
        async with asyncio.timeout(30):
            while not path.exists():
                await asyncio.sleep(0.05)

    async def test_a_question_is_attributed_to_its_own_call_whatever_runs_beside(
        tmp_path: Path,
    ) -> None:
        # `book` asks its question only once `wait` runs too, and `wait` runs until `book`
        # has its answer: the question reaches the client with both calls in flight, the
        # call that asks it started first
        config = {
            "mcpServers": {
                "s": {
                    "command": sys.executable,
                    "args": [str(SERVERS / "asking_beside_server_mcp2.py"), str(tmp_path)],
                }
            }
        }
        book = [{"name": "s-book", "args": {"city": "北京"}, "id": "b1"}]
        wait = [{"name": "s-wait", "args": {}, "id": "w1"}]
        asking = {"configurable": {"thread_id": "asking"}}
        beside = {"configurable": {"thread_id": "beside"}}
        async with MCPToolkit.from_config(config, call_timeout=15) as toolkit:

            def graph(calls: list[dict]) -> object:
                model = ReplayChatModel([AIMessage(content="", tool_calls=calls), "好"])
                return create_fncall_graph(
                    model, toolkit.tools, dialect="native", checkpointer=InMemorySaver()
                )

            booking, waiting = graph(book), graph(wait)
            first = asyncio.create_task(booking.ainvoke({"messages": [("user", "订")]}, asking))
            await appears(tmp_path / "asking")
            second = asyncio.create_task(waiting.ainvoke({"messages": [("user", "等")]}, beside))
            paused = await first
            [pending] = paused.get("__interrupt__") or [None]
            assert pending is not None, [m.content for m in paused["messages"]]
            assert pending.value["mcp_elicitation"]["tool_call_id"] == "b1"
            assert pending.value["mcp_elicitation"]["message"] == "book in 北京?"
            done = await booking.ainvoke(
                Command(resume={"action": "accept", "content": {"confirm": True}}), asking
            )
            waited = await second
        assert [m.content for m in done["messages"] if isinstance(m, ToolMessage)] == [
            "booked in 北京"
        ]
        assert [
            (m.content, m.status) for m in waited["messages"] if isinstance(m, ToolMessage)
        ] == [("waited", "success")]

    NOT_AN_OBJECT = """
    import json
    import sys

    RESULTS = {"as_list": [1, 2], "as_text": "done", "as_null": None}
    TOOLS = [
        {"name": name, "inputSchema": {"type": "object", "properties": {}}} for name in RESULTS
    ]
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "odd", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = RESULTS[message["params"]["name"]]
        else:
            error = {"code": -32601, "message": "Method not found"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\\n")
        sys.stdout.flush()
    """

    @pytest.mark.parametrize(
        ("tool", "said"),
        [("as_list", "list: [1, 2]"), ("as_text", "str: done"), ("as_null", "null")],
    )
    async def test_a_result_that_is_not_an_object_fails_the_call_at_once(
        tmp_path: Path, tool: str, said: str
    ) -> None:
        script = tmp_path / "odd.py"
        script.write_text(textwrap.dedent(NOT_AN_OBJECT))
        config = {"mcpServers": {"odd": {"command": sys.executable, "args": [str(script)]}}}
        # a call that waited would fail with MCPToolTimeoutError after 60 s, not this
        async with MCPToolkit.from_config(config, call_timeout=60) as toolkit:
            call = {"type": "tool_call", "id": "c1", "name": f"odd-{tool}", "args": {}}
            message = await asyncio.wait_for(toolkit.get_tool(f"odd-{tool}").ainvoke(call), 30)
        assert message.status == "error"
        assert f"MCP server 'odd': tool '{tool}' failed" in message.content
        assert "not an object" in message.content and said in message.content

    START = """
    import asyncio
    import logging
    import sys

    from fncall_graph import MCPToolkit

    logging.basicConfig(level=logging.WARNING)  # what a user sees: warnings and up


    async def main() -> None:
        server = {"command": sys.argv[1], "args": sys.argv[2:]}
        async with MCPToolkit.from_config({"mcpServers": {"w": server}}) as toolkit:
            print(await toolkit.get_tool("w-get_weather").ainvoke({"city": "北京"}))


    asyncio.run(main())
    """

    def start(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
        """A program that starts a toolkit on ``command`` (a stdio server) and calls it."""
        script = tmp_path / "start.py"
        script.write_text(textwrap.dedent(START))
        return subprocess.run(
            [sys.executable, str(script), *command],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def test_a_failed_start_has_written_out_what_the_server_said_before_it_returns(
        capfd: pytest.CaptureFixture[str],
    ) -> None:
        # the toolkit's error follows at once and may end the program, while the text is
        # passed on by a daemon thread: it must be out before the error is raised
        from fncall_graph.adapters.mcp._sdk2 import _StartingStderr

        said = "weather: WEATHER_API_KEY is not set"
        for _ in range(20):
            held = _StartingStderr("weather")
            held.file.write(said + "\n")
            held.file.flush()
            held.started(False)
            assert said in capfd.readouterr().err
            held.close()

    def test_a_start_against_an_mcp1_server_prints_nothing_but_a_failed_one_says_why(
        tmp_path: Path,
    ) -> None:
        mcp1 = os.environ.get("FNCALL_TEST_MCP1_PYTHON") or str(ROOT / ".venv" / "bin" / "python")
        done = start(tmp_path, mcp1, str(SERVERS / "weather_server.py"))
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.strip() == "晴天,温度 22°C"
        assert done.stderr == ""
        # what a server that does not start wrote is still shown, with the toolkit's error
        said = "weather: WEATHER_API_KEY is not set"
        done = start(tmp_path, sys.executable, "-c", f"import sys; sys.exit({said!r})")
        assert done.returncode != 0
        assert said in done.stderr
        assert "MCP server 'w': failed to start" in done.stderr
