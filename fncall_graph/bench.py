"""Measure a model on the database-assistant example, per dialect: which dialect to use.

For each mode the example's four questions run in one thread over the real
``mcp-server-sqlite`` on a fresh database, with a SQLite checkpointer, and one row is
scored:

- answers: questions whose final answer holds the facts the database gives
  (3 tables; 2/1/1 rows; the columns of each table; 韩梅梅 is 6);
- right calls: questions where the model made the calls the question needs
  (list_tables; a COUNT per table; describe_table per table; read 韩梅梅's age, then
  INSERT into log);
- log rows: rows the run added to ``log`` (the last question should add exactly 1);
- model calls and seconds.

A mode is ``DIALECT`` or ``DIALECT+CONSTRAINT`` with CONSTRAINT ``first_call`` or
``always`` (servers that take a GBNF grammar, as llama.cpp's). Small models score by
chance: this is a measurement to choose a dialect with, not a test of the product.

Example:
    .. code-block:: bash

        fncall-graph bench ollama:qwen3 --modes native,hermes,react
"""

from __future__ import annotations

import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.adapters.models import declared_dialect, resolve_model
from fncall_graph.cli.resources import MCP_LOG, default_db_path, stderr_into
from fncall_graph.examples import database_assistant as example
from fncall_graph.graphs import create_fncall_graph

__all__ = ["default_modes", "measure"]

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
    """Score ``mode`` (``"hermes"``, ``"hermes+first_call"``, …) for the model ``spec``."""
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
        with stderr_into(mcp_log()):  # the server's own error lines stay out of the table
            toolkit.start_sync()
        try:
            with sqlite_saver(Path(tmp) / "threads.sqlite") as saver:
                graph = create_fncall_graph(
                    model,
                    toolkit.tools,
                    dialect=dialect,
                    constrained=constrained,
                    system_prompt=example.SYSTEM_PROMPT,
                    checkpointer=saver,  # max_iterations: the graph's one default
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


def mcp_log() -> Path:
    """Where the MCP servers' stderr goes: the CLI's log, beside its threads."""
    return default_db_path().parent / MCP_LOG


def default_modes(spec: str) -> list[str]:
    """Every dialect; with the constrained modes where the model takes a grammar."""
    modes = ["native", "hermes", "qwen", "react"]
    if getattr(resolve_model(spec), "accepts_grammar", False):
        modes += ["hermes+first_call", "qwen+first_call", "react+first_call", "hermes+always"]
    return modes


def recommended(
    scores: Sequence[dict[str, Any]], own_dialect: str | None = None
) -> dict[str, Any] | None:
    """The mode to use: most right answers, then right calls, then the model's own
    dialect (``own_dialect``: a recording's, or the one a model declares), then fewest
    seconds.

    Example:
        >>> tie = {"answers": 4, "calls": 4}
        >>> recommended(
        ...     [{**tie, "mode": "native", "seconds": 1.0}, {**tie, "mode": "hermes", "seconds": 2.0}],
        ...     own_dialect="hermes",
        ... )["mode"]
        'hermes'
    """
    if not scores:
        return None

    def rank(s: dict[str, Any]) -> tuple[Any, ...]:
        own = own_dialect is not None and s["mode"].partition("+")[0] == own_dialect
        return (s["answers"], s["calls"], own, -s["seconds"])

    return max(scores, key=rank)


def table_lines(scores: Sequence[dict[str, Any]]) -> list[str]:
    """The scores as a text table, one line per mode under a header."""
    lines = [
        f"{'mode':<20} {'answers':>8} {'right calls':>12} {'log rows':>9} "
        f"{'model calls':>12} {'s':>7}"
    ]
    lines += [
        f"{s['mode']:<20} {s['answers']:>6}/4 {s['calls']:>10}/4 {s['log_rows']:>9} "
        f"{s['model_calls']:>12} {s['seconds']:>7.1f}"
        for s in scores
    ]
    return lines


def measure(
    spec: str, modes: Sequence[str] | None = None, *, show: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    """Run every mode for ``spec``, showing the table as it fills and the mode to use.

    Args:
        spec: a model spec (``local``, ``ollama:qwen3``, ``http://host:8000/v1#NAME``,
            ``replay:database-assistant``).
        modes: the modes to run (default: :func:`default_modes`).
        show: where each line goes.

    Returns:
        One score per mode (``mode``, ``answers``, ``calls``, ``log_rows``,
        ``model_calls``, ``seconds``).
    """
    modes = list(modes or default_modes(spec))
    show(f"model {spec} · the database-assistant example, 4 questions per mode")
    print(f"(MCP servers' stderr goes to {mcp_log()})", file=sys.stderr)
    scores: list[dict[str, Any]] = []
    show(table_lines([])[0])
    for mode in modes:  # each row as soon as its mode ends: a mode takes minutes
        scores.append(run_mode(spec, mode))
        show(table_lines(scores)[-1])
    # a recording answers alike in every mode: its own dialect is the one it was made in
    best = recommended(scores, declared_dialect(resolve_model(spec)))
    if best is not None:
        show(
            f"use: {best['mode']} ({best['answers']}/4 answers, {best['calls']}/4 right calls"
            f"{'; scores this low are chance' if best['answers'] < 2 else ''})"
        )
    return scores
