"""The seed session for tests: its database and MCP config (the product's own builders),
its questions and the model outputs recorded for them.

``SEED_LIST_TABLES`` is what ``sqlite-list_tables`` answers on that database, as the
seed transcript prints it.
"""

from __future__ import annotations

import json
from pathlib import Path

import fncall_graph
from fncall_graph.examples.database_assistant import (
    make_database,
    sqlite_config,
    sqlite_server_command,
)

SEED_LIST_TABLES = "[{'name': 'students'}, {'name': 'sqlite_sequence'}, {'name': 'log'}]"

__all__ = [
    "CALLS",
    "DESCRIBE",
    "ROUNDS",
    "SEED_LIST_TABLES",
    "SYSTEM",
    "as_pairs",
    "make_database",
    "session_outputs",
    "sqlite_config",
    "sqlite_server_command",
]

FIXTURES = Path(__file__).parent / "fixtures"
DATA = Path(fncall_graph.__file__).parent / "data"
SYSTEM = "你扮演一个数据库助手,你具有查询数据库的能力"
CALLS = json.loads((FIXTURES / "seed000_hermes.json").read_text("utf-8"))["calls"]
# The transcript prints the model calls of rounds 1, 2 and 3; the describe round between
# 2 and 3 shows only as history in round 3's input (the replay file takes it from there).
DESCRIBE = "这几个表的结构分别是什么样的"
ROUNDS = [
    ("数据库有几张表", [0, 1]),
    ("分别有多少条记录", [2, 3]),
    (DESCRIBE, [None, None]),
    ("查询韩梅梅的年龄,然后在log表里记录下", [4, 5, 6]),
]


def session_outputs() -> list[str]:
    """The packaged replay file: the outputs of all four questions."""
    replay = json.loads((DATA / "database-assistant_qwen-max_hermes.json").read_text("utf-8"))
    assert replay["questions"] == [q for q, _ in ROUNDS]
    return replay["outputs"]


def as_pairs(messages) -> list[tuple[str, str]]:
    role = {"system": "system", "human": "user", "ai": "assistant"}
    return [(role[m.type], m.content) for m in messages]
