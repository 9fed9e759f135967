"""Ready-made graphs: the database assistant and the weather assistant.

Both drive real MCP servers over stdio: ``mcp-server-sqlite`` on a SQLite file (the
``sqlite`` server: ``sqlite-read_query``, ``sqlite-write_query``, ...) and the FastMCP
weather server ``python -m fncall_graph.examples.weather_server`` (``weather-get_weather``).

Two ways in:

- **LangGraph server** (``langgraph dev``, or ``langhost serve`` for several replicas on
  PostgreSQL and Redis; see ``langgraph.json`` and docs/deploy.md): ``sqlite_assistant``
  and ``weather_assistant`` are async context-manager graph factories taking the run's
  ``config``. The server calls them for every run and every view of a graph; they hand out
  one graph per server process (each worker and replica builds its own), built on first
  use over MCP sessions that stay open. The sessions are owned by tasks on the server's
  event loop, which cancels them when the server stops: each closes its session and
  stops its MCP server process. No checkpointer: the server brings its own.
- **Python**: ``open_sqlite_assistant(...)`` and ``open_weather_assistant(...)`` are async
  context managers that own their MCP sessions for the ``async with`` block and take a
  ``checkpointer`` (and ``interrupt_on``, a model, a dialect). langgraph-api accepts
  factories of at most a ``config`` and a ``ServerRuntime``, so these are separate names.

Environment (read by the server factories; the ``open_*`` functions use it for what
they are not given):

================================  ===================================================
``FNCALL_MODEL``                  model spec (default ``local``); ``replay:database-assistant``
                                  names a recording shipped with the package
``FNCALL_SQLITE_MODEL``           model spec for the database assistant only
``FNCALL_WEATHER_MODEL``          model spec for the weather assistant only
``FNCALL_DIALECT``                ``auto`` (default: native when the model has it, a
                                  recording's own dialect), ``hermes``, ``qwen``, ...
``FNCALL_SQLITE_DB``              the database file (default: the example's database,
                                  created in ``$XDG_STATE_HOME/fncall-graph/`` if missing)
``FNCALL_APPROVE``                tools that wait for a person's decision, comma
                                  separated, e.g. ``sqlite-write_query``; ``none``:
                                  no tool waits. Unset: every tool not known to only
                                  read (the sqlite server's writes; no weather tool,
                                  whose server is trusted) (server only)
``FNCALL_KEEP_MODEL_INPUT``       ``1``: threads keep each model call's exact input
                                  in their state, for Studio (server only)
================================  ===================================================

Example:
    ```python
    from langgraph.checkpoint.memory import InMemorySaver
    from fncall_graph.graphs.studio import open_sqlite_assistant

    async with open_sqlite_assistant(
        model="replay:database-assistant", db_path="test.db", checkpointer=InMemorySaver()
    ) as graph:
        config = {"configurable": {"thread_id": "1"}}
        result = await graph.ainvoke({"messages": [("user", "数据库有几张表")]}, config)
    ```
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.adapters.models import resolve_model
from fncall_graph.examples.database_assistant import (
    SYSTEM_PROMPT,
    make_database,
    mark_read_only,
    sqlite_config,
)
from fncall_graph.nodes.tools import writes_by_annotation

from . import environment
from .factory import create_fncall_graph

if TYPE_CHECKING:
    # langchain.agents loads create_agent's whole module: imported where middleware
    # or a response_format is in use, not when the graph's face is imported
    from langchain.agents.middleware.human_in_the_loop import InterruptOnConfig

__all__ = [
    "open_sqlite_assistant",
    "open_weather_assistant",
    "sqlite_assistant",
    "weather_assistant",
    "weather_config",
]

SQLITE_DB_ENV = "FNCALL_SQLITE_DB"
_GRAPH_MODEL_ENV = {
    "sqlite_assistant": "FNCALL_SQLITE_MODEL",
    "weather_assistant": "FNCALL_WEATHER_MODEL",
}


# --------------------------------------------------------------------------- settings


def default_sqlite_db() -> Path:
    """The database file: ``$FNCALL_SQLITE_DB``, else a state-dir file (created if missing).

    The default is ``$XDG_STATE_HOME/fncall-graph/studio.db`` (``~/.local/state/...``
    when ``XDG_STATE_HOME`` is unset), filled with the example's tables the first time.
    A file named by ``FNCALL_SQLITE_DB`` that does not exist is created the same way.
    """
    if os.environ.get(SQLITE_DB_ENV):
        path = Path(os.environ[SQLITE_DB_ENV]).expanduser()
    else:
        path = environment.state_dir() / "studio.db"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        _create_once(path)
    return path


def _create_once(path: Path) -> None:
    # Several server processes may ask at once: each fills a file of its own and links
    # it in place, which only the first does (link, unlike rename, never replaces).
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}.") as tmp:
        made = make_database(Path(tmp) / path.name)
        with contextlib.suppress(FileExistsError):
            os.link(made, path)


def weather_config() -> dict[str, Any]:
    """MCP config running the example weather server over stdio with this Python.

    The server is this package's own, so its annotations are trusted: its read-only
    ``get_weather`` runs without a question."""
    return {
        "mcpServers": {
            "weather": {
                "command": sys.executable,
                "args": ["-m", "fncall_graph.examples.weather_server"],
                "trust": "annotations",
            }
        }
    }


def _model(model: BaseChatModel | str | None, graph_id: str) -> BaseChatModel:
    """``model``, or the spec in the graph's own variable, ``FNCALL_MODEL``, ``local``."""
    if isinstance(model, BaseChatModel):
        return model
    return resolve_model(environment.model_spec(model, _GRAPH_MODEL_ENV[graph_id]))


