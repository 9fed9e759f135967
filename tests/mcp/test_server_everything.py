"""The MCP reference server ``@modelcontextprotocol/server-everything``, over stdio.

Installed from npm by ``make test`` into ``.mcp-servers/`` (the test FAILS if it is
missing: run ``make .mcp-servers/node_modules/.bin/mcp-server-everything``). Every tool
is called with its expected result; its prompts are read; progress, elicitation (form
and URL mode) and sampling go through a graph; roots are the configured ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.testing import ReplayChatModel

pytestmark = pytest.mark.slow

EVERYTHING = (
    Path(__file__).parents[2] / ".mcp-servers" / "node_modules" / ".bin" / ("mcp-server-everything")
)


def config(**extra: Any) -> dict[str, Any]:
    if not EVERYTHING.exists():
        pytest.fail(
            f"{EVERYTHING} is missing: `make test` installs it from npm "
            "(make .mcp-servers/node_modules/.bin/mcp-server-everything)"
        )
    return {"mcpServers": {"everything": {"command": str(EVERYTHING), "args": ["stdio"], **extra}}}


def call(tool: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": f"everything-{tool}", "args": args}


@pytest.fixture(scope="module")
def toolkit() -> Any:
    with MCPToolkit.from_config(
        config(sampling={"allow": True, "max_tokens": 50}, roots=["/srv/data"]),
        sampling_model=ReplayChatModel(["sampled by the client"] * 10),
    ) as kit:
        yield kit


def run(toolkit: Any, tool: str, args: dict[str, Any]) -> ToolMessage:
    return toolkit.get_tool(f"everything-{tool}").invoke(call(tool, args))


def test_every_tool_is_offered(toolkit) -> None:
    assert sorted(t.name.removeprefix("everything-") for t in toolkit.tools) == sorted(
        [
            "echo",
            "get-annotated-message",
            "get-env",
            "get-resource-links",
            "get-resource-reference",
            "get-structured-content",
            "get-sum",
            "get-tiny-image",
            "gzip-file-as-resource",
            "toggle-simulated-logging",
            "toggle-subscriber-updates",
            "trigger-long-running-operation",
            "get-roots-list",  # offered because this client has roots
            "trigger-elicitation-request",
            "trigger-url-elicitation",
            "trigger-sampling-request",  # offered because sampling is allowed
            "list_resources",
            "read_resource",
        ]
    )


def test_plain_tools(toolkit) -> None:
    assert run(toolkit, "echo", {"message": "你好"}).content == "Echo: 你好"
    assert run(toolkit, "get-sum", {"a": 2, "b": 3}).content == "The sum of 2 and 3 is 5."
    env = json.loads(run(toolkit, "get-env", {}).content)
    assert "PATH" in env
    structured = run(toolkit, "get-structured-content", {"location": "New York"})
    assert set(structured.artifact["structured_content"]) == {
        "temperature",
        "conditions",
        "humidity",
    }
    for toggle in ("toggle-simulated-logging", "toggle-subscriber-updates"):
        assert run(toolkit, toggle, {}).content.startswith("Started simulated")


def test_rich_results(toolkit) -> None:
    image = run(toolkit, "get-tiny-image", {})
    assert "[image: image/png, " in image.content and "MCP logo" in image.content
    assert image.artifact["content"][0]["type"] == "image"

    annotated = run(
        toolkit, "get-annotated-message", {"messageType": "error", "includeImage": True}
    )
    assert annotated.content.startswith("Error: Operation failed")
    assert annotated.artifact["for_user"]  # the image is addressed to the user only

    links = run(toolkit, "get-resource-links", {"count": 2})
    refs = [(r["name"], r["uri"]) for r in links.artifact["resource_refs"]]
    assert refs == [
        ("Blob Resource 1", "demo://resource/dynamic/blob/1"),
        ("Text Resource 2", "demo://resource/dynamic/text/2"),
    ]
    reference = run(toolkit, "get-resource-reference", {"resourceType": "Text", "resourceId": 1})
    assert "[resource demo://resource/dynamic/text/1]" in reference.content
    gz = run(
        toolkit,
        "gzip-file-as-resource",
        {
            "name": "a.txt.gz",
            "data": "data:text/plain;base64,aGVsbG8=",
            "outputType": "resourceLink",
        },
    )
    assert gz.artifact["resource_refs"][0]["name"] == "a.txt.gz"


def test_resources_and_prompts(toolkit) -> None:
    listed = json.loads(run(toolkit, "list_resources", {}).content)
    assert listed["resources"] or listed["templates"]
    uri = (listed["resources"] or [{"uri": "demo://resource/static/document/architecture.md"}])[0][
        "uri"
    ]
    assert run(toolkit, "read_resource", {"uri": uri}).status == "success"
    assert [p.name for p in toolkit.prompts] == [
        "everything-simple-prompt",
        "everything-args-prompt",
        "everything-completable-prompt",
        "everything-resource-prompt",
    ]
    [message] = toolkit.get_prompt("everything-args-prompt", {"city": "上海"})
    assert "上海" in message.content


def test_roots_and_sampling_through_the_client(toolkit) -> None:
    assert "file:///srv/data" in run(toolkit, "get-roots-list", {}).content
    sampled = run(toolkit, "trigger-sampling-request", {"prompt": "总结", "maxTokens": 20})
    assert '"text": "sampled by the client"' in sampled.content


def graph_for(toolkit: Any, tool: str, args: dict[str, Any]) -> Any:
    outputs = [AIMessage(content="", tool_calls=[call(tool, args)]), "好"]
    return create_fncall_graph(
        ReplayChatModel(outputs), toolkit.tools, dialect="native", checkpointer=InMemorySaver()
    )


def test_progress_of_a_long_operation_streams(toolkit) -> None:
    graph = graph_for(toolkit, "trigger-long-running-operation", {"duration": 1, "steps": 3})
    events = list(
        graph.stream(
            {"messages": [("user", "go")]},
            {"configurable": {"thread_id": "p"}},
            stream_mode="custom",
        )
    )
    progress = [e["mcp_progress"] for e in events if "mcp_progress" in e]
    assert [(p["progress"], p["total"]) for p in progress] == [(1, 3), (2, 3), (3, 3)]
    assert {p["tool_call_id"] for p in progress} == {"c1"}


@pytest.mark.parametrize(
    ("tool", "args", "answer", "expected"),
    [
        (
            "trigger-elicitation-request",
            {},
            {"action": "accept", "content": {"name": "韩梅梅"}},
            "Name: 韩梅梅",
        ),
        ("trigger-elicitation-request", {}, {"action": "decline"}, "declined"),
        (
            "trigger-url-elicitation",
            {"url": "https://example.com/pay", "message": "Pay here", "elicitationId": "e1"},
            {"action": "accept"},
            "completed the URL elicitation",
        ),
    ],
)
def test_a_servers_question_is_answered_through_an_interrupt(
    toolkit, tool, args, answer, expected
) -> None:
    graph = graph_for(toolkit, tool, args)
    cfg = {"configurable": {"thread_id": "q"}}
    paused = graph.invoke({"messages": [("user", "go")]}, cfg)
    question = paused["__interrupt__"][0].value["mcp_elicitation"]
    assert question["tool_call_id"] == "c1"
    if tool == "trigger-url-elicitation":
        assert (question["mode"], question["url"]) == ("url", "https://example.com/pay")
    else:
        assert question["requested_schema"]["required"] == ["name"]
    done = graph.invoke(Command(resume=answer), cfg)
    [result] = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    assert expected in result.content
