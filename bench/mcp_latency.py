"""Per-call latency of MCP tools, side by side in one run.

mcp-server-sqlite over stdio on the database-assistant example's database, `list_tables` each time:

(a) raw:      `mcp.ClientSession.call_tool` on an open session;
(b) product:  `fncall_graph.adapters.mcp.MCPToolkit` tools, `await tool.ainvoke({})`;
(c) adapters: `MultiServerMCPClient(...).get_tools()` tools, which start a new
              server process for every call (fewer iterations).

For reference it also times the adapters' tool bound to the open raw session
(`load_mcp_tools(session)`): the cost of LangChain's `BaseTool.ainvoke` itself.

Then the same raw/product comparison on the MCP reference server
`@modelcontextprotocol/server-everything` (`echo`, node over stdio; installed by
`make test` into .mcp-servers/, skipped with a note when missing).

Prints the medians and the ratios product/raw (goal <= 1.2) and
adapters/product (goal >= 100). Nothing is asserted.

    python bench/mcp_latency.py [--iterations 200] [--adapter-iterations 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from fncall_graph.adapters.mcp import MCPToolkit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from seed_db import make_database, sqlite_config, sqlite_server_command


async def median_latencies(
    fns: dict[str, Callable[[], Awaitable[Any]]], iterations: int, warmup: int = 5
) -> dict[str, float]:
    """Median seconds per call of each function, calls interleaved so all see the same load."""
    for fn in fns.values():
        for _ in range(warmup):
            await fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns.items())
    for _ in range(iterations):
        order.reverse()  # alternate who goes first, so neither gets a warmer pipe
        for name, fn in order:
            start = time.perf_counter()
            await fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


async def main(iterations: int, adapter_iterations: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = make_database(Path(tmp) / "test.db")
        command, args = sqlite_server_command(), ["--db-path", str(db)]

        params = StdioServerParameters(command=command, args=args)
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
            MCPToolkit.from_config(sqlite_config(db)) as toolkit,
        ):
            await session.initialize()
            tool = toolkit.get_tool("sqlite-list_tables")
            # The adapters' own tool on the same open session: LangChain's tool
            # machinery alone, without this package's wrapping.
            [bound] = [t for t in await load_mcp_tools(session) if t.name == "list_tables"]
            fast = await median_latencies(
                {
                    "raw": lambda: session.call_tool("list_tables", {}),
                    "product": lambda: tool.ainvoke({}),
                    "bound": lambda: bound.ainvoke({}),
                },
                iterations,
            )
        raw, product, bound_latency = fast["raw"], fast["product"], fast["bound"]

        client = MultiServerMCPClient(
            {"sqlite": {"transport": "stdio", "command": command, "args": args}}
        )
        [default_tool] = [t for t in await client.get_tools() if t.name == "list_tables"]
        slow = await median_latencies(
            {"adapters": lambda: default_tool.ainvoke({})}, adapter_iterations, warmup=1
        )
        adapters = slow["adapters"]

    print("mcp-server-sqlite over stdio, list_tables, median per call")
    print(f"  (a) raw mcp.ClientSession.call_tool     {raw * 1e3:9.3f} ms  (n={iterations})")
    print(f"  (b) fncall-graph MCPToolkit tool        {product * 1e3:9.3f} ms  (n={iterations})")
    print(
        f"  (-) adapters tool on the open session   {bound_latency * 1e3:9.3f} ms  (n={iterations})"
    )
    print(
        f"  (c) langchain-mcp-adapters get_tools()  {adapters * 1e3:9.3f} ms  (n={adapter_iterations})"
    )
    print(f"  product / raw      = {product / raw:7.2f}   (goal <= 1.2)")
    print(f"  adapters / product = {adapters / product:7.1f}   (goal >= 100)")
    await everything_echo(iterations)


EVERYTHING = (
    Path(__file__).resolve().parent.parent / ".mcp-servers/node_modules/.bin/mcp-server-everything"
)


async def everything_echo(iterations: int) -> None:
    if not EVERYTHING.exists():
        print(f"\nserver-everything skipped: {EVERYTHING} is missing (make test installs it)")
        return
    params = StdioServerParameters(command=str(EVERYTHING), args=["stdio"])
    config = {"mcpServers": {"everything": {"command": str(EVERYTHING), "args": ["stdio"]}}}
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
        MCPToolkit.from_config(config) as toolkit,
    ):
        await session.initialize()
        tool = toolkit.get_tool("everything-echo")
        [bound] = [t for t in await load_mcp_tools(session) if t.name == "echo"]
        times = await median_latencies(
            {
                "raw": lambda: session.call_tool("echo", {"message": "hi"}),
                "product": lambda: tool.ainvoke({"message": "hi"}),
                "bound": lambda: bound.ainvoke({"message": "hi"}),
            },
            iterations,
        )
    raw, product, bound_latency = times["raw"], times["product"], times["bound"]
    print("\n@modelcontextprotocol/server-everything over stdio, echo, median per call")
    print(f"  (a) raw mcp.ClientSession.call_tool     {raw * 1e3:9.3f} ms  (n={iterations})")
    print(f"  (b) fncall-graph MCPToolkit tool        {product * 1e3:9.3f} ms  (n={iterations})")
    print(
        f"  (-) adapters tool on the open session   {bound_latency * 1e3:9.3f} ms  (n={iterations})"
    )
    print(f"  product / raw      = {product / raw:7.2f}   (goal <= 1.2)")
    print(f"  product / adapters tool on the session = {product / bound_latency:7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--adapter-iterations", type=int, default=10)
    ns = parser.parse_args()
    asyncio.run(main(ns.iterations, ns.adapter_iterations))
