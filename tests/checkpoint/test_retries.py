"""A write that may fail for a moment is tried again by one rule (``checkpoint/retries``):
the savers' writes to a locked SQLite file and a tool call's stored outcome use it."""

from __future__ import annotations

import ast
import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest

from fncall_graph.adapters.checkpoint.retries import Retries

ROOT = Path(__file__).resolve().parents[2]
LOG = logging.getLogger("test_retries")


def failing(*errors: BaseException):
    """A write that raises ``errors`` one per try, then returns how many tries it took."""
    tries = []

    def write() -> int:
        tries.append(1)
        if len(tries) <= len(errors):
            raise errors[len(tries) - 1]
        return len(tries)

    return write


def test_a_failure_is_tried_again_and_said_until_the_last(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="test_retries")
    retries = Retries(3, LOG, "save of %s")
    assert retries.run(failing(OSError("busy"), OSError("busy")), "t1") == 3
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "save of t1 (attempt 1 of 3): busy; trying again",
        "save of t1 (attempt 2 of 3): busy; trying again",
    ]
    with pytest.raises(OSError, match="third"):
        retries.run(failing(OSError("first"), OSError("second"), OSError("third")), "t1")


def test_only_what_may_be_retried_is(caplog) -> None:
    def locked(exc: Exception) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)

    retries = Retries(3, LOG, "save", locked)
    assert retries.run(failing(sqlite3.OperationalError("database is locked"))) == 2
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retries.run(failing(sqlite3.OperationalError("no such table: x")))
    # a cancel is never tried again, whatever the predicate says
    assert not Retries(3, LOG, "save").again(1, asyncio.CancelledError())


async def test_an_async_write_is_tried_the_same_way() -> None:
    inner = failing(OSError("busy"))

    async def write() -> int:
        return inner()

    assert await Retries(2, LOG, "save").arun(write) == 2


def test_the_attempts_are_counted_in_one_place() -> None:
    writers = sorted(
        {
            str(path.relative_to(ROOT))
            for folder in ("adapters", "guarantees", "nodes", "graphs", "fncall_graph")
            for path in sorted((ROOT / folder).rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "(attempt %d of %d)" in node.value
        }
    )
    assert writers == ["adapters/checkpoint/retries.py"]
