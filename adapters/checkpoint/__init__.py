"""Checkpointers: where threads are saved (SQLite by default, PostgreSQL for scale)."""

from .history import StoredMessageMissing, stores_messages_once
from .keep import keeps_checkpoints
from .savers import (
    CheckpointWriteError,
    async_postgres_saver,
    async_sqlite_saver,
    postgres_saver,
    sqlite_saver,
)

__all__ = [
    "CheckpointWriteError",
    "StoredMessageMissing",
    "async_postgres_saver",
    "async_sqlite_saver",
    "keeps_checkpoints",
    "postgres_saver",
    "sqlite_saver",
    "stores_messages_once",
]
