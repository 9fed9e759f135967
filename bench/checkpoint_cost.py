"""Per-step cost of persistent checkpointers, as a ratio to LangGraph's InMemorySaver.

One thread of N tool steps (each: adapter → model → tools, one Hermes tool call of a
local ``echo`` tool, replayed model outputs), then a final answer; timed with each saver,
side by side in one run:

- memory:   ``InMemorySaver`` (the reference);
- sqlite:   ``SqliteSaver`` on a file (``fncall_graph.adapters.checkpoint.sqlite_saver``);
- postgres: ``PostgresSaver`` on a throwaway server on loopback (``postgres_saver``;
            skipped with a note when PostgreSQL is not installed).

For N = 10 and N = 100. Every checkpoint stores the whole message list, so the cost per
step grows with the thread for every saver; what should stay flat is the ratio to
memory. The graph runs with its default ``durability="sync"`` (each step saved before
the next starts). Each persistent saver runs twice: as shipped, where every tool call is
claimed in the saver's database before it runs and its result stored with the claim (at
most once per call id), and with claims off (``no claims``), which shows what they cost.
For SQLite it also prints the bytes: the claims table next to LangGraph's own tables.
Prints a table; nothing is asserted.

    python bench/checkpoint_cost.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import postgres_saver, sqlite_saver
from fncall_graph.nodes.tools import ToolDispatchNode
from fncall_graph.replay import ReplayChatModel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg_server import PostgresMissing, running_postgres


@tool
def echo(x: int) -> str:
    """Return x."""
    return str(x)


def outputs(steps: int) -> list[str]:
    calls = [
        "<tool_call>\n" + json.dumps({"name": "echo", "arguments": {"x": i}}) + "\n</tool_call>"
        for i in range(steps)
    ]
    return [*calls, "done"]


@contextmanager
def claims_off() -> Iterator[None]:
    with mock.patch.object(ToolDispatchNode, "_claim", lambda self, request: None):
        yield


def sqlite_bytes(path: Path) -> tuple[int, int]:
    """(bytes of LangGraph's checkpoints and writes, bytes of the tool call claims)."""
    with closing(sqlite3.connect(path)) as db:
        (state,) = db.execute(
            "SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) "
            "FROM checkpoints) + (SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes)"
        ).fetchone()
        (claims,) = db.execute(
            "SELECT COALESCE(SUM(LENGTH(result) + LENGTH(owner) + LENGTH(call_id) "
            "+ LENGTH(thread_id) + LENGTH(step) + 40), 0) FROM fncall_tool_calls"
        ).fetchone()
    return state, claims


def per_step_ms(saver: BaseCheckpointSaver, steps: int, repeats: int, tag: str) -> float:
    """Median over ``repeats`` fresh threads of (run time / steps), in milliseconds."""
    times = []
    for r in range(repeats + 1):  # the first run warms caches and connections up
        graph = create_fncall_graph(
            ReplayChatModel(outputs(steps)),
            [echo],
            dialect="hermes",
            checkpointer=saver,
            max_iterations=steps + 5,
        )
        cfg = {"configurable": {"thread_id": f"{tag}-{steps}-{r}"}}
        start = time.perf_counter()
        result = graph.invoke({"messages": [("user", "go")]}, cfg)
        elapsed = time.perf_counter() - start
        assert result["messages"][-1].content == "done"
        if r:
            times.append(elapsed / steps * 1000)
    return statistics.median(times)


@contextmanager
def memory() -> Iterator[BaseCheckpointSaver]:
    yield InMemorySaver()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="fncall-bench-"))
    savers: dict[str, Callable[[], AbstractContextManager[Any]]] = {
        "memory": memory,
        "sqlite": lambda: sqlite_saver(tmp / "checkpoints.db"),
        "sqlite, no claims": lambda: sqlite_saver(tmp / "no-claims.db"),
    }
    notes = []
    with _maybe_postgres(notes) as url:
        if url is not None:
            savers["postgres"] = lambda: postgres_saver(url)
            savers["postgres, no claims"] = lambda: postgres_saver(url)
        rows = []
        for steps in (10, 100):
            repeats = args.repeats if steps <= 10 else max(1, args.repeats // 2)
            base = None
            for name, make in savers.items():
                with make() as saver, claims_off() if "no claims" in name else nullcontext():
                    ms = per_step_ms(saver, steps, repeats, name)
                base = base if base is not None else ms
                rows.append((name, steps, ms, ms / base))

    print(f"{'saver':<22}{'steps':>7}{'ms/step':>10}{'÷ memory':>10}")
    for name, steps, ms, ratio in rows:
        print(f"{name:<22}{steps:>7}{ms:>10.2f}{ratio:>10.2f}")
    state, claims = sqlite_bytes(tmp / "checkpoints.db")
    print(
        f"sqlite bytes: checkpoints and writes {state:,}, tool call claims {claims:,} "
        f"({claims / state:.3f} of the checkpoints)"
    )
    for note in notes:
        print(note)


@contextmanager
def _maybe_postgres(notes: list[str]) -> Iterator[str | None]:
    try:
        with running_postgres() as url:
            yield url
    except PostgresMissing as exc:
        notes.append(f"postgres skipped: {exc}")
        yield None


if __name__ == "__main__":
    main()
