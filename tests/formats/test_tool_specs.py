"""A tool's name and input schema, whatever form the tool came in (a LangChain tool, a
function or pydantic model, an OpenAI tool dict, an MCP tool dict), are read by one rule:
``to_tool_spec`` (``adapters/formats/base.py``); the wrapper's calls ask it too."""

from __future__ import annotations

import ast

import pytest
from langchain_core.tools import StructuredTool, tool
from product_code import called, sources
from pydantic import BaseModel
from typing_extensions import TypedDict

from fncall_graph.adapters import with_dialect
from fncall_graph.adapters.formats.base import to_tool_spec
from fncall_graph.replay import ReplayChatModel

HOME = "adapters/formats/base.py"
# the schema as written, not the cleaned one: a call grammar holds arguments to all of it
GRAMMAR = "adapters/formats/grammar.py"
# the tools node checks arguments against an MCP tool's schema as its server wrote it
CHECK = "nodes/tools.py"
# a tool call's name in OpenAI's wire form (``{"function": {"name", "arguments"}}``)
CALLS = "fncall_graph/notebook.py"


def reads_a_converted_tool(node: ast.AST) -> bool:
    """``convert_to_openai_tool(t)[...]``: a tool's name or schema read off LangChain's
    conversion rather than through the rule."""
    return isinstance(node, ast.Subscript) and called(node.value) == "convert_to_openai_tool"


def reads_a_function_name(node: ast.AST) -> bool:
    """``t["function"]["name"]``: an OpenAI tool dict's name read in place."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == "name"
        and isinstance(node.value, ast.Subscript)
        and isinstance(node.value.slice, ast.Constant)
        and node.value.slice.value == "function"
    )


def test_a_tools_name_and_schema_are_read_by_one_rule() -> None:
    readers = sorted(
        f"{path}:{node.lineno}"
        for path, tree in sources().items()
        for node in ast.walk(tree)
        if (reads_a_converted_tool(node) or reads_a_function_name(node))
        and path not in (HOME, GRAMMAR, CALLS)
    )
    assert not readers, f"read outside {HOME}: {readers}"


def test_a_langchain_tools_own_schema_is_read_where_the_rule_is_and_where_calls_are_checked() -> (
    None
):
    readers = {
        path
        for path, tree in sources().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "args_schema"
        and isinstance(node.ctx, ast.Load)
    }
    assert readers == {HOME, CHECK}


def test_the_wrapper_asks_the_rule_for_every_tool_name() -> None:
    callers: dict[str, int] = {}
    for path, tree in sources().items():
        if path.startswith("adapters/formats/"):
            continue
        for node in ast.walk(tree):
            if called(node) in ("to_tool_spec", "to_tool_specs"):
                callers[path] = callers.get(path, 0) + 1
    # structured output's tool, the native call's tool names, a ``tool_choice``'s tool
    assert callers == {
        "adapters/models/structured_output.py": 1,
        "adapters/models/model_call.py": 2,
    }


class Weather(BaseModel):
    """The weather in a city."""

    city: str


class Clock(TypedDict):
    """The time in a city."""

    city: str


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def lookup(query: str) -> str:
    """Look something up."""
    return query


FORMS = {
    "langchain tool": (add, "add"),
    "mcp-made tool": (
        StructuredTool(
            name="sqlite-read_query",
            description="Run a query",
            args_schema={"type": "object", "properties": {"query": {"type": "string"}}},
            func=lambda **_: "",
        ),
        "sqlite-read_query",
    ),
    "function": (lookup, "lookup"),
    "pydantic model": (Weather, "Weather"),
    "typed dict": (Clock, "Clock"),
    "openai tool": ({"type": "function", "function": {"name": "o", "parameters": {}}}, "o"),
    "bare function dict": ({"name": "b", "parameters": {"type": "object"}}, "b"),
    "mcp tool dict": ({"name": "m", "inputSchema": {"type": "object"}}, "m"),
    "json schema": ({"title": "J", "type": "object", "properties": {}}, "J"),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_of_tool_is_named_by_the_rule(form: str) -> None:
    given, name = FORMS[form]
    assert to_tool_spec(given).name == name


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_tool_choice_picks_its_tool_by_the_rules_name(form: str) -> None:
    """A prompt dialect renders only the chosen tool, named as the rule names it."""
    given, name = FORMS[form]
    raw = ReplayChatModel(["no call"] * 2)
    model = with_dialect(raw, "hermes").bind_tools([given, lookup], tool_choice=name)
    with pytest.raises(Exception, match="tool_choice demanded a tool call"):
        model.invoke("go")
    prompt = raw.inputs[0][0].content
    assert f'"name": "{name}"' in prompt
    assert ('"name": "lookup"' in prompt) == (name == "lookup")


def test_a_tool_is_described_again_once_it_changes() -> None:
    @tool
    def lookup(name: str) -> str:
        """Look a person up."""
        return name

    first = to_tool_spec(lookup)
    assert to_tool_spec(lookup) is first  # described once while it stays as it is
    lookup.description = "Look a person up by their full name."
    again = to_tool_spec(lookup)
    assert again.description == "Look a person up by their full name."
    assert again.parameters == first.parameters

    class Wider(BaseModel):
        name: str
        city: str

    lookup.args_schema = Wider
    assert set(to_tool_spec(lookup).parameters["properties"]) == {"name", "city"}
