"""A FastMCP server with one tool and nothing else (FastMCP still declares resources)."""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP(name="plain")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True))
def echo(text: str) -> str:
    """Echo the text."""
    return text


if __name__ == "__main__":
    mcp.run("stdio")
