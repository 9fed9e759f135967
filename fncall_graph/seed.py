"""Seed 000's database assistant: its SQLite database, MCP config, prompt and questions.

``fncall-graph demo`` replays this session: a database assistant drives
``mcp-server-sqlite`` over a small database and answers four questions in one thread —
a simple call, three calls in parallel (twice), then two calls where the second
depends on the first.

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
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "QUESTIONS",
    "SYSTEM_PROMPT",
    "make_seed_db",
    "packaged_replay",
    "sqlite_config",
    "sqlite_server_command",
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


def make_seed_db(path: str | Path) -> Path:
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


def packaged_replay(name: str) -> Path | None:
    """The recording shipped with the package called ``name``, if any.

    ``name`` is a file name in ``fncall_graph/data`` with or without ``.json``, or its
    prefix up to the first ``_`` (``"seed000"`` → ``seed000_qwen_max_hermes.json``).

    Example:
        >>> packaged_replay("seed000").name
        'seed000_qwen_max_hermes.json'
        >>> packaged_replay("nope") is None
        True
    """
    if not name or "/" in name or "\\" in name:
        return None
    data = resources.files("fncall_graph") / "data"
    candidates = sorted(
        entry.name
        for entry in data.iterdir()
        if entry.name.endswith((".json", ".jsonl"))
        and name in (entry.name, entry.name.rsplit(".", 1)[0], entry.name.split("_", 1)[0])
    )
    if len(candidates) != 1:
        return None
    return Path(str(data / candidates[0]))
