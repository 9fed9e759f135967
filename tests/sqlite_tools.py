"""Local LangChain tools that behave like mcp-server-sqlite's six tools, on a real SQLite file.

Same names (``sqlite-...``), descriptions and JSON schemas as the seed's MCP tools, and
the same result text (``str`` of the row dicts), so graph tests can run the seed's
session without an MCP server. The MCP end-to-end tests use the real server.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from langchain_core.tools import StructuredTool

FIXTURES = Path(__file__).parent / "fixtures"


def seed_tool_schemas() -> list[dict[str, Any]]:
    """The six tools as seed 000's Hermes prompt lists them (OpenAI function dicts)."""
    calls = json.loads((FIXTURES / "seed000_hermes.json").read_text("utf-8"))["calls"]
    system = calls[0]["model_input"][0]["content"]
    block = system.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    return [json.loads(line)["function"] for line in block.splitlines()]


class SqliteTools:
    """The six tools over ``db_path``; ``timeline`` records each call's start and end."""

    def __init__(self, db_path: str | Path, *, delay: float = 0.0) -> None:
        self.db_path = str(db_path)
        self.delay = delay
        self.timeline: list[tuple[str, str, float, float]] = []
        self._lock = threading.Lock()

    def _query(self, query: str) -> str:
        with closing(sqlite3.connect(self.db_path)) as conn:
            conn.row_factory = sqlite3.Row
            with closing(conn.cursor()) as cur:
                cur.execute(query)
                if query.strip().upper().startswith(("INSERT", "UPDATE", "DELETE", "CREATE")):
                    conn.commit()
                    return str([{"affected_rows": cur.rowcount}])
                return str([dict(r) for r in cur.fetchall()])

    def _run(self, name: str, args: dict[str, Any]) -> str:
        start = time.perf_counter()
        if self.delay:
            threading.Event().wait(self.delay)  # stands in for a slow query
        if name == "list_tables":
            out = self._query("SELECT name FROM sqlite_master WHERE type='table'")
        elif name == "describe_table":
            out = self._query(f"PRAGMA table_info({args['table_name']})")
        elif name == "append_insight":
            out = "Insight added to memo"
        else:
            out = self._query(args["query"])
        with self._lock:
            self.timeline.append(
                (name, json.dumps(args, ensure_ascii=False), start, time.perf_counter())
            )
        return out

    def tools(self) -> list[StructuredTool]:
        out = []
        for fn in seed_tool_schemas():
            short = fn["name"].removeprefix("sqlite-")

            def run(_short: str = short, **kwargs: Any) -> str:
                return self._run(_short, kwargs)

            out.append(
                StructuredTool.from_function(
                    func=run,
                    name=fn["name"],
                    description=fn["description"],
                    args_schema=fn["parameters"],
                )
            )
        return out

    def log_rows(self) -> list[str]:
        with closing(sqlite3.connect(self.db_path)) as conn:
            return [r[0] for r in conn.execute("SELECT action FROM log ORDER BY id")]
