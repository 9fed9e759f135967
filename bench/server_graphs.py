"""Graphs bench/server_cluster.py serves beside the database assistant, to compare.

The same session with native tool calls (the recording's Hermes replies read into
``tool_calls`` once), over the same mcp-server-sqlite, the write gated the same way:

- ``create_agent``: LangChain's ``create_agent`` with ``HumanInTheLoopMiddleware``, whose
  resume value (``{"decisions": [{"type": "approve"}]}``) is the database assistant's;
- ``fncall_native``: ``create_fncall_graph(dialect="native")``.

One graph per server process, built on first use, as the project's own factories do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.formats.hermes import HermesDialect
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.examples.database_assistant import SYSTEM_PROMPT, sqlite_config
from fncall_graph.graphs.studio import default_sqlite_db
from fncall_graph.replay import ReplayChatModel

WRITE = "sqlite-write_query"
_graphs: dict[str, Any] = {}
_lock = asyncio.Lock()


def native_replies() -> list[AIMessage]:
    """The database-assistant recording's replies with their calls in ``tool_calls``."""
    data = resources.files("fncall_graph") / "data" / "database-assistant_qwen-max_hermes.json"
    outputs = json.loads(data.read_text("utf-8"))["outputs"]
    return [HermesDialect().parse(text) for text in outputs]


def _build(kind: str, toolkit: MCPToolkit) -> Any:
    model = ReplayChatModel(native_replies(), per_conversation=True)
    if kind == "create_agent":
        return create_agent(
            model,
            toolkit.tools,
            system_prompt=SYSTEM_PROMPT,
            middleware=[HumanInTheLoopMiddleware(interrupt_on={WRITE: True})],
        )
    return create_fncall_graph(
        model,
        toolkit.tools,
        dialect="native",
        system_prompt=SYSTEM_PROMPT,
        interrupt_on={WRITE: True},
        checkpointer=True,  # the server's own
    )


async def _graph(kind: str) -> Any:
    async with _lock:
        if kind not in _graphs:
            # file and PATH lookups off the event loop (`langgraph dev` refuses them on it)
            config = await asyncio.to_thread(lambda: sqlite_config(default_sqlite_db()))
            toolkit = MCPToolkit.from_config(config, include_resources=False)
            await toolkit.start()
            _graphs[kind] = await asyncio.to_thread(_build, kind, toolkit)
        return _graphs[kind]


@asynccontextmanager
async def create_agent_assistant(config: Any) -> AsyncIterator[Any]:
    yield await _graph("create_agent")


@asynccontextmanager
async def fncall_native_assistant(config: Any) -> AsyncIterator[Any]:
    yield await _graph("fncall_native")
