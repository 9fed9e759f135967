"""Checkpoint bytes and time of one turn as a thread grows, against LangChain and LangGraph.

One user turn that makes K parallel tool calls and then answers, after H earlier
messages of about 220 characters, on a SQLite checkpointer on disk, with the same
replayed model for every graph, side by side in one run:

- ``create_agent``           LangChain v1's agent (``langchain.agents``);
- ``create_react_agent``     LangGraph's prebuilt agent;
- ``fncall native``          ``create_fncall_graph(dialect="native")``;
- ``fncall hermes``          ``create_fncall_graph(dialect="hermes")`` (the model writes
                             ``<tool_call>`` text; the graph renders and parses it).

Bytes are what the turn added to the saver's tables (checkpoint and metadata blobs, and
pending writes), read from SQLite itself; time is the median wall time of the turn over
``--repeats`` fresh threads. Prints two tables (KB per turn, ms per turn) with each
fncall column also as a ratio to ``create_agent``. Nothing is asserted.

    python bench/history_scaling.py [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from fncall_graph import create_fncall_graph
from fncall_graph.replay import ReplayChatModel

FILLER = "这是一条较早的消息,内容用来让历史变长。" * 6 + "The thread goes on and on, as threads do."


@tool
def lookup(key: int) -> str:
    """Look a key up."""
    return f"value of {key}: " + "x" * 40


def history(h: int) -> list[Any]:
    return [
        HumanMessage(f"{i} {FILLER}") if i % 2 == 0 else AIMessage(f"{i} {FILLER}")
        for i in range(h)
    ]


def native_outputs(k: int) -> list[Any]:
    calls = [{"name": "lookup", "args": {"key": i}, "id": f"call_{i}"} for i in range(k)]
    return ["noted", {"content": "", "tool_calls": calls}, "all looked up"]


def hermes_outputs(k: int) -> list[str]:
    calls = "\n".join(
        "<tool_call>\n" + json.dumps({"name": "lookup", "arguments": {"key": i}}) + "\n</tool_call>"
        for i in range(k)
    )
    return ["noted", calls, "all looked up"]


def build(kind: str, model: Any, saver: SqliteSaver) -> Any:
    if kind == "create_agent":
        from langchain.agents import create_agent

        return create_agent(model, [lookup], checkpointer=saver)
    if kind == "create_react_agent":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langgraph.prebuilt import create_react_agent

            return create_react_agent(model, [lookup], checkpointer=saver)
    dialect = kind.split()[-1]
    return create_fncall_graph(model, [lookup], dialect=dialect, checkpointer=saver)


def stored_bytes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        checkpoints = conn.execute(
            "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints"
        ).fetchone()[0]
        writes = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()[0]
    return int(checkpoints + writes)


def one_turn(kind: str, h: int, k: int, folder: Path) -> tuple[int, float]:
    """(bytes, seconds) of the K-call turn on a thread that already holds H messages."""
    outputs = hermes_outputs(k) if kind.endswith("hermes") else native_outputs(k)
    db = folder / f"{uuid.uuid4().hex}.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build(kind, ReplayChatModel(outputs), saver)
        config = {"configurable": {"thread_id": "t"}, "recursion_limit": 100}
        graph.invoke({"messages": history(h)}, config)  # the earlier history, one answer
        before = stored_bytes(db)
        started = time.perf_counter()
        graph.invoke({"messages": [("user", "look up every key")]}, config)
        seconds = time.perf_counter() - started
        return stored_bytes(db) - before, seconds


KINDS = ("create_agent", "create_react_agent", "fncall native", "fncall hermes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="H up to 100 only")
    args = parser.parse_args(argv)
    sizes = [(10, 1), (10, 10), (100, 1), (100, 10)]
    if not args.quick:
        sizes += [(1000, 1), (1000, 10)]
    table: dict[tuple[int, int], dict[str, tuple[int, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="fncall-bench-") as tmp:
        for h, k in sizes:
            row = {}
            for kind in KINDS:
                runs = [one_turn(kind, h, k, Path(tmp)) for _ in range(args.repeats)]
                row[kind] = (
                    int(statistics.median(r[0] for r in runs)),
                    statistics.median(r[1] for r in runs),
                )
            table[(h, k)] = row
            print(f"  measured H={h} K={k}", file=sys.stderr, flush=True)

    def show(title: str, cell: Callable[[tuple[int, float]], float], unit: str) -> None:
        print(f"\n{title}")
        head = "".join(f"{kind:>20}" for kind in KINDS)
        print(f"{'H, K':<10}{head}{'native ÷ agent':>16}{'hermes ÷ agent':>16}")
        for (h, k), row in table.items():
            values = [cell(row[kind]) for kind in KINDS]
            cells = "".join(f"{v:>17.1f} {unit}" for v in values)
            print(
                f"{f'{h}, {k}':<10}{cells}{values[2] / values[0]:>16.2f}"
                f"{values[3] / values[0]:>16.2f}"
            )

    show("checkpoint bytes written per turn", lambda v: v[0] / 1024, "KB")
    show("time per turn (median)", lambda v: v[1] * 1000, "ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
