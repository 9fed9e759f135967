"""A graph on a saver that has saved nothing yet starts without a warning.

The claims of threads deleted by another saver are swept once per saver; a saver whose
tables LangGraph has not made yet has no thread to miss, and says nothing about it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from fncall_graph import create_fncall_graph
from fncall_graph.replay import ReplayChatModel


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def ask(saver: object) -> None:
    model = ReplayChatModel(
        [
            {
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"key": "a"}'},
                    }
                ],
            },
            {"content": "A"},
        ]
    )
    graph = create_fncall_graph(model, [lookup], dialect="native", checkpointer=saver)
    result = graph.invoke({"messages": [("user", "a?")]}, {"configurable": {"thread_id": "t"}})
    assert result["messages"][-1].content == "A"


def test_fresh_sqlite_saver_starts_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING),
        SqliteSaver.from_conn_string(str(tmp_path / "fresh.db")) as saver,
    ):
        ask(saver)
    assert not [r for r in caplog.records if "claims" in r.getMessage()], caplog.text