# --------------------------------------------------------------------------- the graphs

_SPECS: dict[str, dict[str, Any]] = {
    "sqlite_assistant": {"system_prompt": SYSTEM_PROMPT, "name": "sqlite_assistant"},
    "weather_assistant": {"system_prompt": None, "name": "weather_assistant"},
}


def _build(
    graph_id: str,
    toolkit: MCPToolkit,
    model: BaseChatModel,
    *,
    dialect: str | None,
    checkpointer: Checkpointer,
    interrupt_on: Mapping[str, bool | InterruptOnConfig] | None,
    options: Mapping[str, Any],
) -> CompiledStateGraph:
    return create_fncall_graph(
        model,
        toolkit.tools,
        dialect=environment.dialect_name(dialect),  # type: ignore[arg-type]
        checkpointer=checkpointer,
        interrupt_on=interrupt_on or None,
        **{**_SPECS[graph_id], **options},
    )


@asynccontextmanager
async def _open(
    graph_id: str,
    mcp_config: Callable[[], Mapping[str, Any]],
    *,
    model: BaseChatModel | str | None,
    dialect: str | None,
    checkpointer: Checkpointer,
    interrupt_on: Mapping[str, bool | InterruptOnConfig] | None,
    options: Mapping[str, Any],
) -> AsyncIterator[CompiledStateGraph]:
    config = await asyncio.to_thread(mcp_config)
    chat_model = await asyncio.to_thread(_model, model, graph_id)
    async with MCPToolkit.from_config(config, include_resources=False) as toolkit:
        yield await asyncio.to_thread(
            _build,
            graph_id,
            toolkit,
            chat_model,
            dialect=dialect,
            checkpointer=checkpointer,
            interrupt_on=interrupt_on,
            options=options,
        )


def open_sqlite_assistant(
    *,
    model: BaseChatModel | str | None = None,
    db_path: str | os.PathLike[str] | None = None,
    checkpointer: Checkpointer = None,
    interrupt_on: Mapping[str, bool | InterruptOnConfig] | None = None,
    dialect: str | None = None,
    **options: Any,
) -> Any:
    """The database assistant over ``mcp-server-sqlite``, for ``async with``.

    The server runs while the block runs and stops when it ends.

    Args:
        model: a chat model or model spec (default: ``$FNCALL_SQLITE_MODEL``,
            ``$FNCALL_MODEL``, ``local``); ``replay:database-assistant`` plays Qwen-Max's recorded replies.
        db_path: the database file (default: :func:`default_sqlite_db`); it must exist.
        checkpointer: a LangGraph checkpointer, for threads that persist and resume.
        interrupt_on: tools that wait for a decision, e.g. ``{"sqlite-write_query": True}``
            (needs a checkpointer).
        dialect: ``auto`` (default: ``$FNCALL_DIALECT``, else auto), ``hermes``, ...
        **options: more :func:`~fncall_graph.create_fncall_graph` options.
    """

    def mcp_config() -> dict[str, Any]:
        return sqlite_config(Path(db_path) if db_path is not None else default_sqlite_db())

    return _open(
        "sqlite_assistant",
        mcp_config,
        model=model,
        dialect=dialect,
        checkpointer=checkpointer,
        interrupt_on=interrupt_on,
        options=options,
    )


