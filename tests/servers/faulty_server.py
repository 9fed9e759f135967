"""A FastMCP server whose tools do a side effect and can die inside the call, or hang.

    python tests/servers/faulty_server.py EFFECTS_FILE

Each ``write*`` tool appends its line to ``EFFECTS_FILE`` (the side effect), then, if the
file ``EFFECTS_FILE.die`` exists, deletes it and exits at once without answering: the
server dies inside the call, after the effect, once. ``hang`` never answers.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

EFFECTS = Path(sys.argv[1])
DIE = Path(f"{EFFECTS}.die")

mcp = FastMCP(name="faulty")


def _write(line: str) -> str:
    with EFFECTS.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    if DIE.exists():
        DIE.unlink()
        os._exit(1)  # dies inside the call, after its effect, without an answer
    return f"wrote {line}"


@mcp.tool()
def write(line: str) -> str:
    """Append a line (not idempotent)."""
    return _write(line)


@mcp.tool(annotations=ToolAnnotations(idempotentHint=True))
def write_idempotent(line: str) -> str:
    """Set a line (idempotent, as the server declares)."""
    return _write(line)


@mcp.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.Event().wait()
    return "never"


if __name__ == "__main__":
    mcp.run("stdio")
