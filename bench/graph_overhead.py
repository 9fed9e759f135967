"""Per-turn overhead of create_fncall_graph, and parallel tool dispatch, in one run.

1. Overhead: one user turn = a model call that asks for one tool, the tool, a model call
   that answers. The same replayed model and the same tool run through
   (a) LangGraph's ``create_react_agent`` and LangChain's ``create_agent`` (native tool calls),
   (b) ``create_fncall_graph(dialect="native")`` (the same replies),
   (c) ``create_fncall_graph(dialect="hermes")`` (the replies as Hermes text, parsed).
   Turns are interleaved so all see the same load; medians over many turns.
   Goal: (b)/(a) and (c)/(a) <= 1.1.
2. Parallel dispatch: one turn with three calls to tools that each sleep 200 ms
   (sync tools with ``invoke``, async tools with ``ainvoke``). Wall time of the turn
   ÷ 200 ms (goal <= 1.15) and ÷ the same turn run serially (``max_concurrency=1``).

Nothing is asserted; a table is printed.

    python bench/graph_overhead.py [--turns 300] [--parallel-turns 5] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from fncall_graph import create_fncall_graph
from fncall_graph.replay import ReplayChatModel

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

QUESTION = {"messages": [("user", "北京天气怎么样?")]}
ANSWER = "北京晴, 25°C。"


def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city}: 晴, 25°C"


WEATHER = StructuredTool.from_function(get_weather)


def native_turn() -> list[dict[str, Any]]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "北京"})},
    }
    return [{"content": "", "tool_calls": [call]}, {"content": ANSWER}]


def hermes_turn() -> list[str]:
    body = json.dumps({"name": "get_weather", "arguments": {"city": "北京"}}, ensure_ascii=False)
    return [f"<tool_call>\n{body}\n</tool_call>", ANSWER]


def replay(turn: list[Any], turns: int) -> ReplayChatModel:
    return ReplayChatModel(turn * turns)


def overhead(turns: int, warmup: int = 20) -> dict[str, float]:
    """Median seconds per turn for each graph."""
    total = turns + warmup
    graphs: dict[str, Callable[[], Any]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(replay(native_turn(), total), [WEATHER])
    from langchain.agents import create_agent

    v1_agent = create_agent(replay(native_turn(), total), [WEATHER])
    native = create_fncall_graph(replay(native_turn(), total), [WEATHER], dialect="native")
    hermes = create_fncall_graph(replay(hermes_turn(), total), [WEATHER], dialect="hermes")
    graphs = {
        "create_react_agent": lambda: agent.invoke(QUESTION),
        "create_agent": lambda: v1_agent.invoke(QUESTION),
        "fncall native": lambda: native.invoke(QUESTION),
        "fncall hermes": lambda: hermes.invoke(QUESTION),
    }
    for run in graphs.values():
        for _ in range(warmup):
            run()
    samples: dict[str, list[float]] = {name: [] for name in graphs}
    order = list(graphs.items())
    for _ in range(turns):
        order.reverse()
        for name, run in order:
            start = time.perf_counter()
            out = run()
            samples[name].append(time.perf_counter() - start)
            assert out["messages"][-1].content == ANSWER, name
    return {name: statistics.median(v) for name, v in samples.items()}


# --------------------------------------------------------------------------- parallel

SLEEP = 0.2


def sleepers(kind: str) -> list[BaseTool]:
    out: list[BaseTool] = []
    for name in ("a", "b", "c"):
        if kind == "sync":

            def nap(x: str) -> str:
                time.sleep(SLEEP)
                return x

            out.append(StructuredTool.from_function(nap, name=f"nap_{name}", description="nap"))
        else:

            async def anap(x: str) -> str:
                await asyncio.sleep(SLEEP)
                return x

            out.append(
                StructuredTool.from_function(coroutine=anap, name=f"nap_{name}", description="nap")
            )
    return out


def three_calls() -> list[str]:
    calls = "\n".join(
        "<tool_call>\n" + json.dumps({"name": f"nap_{n}", "arguments": {"x": n}}) + "\n</tool_call>"
        for n in "abc"
    )
    return [calls, "done"]


def parallel(turns: int) -> dict[str, float]:
    """Median wall seconds of a three-call turn: concurrent and serial, sync and async."""
    out: dict[str, float] = {}
    for kind in ("sync", "async"):
        for label, limit in (("parallel", 8), ("serial", 1)):
            graph = create_fncall_graph(
                replay(three_calls(), turns + 1),
                sleepers(kind),
                dialect="hermes",
                max_concurrency=limit,
            )
            times = []
            for i in range(turns + 1):
                start = time.perf_counter()
                if kind == "sync":
                    graph.invoke(QUESTION)
                else:
                    asyncio.run(graph.ainvoke(QUESTION))
                if i:  # the first turn warms imports and thread pools
                    times.append(time.perf_counter() - start)
            out[f"{kind} {label}"] = statistics.median(times)
    return out


def profile(turns: int) -> None:
    graph = create_fncall_graph(replay(hermes_turn(), turns), [WEATHER], dialect="hermes")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(turns):
        graph.invoke(QUESTION)
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--parallel-turns", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="cProfile the hermes graph")
    args = parser.parse_args()

    if args.profile:
        profile(args.turns)
        return

    per_turn = overhead(args.turns)
    base, v1 = per_turn["create_react_agent"], per_turn["create_agent"]
    print(f"Per-turn time (one tool call + final answer), median of {args.turns} turns")
    print(f"{'graph':<22}{'ms/turn':>10}{'÷ react_agent':>16}{'÷ create_agent':>16}")
    for name, seconds in per_turn.items():
        print(f"{name:<22}{seconds * 1e3:>10.2f}{seconds / base:>16.2f}{seconds / v1:>16.2f}")
    print("(history_scaling.py measures the same as the history grows)\n")

    wall = parallel(args.parallel_turns)
    print(f"Three tools sleeping {SLEEP * 1e3:.0f} ms in one turn, median of {args.parallel_turns}")
    print(f"{'mode':<10}{'parallel ms':>13}{'÷ 200 ms':>10}{'serial ms':>11}{'par ÷ ser':>11}")
    for kind in ("sync", "async"):
        par, ser = wall[f"{kind} parallel"], wall[f"{kind} serial"]
        print(
            f"{kind:<10}{par * 1e3:>13.1f}{par / SLEEP:>10.2f}{ser * 1e3:>11.1f}{par / ser:>11.2f}"
        )
    print("goal: parallel ÷ 200 ms <= 1.15 (serial is about 3)")


if __name__ == "__main__":
    main()