def open_weather_assistant(
    *,
    model: BaseChatModel | str | None = None,
    checkpointer: Checkpointer = None,
    interrupt_on: Mapping[str, bool | InterruptOnConfig] | None = None,
    dialect: str | None = None,
    **options: Any,
) -> Any:
    """The weather assistant over the FastMCP weather server, for ``async with``.

    Args: as :func:`open_sqlite_assistant` (model default: ``$FNCALL_WEATHER_MODEL``,
    ``$FNCALL_MODEL``, ``local``).
    """
    return _open(
        "weather_assistant",
        weather_config,
        model=model,
        dialect=dialect,
        checkpointer=checkpointer,
        interrupt_on=interrupt_on,
        options=options,
    )


# --------------------------------------------------------------------------- server


class _ServerGraphs:
    """One graph per id for the life of a server process, and the sessions under them.

    The server asks for a graph on every run and every view of it, so the MCP sessions
    must outlive a single request: the first request starts the servers and builds the
    graph, later ones get the same graph. No shutdown hook is needed (and a custom
    ``http.app`` lifespan would stop ``langhost serve`` from starting its PostgreSQL
    store): the sessions' owner tasks live on the server's event loop, and the loop
    cancels them when the server stops, which closes every session.
    """

    def __init__(self) -> None:
        self._graphs: dict[str, CompiledStateGraph] = {}
        self._lock = asyncio.Lock()

    async def get(
        self, graph_id: str, mcp_config: Callable[[], Mapping[str, Any]]
    ) -> CompiledStateGraph:
        async with self._lock:
            if graph_id not in self._graphs:
                self._graphs[graph_id] = await self._start(graph_id, mcp_config)
            return self._graphs[graph_id]

    async def _start(
        self, graph_id: str, mcp_config: Callable[[], Mapping[str, Any]]
    ) -> CompiledStateGraph:
        config = await asyncio.to_thread(mcp_config)
        model = await asyncio.to_thread(_model, None, graph_id)
        toolkit = MCPToolkit.from_config(config, include_resources=False)
        await toolkit.start()
        interrupt_on = _server_approvals(graph_id, toolkit.tools)
        return await asyncio.to_thread(
            _build,
            graph_id,
            toolkit,
            model,
            dialect=None,
            # The server replaces the checkpointer with its own when it runs the graph;
            # True ("use the one the run brings") lets interrupt_on pass its check.
            checkpointer=True if interrupt_on else None,
            interrupt_on=interrupt_on,
            options={"keep_model_input": environment.keep_model_input()},
        )


_server = _ServerGraphs()

#: ``FNCALL_APPROVE=none``: no tool of the server graphs asks first.
NO_APPROVALS = "none"


def _server_approvals(graph_id: str, tools: Sequence[BaseTool]) -> dict[str, bool]:
    """``interrupt_on`` of a server graph: the tools ``$FNCALL_APPROVE`` names (it names
    tools of every graph; each graph takes its own), ``none`` for none; unset, every tool
    not known to only read (its trusted server's annotations, or the example's own word),
    as ``fncall-graph chat`` and ``demo`` do."""
    named = environment.approved_tools()
    if named == [NO_APPROVALS]:
        return {}
    if named:
        names = {t.name for t in tools}
        return {k: True for k in named if k in names}
    if graph_id == "sqlite_assistant":
        mark_read_only(tools)  # mcp-server-sqlite annotates none of its tools
    return writes_by_annotation(tools)


def _server_factory(
    graph_id: str, mcp_config: Callable[[], Mapping[str, Any]]
) -> Callable[[RunnableConfig], Any]:
    @asynccontextmanager
    async def factory(config: RunnableConfig) -> AsyncIterator[CompiledStateGraph]:
        yield await _server.get(graph_id, mcp_config)

    factory.__name__ = factory.__qualname__ = graph_id
    return factory


sqlite_assistant = _server_factory("sqlite_assistant", lambda: sqlite_config(default_sqlite_db()))
sqlite_assistant.__doc__ = """Graph factory for the LangGraph server: the database assistant.

Its MCP session opens on first use and closes when the server stops; the model comes
from ``$FNCALL_SQLITE_MODEL``/``$FNCALL_MODEL``, the database from ``$FNCALL_SQLITE_DB``,
approvals from ``$FNCALL_APPROVE`` (unset: its writes wait for a decision)."""

weather_assistant = _server_factory("weather_assistant", weather_config)
weather_assistant.__doc__ = """Graph factory for the LangGraph server: the weather assistant.

Its MCP session opens on first use and closes when the server stops; the model comes
from ``$FNCALL_WEATHER_MODEL``/``$FNCALL_MODEL``, approvals from ``$FNCALL_APPROVE``."""
