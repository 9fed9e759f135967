"""An MCP server on mcp 2.x whose asking tool runs beside one that asks nothing.

``book(city)`` asks the person to confirm (its question is built only once ``wait`` is
running, so both calls are in flight when it reaches the client); ``wait()`` asks
nothing and returns once ``book`` has its answer. Before asking, ``book`` creates the
file ``<folder>/asking``. Run by ``.venv-mcp2``'s Python over stdio:

    python tests/servers/asking_beside_server_mcp2.py FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from pydantic import BaseModel

FOLDER = Path(sys.argv[1])
mcp = MCPServer("beside")
waiting = anyio.Event()  # `wait` is running
answered = anyio.Event()  # `book` has its answer


class Confirm(BaseModel):
    confirm: bool = True


async def question(city: str) -> Elicit[Confirm]:
    (FOLDER / "asking").touch()
    await waiting.wait()
    return Elicit(f"book in {city}?", Confirm)


@mcp.tool()
async def book(city: str, answer: Annotated[ElicitationResult[Confirm], Resolve(question)]) -> str:
    """Book a room, once the person confirms."""
    answered.set()
    if isinstance(answer, AcceptedElicitation) and answer.data.confirm:
        return f"booked in {city}"
    return f"not booked ({answer.action})"


@mcp.tool()
async def wait() -> str:
    """Wait for the booking to be answered."""
    waiting.set()
    await answered.wait()
    return "waited"


if __name__ == "__main__":
    mcp.run("stdio")
