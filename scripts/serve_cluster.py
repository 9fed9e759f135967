#!/usr/bin/env python3
"""The project's graphs on LangGraph Server: N replicas over one PostgreSQL and one Redis.

Everything runs on loopback from a state directory: a private PostgreSQL cluster
(Debian's server binaries, ``initdb`` + ``pg_ctl``), a ``redis-server`` with nothing
saved to disk, the runtime's schema migrations (``langgraph-runtime-pg-migrate upgrade``,
once, before any replica starts), then N ``langhost serve`` replicas on consecutive ports,
each in its own process group (so its MCP servers go with it). Everything is stopped by
pid: the replicas (SIGTERM, then SIGKILL after a grace period), Redis, PostgreSQL (SIGINT
to the postmaster: PostgreSQL's fast shutdown).

Commands:

    serve_cluster.py run   [options]   start, print the URLs, stop on Ctrl-C or SIGTERM
    serve_cluster.py start [options]   start in the background and write DIR/cluster.json
    serve_cluster.py stop  --dir DIR   stop what DIR/cluster.json names, by pid

``make serve-cluster`` runs ``run`` with the server's own virtual environment
(``.venv-server``, the ``server`` extra). Only the standard library is used here, so the
tests import this module to start and kill replicas themselves. See docs/deploy.md.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STATE_FILE = "cluster.json"
READY_TIMEOUT = 120.0
STOP_GRACE = 30.0

MISSING_POSTGRES = (
    "PostgreSQL server binaries (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin "
    "or on PATH; install them with `bash scripts/system-deps.sh`"
)
MISSING_REDIS = "redis-server was not found on PATH; install it with `bash scripts/system-deps.sh`"

# The `server` extra has no bundled `local` model (the graphs' own default), so a cluster
# started without a model serves the database assistant's recording, which answers the
# example's questions in any thread, on any replica.
DEFAULT_MODEL = "replay:database-assistant"
MODEL_VARIABLES = ("FNCALL_MODEL", "FNCALL_SQLITE_MODEL", "FNCALL_WEATHER_MODEL")


class ClusterError(RuntimeError):
    """A part of the cluster did not start or stop; the message says which and why."""


class ServerMissing(ClusterError):
    """A server's binaries (PostgreSQL's, ``redis-server``) are not installed."""


def free_port() -> int:
    """A loopback port nothing listens on now (the probe socket is closed on return)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_CHECKPOINT_SETUP = """
import os
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore
with PostgresSaver.from_conn_string(os.environ["DATABASE_URI"]) as saver:
    saver.setup()
with PostgresStore.from_conn_string(os.environ["DATABASE_URI"]) as store:
    store.setup()
"""

# what the server logs when a graph cannot be loaded, after which it stops serving but,
# in the current versions, lingers instead of exiting
GRAPH_FAILED_LINE = "failed to load"


def wait_until(
    what: str,
    ready: Callable[[], bool],
    timeout: float,
    *,
    alive: Callable[[], bool] | None = None,
) -> None:
    """Poll ``ready`` until it is true; fail after ``timeout`` s or as soon as the
    process behind it (``alive() is False``) has exited."""
    deadline = time.monotonic() + timeout
    while not ready():
        if alive is not None and not alive():
            raise ClusterError(f"{what} exited (or failed to load a graph) before it was ready")
        if time.monotonic() > deadline:
            raise ClusterError(f"{what} was not ready within {timeout:.0f} s")
        time.sleep(0.05)  # poll interval; readiness itself is the condition


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def stop_pid(pid: int, sig: signal.Signals, *, grace: float = STOP_GRACE) -> None:
    """Send ``sig`` to ``pid`` and wait until it is gone; SIGKILL after ``grace`` s."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
        with contextlib.suppress(ClusterError):
            wait_until(f"process {pid}", lambda: not pid_alive(pid), grace)
            return
        os.kill(pid, signal.SIGKILL)
        wait_until(f"process {pid}", lambda: not pid_alive(pid), 10)


def group_members(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(stat.parent.name))
    return members


def kill_group(pgid: int) -> list[int]:
    """SIGKILL what is left of process group ``pgid``; returns the pids that were left."""
    left = group_members(pgid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    return left


# --------------------------------------------------------------------------- PostgreSQL


def postgres_bin_dir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: ``$PG_BIN``, the newest Debian one, PATH."""
    if env := os.environ.get("PG_BIN"):
        return Path(env)

    def version(path: str) -> int:
        name = Path(path).parent.parent.name
        return int(name) if name.isdigit() else 0

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=version)
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl and shutil.which("initdb") else None


