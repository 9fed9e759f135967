"""``interrupt_on="annotations"``: the tools' own MCP annotations decide which calls ask
first, when the user trusts their server. A real MCP server
(tests/servers/annotated_server.py) with a read-only tool, a destructive one and one that
says nothing (MCP's defaults: it may write). Untrusted, its annotations count for nothing
and every call asks (tests/mcp/test_mcp_trust.py has a server that lies)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from fncall_graph import bind_decisions, create_fncall_graph
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.testing import ReplayChatModel

SERVER = Path(__file__).parents[1] / "servers" / "annotated_server.py"
ENTRY = {"command": sys.executable, "args": [str(SERVER)]}
TRUSTED = {"mcpServers": {"n": {**ENTRY, "trust": "annotations"}}}
UNTRUSTED = {"mcpServers": {"n": ENTRY}}


def _calls() -> ReplayChatModel:
    calls = [
        {"name": f"n-{name}", "args": {"key": "a"}, "id": f"c-{name}"}
        for name in ("look", "erase", "note")
    ]
    return ReplayChatModel([{"content": "", "tool_calls": calls}, "done"])


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
async def test_calls_of_tools_that_may_write_ask_first_reads_do_not(trusted: bool):
    async with MCPToolkit.from_config(TRUSTED if trusted else UNTRUSTED) as toolkit:
        graph = create_fncall_graph(
            _calls(),
            toolkit.tools,
            dialect="native",
            checkpointer=InMemorySaver(),
            interrupt_on="annotations",
        )
        cfg = {"configurable": {"thread_id": "t"}}
        paused = await graph.ainvoke({"messages": [("user", "tidy up")]}, cfg)
        [review] = paused["__interrupt__"]
        asked = [r["name"] for r in review.value["action_requests"]]
        if not trusted:  # its word that `look` only reads is not believed
            assert asked == ["n-look", "n-erase", "n-note"]
            return
        assert asked == ["n-erase", "n-note"]  # the read-only tool does not ask
        answer = bind_decisions(review.value, [{"type": "approve"}, {"type": "reject"}])
        done = await graph.ainvoke(Command(resume=answer), cfg)
        said = {m.tool_call_id: m.content for m in done["messages"] if m.type == "tool"}
        assert said["c-look"] == "note a" and said["c-erase"] == "erased a"
        assert said["c-note"] != "noted a"  # rejected: not run


def test_annotations_is_the_only_word_interrupt_on_takes():
    with pytest.raises(ValueError, match="'annotations'"):
        create_fncall_graph(
            ReplayChatModel(["hi"]), [], checkpointer=InMemorySaver(), interrupt_on="all"
        )
