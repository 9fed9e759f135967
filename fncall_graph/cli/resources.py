"""Where a command's model, tools, checkpoints and dialect come from; errors said in one line."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from fncall_graph.adapters.formats.registry import DIALECT_NAMES
from fncall_graph.adapters.secrets import open_private, private_folder, redact
from fncall_graph.graphs import environment

from .terminal import UI, _first_line, shown

__all__ = ["MCP_LOG", "default_db_path", "stderr_into"]

PROG = "fncall-graph"
DIALECTS = ("auto", *DIALECT_NAMES)
DB_ENV = environment.DB_ENV
DEBUG_ENV = "FNCALL_DEBUG"


class CLIError(Exception):
    """A failure the user can act on: reported as one line, exit status 1.

    Its message often quotes a server (a URL, what it answered): secrets in it are
    masked and what a terminal would obey is written out."""

    def __init__(self, message: str) -> None:
        super().__init__(shown(redact(message), lines=True))


def default_db_path() -> Path:
    """Where threads are kept unless ``--db`` says otherwise.

    ``$FNCALL_DB`` if set, else ``$XDG_STATE_HOME/fncall-graph/checkpoints.sqlite``
    (``~/.local/state/fncall-graph/checkpoints.sqlite`` when ``XDG_STATE_HOME`` is unset):
    the XDG place for state that should survive restarts but is not user data.
    """
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV]).expanduser()
    return environment.state_dir() / "checkpoints.sqlite"


#: ``--max-tokens`` for a server URL when none is given: llama.cpp's server, for one,
#: otherwise writes until the context is full.
URL_MAX_TOKENS = 1024

#: ``--grammar``'s modes → ``create_fncall_graph(constrained=...)``.
GRAMMAR_MODES: dict[str, bool | str] = {"first_call": "first_call", "always": True, "off": False}
GRAMMAR_OFF = "off"


def load_model(
    spec: str | None,
    ui: UI,
    *,
    max_tokens: int | None = None,
    grammar: str | None = None,
    **kwargs: Any,
) -> BaseChatModel:
    """The chat model for ``spec`` (``None``: ``$FNCALL_MODEL``, else ``local``).

    ``max_tokens`` (``--max-tokens``) applies to every spec but a replay (an Ollama model
    takes it as ``num_predict``); a server URL gets :data:`URL_MAX_TOKENS` without it.
    ``grammar`` (``--grammar``, other than ``off``) says a server URL's server applies
    GBNF grammars (llama.cpp's do); for a spec of another kind it is an error, but for
    ``local``, which takes them already. ``kwargs`` apply to the bundled ``local`` model
    only (they suit it alone)."""
    from fncall_graph.adapters.models import DEFAULT_SPEC, ModelSpecError, resolve_model

    spec = environment.model_spec(spec) or DEFAULT_SPEC
    is_url = re.match(r"(?i)https?://", spec) is not None
    if grammar not in (None, GRAMMAR_OFF) and spec != "local" and not is_url:
        raise CLIError(
            f"--grammar {grammar}: {spec} is not a server URL; GBNF grammars reach a "
            "llama.cpp server given by its URL ('http://HOST:PORT/v1#NAME'), or 'local'"
        )
    try:
        if spec != "local":
            options: dict[str, Any] = {}
            if is_url:
                options["max_tokens"] = max_tokens or URL_MAX_TOKENS
                if grammar not in (None, GRAMMAR_OFF):
                    options["accepts_grammar"] = True
            elif spec.startswith("ollama:") and max_tokens:
                options["num_predict"] = max_tokens
            elif not spec.startswith("replay") and max_tokens:
                options["max_tokens"] = max_tokens
            return resolve_model(spec, **options)
        if max_tokens:
            kwargs["max_tokens"] = max_tokens
        with ui.working("starting the bundled local model (SmolLM2-135M-Instruct on llama.cpp)"):
            return resolve_model(spec, **kwargs)
    except ModelSpecError as exc:
        raise CLIError(str(exc)) from exc


def choose_dialect(requested: str, lang: str | None) -> Any:
    """The dialect to build the graph with (``auto`` is left to the graph)."""
    from fncall_graph.adapters import get_dialect

    if requested == "auto":
        return "auto"
    options = {"lang": lang} if lang and requested == "qwen" else {}
    try:
        return get_dialect(requested, **options)
    except (ValueError, TypeError) as exc:
        raise CLIError(str(exc)) from exc


#: The file MCP servers' stderr goes to, in the folder of the session's state.
MCP_LOG = "mcp-servers.log"


@contextlib.contextmanager
def stderr_into(log: Path) -> Iterator[None]:
    """Processes started in the block get ``log`` (appended to) as their stderr.

    MCP stdio servers inherit file descriptor 2 (the MCP SDK hands its ``sys.stderr``
    to the process it starts); pointing it at the log while they start keeps their log
    lines out of the live tool lines, and ours go back to the terminal afterwards.
    """
    import datetime

    try:
        handle = open_private(log, "a")  # the servers' words may hold what is theirs only
    except OSError as exc:
        raise CLIError(f"MCP server log {log}: {exc.strerror or exc}") from exc
    with handle:
        handle.write(
            f"--- {datetime.datetime.now().isoformat(timespec='seconds')} pid {os.getpid()}\n"
        )
        handle.flush()
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(handle.fileno(), 2)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


class _Warnings(logging.Handler):
    """The toolkit's warnings while its servers start, kept to be said on the terminal
    once the servers' stderr (where Python's logging would write them) is the log's."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(_first_line(record.getMessage()))

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        logger = logging.getLogger("fncall_graph.adapters.mcp")
        logger.addHandler(self)
        try:
            yield
        finally:
            logger.removeHandler(self)