@dataclass
class Postgres:
    """A private PostgreSQL cluster on a loopback port (trust auth, user ``postgres``),
    in a new temporary directory that :meth:`stop` removes. As root it runs as the
    ``postgres`` OS user (PostgreSQL refuses root), which must be able to reach the
    directory: hence /tmp, not the caller's own (often private) directory."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fncall-pg-")))
    port: int = 0
    pid: int | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _as_owner(self) -> list[str]:
        return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def start(self) -> Postgres:
        bin_dir = postgres_bin_dir()
        if bin_dir is None or not (bin_dir / "initdb").exists():
            raise ServerMissing(MISSING_POSTGRES)
        data, sock, log = self.root / "data", self.root / "sock", self.root / "server.log"
        sock.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            for path in (self.root, sock):
                os.chown(path, user.pw_uid, user.pw_gid)

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*self._as_owner(), *args], capture_output=True, text=True, check=False
            )

        if not (data / "PG_VERSION").exists():
            init = run(
                str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                "-E", "UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
            if init.returncode:
                raise ClusterError(f"initdb failed:\n{init.stdout}\n{init.stderr}")
        for _attempt in range(3):  # another process may take the port between probe and bind
            self.port = self.port or free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {sock} -c max_connections=300"
            )
            start = run(
                str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options,
                "-w", "-t", "60", "start",
            )  # fmt: skip
            if start.returncode == 0:
                self.pid = int((data / "postmaster.pid").read_text().split()[0])
                return self
            self.port = 0
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise ClusterError(f"PostgreSQL did not start:\n{start.stdout}\n{start.stderr}\n{tail}")

    def stop(self) -> None:
        if self.pid is not None:
            stop_pid(self.pid, signal.SIGINT)  # SIGINT: PostgreSQL's fast shutdown
            self.pid = None
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def running_postgres() -> Iterator[str]:
    """A PostgreSQL cluster for the block; yields its URL.

    Example:
        ```python
        with running_postgres() as url:   # postgresql://postgres@127.0.0.1:PORT/postgres
            ...
        ```
    """
    server = Postgres()
    try:
        yield server.start().url
    finally:
        server.stop()


# --------------------------------------------------------------------------- Redis


def redis_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class Redis:
    """``redis-server`` on a loopback port, nothing saved to disk."""

    root: Path
    port: int = 0
    pid: int | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> Redis:
        server = shutil.which("redis-server")
        if server is None:
            raise ServerMissing(MISSING_REDIS)
        self.port = self.port or free_port()
        # its log goes to a file, not to this process's output, which it would keep
        # open after `start` returns
        with (self.root / "redis.log").open("ab") as log:
            proc = subprocess.Popen(
                [
                    server, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                    "--appendonly", "no", "--dir", str(self.root),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.pid = proc.pid
        wait_until(
            "redis-server", lambda: redis_ping(self.port), 30, alive=lambda: proc.poll() is None
        )
        return self

    def stop(self) -> None:
        if self.pid is not None:
            stop_pid(self.pid, signal.SIGTERM)
            self.pid = None


# --------------------------------------------------------------------------- replicas


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def server_bin(name: str) -> Path:
    """``name`` from the server's virtual environment: ``$FNCALL_SERVER_VENV``, else
    ``.venv-server`` in the repository, else beside this Python."""
    for venv in (os.environ.get("FNCALL_SERVER_VENV"), REPO / ".venv-server"):
        if venv and (Path(venv) / "bin" / name).exists():
            return Path(venv) / "bin" / name
    return Path(sys.executable).parent / name


@dataclass
class Replica:
    index: int
    port: int
    log: Path
    pid: int | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.pid is not None and pid_alive(self.pid)

    def starting(self) -> bool:
        """Alive, and no graph of it failed to load (a replica that logs so never serves)."""
        if not self.alive():
            return False
        try:
            log = self.log.read_text(errors="replace")
        except OSError:
            return True
        return GRAPH_FAILED_LINE not in log


@dataclass
class Cluster:
    """PostgreSQL, Redis and ``replicas`` LangGraph Server replicas, in ``root``.

    Args:
        root: the state directory (PostgreSQL's data, logs, ``cluster.json``).
        replicas: how many ``langhost serve`` processes.
        port: the first replica's port (the others follow); 0: free ports.
        workers: uvicorn workers per replica.
        jobs_per_worker: background runs one server process runs at once.
        config: the ``langgraph.json`` to serve.
        env: environment for the replicas, over this process's own.

    Example:
        ```python
        with Cluster(Path("/tmp/cluster"), replicas=2) as cluster:
            print([r.url for r in cluster.replicas])
        ```
    """

    root: Path
    replicas_wanted: int = 2
    port: int = 0
    workers: int = 1
    jobs_per_worker: int = 10
    config: Path = REPO / "langgraph.json"
    env: Mapping[str, str] = field(default_factory=dict)
    postgres: Postgres | None = None
    redis: Redis | None = None
    replicas: list[Replica] = field(default_factory=list)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def database_url(self) -> str:
        assert self.postgres is not None
        return self.postgres.url

    def start(self) -> Cluster:
        """Start everything and wait until every replica answers; on failure, stop what
        started and raise :class:`ClusterError`."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> Cluster:
        self.root.mkdir(parents=True, exist_ok=True)
        self.postgres = Postgres().start()
        self.redis = Redis(self.root).start()
        self.save()
        self.migrate()
        ports = [self.port + i if self.port else free_port() for i in range(self.replicas_wanted)]
        self.replicas = [
            Replica(i, port, self.root / f"replica-{i}.log") for i, port in enumerate(ports)
        ]
        # one after the other: each replica's startup also creates the checkpointer's and
        # the store's tables, and two at once collide on their migration rows
        for replica in self.replicas:
            self.start_replica(replica.index)
        return self

    def replica_env(self) -> dict[str, str]:
        assert self.postgres is not None and self.redis is not None
        env = {**os.environ, **self.env}
        env.update(
            DATABASE_URI=self.postgres.url,
            REDIS_URI=self.redis.url,
            # the schema is migrated once, before the replicas start, not by each of them
            LG_RUNTIME_PG_AUTO_MIGRATE="false",
        )
        env.setdefault("LANGGRAPH_NO_VERSION_CHECK", "true")
        return env

    def migrate(self) -> None:
        # LangGraph's own checkpoint and store tables are set up once here too: the workers
        # of one replica start at the same moment, and two setups at once collide in
        # PostgreSQL's catalog
        steps = (
            ("migrations", [str(server_bin("langgraph-runtime-pg-migrate")), "upgrade"]),
            ("checkpoint setup", [str(server_bin("python")), "-c", _CHECKPOINT_SETUP]),
        )
        for what, command in steps:
            done = subprocess.run(
                command, env=self.replica_env(), capture_output=True, text=True, check=False
            )
            if done.returncode:
                raise ClusterError(f"{what} failed:\n{done.stdout}\n{done.stderr}")

    def start_replica(self, index: int) -> Replica:
        """(Re)start replica ``index`` on its port."""
        replica = self.replicas[index]
        if replica.pid is not None:  # a crashed predecessor's MCP servers, if any are left
            kill_group(replica.pid)
        args = [
            str(server_bin("langhost")), "serve", "--host", "127.0.0.1",
            "--port", str(replica.port), "--config", str(self.config), "--no-browser",
            "--workers", str(self.workers), "--n-jobs-per-worker", str(self.jobs_per_worker),
        ]  # fmt: skip
        with replica.log.open("ab") as out:
            # cwd: the config's directory, which relative graph paths and `.env` are
            # read from (as `langgraph dev` reads them)
            replica.proc = subprocess.Popen(
                args,
                cwd=self.config.parent,
                env=self.replica_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        replica.pid = replica.proc.pid
        self.wait_ready(replica)
        self.save()
        return replica

    def wait_ready(self, replica: Replica) -> None:
        try:
            wait_until(
                f"replica {replica.index} ({replica.url})",
                lambda: http_ok(replica.url),
                READY_TIMEOUT,
                alive=replica.starting,
            )
        except ClusterError as exc:
            tail = replica.log.read_text(errors="replace")[-4000:]
            raise ClusterError(f"{exc}; its log ({replica.log}) ends:\n{tail}") from None

    def kill_replica(self, index: int) -> None:
        """SIGKILL replica ``index``'s server process only, as a crash would."""
        replica = self.replicas[index]
        if replica.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(replica.pid, signal.SIGKILL)
            if replica.proc is not None:
                replica.proc.wait()

    def stop_replica(self, index: int) -> list[int]:
        """Stop replica ``index`` as a deployment would (SIGTERM, SIGKILL after a grace
        period for the whole group); returns the pids of its group still running when
        the grace period ended (killed now)."""
        replica = self.replicas[index]
        if replica.pid is None:
            return []
        pid, deadline = replica.pid, time.monotonic() + STOP_GRACE
        stop_pid(pid, signal.SIGTERM)
        if replica.proc is not None:
            replica.proc.wait()
        # the rest of the group (workers, their MCP servers) gets what is left of the
        # grace period to finish exiting, as in a container being stopped
        with contextlib.suppress(ClusterError):
            wait_until(
                f"replica {index}'s processes",
                lambda: not group_members(pid),
                max(deadline - time.monotonic(), 0.1),
            )
        left = kill_group(pid)
        replica.pid = replica.proc = None
        return left

    def stop(self) -> None:
        """Stop the replicas, then Redis, then PostgreSQL, each by pid."""
        for replica in self.replicas:
            self.stop_replica(replica.index)
        if self.redis is not None:
            self.redis.stop()
        if self.postgres is not None:
            self.postgres.stop()
        with contextlib.suppress(FileNotFoundError):
            (self.root / STATE_FILE).unlink()

    # -- the state file, for `stop` from another process

    def save(self) -> None:
        pg, redis = self.postgres, self.redis
        state = {
            "postgres": pg and {"url": pg.url, "port": pg.port, "pid": pg.pid, "dir": str(pg.root)},
            "redis": redis and {"url": redis.url, "port": redis.port, "pid": redis.pid},
            "replicas": [
                {"url": r.url, "port": r.port, "pid": r.pid, "log": str(r.log)}
                for r in self.replicas
            ],
        }
        (self.root / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def saved(cls, root: Path) -> Cluster:
        """The cluster ``root/cluster.json`` describes, to stop from another process."""
        path = root / STATE_FILE
        if not path.exists():
            raise ClusterError(f"no cluster state in {path}")
        state = json.loads(path.read_text())
        cluster = cls(root, replicas_wanted=len(state["replicas"]))
        if pg := state["postgres"]:
            cluster.postgres = Postgres(Path(pg["dir"]), pg["port"], pg["pid"])
        if redis := state["redis"]:
            cluster.redis = Redis(root, redis["port"], redis["pid"])
        cluster.replicas = [
            Replica(i, r["port"], Path(r["log"]), r["pid"]) for i, r in enumerate(state["replicas"])
        ]
        return cluster

    @staticmethod
    def stop_saved(root: Path) -> list[str]:
        """Stop what ``root/cluster.json`` names; returns what was still running."""
        cluster = Cluster.saved(root)
        parts = [(f"replica {r.url}", r.pid) for r in cluster.replicas]
        parts += [("redis", cluster.redis and cluster.redis.pid)]
        parts += [("postgres", cluster.postgres and cluster.postgres.pid)]
        running = [f"{name} (pid {pid})" for name, pid in parts if pid and pid_alive(pid)]
        cluster.stop()
        return running


# --------------------------------------------------------------------------- CLI


def model_settings(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The model variables to add for the replicas, and the lines that say what each graph
    serves: ``FNCALL_MODEL`` is set to :data:`DEFAULT_MODEL` when no model variable is set.

    Example:
        >>> model_settings({})[0]
        {'FNCALL_MODEL': 'replay:database-assistant'}
        >>> model_settings({"FNCALL_MODEL": "ollama:qwen3"})
        ({}, ['model: ollama:qwen3 (FNCALL_MODEL)'])
    """
    given = {
        name: environ[name].strip() for name in MODEL_VARIABLES if environ.get(name, "").strip()
    }
    if given:
        return {}, [f"model: {spec} ({name})" for name, spec in given.items()]
    return {"FNCALL_MODEL": DEFAULT_MODEL}, [
        f"model: {DEFAULT_MODEL} (FNCALL_MODEL is not set, and the server extra has no local model)",
        "  Qwen-Max's recorded replies to the database assistant's questions, asked as written,",
        "  in any thread: 数据库有几张表 · 分别有多少条记录 · 这几个表的结构分别是什么样的 ·",
        "  查询韩梅梅的年龄,然后在log表里记录下. Anything else (and weather_assistant) gets an",
        "  error naming the recording. A real model: FNCALL_MODEL=ollama:qwen3 (see docs/deploy.md)",
    ]


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _stop_and_say(cluster: Cluster) -> None:
    # signals again end nothing half-way: the stop is already under way
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    print("stopping the cluster ...", flush=True)
    cluster.stop()
    print(f"stopped: {len(cluster.replicas)} replica(s), Redis, PostgreSQL", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "start", "stop"))
    parser.add_argument("--dir", type=Path, default=REPO / ".cluster", help="state directory")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--port", type=int, default=8123, help="first replica's port (0: free)")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers per replica")
    parser.add_argument("--jobs-per-worker", type=int, default=10)
    parser.add_argument("--config", type=Path, default=REPO / "langgraph.json")
    args = parser.parse_args(argv)
    root = args.dir.resolve()
    try:
        if args.command == "stop":
            for line in Cluster.stop_saved(root):
                print(f"stopped {line}")
            return 0
        if (root / STATE_FILE).exists():
            raise ClusterError(f"{root / STATE_FILE} exists: `serve_cluster.py stop --dir {root}`")
        model_env, model_lines = model_settings(os.environ)
        for line in model_lines:
            print(line, flush=True)
        cluster = Cluster(
            root,
            replicas_wanted=args.replicas,
            port=args.port,
            workers=args.workers,
            jobs_per_worker=args.jobs_per_worker,
            config=args.config.resolve(),
            env=model_env,
        )
        with contextlib.ExitStack() as stack:
            cluster.start()
            if args.command == "run":
                stack.callback(_stop_and_say, cluster)
            print(f"PostgreSQL {cluster.database_url} · Redis {cluster.redis.url}")
            for replica in cluster.replicas:
                print(f"replica {replica.index}: {replica.url}  (log {replica.log})")
            if args.command == "start":
                print(f"stop with: {sys.argv[0]} stop --dir {root}", flush=True)
                return 0
            # also when started with SIGINT ignored (a background job of a script)
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, _interrupt)
            print("Ctrl-C stops the cluster", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
    except ClusterError as exc:
        print(f"serve_cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
