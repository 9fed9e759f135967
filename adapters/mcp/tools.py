"""An MCP server's tools as LangChain tools, each calling the server's open session.

One ``StructuredTool`` per tool the server lists (:func:`listed_tool`), named
``f"{server}{separator}{tool}"``, with the server's description and cleaned input schema;
a call sends its arguments as the schema allows, and turns the MCP result into the
``ToolMessage``'s content and artifact once (:func:`call_tool`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.tools import StructuredTool, ToolException

from ..tool_effects import is_idempotent
from .call_hooks import CALL_HOOKS, CallHooks, call_hooks
from .results import MCPArtifact, result_for_model
from .schemas import input_schema, nulls_as_schema_allows
from .stack import wire

if TYPE_CHECKING:
    from .sessions import Server

__all__ = []


#: What a tool's call runs: its hooks and arguments in, the message's content and artifact out.
Run = Callable[[CallHooks | None, dict[str, Any]], Coroutine[Any, Any, tuple[str, Any]]]


class _MCPTool(StructuredTool):
    """A `StructuredTool` that skips LangChain's per-call signature inspection.

    On every call LangChain inspects `_arun` and the coroutine (signature and
    type hints) for `run_manager` / `config` parameters; these tools take
    neither, and the inspection alone costs a good part of a local MCP round trip.
    """

    # Unannotated on purpose: LangChain evaluates these hints on every call.
    def _run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert self.func is not None
        return self.func(*args, **kwargs)

    async def _arun(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert self.coroutine is not None
        return await self.coroutine(*args, **kwargs)

    # What the server sends during a call (progress, elicitation requests) goes to the
    # call's thread, tagged with the tool call id, which only the call's own input knows:
    # LangChain hands `_run`/`_arun` the arguments but not the call id (a JSON-schema
    # `args_schema` gets no `InjectedToolCallId`), so the hooks cross that one step in a
    # context variable; from `_run`/`_arun` on they are passed as an argument.
    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        token = CALL_HOOKS.set(call_hooks(self.name, input))
        try:
            return super().invoke(input, config, **kwargs)
        finally:
            CALL_HOOKS.reset(token)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        token = CALL_HOOKS.set(call_hooks(self.name, input))
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            CALL_HOOKS.reset(token)


def make_tool(
    name: str,
    description: str,
    schema: dict[str, Any],
    run: Run,
    metadata: dict[str, Any],
    *,
    run_sync: Callable[[Coroutine[Any, Any, tuple[str, Any]]], tuple[str, Any]],
) -> StructuredTool:
    """A tool whose call runs ``run``: awaited by ``ainvoke``, handed to ``run_sync`` (the
    toolkit's event loop) by ``invoke``."""

    def call(**kwargs: Any) -> tuple[str, Any]:
        return run_sync(run(CALL_HOOKS.get(), kwargs))

    async def acall(**kwargs: Any) -> tuple[str, Any]:
        return await run(CALL_HOOKS.get(), kwargs)

    return _MCPTool(
        name=name,
        description=description,
        args_schema=schema,
        func=call,
        coroutine=acall,
        response_format="content_and_artifact",
        handle_tool_error=True,  # the exception's message
        metadata=metadata,
    )


def listed_tool(
    server: Server,
    tool: Mapping[str, Any],
    separator: str,
    idempotent_tools: Callable[[], Collection[str]],
    make: Callable[..., StructuredTool],
    trust: str | None = None,
) -> StructuredTool | None:
    """The LangChain tool for ``tool`` as ``server`` lists it (``None``: its input schema
    cannot be used, logged). A call is retried after the server died during it only if
    the tool may run twice (:func:`~..tool_effects.is_idempotent`, ``idempotent_tools()``
    read at call time).

    The server's annotations are its word, kept apart from the tool's own metadata (the
    user's): ``metadata["mcp_annotations"]``, with ``metadata["mcp_trust"]`` = ``trust``
    (``"annotations"``: the user trusts this server's annotations; ``None``: they count
    for nothing, see :mod:`~..tool_effects`)."""
    metadata: dict[str, Any] = {"mcp_trust": trust}
    if tool.get("annotations"):
        metadata["mcp_annotations"] = dict(tool["annotations"])
    if tool.get("_meta") is not None:
        metadata["_meta"] = tool["_meta"]

    name = f"{server.name}{separator}{tool['name']}"
    schema = input_schema(server.name, tool)
    if schema is None:
        return None

    def run(
        hooks: CallHooks | None, arguments: dict[str, Any]
    ) -> Coroutine[Any, Any, tuple[str, MCPArtifact | None]]:
        retry = is_idempotent(made, idempotent_tools())  # read at call time
        sent = nulls_as_schema_allows(arguments, tool.get("inputSchema") or {})
        return call_tool(server, tool["name"], sent, hooks, retry=retry)

    made = make(
        name,
        tool.get("description") or "",
        schema,
        run,
        {**metadata, "mcp_server": server.name, "mcp_tool": tool["name"]},
    )
    return made


async def call_tool(
    server: Server,
    name: str,
    arguments: dict[str, Any],
    hooks: CallHooks | None = None,
    *,
    retry: bool = False,
) -> tuple[str, MCPArtifact | None]:
    """Call MCP tool ``name`` on ``server``'s open session: the content and artifact of the
    `ToolMessage`, converted once from the server's result.

    ``retry``: run the call again if the server dies during it (for a tool that may run
    twice).

    Raises:
        ToolException: the server answered with an ``isError`` result (its text is the
            message the model sees).
        MCPCallOutcomeUnknown: the server died during the call and it was not retried.
    """
    result = await server.call_tool(name, arguments, hooks, retry=retry)
    content, artifact = result_for_model(result)
    if wire(result).get("isError"):
        raise ToolException(
            content or f"MCP server {server.name!r}: tool {name!r} failed without saying why"
        )
    return content, artifact
