"""A throwaway PostgreSQL server on loopback, for tests and benchmarks.

``running_postgres()`` is scripts/serve_cluster.py's: ``initdb`` in a fresh temporary
directory, the server on a free 127.0.0.1 port (Unix socket in the same directory),
``pg_ctl -w`` until it accepts connections; it yields a connection URL, then stops the
server by pid (PostgreSQL's fast shutdown) and removes the directory. As root the server
runs as the ``postgres`` OS user, since PostgreSQL refuses to run as root. It raises
``PostgresMissing`` when the server binaries are not installed.

``postgres_url`` is the session-scoped pytest fixture over it. When the server binaries
are missing the fixture FAILS (it does not skip): run ``scripts/system-deps.sh``
(``make test`` runs it first).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from serve_cluster import ServerMissing as PostgresMissing
from serve_cluster import running_postgres

__all__ = ["PostgresMissing", "postgres_url", "running_postgres"]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a PostgreSQL server started for this test session (fails if not installed)."""
    try:
        with running_postgres() as url:
            yield url
    except PostgresMissing as exc:
        pytest.fail(str(exc))
