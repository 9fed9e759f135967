"""The package's face loads no MCP SDK, provider client, web stack or PostgreSQL driver until
one is used.

Each check runs in a fresh interpreter, so what it sees in ``sys.modules`` is what the
import itself loaded. Timings are in ``bench/import_cost.py``; here only which modules load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

MCP_SDK = {"mcp", "langchain_mcp_adapters"}
PROVIDERS = {"langchain_openai", "openai", "langchain_ollama", "ollama"}
WEB_STACK = {"uvicorn", "starlette", "sse_starlette", "aiohttp"}
# PostgreSQL's driver loads with a PostgreSQL saver, never for SQLite or no checkpointer
DB_DRIVERS = {"psycopg", "psycopg_pool"}
# LangGraph's own graph module imports its SDK client (langgraph.runtime → langgraph_sdk),
# as `from langchain.agents import create_agent` does; the model-boundary entry points
# need no LangGraph and load none of it.
LANGGRAPH_SDK = {"langgraph_sdk"}
UNUSED = MCP_SDK | PROVIDERS | WEB_STACK | DB_DRIVERS


def loaded_after(code: str, cwd: Path) -> Any:
    """Run ``code`` in a fresh interpreter; it prints one JSON line, returned parsed."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def top_level_loaded(statement: str, watched: set[str], cwd: Path) -> list[str]:
    code = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {watched!r})))"
    )
    return loaded_after(code, cwd)


@pytest.mark.parametrize(
    ("statement", "watched"),
    [
        ("from fncall_graph import with_dialect", UNUSED | LANGGRAPH_SDK),
        ("from fncall_graph import normalize", UNUSED | LANGGRAPH_SDK),
        (
            "import fncall_graph\n"
            "from fncall_graph import create_fncall_graph, with_dialect, normalize",
            UNUSED,
        ),
        (
            # what `fncall-graph --help` runs
            "from fncall_graph.cli.main import build_parser\nbuild_parser().format_help()",
            UNUSED,
        ),
    ],
    ids=["with_dialect", "normalize", "create_fncall_graph", "cli-help"],
)
def test_the_face_loads_no_unused_heavy_package(
    statement: str, watched: set[str], tmp_path: Path
) -> None:
    assert top_level_loaded(statement, watched, tmp_path) == []


def test_a_graph_without_middleware_loads_no_create_agent(tmp_path: Path) -> None:
    """``langchain.agents`` (whose package loads ``create_agent``'s whole module) loads with
    the first middleware or ``response_format`` a graph is given: not with the face, nor
    with a graph that asks for an approval in its turn."""
    code = """
import json, sys
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from fncall_graph import create_fncall_graph
from fncall_graph.testing import ReplayChatModel

@tool
def log(text: str) -> str:
    "Log text."
    return text

def agents():
    return any(m.startswith("langchain.agents") for m in sys.modules)

steps = {"face": agents()}
model = ReplayChatModel(['<tool_call>{"name": "log", "arguments": {"text": "x"}}</tool_call>'])
graph = create_fncall_graph(
    model, [log], dialect="hermes", interrupt_on={"log": True}, checkpointer=InMemorySaver()
)
out = graph.invoke({"messages": [("user", "log x")]}, {"configurable": {"thread_id": "t"}})
steps["asked"] = bool(out.get("__interrupt__"))
steps["turn"] = agents()
print(json.dumps(steps))
"""
    assert loaded_after(code, tmp_path) == {"face": False, "asked": True, "turn": False}


# the format readers (every module of ``adapters/formats/readers`` but the package itself
# and Qwen's markers, which the Qwen dialect's grammar spells) and json_repair load with
# the first reply read, not with the face
READERS_PACKAGE = "fncall_graph.adapters.formats.readers"
LOADED_READERS = {READERS_PACKAGE, f"{READERS_PACKAGE}.qwen"}


def test_the_face_loads_no_format_reader_nor_json_repair(tmp_path: Path) -> None:
    code = """
import json, sys
import fncall_graph
fncall_graph.create_fncall_graph
print(json.dumps(sorted(
    m for m in sys.modules
    if m.startswith("fncall_graph.adapters.formats.readers") or m.split(".")[0] == "json_repair"
)))
"""
    assert set(loaded_after(code, tmp_path)) == LOADED_READERS


