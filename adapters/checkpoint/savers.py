"""Checkpointers that keep threads across processes: SQLite files and PostgreSQL.

Any LangGraph saver works with ``create_fncall_graph(checkpointer=...)``; these helpers
build the usual ones ready to use (tables created, connections opened and closed):

- :func:`sqlite_saver` / :func:`async_sqlite_saver`: a SQLite file
  (``langgraph-checkpoint-sqlite``, installed with the package);
- :func:`postgres_saver` / :func:`async_postgres_saver`: a PostgreSQL URL
  (``langgraph-checkpoint-postgres``: ``pip install 'fncall-graph[postgres]'``).

Each is a context manager: the saver is usable inside the ``with`` block and its
connection is closed at the end. Their ``delete_thread`` also deletes the thread's tool
call claims (:func:`~fncall_graph.adapters.checkpoint.claims.forget_thread`).

Example:
    ```python
    from fncall_graph import create_fncall_graph
    from fncall_graph.adapters.checkpoint import sqlite_saver

    with sqlite_saver("threads.db") as saver:
        graph = create_fncall_graph(model, tools, checkpointer=saver)
        graph.invoke({"messages": [("user", "数据库有几张表")]},
                     {"configurable": {"thread_id": "t1"}})
    ```
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from .claims import aforget_thread, forget_thread

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

__all__ = ["async_postgres_saver", "async_sqlite_saver", "postgres_saver", "sqlite_saver"]

T = TypeVar("T")

_POSTGRES_MISSING = (
    "PostgreSQL checkpoints need the 'postgres' extra: pip install 'fncall-graph[postgres]' "
    "(langgraph-checkpoint-postgres, psycopg[binary], psycopg-pool)"
)


class _ForgetsClaims:
    """``delete_thread`` also deletes the thread's tool call claims (and the results
    stored with them), which live in a table of their own beside the checkpoints."""

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)  # type: ignore[misc]
        forget_thread(self, thread_id)  # type: ignore[arg-type]

    async def adelete_thread(self, thread_id: str) -> None:
        await super().adelete_thread(thread_id)  # type: ignore[misc]
        await aforget_thread(self, thread_id)  # type: ignore[arg-type]


_WITH_CLAIMS: dict[type, type] = {}


def _with_claims(cls: type[T]) -> type[T]:
    """``cls`` (a LangGraph saver class), its ``delete_thread`` deleting claims too."""
    if cls not in _WITH_CLAIMS:
        _WITH_CLAIMS[cls] = type(cls.__name__, (_ForgetsClaims, cls), {"__doc__": cls.__doc__})
    return _WITH_CLAIMS[cls]  # type: ignore[return-value]


def _file(path: str | Path) -> str:
    path = Path(path)
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


@contextmanager
def sqlite_saver(path: str | Path) -> Iterator[SqliteSaver]:
    """A ``SqliteSaver`` on the file ``path`` (created with its tables if missing).

    The connection may be used from LangGraph's worker threads; the saver serialises
    its own access to it.

    Example:
        >>> import tempfile, os
        >>> with sqlite_saver(os.path.join(tempfile.mkdtemp(), "t.db")) as saver:
        ...     type(saver).__name__
        'SqliteSaver'
    """
    conn = sqlite3.connect(_file(path), check_same_thread=False)
    try:
        saver = _with_claims(SqliteSaver)(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()


@asynccontextmanager
async def async_sqlite_saver(path: str | Path) -> AsyncIterator[AsyncSqliteSaver]:
    """An ``AsyncSqliteSaver`` on the file ``path``, for ``ainvoke``/``astream``.

    Example:
        ```python
        async with async_sqlite_saver("threads.db") as saver:
            graph = create_fncall_graph(model, tools, checkpointer=saver)
            await graph.ainvoke({"messages": [("user", "hi")]}, cfg)
        ```
    """
    async with _with_claims(AsyncSqliteSaver).from_conn_string(_file(path)) as saver:
        await saver.setup()
        yield saver


def _postgres_modules() -> tuple[type[PostgresSaver], type[AsyncPostgresSaver]]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError as exc:
        raise ImportError(f"{_POSTGRES_MISSING} ({exc})") from exc
    return _with_claims(PostgresSaver), _with_claims(AsyncPostgresSaver)


@contextmanager
def postgres_saver(url: str) -> Iterator[PostgresSaver]:
    """A ``PostgresSaver`` on ``url`` (``postgresql://user@host:port/db``), tables set up.

    Needs the ``postgres`` extra; without it, ``ImportError`` says what to install.

    Example:
        ```python
        with postgres_saver("postgresql://postgres@127.0.0.1:5432/postgres") as saver:
            graph = create_fncall_graph(model, tools, checkpointer=saver)
        ```
    """
    saver_cls, _ = _postgres_modules()
    with saver_cls.from_conn_string(url) as saver:
        saver.setup()
        yield saver


@asynccontextmanager
async def async_postgres_saver(
    url: str, *, max_connections: int | None = None
) -> AsyncIterator[AsyncPostgresSaver]:
    """An ``AsyncPostgresSaver`` on ``url``, tables set up.

    Args:
        url: a PostgreSQL connection URL.
        max_connections: ``None`` shares one connection (the saver serialises access to
            it); a number opens a pool of up to that many connections, so many threads
            running at once write their checkpoints in parallel.

    Example:
        ```python
        async with async_postgres_saver(url, max_connections=10) as saver:
            graph = create_fncall_graph(model, tools, checkpointer=saver)
            await asyncio.gather(*(graph.ainvoke(q, cfg(i)) for i, q in enumerate(qs)))
        ```
    """
    _, saver_cls = _postgres_modules()
    if max_connections is None:
        async with saver_cls.from_conn_string(url) as saver:
            await saver.setup()
            yield saver
        return
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, got {max_connections}")
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    # the connection settings AsyncPostgresSaver.from_conn_string uses
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(
        url, min_size=1, max_size=max_connections, kwargs=kwargs, open=False
    ) as pool:
        saver = saver_cls(pool)  # type: ignore[arg-type]
        await saver.setup()
        yield saver
