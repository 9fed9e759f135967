"""Seed 003's weather server (``fncall_graph.examples.weather_server``) plus test tools.

On top of the product's server (``get_weather``, ``resource://cities``,
``resource://{city}/weather``) this adds an image tool and resource, a failing tool and
a slow tool. Run over stdio (default) or streamable HTTP on loopback:

    python tests/servers/weather_server.py
    python tests/servers/weather_server.py --port 8765

Over HTTP the MCP endpoint is `http://127.0.0.1:<port>/mcp`; the server logs
`Uvicorn running on ...` on stderr once it accepts connections.
"""

from __future__ import annotations

import asyncio
import os
import struct
import zlib

from mcp.server.fastmcp import Context, Image
from mcp.types import (
    Annotations,
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

from fncall_graph.examples.weather_server import (
    get_cities,
    get_city_weather,
    get_weather,
    main,
    mcp,
)

__all__ = ["get_cities", "get_city_weather", "get_weather", "main", "make_png", "mcp"]


def make_png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (255, 200, 0)) -> bytes:
    """A tiny solid-colour PNG, built in code."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


@mcp.resource("resource://icon.png", mime_type="image/png")
def icon() -> bytes:
    """天气图标 (PNG)"""
    return make_png()


@mcp.tool()
def weather_icon(city: str) -> list:
    """返回指定城市的天气图标"""
    return [f"{city} 的天气图标", Image(data=make_png(), format="png")]


@mcp.tool()
def broken_tool(reason: str) -> str:
    """总是失败的工具"""
    raise ValueError(f"weather service unavailable: {reason}")


@mcp.tool()
async def slow_weather(city: str, seconds: float) -> str:
    """过一会儿才返回天气"""
    await asyncio.sleep(seconds)
    return get_weather(city)


@mcp.tool()
async def forecast(city: str, days: int, ctx: Context) -> str:
    """逐日预报:每算完一天报告一次进度,并写一条日志"""
    await ctx.info(f"forecasting {days} days for {city}")
    for day in range(1, days + 1):
        await ctx.report_progress(day, days, f"day {day}")
    return f"{city}: {days} 天晴"


class Booking(BaseModel):
    confirm: bool
    nights: int = 1


@mcp.tool()
async def book_hotel(city: str, ctx: Context) -> str:
    """预订酒店:先请用户确认并给出晚数"""
    if os.environ.get("EFFECTS_FILE"):  # each run of the tool, to be counted
        with open(os.environ["EFFECTS_FILE"], "a", encoding="utf-8") as effects:
            effects.write(f"book_hotel {city}\n")
    answer = await ctx.elicit(f"在{city}订酒店吗?", schema=Booking)
    if answer.action == "accept" and answer.data.confirm:
        return f"已在{city}预订 {answer.data.nights} 晚"
    return f"未预订 ({answer.action})"


@mcp.tool()
async def summarize(text: str, ctx: Context) -> str:
    """请客户端的模型把一段文字总结成一句话"""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=text))],
        max_tokens=2000,
        system_prompt="用一句话总结",
    )
    return f"摘要: {result.content.text} ({result.model}, {result.stopReason})"


@mcp.tool()
async def visible_roots(ctx: Context) -> str:
    """列出客户端允许本服务器看到的根目录"""
    listed = await ctx.session.list_roots()
    return "\n".join(f"{r.name or ''} {r.uri}".strip() for r in listed.roots) or "(none)"


@mcp.tool()
def weather_pack(city: str) -> list:
    """一次返回多种内容:图、给用户的话、文字、嵌入资源、链接、声音"""
    import base64

    png = base64.b64encode(make_png()).decode()
    return [
        ImageContent(type="image", data=png, mimeType="image/png"),
        TextContent(type="text", text="只给用户看", annotations=Annotations(audience=["user"])),
        TextContent(type="text", text=f"{city}: 晴"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri=f"resource://{city}/weather", mimeType="text/plain", text="22°C"
            ),
        ),
        ResourceLink(type="resource_link", uri="resource://cities", name="cities"),
        AudioContent(
            type="audio", data=base64.b64encode(b"RIFF0000").decode(), mimeType="audio/wav"
        ),
    ]


@mcp.tool()
def freeze(seconds: float) -> str:
    """让整个服务器卡住一段时间(同步睡眠,挡住事件循环)"""
    import time

    time.sleep(seconds)
    return "awake"


if __name__ == "__main__":
    main()
