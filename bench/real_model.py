"""How well does a model do the database-assistant example, per dialect and constraint mode?

    python bench/real_model.py SPEC [--modes native,hermes,hermes+first_call,...]

SPEC is any model spec (``local``, ``ollama:qwen3``, ``http://127.0.0.1:8000/v1#NAME``,
``replay:database-assistant``). For each mode the example's four questions run in one
thread over the real ``mcp-server-sqlite`` on a fresh database, with a SQLite
checkpointer, and one row is printed:

- answers: questions whose final answer holds the facts the database gives
  (3 tables; 2/1/1 rows; the columns of each table; 韩梅梅 is 6);
- right calls: questions where the model made the calls the question needs
  (list_tables; a COUNT per table; describe_table per table; read 韩梅梅's age, then
  INSERT into log);
- log rows: rows the run added to ``log`` (the last question should add exactly 1);
- model calls and seconds.

A mode is ``DIALECT`` or ``DIALECT+CONSTRAINT`` with CONSTRAINT ``first_call`` or
``always`` (llama.cpp servers only: the model must accept a GBNF grammar).
Small models score by chance: this is a benchmark to choose a dialect with, not a test.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.adapters.models import resolve_model
from fncall_graph.examples import database_assistant as example

TABLES = ("students", "sqlite_sequence", "log")
COLUMNS = {"students": ("name", "age"), "log": ("action", "timestamp"), "sqlite_sequence": ("seq",)}


def _answer_right(index: int, answer: str) -> bool:
    """Whether the final answer of question ``index`` holds the facts it asks for."""
    if index == 0:
        return bool(re.search(r"\b3\b|三", answer))
    if index == 1:
        return all(t in answer for t in ("students", "log")) and bool(re.search(r"\b2\b", answer))
    if index == 2:
        return all(c in answer for cols in COLUMNS.values() for c in cols[:1])
    return bool(re.search(r"\b6\b|六", answer))


def _calls_right(index: int, calls: list[dict[str, Any]]) -> bool:
    """Whether the turn made the calls question ``index`` needs."""
    names = [c["name"].split("-", 1)[-1] for c in calls]
    sql = " ".join(str(c["args"].get("query", "")) for c in calls).lower()
    if index == 0:
        return "list_tables" in names
    if index == 1:
        return all(re.search(rf"count\(\*\)\s+from\s+{t}\b", sql) for t in TABLES)
    if index == 2:
        described = {str(c["args"].get("table_name")) for c in calls if "describe" in c["name"]}
        return set(TABLES) <= described
    return "韩梅梅" in sql and "insert into log" in sql


def run_mode(spec: str, mode: str) -> dict[str, Any]:
    dialect, _, constraint = mode.partition("+")
    constrained: Any = {"": False, "first_call": "first_call", "always": True}[constraint]
    model = resolve_model(
        spec, **({"temperature": 0, "max_tokens": 384} if spec == "local" else {})
    )
    score = {"mode": mode, "answers": 0, "calls": 0, "log_rows": 0, "model_calls": 0}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fncall-bench-") as tmp:
        db = example.make_database(Path(tmp) / "test.db")
        toolkit = MCPToolkit.from_config(example.sqlite_config(db), include_resources=False)
        toolkit.start_sync()
        try:
            with sqlite_saver(Path(tmp) / "threads.sqlite") as saver:
                graph = create_fncall_graph(
                    model,
                    toolkit.tools,
                    dialect=dialect,
                    constrained=constrained,
                    system_prompt=example.SYSTEM_PROMPT,
                    checkpointer=saver,
                    max_iterations=6,
                )
                config = {"configurable": {"thread_id": "bench"}}
                seen = 0
                for index, question in enumerate(example.QUESTIONS):
                    try:
                        messages = graph.invoke({"messages": [("user", question)]}, config)[
                            "messages"
                        ]
                    except Exception as exc:  # a model that breaks is a row, not a crash
                        print(
                            f"  {mode} Q{index + 1}: {type(exc).__name__}: {exc}", file=sys.stderr
                        )
                        break
                    turn = messages[seen + 1 :]
                    seen = len(messages)
                    replies = [m for m in turn if isinstance(m, AIMessage)]
                    calls = [c for m in replies for c in m.tool_calls]
                    answer = str(replies[-1].content) if replies else ""
                    ok_results = all(
                        m.status != "error" for m in turn if isinstance(m, ToolMessage)
                    )
                    score["model_calls"] += len(replies)
                    score["answers"] += _answer_right(index, answer)
                    score["calls"] += _calls_right(index, calls) and ok_results
        finally:
            toolkit.close()
        rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM log").fetchone()[0]
    score["log_rows"] = rows - 1
    score["seconds"] = time.perf_counter() - started
    return score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", nargs="?", default="local", help="model spec (default: local)")
    parser.add_argument(
        "--modes",
        help="comma-separated modes (default: every dialect; with the constraint modes "
        "for models that accept grammars)",
    )
    args = parser.parse_args(argv)
    if args.modes:
        modes = args.modes.split(",")
    else:
        modes = ["native", "hermes", "qwen", "react"]
        if getattr(resolve_model(args.spec), "accepts_grammar", False):
            modes += ["hermes+first_call", "qwen+first_call", "react+first_call", "hermes+always"]
    print(f"model {args.spec} · the database-assistant example, 4 questions per mode")
    print(
        f"{'mode':<20} {'answers':>8} {'right calls':>12} {'log rows':>9} {'model calls':>12} {'s':>7}"
    )
    for mode in modes:
        s = run_mode(args.spec, mode)
        print(
            f"{s['mode']:<20} {s['answers']:>6}/4 {s['calls']:>10}/4 {s['log_rows']:>9} "
            f"{s['model_calls']:>12} {s['seconds']:>7.1f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
