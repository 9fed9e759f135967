"""A server's resources as two more tools: ``server-list_resources`` and
``server-read_resource``, for every server that lists resources or resource templates."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

import pydantic
from langchain_core.tools import StructuredTool, ToolException

from ..formats.base import clean_schema
from .listing import paginate
from .results import MCPArtifact, contents_for_model
from .stack import MCPError, wire

if TYPE_CHECKING:
    from .sessions import Server

__all__ = []

# the toolkit's logger, whose records these were before they had a module of their own
logger = logging.getLogger("fncall_graph.adapters.mcp.toolkit")

#: How the toolkit makes a tool (:func:`~.tools.make_tool` on its event loop): name,
#: description, schema, run, metadata.
MakeTool = Callable[..., StructuredTool]


async def resource_tools(
    server: Server, separator: str, make_tool: MakeTool, taken: Collection[str]
) -> list[StructuredTool]:
    """The resource tools of ``server`` if it declares resources and lists any, less
    those whose names its own tools (``taken``) already have."""
    link = server.link
    if (
        link is None
        or wire(link.init)["capabilities"].get("resources") is None
        or not await _lists_resources(server)
    ):
        return []
    tools = []
    for tool in _resource_tools(server, separator, make_tool):
        if tool.name in taken:
            logger.info(
                "MCP server %r has its own %r tool; not adding ours", server.name, tool.name
            )
            continue
        tools.append(tool)
    return tools


async def _lists_resources(server: Server) -> bool:
    """Whether a server that declares resources lists any (or any template): the
    resource tools of one that lists none could only ever answer "none"."""

    async def op(session: Any) -> bool:
        if wire(await session.list_resources()).get("resources"):
            return True
        try:
            return bool(wire(await session.list_resource_templates()).get("resourceTemplates"))
        except MCPError:  # templates are optional for a server
            return False

    if await server.request("resources/list", op):
        return True
    logger.info("MCP server %r declares resources but lists none: no resource tools", server.name)
    return False


def _resource_tools(server: Server, sep: str, make_tool: MakeTool) -> list[StructuredTool]:
    name = server.name

    async def list_resources() -> tuple[str, MCPArtifact]:
        async def op(session: Any) -> dict[str, Any]:
            resources: list[Any] = await paginate(
                lambda c: session.list_resources(cursor=c), "resources"
            )
            try:
                templates: list[Any] = await paginate(
                    lambda c: session.list_resource_templates(cursor=c), "resourceTemplates"
                )
            except MCPError:  # templates are optional for a server
                templates = []
            return {
                "resources": resources,
                "resource_templates": templates,
            }

        payload = await server.request("resources/list", op)
        return json.dumps(payload, ensure_ascii=False), {"resources": payload}

    async def read_resource(uri: str) -> tuple[str, MCPArtifact | None]:
        try:
            result = await server.request(f"resource {uri!r}", lambda s: s.read_resource(uri))  # type: ignore[arg-type]
        except pydantic.ValidationError as exc:
            raise ToolException(f"MCP server {name!r}: invalid resource URI {uri!r}") from exc
        return contents_for_model(wire(result)["contents"])

    # listing and reading resources change nothing on the server (MCP's resources/*)
    meta = {"mcp_server": name, "readOnlyHint": True}
    return [
        make_tool(
            f"{name}{sep}list_resources",
            f"List the resources and resource templates of MCP server {name!r} "
            "(uri or uriTemplate, name, description, mimeType), as JSON.",
            clean_schema(None),
            lambda _hooks, kwargs: list_resources(**kwargs),
            {**meta, "mcp_tool": "list_resources"},
        ),
        make_tool(
            f"{name}{sep}read_resource",
            f"Read a resource of MCP server {name!r} by URI (fill in a template's "
            "{placeholders} first). Text comes back as text; binary content as its "
            "MIME type and size.",
            {
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "URI of the resource"}},
                "required": ["uri"],
            },
            lambda _hooks, kwargs: read_resource(**kwargs),
            {**meta, "mcp_tool": "read_resource"},
        ),
    ]
