"""One process of the thread-hold tests: one turn on a thread, held inside a tool call.

Usage: ``python hold_child.py KIND WHERE THREAD NAME``

- KIND: ``async_sqlite`` / ``async_postgres`` (``graph.ainvoke``); WHERE: the file or URL.
- NAME: the turn's user message is ``NAME`` (the thread's turns are told apart by it).

The graph is ``create_fncall_graph`` on a replay model that calls ``hold`` once per turn
and then answers. The process says what happens on stdout, a line each:

- ``log: ...``: the thread hold's log (``log: ... this run waits for it`` once the run
  found the thread held by another run and waits);
- ``running``: the run holds the thread and is inside ``hold``, which waits for a line
  on stdin without holding up the event loop;
- with ``FNCALL_TEST_PAUSE_IN_TRANSACTION=1`` in its environment, ``commit awaited in
  a transaction`` when a commit of the saver's ``aiosqlite`` connection is awaited with
  its write transaction open (the file's write lock held across an ``await``): the
  process stops there, holding up its event loop, until a line on stdin;
- ``finished: <answer>`` or ``stopped: <error class>: <error>`` at the end (exit 0).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

import aiosqlite
from langchain_core.tools import tool

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import async_postgres_saver, async_sqlite_saver
from fncall_graph.testing import ReplayChatModel


def replay_model(turns: int = 10) -> ReplayChatModel:
    """Turn n: a call of ``hold`` (id ``c<n>``), then the answer ``held <n>``."""
    outputs: list[Any] = []
    for n in range(turns):
        call = {"name": "hold", "args": {}, "id": f"c{n}"}
        outputs += [{"content": "", "tool_calls": [call]}, f"held {n}"]
    return ReplayChatModel(outputs, per_conversation=True)


@tool
async def hold() -> str:
    """Wait to be let go."""
    print("running", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    return "let go"


def pause_in_transactions() -> None:
    commit = aiosqlite.Connection.commit

    async def pausing_commit(self: aiosqlite.Connection) -> None:
        if self.in_transaction:
            print("commit awaited in a transaction", flush=True)
            sys.stdin.readline()  # as a frozen process: the loop goes no further
        await commit(self)

    aiosqlite.Connection.commit = pausing_commit  # type: ignore[method-assign]


def main() -> None:
    kind, where, thread, name = sys.argv[1:]
    if os.environ.get("FNCALL_TEST_PAUSE_IN_TRANSACTION"):
        pause_in_transactions()
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("log: %(message)s"))
    hold_log = logging.getLogger("fncall_graph.adapters.checkpoint.claims")
    hold_log.addHandler(handler)
    hold_log.setLevel(logging.DEBUG)

    async def run() -> None:
        opened = (
            async_sqlite_saver(where) if kind == "async_sqlite" else async_postgres_saver(where)
        )
        async with opened as saver:
            graph = create_fncall_graph(
                replay_model(), [hold], dialect="native", checkpointer=saver
            )
            cfg = {"configurable": {"thread_id": thread}}
            result = await graph.ainvoke({"messages": [("user", name)]}, cfg)
            print(f"finished: {result['messages'][-1].content}", flush=True)

    try:
        asyncio.run(run())
    except Exception as exc:
        print(f"stopped: {type(exc).__name__}: {exc}", flush=True)


if __name__ == "__main__":
    main()
