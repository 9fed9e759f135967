"""MCP servers as LangChain tools over persistent sessions.

This module turns the MCP servers of a config file into LangChain tools that any
chat model (and any LangGraph node) can call: :class:`MCPToolkit` starts and stops the
servers together and holds their tools. It is built on either generation of the MCP SDK
(mcp 1.x with langchain-mcp-adapters' sessions, or mcp 2.x's own client; see
:mod:`.stack`). The tools are built by :mod:`.tools`, one per tool the server lists,
each calling the open session (:mod:`.sessions`) and turning the MCP result into the
`ToolMessage`'s content and artifact once (:mod:`.results`); what a server sends during
a call goes to the call's thread (:mod:`.call_hooks`). They add what a dependable agent
needs:

- **one persistent session per server**, opened once and shared by every call
  (the adapters' `MultiServerMCPClient.get_tools()` starts a new server process
  for every call);
- **names `server-tool`** (`sqlite-read_query`) and schemas cleaned to
  `{"type": "object", "properties": ..., "required": [...]}` for prompt dialects;
- **results as text**: text parts joined with `"\\n\\n"`; images and other parts
  kept in the artifact; MCP `isError` results become error `ToolMessage`s;
- **faults handled**: per-call timeout (300 s by default), a dead server restarted
  (the call retried once if the tool is read-only or idempotent, else answered as of
  unknown outcome), a server that cannot start reported at once with its cause;
- **annotations as the server's word**: a server's tool annotations (`readOnlyHint`,
  `idempotentHint`, ...) count only for a server the user trusts (`"trust":
  "annotations"`); see :mod:`..tool_effects`;
- **resources** as two more tools per server: `server-list_resources` and
  `server-read_resource`.

Example:
    ```python
    from fncall_graph.adapters.mcp import MCPToolkit

    config = {
        "mcpServers": {
            "sqlite": {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "test.db"]}
        }
    }
    async with MCPToolkit.from_config(config) as toolkit:
        tools = toolkit.tools  # sqlite-read_query, sqlite-list_tables, ...
        list_tables = toolkit.get_tool("sqlite-list_tables")
        print(await list_tables.ainvoke({}))
        # [{'name': 'students'}, {'name': 'sqlite_sequence'}, {'name': 'log'}]
    ```

Sessions always live on one event loop, the owner loop: with `async with` it is
the caller's loop; with `start_sync()` (or `with`) it is a background loop thread.
Calls from any other loop or thread are marshalled to it with
`asyncio.run_coroutine_threadsafe`, so both `tool.invoke` and `tool.ainvoke` work.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import threading
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool
from mcp.types import InitializeResult

from .config import (
    ConfigSource,
    SamplingSettings,
    checked_trust,
    oauth_settings,
    parse_mcp_config,
    read_config,
    root_settings,
    sampling_settings,
    trust_settings,
)
from .connections import Connection
from .errors import MCPConfigError, MCPServerError
from .oauth import AuthorizePage, OAuthSettings, oauth_for, open_in_browser
from .prompts import MCPPrompt, get_prompt, list_prompts
from .resources import resource_tools
from .sampling import sampler
from .sessions import Server
from .tools import listed_tool, make_tool

__all__ = ["DEFAULT_CALL_TIMEOUT", "MCPPrompt", "MCPToolkit"]

T = TypeVar("T")

DEFAULT_CALL_TIMEOUT = 300.0
"""Seconds one MCP call may take by default (`call_timeout`); `None` waits for ever. A
server that never answers (or answers another request id) would otherwise hold the
call, and the thread running it, for ever."""


class MCPToolkit:
    """LangChain tools for the MCP servers of a config, over persistent sessions.

    Each server gets one session, opened when the toolkit starts and shared by
    all calls; every server's tools are listed once and exposed as
    `StructuredTool`s named `f"{server}{separator}{tool}"`, with cleaned schemas
    (`args_schema` is the cleaned JSON-schema dict) and the server's own
    descriptions. Use it as an async context manager, or from sync code with
    `with` / `start_sync()` + `close()`.

    Tools a server offers only as tasks (`execution.taskSupport: "required"`), which
    this client cannot run, are left out with a log line.

    Tool results (`response_format="content_and_artifact"`):

    - content: the text parts joined with `"\\n\\n"`, plus a short
      `[image: image/png, 68 bytes]` line for each non-text part;
    - artifact: an `MCPArtifact` with the non-text parts as LangChain content
      blocks and the `structuredContent`, or `None`.

    Errors:

    - an MCP `isError` result, a JSON-RPC error from the server, and a call
      over `call_timeout` raise `ToolException`s that the tool turns into
      `ToolMessage(status="error")` when it is invoked with a tool call (with
      plain arguments, the error text is returned);
    - if the server died (process killed, connection dropped), it is restarted.
      A server that died in the middle of a call may have done the work already,
      so the call is retried once only for tools that may run twice: those named in
      `idempotent_tools`, those whose `metadata["idempotent"]` is `True`, and those a
      trusted server (`trust`) annotates `readOnlyHint` or `idempotentHint`
      (if the retry fails too, `MCPServerError` is raised). Any other call raises
      `MCPCallOutcomeUnknown` (a `ToolException`: the model is told the call may
      or may not have happened, and not to repeat it unchecked), unless its request
      never left the client;
    - a server that cannot start raises `MCPServerError` from `__aenter__` /
      `start_sync()`, naming the server and the cause; the others are closed.

    Trust: a server's tool annotations are its own word about its tools, and the MCP
    spec has clients treat them as untrusted unless the server is trusted. They are
    kept on each tool as `metadata["mcp_annotations"]`, with `metadata["mcp_trust"]`,
    and count only for a server named in `trust` (in a config file: `"trust":
    "annotations"` in its `mcpServers` entry): then a tool it annotates `readOnlyHint`
    runs without a question under `interrupt_on="annotations"`, and one it annotates
    `readOnlyHint` or `idempotentHint` is retried as above. An untrusted server's
    annotations change nothing (its tools ask first and are not sent twice); the user's
    own word (`idempotent_tools`, a tool's `metadata`) counts whatever the server.

    Resources: for every server that lists resources or resource templates (and
    `include_resources=True`), two more tools: `server-list_resources` (resources
    and resource templates, as JSON) and `server-read_resource(uri)` (text
    contents as text; binary contents as a `[file: mime, size]` line with the
    base64 data in the artifact).

    Example:
        ```python
        from fncall_graph.adapters.mcp import MCPToolkit

        async with MCPToolkit.from_config("mcp.json", call_timeout=30) as toolkit:
            agent = create_react_agent(model, toolkit.tools)
            await agent.ainvoke({"messages": [("user", "数据库有几张表")]})

        # sync code: sessions run on a background event-loop thread
        with MCPToolkit.from_config("mcp.json") as toolkit:
            toolkit.get_tool("sqlite-list_tables").invoke({})
        ```

    Args:
        connections: `{server_name: connection}` as returned by
            `parse_mcp_config` (use `from_config` to read a file or a dict).
        separator: put between server and tool name (`"-"`: `sqlite-read_query`).
        call_timeout: seconds a single call may take (default `DEFAULT_CALL_TIMEOUT`,
            300); `None` waits for ever. A call over it raises `MCPToolTimeoutError`,
            whose message says the server may still finish the call.
        include_resources: add the `list_resources` / `read_resource` tools.
        startup_timeout: seconds a server may take to start and initialize.
        sampling_model: the chat model (or model spec) that answers servers' sampling
            requests; only servers whose config allows sampling may ask
            (`"sampling": {"allow": true, "max_tokens": 512}`), and each answer is logged.
        sampling: per server, `SamplingSettings` (`from_config` reads them from the
            config's `sampling` entries).
        roots: per server, the roots it may see (`[{"uri": "file:///...", "name": ...}]`;
            `from_config` reads the config's `roots` entries); a server without any is
            not offered roots.
        idempotent_tools: tool names (`f"{server}{separator}{tool}"`) whose calls may
            run again after the server died during them, besides those a trusted server
            annotates read-only or idempotent.
        oauth: per remote server, `OAuthSettings` (`from_config` reads the config's
            `oauth` entries): the server's tokens are got by the MCP SDK's OAuth
            (authorization code with PKCE, or client credentials) when it asks for them,
            and kept in a token cache only this user can read. A connection dict may
            instead carry its own `httpx.Auth` as `"auth"`.
        authorize: shows a server's authorization page to the person, called with
            the server's name and the page's URL (default `open_in_browser`: printed on
            stderr and opened in the system's browser); the browser is sent back to a
            listener on 127.0.0.1 (`oauth.callback_port`).
        trust: per server, what of its word is believed: `"annotations"`, its tools'
            MCP annotations (`from_config` reads the config's `trust` entries). The
            one way for servers given as the adapters' connection dicts, which have no
            place for it: `MCPToolkit(parse_mcp_config(connections),
            trust={"weather": "annotations"})`.
    """

    def __init__(
        self,
        connections: Mapping[str, Connection],
        *,
        separator: str = "-",
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        include_resources: bool = True,
        startup_timeout: float = 30.0,
        sampling_model: BaseChatModel | str | None = None,
        sampling: Mapping[str, SamplingSettings] | None = None,
        roots: Mapping[str, list[dict[str, str]]] | None = None,
        idempotent_tools: Sequence[str] = (),
        oauth: Mapping[str, OAuthSettings] | None = None,
        authorize: AuthorizePage = open_in_browser,
        trust: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(separator, str) or not separator:
            raise MCPConfigError("separator", "must be a non-empty string")
        for key, value in (("call_timeout", call_timeout), ("startup_timeout", startup_timeout)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
            ):
                raise MCPConfigError(key, f"must be a positive number of seconds, got {value!r}")
        self._connections = dict(connections)
        for name, settings in (oauth or {}).items():
            conn = self._connections.get(name)
            if conn is None or "url" not in conn or conn.get("transport") == "websocket":
                raise MCPConfigError(f"oauth.{name}", "names no server reached over HTTP")
            if conn.get("auth") is not None:
                raise MCPConfigError(
                    f"oauth.{name}", "the server's connection has its own auth already"
                )
            auth = oauth_for(name, str(conn["url"]), settings, authorize)
            self._connections[name] = {**conn, "auth": auth}  # type: ignore[typeddict-item]
        self.trust = {
            name: checked_trust(value, f"trust.{name}") for name, value in (trust or {}).items()
        }
        for name in self.trust:
            if name not in self._connections:
                raise MCPConfigError(
                    f"trust.{name}",
                    f"names no configured server; configured: {', '.join(self._connections)}",
                )
        self.separator = separator
        self.call_timeout = call_timeout
        self.idempotent_tools = frozenset(idempotent_tools)
        self.include_resources = include_resources
        self._servers = {
            name: Server(
                name,
                conn,
                call_timeout=call_timeout,
                startup_timeout=startup_timeout,
                sample=self._sampler(name, sampling_model, (sampling or {}).get(name)),
                roots=(roots or {}).get(name),
            )
            for name, conn in self._connections.items()
        }
        self._tools: dict[str, list[BaseTool]] | None = None
        self._prompts: dict[str, MCPPrompt] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._state = "new"

    @staticmethod
    def _sampler(
        server: str, model: BaseChatModel | str | None, settings: SamplingSettings | None
    ) -> Any:
        if settings is None or not settings.allow:
            return None  # the capability is not announced
        model = settings.model or model
        if model is None:
            raise MCPConfigError(
                f"mcpServers.{server}.sampling",
                "allows sampling, but names no model and the toolkit has no sampling_model",
            )
        if isinstance(model, str):
            from ..models import resolve_model

            try:
                model = resolve_model(model)
            except (ValueError, ImportError) as exc:
                if not settings.model:
                    raise
                raise MCPConfigError(f"mcpServers.{server}.sampling.model", str(exc)) from None
        return sampler(server, model, settings)

    @classmethod
    def from_config(
        cls,
        config: ConfigSource,
        *,
        separator: str = "-",
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        include_resources: bool = True,
        startup_timeout: float = 30.0,
        sampling_model: BaseChatModel | str | None = None,
        idempotent_tools: Sequence[str] = (),
        authorize: AuthorizePage = open_in_browser,
    ) -> MCPToolkit:
        """Build a toolkit from an `mcpServers` config (file path or dict).

        The config is checked at once (`MCPConfigError` before anything starts);
        servers start when the toolkit is entered. See `parse_mcp_config` for the
        formats and `MCPToolkit` for the options.

        Example:
            ```python
            async with MCPToolkit.from_config({"mcpServers": {...}}) as toolkit:
                tools = toolkit.tools
            ```
        """
        return cls(
            parse_mcp_config(data := read_config(config)),
            separator=separator,
            call_timeout=call_timeout,
            include_resources=include_resources,
            startup_timeout=startup_timeout,
            sampling_model=sampling_model,
            sampling=sampling_settings(data),
            roots=root_settings(data),
            idempotent_tools=idempotent_tools,
            oauth=oauth_settings(data),
            authorize=authorize,
            trust=trust_settings(data),
        )

    # -- introspection

    @property
    def servers(self) -> list[str]:
        """Names of the configured servers."""
        return list(self._servers)

    @property
    def connections(self) -> dict[str, Connection]:
        """The checked connection dicts, by server name."""
        return dict(self._connections)

    @property
    def tools(self) -> list[BaseTool]:
        """All tools of all servers, in config order (the toolkit must be started)."""
        return [tool for tools in self._started_tools().values() for tool in tools]

    def get_tools(self, server: str | None = None) -> list[BaseTool]:
        """The tools of one server (all tools when `server` is `None`)."""
        if server is None:
            return self.tools
        tools = self._started_tools()
        if server not in tools:
            raise MCPServerError(server, f"unknown server; configured: {', '.join(self._servers)}")
        return list(tools[server])

    def get_tool(self, name: str) -> BaseTool:
        """The tool called `name` (e.g. `"sqlite-read_query"`)."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(
            f"no MCP tool named {name!r}; tools: {', '.join(t.name for t in self.tools)}"
        )

    def server_info(self, server: str) -> InitializeResult:
        """What the server said at initialization (name, version, capabilities)."""
        srv = self._servers.get(server)
        if srv is None:
            raise MCPServerError(server, f"unknown server; configured: {', '.join(self._servers)}")
        if srv.link is None:
            raise MCPServerError(server, "not running")
        return srv.link.init

    @property
    def prompts(self) -> list[MCPPrompt]:
        """The prompts of every server that offers prompts (the toolkit must be started)."""
        self._started_tools()
        return list(self._prompts.values())

    def get_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> list[HumanMessage | AIMessage]:
        """The messages of prompt ``name`` filled with ``arguments``, ready to open a thread.

        Example:
            ```python
            with MCPToolkit.from_config(config) as toolkit:
                opening = toolkit.get_prompt("weather-weather_report", {"city": "北京"})
                graph.invoke({"messages": opening}, cfg)
            ```

        Raises:
            KeyError: no such prompt (the message lists them).
            ValueError: a required argument is missing.
            MCPServerError: the server failed or refused.
        """
        return self._run_sync(self.aget_prompt(name, arguments))

    async def aget_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> list[HumanMessage | AIMessage]:
        """Async :meth:`get_prompt`."""
        self._started_tools()
        prompt = self._prompts.get(name)
        if prompt is None:
            known = ", ".join(self._prompts) or "none"
            raise KeyError(f"no MCP prompt named {name!r}; prompts: {known}")
        return await get_prompt(self._servers[prompt.server], prompt, arguments)

    def _started_tools(self) -> dict[str, list[BaseTool]]:
        if self._tools is None:
            raise RuntimeError(
                "the MCP toolkit is not started: use `async with MCPToolkit.from_config(...)` "
                "or `toolkit.start_sync()`"
            )
        return self._tools

    # -- async lifecycle

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start every server and list its tools on the running event loop."""
        if self._state != "new":
            raise RuntimeError(f"the MCP toolkit cannot be started twice (it is {self._state})")
        self._state = "starting"
        self._loop = asyncio.get_running_loop()
        servers = list(self._servers.values())
        results = await asyncio.gather(*(s.start() for s in servers), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        try:
            if failures:
                raise failures[0]
            tools: dict[str, list[BaseTool]] = {}
            for server in servers:
                tools[server.name] = await self._build_tools(server)
                for prompt in await list_prompts(server, self.separator):
                    self._prompts[prompt.name] = prompt
            self._check_unique(tools)
        except BaseException:
            await asyncio.gather(*(s.close() for s in servers), return_exceptions=True)
            self._state = "closed"
            raise
        self._tools = tools
        self._state = "running"

    async def aclose(self) -> None:
        """Close every session (and stop every stdio server process)."""
        if self._thread is not None:
            await asyncio.to_thread(self.close)
            return
        if self._state in ("new", "closed"):
            self._state = "closed"
            return
        self._state = "closed"
        await asyncio.gather(*(s.close() for s in self._servers.values()), return_exceptions=True)

    # -- sync lifecycle

    def __enter__(self) -> Self:
        return self.start_sync()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start_sync(self) -> Self:
        """Start the servers on a background event-loop thread, for sync callers.

        The tools then work from `invoke` and, from any event loop, `ainvoke`.
        Call `close()` when done (it is also called at interpreter exit).
        """
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fncall-graph-mcp", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        self._thread = thread
        atexit.register(self.close)
        return self

    def close(self) -> None:
        """Close a toolkit started with `start_sync()` and stop its thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            if self._state == "running":
                raise RuntimeError(
                    "this MCP toolkit runs on an event loop: use `await toolkit.aclose()`"
                )
            return
        self._thread = None
        atexit.unregister(self.close)
        if threading.current_thread() is thread:
            raise RuntimeError("close() cannot be called from the toolkit's own event-loop thread")
        try:
            asyncio.run_coroutine_threadsafe(self.aclose(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    # -- tools

    def _run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a tool coroutine for a sync caller, on the owner loop."""
        loop = self._loop
        if loop is None or self._state != "running":
            coro.close()
            raise RuntimeError("the MCP toolkit is not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError(
                "a sync MCP tool call on the toolkit's own event loop would block it; "
                "use `await tool.ainvoke(...)` there, or call `invoke` from another thread"
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    async def _build_tools(self, server: Server) -> list[BaseTool]:
        # Not the adapters' tools (even through `tool_interceptors`): an interceptor can skip
        # their conversion only by returning a whole ToolMessage, whose call id it is not given.
        make = functools.partial(make_tool, run_sync=self._run_sync)
        trust = self.trust.get(server.name)
        made = [
            listed_tool(server, t, self.separator, lambda: self.idempotent_tools, make, trust)
            for t in await server.list_tools()
        ]
        tools: list[BaseTool] = [t for t in made if t is not None]
        if self.include_resources:
            tools += await resource_tools(server, self.separator, make, {t.name for t in tools})
        return tools

    def _check_unique(self, tools: Mapping[str, list[BaseTool]]) -> None:
        seen: dict[str, str] = {}
        for server, server_tools in tools.items():
            for tool in server_tools:
                if tool.name in seen:
                    raise MCPConfigError(
                        f"mcpServers.{server}",
                        f"tool name {tool.name!r} is also made by server {seen[tool.name]!r}; "
                        "rename a server or change the separator",
                    )
                seen[tool.name] = server


@asynccontextmanager
async def load_mcp_tools(
    config: ConfigSource,
    *,
    separator: str = "-",
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    include_resources: bool = True,
    startup_timeout: float = 30.0,
) -> AsyncIterator[list[BaseTool]]:
    """Async context manager: the tools of an MCP config, sessions open inside.

    A shorthand for `MCPToolkit.from_config(...)` when only the tool list is
    needed. The sessions close (and stdio servers stop) when the block ends.

    Example:
        ```python
        from fncall_graph.adapters.mcp import load_mcp_tools

        async with load_mcp_tools("mcp.json") as tools:
            graph = create_fncall_graph(model, tools)
            await graph.ainvoke({"messages": [("user", "数据库有几张表")]})
        ```
    """
    toolkit = MCPToolkit.from_config(
        config,
        separator=separator,
        call_timeout=call_timeout,
        include_resources=include_resources,
        startup_timeout=startup_timeout,
    )
    async with toolkit:
        yield toolkit.tools
