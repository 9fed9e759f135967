"""A ``null`` for an optional parameter of a tool with a JSON schema (an MCP tool's) is
the server's to take: the product's own argument check does not refuse it; a ``null``
for a required parameter, or a wrong type, is still refused with the reason."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool

from fncall_graph import create_fncall_graph
from fncall_graph.testing import ReplayChatModel

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "loud": {"type": "boolean"}},
    "required": ["text"],
}


def _answer(args: dict[str, Any]) -> ToolMessage:
    seen: list[dict[str, Any]] = []

    def say(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "said"

    tool = StructuredTool.from_function(say, name="say", description="Say it.", args_schema=SCHEMA)
    call = {"name": "say", "args": args, "id": "c1"}
    model = ReplayChatModel([{"content": "", "tool_calls": [call]}, "done"])
    out = create_fncall_graph(model, [tool], dialect="native").invoke(
        {"messages": [("user", "go")]}
    )
    [answer] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    return answer


def test_null_for_an_optional_parameter_is_sent():
    assert _answer({"text": "hi", "loud": None}).content == "said"


def test_null_for_a_required_parameter_and_wrong_types_are_refused():
    refused = _answer({"text": None, "loud": True})
    assert refused.status == "error" and "at text" in refused.content
    wrong = _answer({"text": "hi", "loud": "yes"})
    assert wrong.status == "error" and "at loud" in wrong.content
