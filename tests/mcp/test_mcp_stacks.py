"""The MCP toolkit on both SDK generations, against servers of both.

This module runs on the stack of the environment it runs in: in the main one (mcp 1.x
with langchain-mcp-adapters), and again in ``.venv-mcp2`` (mcp 2.x, built by ``make
test``), which :func:`test_the_mcp_tests_pass_on_the_mcp2_stack` starts. Each test uses
the weather server on mcp 1.x (FastMCP, 2025-11-25 only) and on mcp 2.x (``MCPServer``:
2026-07-28, or 2025-11-25 to a client that starts with ``initialize``), each run by the
Python of its own environment, over stdio and streamable HTTP.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from ports import free_port

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.adapters.mcp.stack import GENERATION, wire
from fncall_graph.testing import ReplayChatModel

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
SERVERS = Path(__file__).parents[1] / "servers"

# Which Python runs which server: the mcp 1.x server needs the main environment, the
# mcp 2.x one `.venv-mcp2`; a run in one is told where the other is.
PYTHON = {
    "mcp1": os.environ.get("FNCALL_TEST_MCP1_PYTHON") or str(ROOT / ".venv" / "bin" / "python"),
    "mcp2": os.environ.get("FNCALL_TEST_MCP2_PYTHON")
    or str(ROOT / ".venv-mcp2" / "bin" / "python"),
}
PYTHON[f"mcp{GENERATION}"] = sys.executable
SCRIPT = {"mcp1": SERVERS / "weather_server.py", "mcp2": SERVERS / "weather_server_mcp2.py"}


def python_for(server: str) -> str:
    if not Path(PYTHON[server]).exists():
        pytest.fail(f"{PYTHON[server]} is missing: `make install-mcp2` builds it")
    return PYTHON[server]


def expected_protocol(server: str) -> str:
    """What the two sides agree on: 2026-07-28 only when both are on mcp 2.x."""
    return "2026-07-28" if GENERATION == 2 and server == "mcp2" else "2025-11-25"


@pytest.fixture(scope="module")
def http_urls() -> Iterator[dict[str, str]]:
    """Both weather servers over streamable HTTP on free loopback ports."""
    procs: list[subprocess.Popen[str]] = []
    urls: dict[str, str] = {}
    try:
        for server in ("mcp1", "mcp2"):
            port = free_port()
            proc = subprocess.Popen(
                [python_for(server), str(SCRIPT[server]), "--port", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            procs.append(proc)
            started = threading.Event()
            log: list[str] = []

            def drain(proc: subprocess.Popen[str] = proc, started=started, log=log) -> None:
                assert proc.stderr is not None
                for line in proc.stderr:  # read for ever: a full pipe would block the server
                    log.append(line)
                    if "Uvicorn running on" in line:
                        started.set()
                started.set()  # EOF: the server exited; the check below says so

            threading.Thread(target=drain, daemon=True).start()
            assert started.wait(30), f"{server} weather server did not start within 30 s"
            assert proc.poll() is None, f"{server} weather server exited:\n" + "".join(log)
            urls[server] = f"http://127.0.0.1:{port}/mcp"
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


def config(server: str, transport: str, urls: dict[str, str] | None, **env: str) -> dict[str, Any]:
    if transport == "http":
        assert urls is not None
        return {"mcpServers": {"w": {"url": urls[server], "type": "streamable-http"}}}
    entry: dict[str, Any] = {"command": python_for(server), "args": [str(SCRIPT[server])]}
    if env:
        entry["env"] = env
    return {"mcpServers": {"w": entry}}


@pytest.fixture
def urls(request: pytest.FixtureRequest) -> dict[str, str] | None:
    if request.node.callspec.params.get("transport") == "http":
        return request.getfixturevalue("http_urls")
    return None


def tool_call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "args": args}


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("server", ["mcp1", "mcp2"])
async def test_tools_are_listed_and_called(server: str, transport: str, urls) -> None:
    async with MCPToolkit.from_config(config(server, transport, urls)) as toolkit:
        names = {t.name for t in toolkit.tools}
        assert {"w-get_weather", "w-forecast", "w-book_hotel"} <= names
        assert wire(toolkit.server_info("w"))["protocolVersion"] == expected_protocol(server)
        weather = toolkit.get_tool("w-get_weather")
        assert weather.metadata is not None and weather.metadata["mcp_tool"] == "get_weather"
        if server == "mcp2":  # the one that declares it
            assert weather.metadata["mcp_annotations"]["readOnlyHint"] is True
        # a parameter the server fills by asking the person is not the model's to give
        assert list(toolkit.get_tool("w-book_hotel").args) == ["city"]
        message = await weather.ainvoke(tool_call("w-get_weather", {"city": "北京"}))
        assert message.content == "晴天,温度 22°C"


@pytest.mark.parametrize("server", ["mcp1", "mcp2"])
def test_a_graph_calls_a_tool_and_streams_its_progress(server: str) -> None:
    calls = [{"name": "w-forecast", "args": {"city": "上海", "days": 3}, "id": "f1"}]
    with MCPToolkit.from_config(config(server, "stdio", None)) as toolkit:
        graph = create_fncall_graph(
            ReplayChatModel([AIMessage(content="", tool_calls=calls), "好"]),
            toolkit.tools,
            dialect="native",
        )
        progress, state = [], None
        for mode, chunk in graph.stream(
            {"messages": [("user", "上海三天天气")]}, stream_mode=["custom", "values"]
        ):
            if mode == "custom":
                progress.append(chunk["mcp_progress"]["progress"])
            else:
                state = chunk
    assert state is not None
    [result] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert (result.content, result.status) == ("上海: 3 天晴", "success")
    assert progress == [1, 2, 3]


@pytest.mark.parametrize("server", ["mcp1", "mcp2"])
def test_a_servers_question_is_answered_inside_the_pending_call(server: str, tmp_path) -> None:
    effects = tmp_path / "effects.txt"
    outputs = [
        AIMessage(
            content="", tool_calls=[{"name": "w-book_hotel", "args": {"city": "北京"}, "id": "b1"}]
        ),
        "好的",
    ]
    cfg = {"configurable": {"thread_id": "t"}}
    with MCPToolkit.from_config(config(server, "stdio", None, EFFECTS_FILE=str(effects))) as kit:
        graph = create_fncall_graph(
            ReplayChatModel(outputs), kit.tools, dialect="native", checkpointer=InMemorySaver()
        )
        paused = asyncio.run(graph.ainvoke({"messages": [("user", "在北京订酒店")]}, cfg))
        [pending] = paused["__interrupt__"]
        question = pending.value["mcp_elicitation"]
        assert question["message"] == "在北京订酒店吗?"
        assert question["defaults"] == {"nights": 1}
        answer = {"action": "accept", "content": {"confirm": True, "nights": 2}}
        done = asyncio.run(graph.ainvoke(Command(resume=answer), cfg))
    assert [m.content for m in done["messages"] if isinstance(m, ToolMessage)] == [
        "已在北京预订 2 晚"
    ]
    # the tool ran once: the answer went to the call that asked, not to a second call
    assert effects.read_text().splitlines() == ["book_hotel 北京"]


# The toolkit's own tests of what its sessions do (restarts, at-most-once calls, timeouts,
# sampling, roots, prompts, progress), run again on mcp 2.x; the rest of test_mcp.py
# passes there too but would add a minute and a half to `make test`.
SESSION_TESTS = [
    "test_killed_server_is_restarted_and_the_call_retried",
    "test_a_call_the_server_died_in_is_not_retried_and_its_outcome_is_unknown",
    "test_a_call_of_an_idempotent_tool_the_server_died_in_is_retried",
    "test_call_timeout_names_server_tool_and_timeout",
    "test_a_session_stuck_after_a_timeout_is_replaced_before_the_next_call",
    "test_sampling_is_answered_by_the_clients_model_only_where_allowed",
    "test_roots_are_offered_only_as_configured",
    "test_prompts_are_listed_and_open_a_thread",
    "test_progress_streams_as_custom_events_and_logs_go_to_python_logging",
    "test_weather_over_streamable_http",
]
# and of test_mcp_faults.py: the fault reports that mean the same on both stacks (mcp
# 2.x refuses a whole tools/list page over one bad tool, said as an MCPServerError)
FAULT_TESTS = [
    "test_a_ref_the_client_cannot_follow_leaves_the_tool_and_the_toolkit_working",
    "test_a_servers_questions_are_answered_into_the_same_call",
    "test_refused_credentials_are_reported_as_such_not_as_a_lost_connection",
    "test_credentials_refused_at_the_start_are_said_as_such",
    "test_a_question_whose_process_ended_is_answered_when_the_call_runs_again",
]

if GENERATION == 1:

    def test_the_mcp_tests_pass_on_the_mcp2_stack() -> None:
        """This module, the server-everything suite, the OAuth and trust tests, the
        session and fault tests, on mcp 2.x."""
        python = python_for("mcp2")
        tests = Path(__file__).parent
        done = subprocess.run(
            [
                python,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                str(Path(__file__)),
                str(tests / "test_server_everything.py"),
                str(tests / "test_mcp_oauth.py"),
                str(tests / "test_mcp_trust.py"),
                *(f"{tests / 'test_mcp.py'}::{name}" for name in SESSION_TESTS),
                *(f"{tests / 'test_mcp_faults.py'}::{name}" for name in FAULT_TESTS),
            ],
            cwd=ROOT,
            # the mcp 1.x test servers run on this environment's Python (mcp-server-sqlite
            # is found beside it)
            env={
                **os.environ,
                "FNCALL_TEST_MCP1_PYTHON": sys.executable,
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            },
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
        assert " passed" in done.stdout.splitlines()[-1]
