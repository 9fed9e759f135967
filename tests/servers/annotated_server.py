"""A FastMCP server whose tools say (or do not say) what they change, by MCP's tool
annotations: ``look`` only reads, ``erase`` destroys, ``note`` says nothing."""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP(name="notes")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def look(key: str) -> str:
    """Read a note."""
    return f"note {key}"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def erase(key: str) -> str:
    """Erase a note."""
    return f"erased {key}"


@mcp.tool()
def note(key: str) -> str:
    """Write a note."""
    return f"noted {key}"


if __name__ == "__main__":
    mcp.run("stdio")
