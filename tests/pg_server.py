"""A throwaway PostgreSQL server on loopback, for tests and benchmarks.

``running_postgres()`` runs ``initdb`` in a fresh temporary directory, starts the server
on a free 127.0.0.1 port (Unix socket in the same directory), waits until it accepts
connections (``pg_ctl -w``), yields a connection URL, then stops it (``pg_ctl stop -m
fast``) and removes the directory. As root the server runs as the ``postgres`` OS user,
since PostgreSQL refuses to run as root.

``postgres_url`` is the session-scoped pytest fixture over it. When the server binaries
are missing the fixture FAILS (it does not skip): run ``scripts/system-deps.sh``
(``make test`` runs it first).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from ports import free_port

MISSING = (
    "PostgreSQL server binaries (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin "
    "or on PATH. Install them with `bash scripts/system-deps.sh` (`make test` runs it first)."
)


class PostgresMissing(RuntimeError):
    """The PostgreSQL server binaries are not installed."""


def postgres_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (newest Debian version first)."""
    if env := os.environ.get("PG_BIN"):
        return Path(env)
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if versions:
        return Path(versions[-1]).parent
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and shutil.which("initdb") else None


@contextmanager
def running_postgres() -> Iterator[str]:
    """Run a PostgreSQL cluster for the duration of the block; yield its URL.

    Raises:
        PostgresMissing: the server binaries are not installed.

    Example:
        ```python
        with running_postgres() as url:   # postgresql://postgres@127.0.0.1:PORT/postgres
            with postgres_saver(url) as saver: ...
        ```
    """
    bin_dir = postgres_bin_dir()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        raise PostgresMissing(MISSING)
    root = Path(tempfile.mkdtemp(prefix="fncall-pg-"))
    data, sock, log = root / "data", root / "sock", root / "server.log"
    sock.mkdir()
    prefix: list[str] = []
    if os.geteuid() == 0:
        # PostgreSQL will not run as root: hand the directory to the postgres user
        user = pwd.getpwnam("postgres")
        for path in (root, sock):
            os.chown(path, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, *args], capture_output=True, text=True, check=False)

    started = False
    try:
        init = run(
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        if init.returncode:
            raise RuntimeError(f"initdb failed:\n{init.stdout}\n{init.stderr}")
        for _attempt in range(3):  # another process may take the port between bind and start
            port = free_port()
            options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock}"
            start = run(
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            )
            if start.returncode == 0:
                started = True
                break
        if not started:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed:\n{start.stdout}\n{start.stderr}\n{tail}")
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        if started:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a PostgreSQL server started for this test session (fails if not installed)."""
    try:
        with running_postgres() as url:
            yield url
    except PostgresMissing as exc:
        pytest.fail(str(exc))