@contextlib.contextmanager
def mcp_toolkit(
    config: str | Path | Mapping[str, Any] | None, ui: UI | None = None, log: Path | None = None
) -> Iterator[Any]:
    """The started ``MCPToolkit`` of an MCP config (``None`` without a config).

    Resources are left out, so the tool list is exactly the servers' tools. With
    ``log``, the servers' stderr is appended to that file (named on ``ui``), not
    written between the session's lines.
    """
    if config is None:
        yield None
        return
    from fncall_graph.adapters.mcp import MCPConfigError, MCPServerError, MCPToolkit

    where = f"MCP config {config}" if isinstance(config, str | Path) else "MCP config"
    try:
        toolkit = MCPToolkit.from_config(config, include_resources=False)
    except MCPConfigError as exc:
        # a file that cannot be read names itself; a bad field gets the file in front
        raise CLIError(
            f"MCP config {exc}" if exc.where == str(config) else f"{where}: {exc}"
        ) from exc
    said = _Warnings()
    try:
        with (
            stderr_into(log) if log is not None else contextlib.nullcontext(),
            said.kept() if ui is not None else contextlib.nullcontext(),
        ):
            toolkit.start_sync()
    except MCPServerError as exc:
        where = f" (its stderr is in {log})" if log is not None else ""
        raise CLIError(_first_line(str(exc)) + where) from exc
    if ui is not None and log is not None:
        ui.note(f"MCP servers' stderr goes to {log}")
    for line in said.lines:  # a tool name that breaks MCP's rule, say: on the terminal
        ui.note(f"{PROG}: warning: {line}")  # type: ignore[union-attr]
    try:
        yield toolkit
    finally:
        toolkit.close()


@contextlib.contextmanager
def mcp_tools(
    config: str | Path | Mapping[str, Any] | None, ui: UI | None = None, log: Path | None = None
) -> Iterator[list[BaseTool]]:
    """The tools of an MCP config over open sessions (none without a config)."""
    with mcp_toolkit(config, ui, log) as toolkit:
        yield toolkit.tools if toolkit is not None else []


@contextlib.contextmanager
def sqlite_checkpointer(path: Path) -> Iterator[Any]:
    """A LangGraph ``SqliteSaver`` on ``path``, its folder and tables created if needed."""
    from fncall_graph.adapters.checkpoint import sqlite_saver

    manager = sqlite_saver(path)
    try:
        # created here, only its owner's (SQLite gives its journals the file's mode)
        private_folder(path.parent)
        open_private(path, "a").close()
        saver = manager.__enter__()
    except (OSError, sqlite3.Error) as exc:
        raise CLIError(f"checkpoint database {path}: {exc}") from exc
    # errors of the session itself must not be reported as database errors
    with contextlib.ExitStack() as stack:
        stack.push(manager)
        yield saver


def describe_error(exc: BaseException) -> str:
    """One line saying what went wrong, for errors raised while a graph runs (secrets
    masked, what a terminal would obey written out)."""
    return shown(redact(_described(exc)), lines=True)


def _described(exc: BaseException) -> str:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    from fncall_graph.adapters.models import unreachable_server

    unreachable = unreachable_server(exc)
    if unreachable is not None:
        return str(unreachable)
    for error in chain:
        kind = type(error).__name__
        module = type(error).__module__
        if kind == "AuthenticationError" and module.startswith("openai"):
            return f"the model server refused the API key: {_first_line(str(error))}"
        if module.startswith("openai") and hasattr(error, "status_code"):
            return f"the model server answered {error.status_code}: {_first_line(str(error))}"  # type: ignore[attr-defined]
        if kind == "ResponseError" and module.startswith("ollama"):
            return f"ollama: {_first_line(str(error))}"
        if kind == "ReplayExhausted":
            return f"replay model: {_first_line(str(error))}"
    return f"{type(exc).__name__}: {_first_line(str(exc)) or 'no message'}"
