"""An example FastMCP ``weather`` server: one tool, two resources and a prompt, canned data.

``get_weather(city)`` (获取指定城市的天气信息) answers for 北京, 上海, 广州 and 深圳;
the resources are ``resource://cities`` and ``resource://{city}/weather``; the prompt
``weather_report(city)`` opens a conversation asking for a city's weather. The ready-made
``weather_assistant`` graph runs it over stdio:

    python -m fncall_graph.examples.weather_server              # stdio
    python -m fncall_graph.examples.weather_server --port 8765  # streamable HTTP

Over HTTP the MCP endpoint is ``http://127.0.0.1:<port>/mcp``; the server logs
``Uvicorn running on ...`` on stderr once it accepts connections.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

try:  # mcp 2.x, where FastMCP is called MCPServer
    from mcp.server.mcpserver import MCPServer as FastMCP
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP  # type: ignore[no-redef]
from mcp.types import ToolAnnotations

__all__ = ["get_weather"]

mcp = FastMCP(name="weather")

CITIES = ("北京", "上海", "广州", "深圳")


# it reads canned data: a client that trusts this server ("trust": "annotations", as the
# ready-made weather graph does) may run it without asking, and retry it
@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
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
    return f"Cities: {', '.join(CITIES)}"


@mcp.resource("resource://{city}/weather")
def get_city_weather(city: str) -> str:
    return f"Weather for {city}"


@mcp.prompt()
def weather_report(city: str) -> str:
    """查询一个城市的天气并写成一句话的报告"""
    return f"请查询{city}的天气,然后用一句话写成天气报告。"


def main(argv: Sequence[str] | None = None, server: FastMCP = mcp) -> None:
    """Serve ``server`` over stdio, or over streamable HTTP with ``--port``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="serve streamable HTTP on HOST:PORT")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP interface (default: loopback)")
    args = parser.parse_args(argv)
    if args.port is None:
        # over stdio its stderr is the client's: one log line per request is noise there
        logging.getLogger().setLevel(logging.WARNING)
        server.settings.log_level = "WARNING"
        server.run("stdio")
    elif hasattr(server.settings, "port"):  # mcp 1.x: the address is a setting
        server.settings.host = args.host
        server.settings.port = args.port
        server.run("streamable-http")
    else:  # mcp 2.x: an argument of run
        server.run("streamable-http", host=args.host, port=args.port)


if __name__ == "__main__":
    main()
