"""One process of the lost-lease tests: a graph run whose tool call holds up its process.

Usage: ``python frozen_child.py KIND WHERE THREAD LEASE EFFECTS MODE``

- KIND: ``sqlite`` / ``postgres`` (sync savers, ``graph.invoke``) or ``async_sqlite`` /
  ``async_postgres`` (async savers, ``graph.ainvoke``); WHERE: the file or URL.
- LEASE: the graph's ``lease`` (seconds).
- EFFECTS: a file the ``log`` tool appends one line to per call it runs (its effect).
- MODE ``wait``: the tool prints ``running`` and waits for a line on stdin without
  holding up the event loop (the test freezes the whole process with SIGSTOP);
  ``block``: an ``async def`` tool that waits for the line *blocking* the event loop.

The graph is ``create_fncall_graph`` on a replay model that calls ``log`` once per user
turn (call ids ``c1``, ``c2``, ...) and then answers. At the end the process prints
``finished: <answer>`` or ``stopped: <error class>``, and exits 0.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import (
    async_postgres_saver,
    async_sqlite_saver,
    postgres_saver,
    sqlite_saver,
)
from fncall_graph.testing import ReplayChatModel

TURNS = 3


def replay_model() -> ReplayChatModel:
    """Turn n: a call of ``log`` with id ``c<n>``, then the answer ``logged <n>``."""
    outputs: list[Any] = []
    for n in range(1, TURNS + 1):
        call = {"name": "log", "args": {"entry": f"entry {n}"}, "id": f"c{n}"}
        outputs += [{"content": "", "tool_calls": [call]}, f"logged {n}"]
    return ReplayChatModel(outputs, per_conversation=True)


def log_tools(effects: Path, mode: str, *, is_async: bool) -> list[Any]:
    def record(entry: str) -> str:
        with effects.open("a", encoding="utf-8") as f:
            f.write(f"{entry}\n")
        return f"logged {entry!r}"

    if not is_async:

        @tool
        def log(entry: str) -> str:
            """Append an entry to the log."""
            print("running", flush=True)
            sys.stdin.readline()
            return record(entry)

        return [log]

    @tool
    async def log(entry: str) -> str:
        """Append an entry to the log."""
        print("running", flush=True)
        if mode == "block":
            sys.stdin.readline()  # blocks the event loop, as a careless async tool does
        else:
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        return record(entry)

    return [log]


def main() -> None:
    kind, where, thread, lease, effects, mode = sys.argv[1:]
    is_async = kind.startswith("async_")
    tools = log_tools(Path(effects), mode, is_async=is_async)
    cfg = {"configurable": {"thread_id": thread}}
    question = {"messages": [("user", "log entry 1")]}

    def build(saver: Any) -> Any:
        return create_fncall_graph(
            replay_model(), tools, dialect="native", checkpointer=saver, lease=float(lease)
        )

    def said(result: Any) -> None:
        print(f"finished: {result['messages'][-1].content}", flush=True)

    try:
        if kind == "sqlite":
            with sqlite_saver(where) as saver:
                said(build(saver).invoke(question, cfg))
        elif kind == "postgres":
            with postgres_saver(where) as saver:
                said(build(saver).invoke(question, cfg))
        else:

            async def run() -> None:
                opened = (
                    async_sqlite_saver(where)
                    if kind == "async_sqlite"
                    else async_postgres_saver(where)
                )
                async with opened as saver:
                    said(await build(saver).ainvoke(question, cfg))

            asyncio.run(run())
    except Exception as exc:
        print(f"stopped: {type(exc).__name__}: {exc}", flush=True)


if __name__ == "__main__":
    main()
