"""A result too long for the model is stored once, not copied into every checkpoint."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import async_sqlite_saver, sqlite_saver
from fncall_graph.guarantees.claimed_calls import astored_result
from fncall_graph.nodes.tools import stored_result
from fncall_graph.testing import ReplayChatModel

BIG = 20_000_000  # characters, as in a 20 MB MCP result


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


@tool(response_format="content_and_artifact")
def dump() -> tuple[str, dict[str, Any]]:
    """Everything, as an MCP server sends it: the text, and again as structured content."""
    text = "0123456789" * (BIG // 10)
    return text, {"structured_content": {"result": text}}


@tool
def ping() -> str:
    """A small call."""
    return "pong"


def turns() -> list[Any]:
    # the big result, then three more steps (each a checkpoint holding the history)
    return [
        call("dump", {}, "big"),
        call("ping", {}, "p1"),
        call("ping", {}, "p2"),
        call("ping", {}, "p3"),
        "done",
    ]


def size_of(path: Any) -> int:
    return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))


@pytest.mark.parametrize("limit", [1_000_000, None], ids=["default", "unbounded"])
def test_a_huge_result_is_stored_once_and_referenced(tmp_path, limit):
    db = tmp_path / "c.db"
    with sqlite_saver(db) as saver:
        graph = create_fncall_graph(
            ReplayChatModel(turns()),
            [dump, ping],
            dialect="native",
            checkpointer=saver,
            max_stored_result_chars=limit,
        )
        out = graph.invoke({"messages": [("user", "dump")]}, {"configurable": {"thread_id": "t"}})
        cut = next(m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "dump")
        assert len(cut.content) < 101_000 and "result truncated" in cut.content
        # the thread keeps a reference, not the text
        assert "full_content" not in cut.artifact and cut.artifact["full_length"] == BIG
        whole = stored_result(graph.checkpointer, cut)
    assert whole is not None
    kept = BIG if limit is None else limit
    assert len(whole.content) == kept and whole.content == ("0123456789" * (BIG // 10))[:kept]
    assert whole.artifact["full_length"] == BIG
    if limit is None:  # everything kept, the tool's artifact too
        assert len(whole.artifact["artifact"]["structured_content"]["result"]) == BIG
    else:  # the tool's artifact repeats the 20 MB: over the limit, left out
        assert "left_out" in whole.artifact["artifact"]
    # stored once: the file holds the kept text about once, not once per checkpoint
    copies = 2 if limit is None else 1  # the text, and the tool's artifact repeating it
    assert size_of(db) < copies * kept + 2_000_000, size_of(db)


def test_the_stored_result_is_read_through_an_async_saver_too(tmp_path):
    async def scenario() -> tuple[ToolMessage, ToolMessage | None]:
        async with async_sqlite_saver(tmp_path / "c.db") as saver:
            graph = create_fncall_graph(
                ReplayChatModel(turns()), [dump, ping], dialect="native", checkpointer=saver
            )
            out = await graph.ainvoke(
                {"messages": [("user", "dump")]}, {"configurable": {"thread_id": "t"}}
            )
            cut = out["messages"][2]
            return cut, await astored_result(saver, cut)

    cut, whole = asyncio.run(scenario())
    assert cut.artifact["full_length"] == BIG
    assert whole is not None and len(whole.content) == 1_000_000
    with pytest.raises(ValueError, match="refers to no stored result"):
        asyncio.run(astored_result(None, ToolMessage("x", tool_call_id="c")))  # type: ignore[arg-type]