def test_a_format_loads_its_readers_module_when_first_asked_for(tmp_path: Path) -> None:
    code = """
import json, sys
from fncall_graph.adapters.formats.readers import get_reader

def loaded():
    return sorted(
        m.rsplit(".", 1)[1] for m in sys.modules
        if m.startswith("fncall_graph.adapters.formats.readers.")
    )

steps = {"face": loaded()}
get_reader("mistral").parse('[TOOL_CALLS]f[ARGS]{"a": 1}')
steps["mistral"] = loaded()
from fncall_graph.adapters.formats.calls import loads_lenient
loads_lenient('{"a": 1}')
steps["json"] = "json_repair" in sys.modules
loads_lenient('{"a": 1,}')
steps["repaired"] = "json_repair" in sys.modules
print(json.dumps(steps))
"""
    steps = loaded_after(code, tmp_path)
    assert steps["face"] == ["qwen"]
    # the format's family, and what the reader of one known format is made of
    assert "mistral" in steps["mistral"]
    assert not {"gemma", "kimi", "json_tags", "dsml", "harmony", "plamo"} & set(steps["mistral"])
    assert steps["json"] is False
    assert steps["repaired"] is True


def test_the_format_names_known_without_readers_are_the_readers_own() -> None:
    from fncall_graph.adapters.formats import readers

    with_calls = {r.name for r in readers.READERS if any(b.kind == "call" for b in r.blocks)}
    assert {"qwen", "react", "json", "pythonic", *with_calls} == readers.CALL_FORMATS
    for name in with_calls:
        family = type(next(r for r in readers.READERS if r.name == name)).__module__
        assert family.rsplit(".", 1)[1] == readers._FAMILY_OF[name]
    assert (
        tuple(r for family in readers._FAMILIES for r in readers._family_readers(family))
        == readers.READERS
    )


def test_a_spec_or_a_toolkit_loads_its_package_when_used(tmp_path: Path) -> None:
    code = """
import json, sys
from fncall_graph import create_fncall_graph
from fncall_graph.adapters.models import resolve_model

def loaded(names):
    return sorted({m.split(".")[0] for m in sys.modules} & set(names))

steps = {"face": loaded(["langchain_openai", "openai", "langchain_ollama", "ollama", "mcp"])}
model = resolve_model("http://127.0.0.1:9/v1#qwen2.5")
steps["url"] = [type(model).__name__, loaded(["langchain_openai", "openai", "mcp"])]
resolve_model("ollama:qwen3", base_url="http://127.0.0.1:9")
steps["ollama"] = loaded(["langchain_ollama", "ollama", "mcp"])
from fncall_graph import MCPToolkit
steps["toolkit"] = loaded(["mcp"])
print(json.dumps(steps))
"""
    steps = loaded_after(code, tmp_path)
    assert steps == {
        "face": [],
        "url": ["CompatibleChatOpenAI", ["langchain_openai", "openai"]],
        "ollama": ["langchain_ollama", "ollama"],
        "toolkit": ["mcp"],
    }


def test_names_moved_out_of_the_import_path_still_import_from_where_they_were() -> None:
    from langchain_core.tools import ToolException
    from langchain_openai import ChatOpenAI

    import fncall_graph.adapters.mcp as mcp_package
    from fncall_graph import MCPToolkit, load_mcp_tools
    from fncall_graph._compat import ChatOpenAIMaxTokens
    from fncall_graph.adapters.formats.base import clean_schema
    from fncall_graph.adapters.mcp import MCPAuthError, MCPPrompt, parse_mcp_config
    from fncall_graph.adapters.mcp import toolkit as toolkit_module
    from fncall_graph.adapters.mcp.errors import MCPServerError
    from fncall_graph.adapters.mcp.oauth import OAuthSettings
    from fncall_graph.adapters.mcp.results import MCPArtifact
    from fncall_graph.adapters.models import CompatibleChatOpenAI
    from fncall_graph.adapters.models import specs as specs_module
    from fncall_graph.adapters.models.openai_compatible import (
        CompatibleChatOpenAI as defined,
    )

    assert CompatibleChatOpenAI is defined is specs_module.CompatibleChatOpenAI
    assert issubclass(CompatibleChatOpenAI, ChatOpenAIMaxTokens)
    assert issubclass(ChatOpenAIMaxTokens, ChatOpenAI)
    assert ChatOpenAIMaxTokens.__qualname__ == "ChatOpenAIMaxTokens"
    assert ChatOpenAIMaxTokens.__module__ == "fncall_graph._compat"
    assert MCPToolkit is toolkit_module.MCPToolkit
    assert load_mcp_tools is toolkit_module.load_mcp_tools
    assert MCPPrompt is toolkit_module.MCPPrompt
    assert callable(parse_mcp_config) and callable(clean_schema) and OAuthSettings and MCPArtifact
    assert issubclass(MCPAuthError, MCPServerError) and issubclass(MCPAuthError, ToolException)
    assert set(mcp_package.__all__) <= set(dir(mcp_package))
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        mcp_package.nosuch  # noqa: B018
