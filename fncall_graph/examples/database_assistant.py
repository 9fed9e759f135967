"""The database-assistant example: its SQLite database, MCP config, prompt and questions.

A database assistant drives ``mcp-server-sqlite`` over a small database and answers
four questions in one thread — a simple call, three calls in parallel (twice), then two
calls where the second depends on the first. ``fncall-graph demo`` runs it; the
recording ``replay:database-assistant`` holds Qwen-Max's replies to it.

The database holds the tables the session shows:

- ``students(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, age INTEGER NOT NULL)``
  with 韩梅梅 (6) and 李雷 (7);
- ``sqlite_sequence``, which SQLite creates for the AUTOINCREMENT of ``students``,
  right after it (so ``list_tables`` gives students, sqlite_sequence, log);
- ``log(id INTEGER PRIMARY KEY, action TEXT, timestamp DATETIME DEFAULT CURRENT_TIMESTAMP)``
  with one row.

``SELECT COUNT(*)`` gives 2, 1 and 1. ``log.id`` has no AUTOINCREMENT: with it, the log
row would add a second row to ``sqlite_sequence``, and the session shows one.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = [
    "QUESTIONS",
    "READ_TOOLS",
    "SYSTEM_PROMPT",
    "make_database",
    "mark_read_only",
    "sqlite_config",
    "table_rows",
]

SYSTEM_PROMPT = "你扮演一个数据库助手,你具有查询数据库的能力"
"""The assistant's system prompt in the session."""

QUESTIONS: tuple[str, ...] = (
    "数据库有几张表",
    "分别有多少条记录",
    "这几个表的结构分别是什么样的",
    "查询韩梅梅的年龄,然后在log表里记录下",
)
"""The session's questions, in order, asked in one thread."""


WRITE_TOOLS: tuple[str, ...] = ("write_query", "create_table", "append_insight")
"""The tools of ``mcp-server-sqlite`` that change something (the database, or its insights
memo); the server marks none of its tools read-only, so they are named here."""

READ_TOOLS: tuple[str, ...] = ("read_query", "list_tables", "describe_table")
"""The tools of ``mcp-server-sqlite`` that only read (``read_query`` refuses anything but
``SELECT``)."""


def mark_read_only(tools: Sequence[BaseTool]) -> list[BaseTool]:
    """``tools`` with ``mcp-server-sqlite``'s reads marked ``readOnlyHint`` in their own
    metadata, so that ``interrupt_on="annotations"`` asks before its writes only. The
    server annotates none of its tools (and MCP's default is "may write"); this is the
    program's own word, which it can give because it knows that server's tools (a
    server's annotations would count only if its entry trusted it). Meant for the tools
    of :func:`sqlite_config`'s server. Changes the tools in place and returns them.

    Example:
        >>> from langchain_core.tools import StructuredTool
        >>> list_tables = StructuredTool.from_function(
        ...     lambda: "", name="sqlite-list_tables", description="List the tables.",
        ...     metadata={"mcp_server": "sqlite", "mcp_tool": "list_tables"},
        ... )
        >>> mark_read_only([list_tables])[0].metadata["readOnlyHint"]
        True
    """
    from fncall_graph.adapters.tool_effects import is_read_only

    for t in tools:
        meta = t.metadata if t.metadata is not None else {}
        if meta.get("mcp_tool") in READ_TOOLS and not is_read_only(t):
            t.metadata = {**meta, "readOnlyHint": True}
    return list(tools)


def table_rows(path: str | Path) -> dict[str, int]:
    """Every table of the database at ``path`` and its number of rows, in creation order."""
    db = sqlite3.connect(path)
    try:
        names = [
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
            )
        ]
        # names come from the database itself; quoted as identifiers all the same
        return {
            n: db.execute(f'SELECT COUNT(*) FROM "{n.replace(chr(34), chr(34) * 2)}"').fetchone()[0]
            for n in names
        }
    finally:
        db.close()


def make_database(path: str | Path) -> Path:
    """Create (or replace) the session's database at ``path`` and return the path."""
    path = Path(path)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    try:
        with db:
            db.executescript(
                """
                CREATE TABLE students (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    name TEXT NOT NULL,
                    age INTEGER NOT NULL
                );
                CREATE TABLE log (
                    id INTEGER PRIMARY KEY,
                    action TEXT,
                    timestamp DATETIME DEFAULT CURRENT_TIMESTAMP
                );
                INSERT INTO students (name, age) VALUES ('韩梅梅', 6), ('李雷', 7);
                INSERT INTO log (action) VALUES ('创建数据库');
                """
            )
    finally:
        db.close()
    return path


def sqlite_server_command() -> str:
    """Path of the installed ``mcp-server-sqlite``, preferring the running Python's ``bin``.

    Raises:
        FileNotFoundError: the server is not installed.
    """
    bin_dir = Path(sys.executable).parent
    found = shutil.which("mcp-server-sqlite", path=str(bin_dir)) or shutil.which(
        "mcp-server-sqlite"
    )
    if found is None:
        raise FileNotFoundError(
            "mcp-server-sqlite is not installed (pip install mcp-server-sqlite)"
        )
    return found


def sqlite_config(db_path: str | Path) -> dict[str, Any]:
    """The session's MCP config for ``db_path``, with the installed server in place of uvx.

    The session starts ``uvx mcp-server-sqlite --db-path test.db``; the shape is the same.
    """
    return {
        "mcpServers": {
            "sqlite": {
                "command": sqlite_server_command(),
                "args": ["--db-path", str(db_path)],
            }
        }
    }
