"""The seed session's database and MCP config for tests: the product's own builders.

``SEED_LIST_TABLES`` is what ``sqlite-list_tables`` answers on that database, as the
seed transcript prints it.
"""

from __future__ import annotations

from fncall_graph.examples.database_assistant import (
    make_database,
    sqlite_config,
    sqlite_server_command,
)

SEED_LIST_TABLES = "[{'name': 'students'}, {'name': 'sqlite_sequence'}, {'name': 'log'}]"

__all__ = ["SEED_LIST_TABLES", "make_database", "sqlite_config", "sqlite_server_command"]
