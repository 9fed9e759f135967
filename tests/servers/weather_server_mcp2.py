"""A weather server on mcp 2.x (``MCPServer``), for the toolkit's tests on both stacks.

It speaks 2026-07-28 to a client that asks for it (``server/discover``; a question is an
input-required result, answered by the client's retry) and 2025-11-25 to one that
starts with ``initialize`` (the question is a request in the middle of the call). Run by
``.venv-mcp2``'s Python, over stdio (default) or streamable HTTP on loopback:

    python tests/servers/weather_server_mcp2.py
    python tests/servers/weather_server_mcp2.py --port 8765

Over HTTP the MCP endpoint is ``http://127.0.0.1:<port>/mcp``; the server logs
``Uvicorn running on ...`` on stderr once it accepts connections. With ``EFFECTS_FILE``
set, each booking appends a line to that file: what a tool did, to be counted.
"""

from __future__ import annotations

import argparse
import os
from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from pydantic import BaseModel

mcp = MCPServer("weather")

WEATHER = {"北京": "晴天,温度 22°C", "上海": "多云,温度 25°C"}


@mcp.tool(annotations={"readOnlyHint": True})
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return WEATHER.get(city, f"{city}: 未知")


@mcp.tool()
async def forecast(city: str, days: int, ctx: Context) -> str:
    """The next days' weather, reported day by day."""
    for day in range(1, days + 1):
        await ctx.report_progress(day, days, f"day {day}")
    await ctx.info(f"forecast for {city}")
    return f"{city}: {days} 天晴"


class Booking(BaseModel):
    confirm: bool
    nights: int = 1


def ask(city: str) -> Elicit[Booking]:
    return Elicit(f"在{city}订酒店吗?", Booking)


@mcp.tool()
async def book_hotel(city: str, answer: Annotated[ElicitationResult[Booking], Resolve(ask)]) -> str:
    """Book a hotel, once the person confirms."""
    if isinstance(answer, AcceptedElicitation) and answer.data.confirm:
        if os.environ.get("EFFECTS_FILE"):
            with open(os.environ["EFFECTS_FILE"], "a", encoding="utf-8") as effects:
                effects.write(f"book_hotel {city}\n")
        return f"已在{city}预订 {answer.data.nights} 晚"
    return f"未预订 ({answer.action})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, help="serve streamable HTTP on this loopback port")
    args = parser.parse_args()
    if args.port is None:
        mcp.run("stdio")
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
