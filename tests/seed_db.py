"""The database of the sqlite assistant in seed 000, and its MCP config.

`make_seed_db(path)` builds the tables the seed's transcript shows:

- `students(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, age INTEGER NOT NULL)`
  with 韩梅梅 (6) and 李雷 (7);
- `sqlite_sequence`, which SQLite creates for the AUTOINCREMENT of `students`,
  right after it (so `list_tables` gives students, sqlite_sequence, log);
- `log(id INTEGER PRIMARY KEY, action TEXT, timestamp DATETIME DEFAULT CURRENT_TIMESTAMP)`
  with one row.

The row counts are the seed's (`SELECT COUNT(*)` gives 2, 1 and 1). `log.id` has
no AUTOINCREMENT: with it, the log row would add a second row to
`sqlite_sequence`, and the seed shows one.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

SEED_LIST_TABLES = "[{'name': 'students'}, {'name': 'sqlite_sequence'}, {'name': 'log'}]"
"""`sqlite-list_tables` on the seed database, as the seed prints it."""


def make_seed_db(path: str | Path) -> Path:
    """Create (or replace) seed 000's database at `path` and return the path."""
    path = Path(path)
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
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
    db.close()
    return path


def sqlite_server_command() -> str:
    """Path of the `mcp-server-sqlite` installed next to the running Python."""
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
    """Seed 000's MCP config for `db_path`, with the installed server instead of uvx."""
    return {
        "mcpServers": {
            "sqlite": {
                "command": sqlite_server_command(),
                "args": ["--db-path", str(db_path)],
            }
        }
    }
