"""Seed 003's FastMCP `weather` server, plus an image tool, a failing tool and a slow tool.

Run over stdio (default) or streamable HTTP on loopback:

    python tests/servers/weather_server.py
    python tests/servers/weather_server.py --port 8765

Over HTTP the MCP endpoint is `http://127.0.0.1:<port>/mcp`; the server logs
`Uvicorn running on ...` on stderr once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import zlib

from mcp.server.fastmcp import FastMCP, Image

mcp = FastMCP(name="weather")


@mcp.tool()
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    # 简单模拟数据,实际应用中应该调用对应的API
    weather_data = {
        "北京": "晴天,温度 22°C",
        "上海": "多云,温度 25°C",
        "广州": "小雨,温度 28°C",
        "深圳": "阴天,温度 26°C",
    }
    return weather_data.get(city, f"{city} 的天气数据暂不可用")


@mcp.resource("resource://cities")
def get_cities() -> str:
    """返回支持查询天气的城市列表"""
    cities = ["北京", "上海", "广州", "深圳"]
    return f"Cities: {', '.join(cities)}"


@mcp.resource("resource://{city}/weather")
def get_city_weather(city: str) -> str:
    return f"Weather for {city}"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, help="serve streamable HTTP on 127.0.0.1:PORT")
    args = parser.parse_args()
    if args.port is None:
        mcp.run("stdio")
    else:
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = args.port
        mcp.run("streamable-http")


if __name__ == "__main__":
    main()
