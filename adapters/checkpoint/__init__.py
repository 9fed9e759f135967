"""Checkpointers: where threads are saved (SQLite by default, PostgreSQL for scale)."""

from .savers import (
    CheckpointNotFound,
    CheckpointWriteError,
    async_postgres_saver,
    async_sqlite_saver,
    postgres_saver,
    sqlite_saver,
)

__all__ = [
    "CheckpointNotFound",
    "CheckpointWriteError",
    "async_postgres_saver",
    "async_sqlite_saver",
    "postgres_saver",
    "sqlite_saver",
]
