"""The ``fncall-graph`` command: chat with any model over MCP tools, from a terminal.

Commands:

- ``chat``: an interactive session; answers stream token by token and every tool call
  shows a live line (name, arguments, running/done/error, elapsed time);
- ``run``: one question, non-interactive; exit status 0 on a final answer, 1 otherwise;
  ``--json`` prints the thread's messages;
- ``demo``: the database-assistant example (four questions, one thread) against
  ``mcp-server-sqlite`` on a fresh database, printed as a transcript: recorded replies
  first, then the bundled local model live;
- ``prompt``: the exact system prompt a dialect writes for the tools of an MCP config.

Threads are checkpointed in a SQLite file (``--db``), so ``--thread``/``--resume``
continue them in a later process; ``--approve TOOL`` asks at the terminal before that
tool runs; ``--trace``/``--trace-file`` show each model call's four views
(see :mod:`fncall_graph.trace`).

Errors a user can fix (a bad model spec, an unreachable server, a missing key, a bad MCP
config) end the command with one line on stderr and exit status 1. ``FNCALL_DEBUG=1``
shows the full traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar, NoReturn, TextIO

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from fncall_graph.adapters.base import text_of
from fncall_graph.trace import ModelCallRecord, Tracer

PROG = "fncall-graph"
DIALECTS = ("auto", "native", "hermes", "nous", "qwen", "react")
DB_ENV = "FNCALL_DB"
DEBUG_ENV = "FNCALL_DEBUG"


class CLIError(Exception):
    """A failure the user can act on: reported as one line, exit status 1."""


# --------------------------------------------------------------------------- settings


def default_db_path() -> Path:
    """Where threads are kept unless ``--db`` says otherwise.

    ``$FNCALL_DB`` if set, else ``$XDG_STATE_HOME/fncall-graph/checkpoints.sqlite``
    (``~/.local/state/fncall-graph/checkpoints.sqlite`` when ``XDG_STATE_HOME`` is unset):
    the XDG place for state that should survive restarts but is not user data.
    """
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV]).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).expanduser() / "fncall-graph" / "checkpoints.sqlite"


def load_model(spec: str | None, ui: UI, **kwargs: Any) -> BaseChatModel:
    """The chat model for ``spec`` (``None``: ``$FNCALL_MODEL``, else ``local``)."""
    from fncall_graph.adapters.models import DEFAULT_SPEC, MODEL_ENV, ModelSpecError, resolve_model

    spec = spec or os.environ.get(MODEL_ENV) or DEFAULT_SPEC
    if spec.strip() != "local":
        kwargs = {}  # the settings below suit the bundled model only
    try:
        if spec.strip() != "local":
            return resolve_model(spec, **kwargs)
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


@contextlib.contextmanager
def mcp_tools(config: str | Path | Mapping[str, Any] | None) -> Iterator[list[BaseTool]]:
    """The tools of an MCP config over open sessions (none without a config).

    Resources are left out, so the tool list is exactly the servers' tools.
    """
    if config is None:
        yield []
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
    try:
        toolkit.start_sync()
    except MCPServerError as exc:
        raise CLIError(_first_line(str(exc))) from exc
    try:
        yield toolkit.tools
    finally:
        toolkit.close()


@contextlib.contextmanager
def sqlite_checkpointer(path: Path) -> Iterator[Any]:
    """A LangGraph ``SqliteSaver`` on ``path``, its folder and tables created if needed."""
    from fncall_graph.adapters.checkpoint import sqlite_saver

    manager = sqlite_saver(path)
    try:
        saver = manager.__enter__()
    except (OSError, sqlite3.Error) as exc:
        raise CLIError(f"checkpoint database {path}: {exc}") from exc
    # errors of the session itself must not be reported as database errors
    with contextlib.ExitStack() as stack:
        stack.push(manager)
        yield saver


# --------------------------------------------------------------------------- terminal


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


# Servers such as mcp-server-sqlite answer a failed call with ordinary text that starts
# like this (no MCP isError flag); the terminal shows those calls as failed, too.
_FAILURE_TEXT = re.compile(r"^\s*(error|database error|exception|traceback)\b", re.IGNORECASE)


def reports_failure(text: str) -> bool:
    """Whether a tool's result text says that the call failed.

    Example:
        >>> reports_failure("Database error: no such table: table"), reports_failure("[{'n': 3}]")
        (True, False)
    """
    return bool(_FAILURE_TEXT.match(text))


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Call:
    """One tool call on the board."""

    name: str
    args: Any
    state: str = "running"  # running | waiting | done | error | rejected
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    detail: str = ""

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def line(self) -> str:
        text = f"{self.name} {_short(self.args)} {self.state}"
        if self.state != "waiting":
            text += f" {self.elapsed():.2f}s"
        if self.detail:
            text += f": {_short(self.detail, 120)}"
        return text


class UI:
    """What the user sees: streamed answers, tool lines, traces, questions.

    On a terminal, rich draws the tool lines live (state and elapsed time updating in
    place) and colours the transcript. Elsewhere the output is plain text, one line
    per event, with no colour or control codes.

    Args:
        stream: where to write (stdout, or stderr when stdout carries JSON).
        quiet: leave answers and tool lines out (the JSON is the output).
    """

    _MARK: ClassVar[dict[str, str]] = {
        "running": "…",
        "waiting": "?",
        "done": "✓",
        "error": "✗",
        "rejected": "✗",
    }
    _STYLE: ClassVar[dict[str, str]] = {
        "running": "yellow",
        "waiting": "magenta",
        "done": "green",
        "error": "red",
        "rejected": "red",
    }

    def __init__(self, stream: TextIO, *, quiet: bool = False) -> None:
        from rich.console import Console

        self.stream = stream
        self.quiet = quiet
        self.tty = stream.isatty()
        self.console = Console(
            file=stream,
            force_terminal=self.tty,
            no_color=not self.tty,
            highlight=False,
            soft_wrap=True,
        )
        self.calls: dict[str, _Call] = {}
        self._live: Any = None
        self._status: Any = None
        self._in_answer = False

    # -- plain text

    def note(self, text: str) -> None:
        """A status line (on stderr, so it never mixes with output)."""
        print(text, file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def working(self, text: str) -> Iterator[None]:
        """A spinner saying ``text`` while the block runs (one plain line off a terminal)."""
        if not self.tty:
            self.note(f"{text} ...")
            yield
            return
        self.end_answer()
        self._stop_live()
        with self.console.status(_escape(text)):
            yield

    def thinking(self) -> None:
        """A spinner until the model's first token or call shows (terminals only)."""
        if self.tty and not self.quiet and self._status is None and self._live is None:
            self._status = self.console.status("the model is writing …")
            self._status.start()

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def heading(self, text: str) -> None:
        self.end_answer()
        self._stop_live()
        if self.tty:
            self.console.print(f"[bold cyan]{_escape(text)}[/]")
        else:
            self._write(text + "\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    # -- answers

    def token(self, text: str) -> None:
        if self.quiet or not text:
            return
        self._stop_status()
        self._stop_live()
        if not self._in_answer:
            self._in_answer = True
            if self.tty:
                self.console.print("[bold green]assistant>[/] ", end="")
            else:
                self._write("assistant> ")
        self._write(text)

    def end_answer(self) -> None:
        if self._in_answer:
            self._write("\n")
            self._in_answer = False

    # -- tool calls

    def call_started(self, call_id: str, name: str, args: Any, *, waiting: bool) -> None:
        if self.quiet:
            return
        self.end_answer()
        known = self.calls.get(call_id)
        if known is not None:  # an edited call: same id, new arguments
            known.name, known.args = name, args
            return
        self.calls[call_id] = _Call(name, args, state="waiting" if waiting else "running")
        self._show(call_id)

    def calls_resumed(self) -> None:
        """The person has decided: waiting calls start now (their time starts here too)."""
        for call_id, call in self.calls.items():
            if call.state == "waiting":
                call.state, call.started = "running", time.monotonic()
                self._show(call_id)

    def call_finished(self, call_id: str, state: str, detail: str = "") -> None:
        call = self.calls.get(call_id)
        if self.quiet or call is None or call.ended is not None:
            return
        call.state, call.ended, call.detail = state, time.monotonic(), detail
        self._show(call_id)
        if self._live is not None and all(c.ended for c in self.calls.values()):
            self._stop_live()

    def _show(self, call_id: str) -> None:
        self._stop_status()
        call = self.calls[call_id]
        if not self.tty:
            self._write(f"[tool] {call.line()}\n")
            return
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                _Board(self), console=self.console, refresh_per_second=8, transient=False
            )
            self._live.start()
        self._live.refresh()

    def _stop_live(self) -> None:
        self._stop_status()
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None
        if not self.tty or all(c.ended for c in self.calls.values()):
            self.calls = {k: c for k, c in self.calls.items() if c.ended is None}

    def render_calls(self) -> Any:
        from rich.text import Text

        lines = Text()
        for i, call in enumerate(self.calls.values()):
            if i:
                lines.append("\n")
            lines.append(f"  {self._MARK[call.state]} ", style=self._STYLE[call.state])
            lines.append(call.line())
        return lines

    # -- traces

    def trace(self, record: ModelCallRecord) -> None:
        self.end_answer()
        self._stop_live()
        title = f"model call {record.index} · round {record.round} · {record.question}"
        if self.tty:
            self.console.rule(_escape(title))
            self.console.print(record.to_text(), markup=False)
            self.console.rule()
        else:
            self._write(f"--- {title} ---\n{record.to_text()}\n--- end of model call ---\n")

    # -- questions

    def ask(self, prompt: str) -> str:
        """A line typed by the user (``EOFError`` when input has ended)."""
        self.end_answer()
        self._stop_live()
        if self.stream is sys.stdout:
            return input(prompt)
        self._write(prompt)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def close(self) -> None:
        self.end_answer()
        self._stop_live()


class _Board:
    """The live tool lines, rendered afresh on every refresh (so elapsed times tick)."""

    def __init__(self, ui: UI) -> None:
        self.ui = ui

    def __rich__(self) -> Any:
        return self.ui.render_calls()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


# --------------------------------------------------------------------------- sessions


@dataclass
class Outcome:
    """How a turn ended."""

    answer: AIMessage | None
    stopped: str | None = None  # why there is no final answer


class Session:
    """Questions and approvals in one thread of a graph, shown through a :class:`UI`.

    Args:
        graph: a graph from :func:`~fncall_graph.create_fncall_graph`.
        thread_id: the thread.
        ui: where the session is shown.
        tracer: builds the four views of every model call, if tracing.
        trace_file: where each record goes as one JSON line, if given.
        show_trace: print each record on the UI.
        gated: the tools that ask before they run.
    """

    def __init__(
        self,
        graph: Any,
        thread_id: str,
        ui: UI,
        *,
        tracer: Tracer | None = None,
        trace_file: IO[str] | None = None,
        show_trace: bool = False,
        gated: Sequence[str] = (),
    ) -> None:
        self.graph = graph
        self.thread_id = thread_id
        self.ui = ui
        self.tracer = tracer
        self.trace_file = trace_file
        self.show_trace = show_trace
        self.gated = set(gated)
        self.config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
        if tracer is not None:
            self.config["callbacks"] = [tracer.recorder]

    # -- public

    def ask(self, question: str) -> Outcome:
        """Ask ``question`` and run the turn to its end, approvals included."""
        if self.tracer is not None:
            self.tracer.start_round(question)
        return self._run({"messages": [("user", question)]})

    def pending(self) -> bool:
        """Whether the thread stopped before its end (an approval, or a crash)."""
        return bool(self.graph.get_state(self.config).next)

    def exists(self) -> bool:
        state = self.graph.get_state(self.config)
        return bool(state.values) or bool(state.next)

    def resume(self) -> Outcome:
        """Finish the turn the thread was in: answer its approvals, or run it on."""
        from langgraph.types import Command

        state = self.graph.get_state(self.config)
        if self.tracer is not None:
            question = _last_question(state.values.get("messages") or [])
            self.tracer.start_round(question)
        if state.interrupts:
            return self._run(Command(resume=self._decide(list(state.interrupts))))
        return self._run(None)

    def messages(self) -> list[BaseMessage]:
        return list(self.graph.get_state(self.config).values.get("messages") or [])

    # -- the stream

    def _run(self, payload: Any) -> Outcome:
        from langgraph.types import Command

        while True:
            interrupts = self._stream(payload)
            if not interrupts:
                break
            payload = Command(resume=self._decide(interrupts))
            self.ui.calls_resumed()
        self.ui.close()
        messages = self.messages()
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or last.tool_calls:
            return Outcome(None, "the turn ended without an answer")
        if last.additional_kwargs.get("fncall_stop_reason"):
            return Outcome(last, _first_line(str(last.content)))
        return Outcome(last)

    def _stream(self, payload: Any) -> list[Any]:
        interrupts: list[Any] = []
        modes = ["messages", "updates"]
        if self.tracer is not None:
            modes.append("values")
        self.ui.thinking()
        for mode, chunk in self.graph.stream(payload, self.config, stream_mode=modes):
            if mode == "messages":
                message, meta = chunk
                if meta.get("langgraph_node") == "model" and isinstance(
                    message, AIMessageChunk | AIMessage
                ):
                    self.ui.token(text_of(message.content))
                continue
            if self.tracer is not None:
                for record in self.tracer.feed(mode, chunk):
                    self._record(record)
            if mode == "updates":
                interrupts += list(chunk.get("__interrupt__") or ())
                self._updates(chunk)
                if "adapter" in chunk:  # the model call starts now
                    self.ui.thinking()
        return interrupts

    def _updates(self, chunk: Mapping[str, Any]) -> None:
        for node, update in chunk.items():
            if node.startswith("__") or not isinstance(update, Mapping):
                continue
            for message in update.get("messages") or []:
                if isinstance(message, AIMessage):
                    self.ui.end_answer()
                    # a reply with a gated call waits as a whole: nothing runs before the decision
                    waits = node == "model" and any(
                        c["name"] in self.gated for c in message.tool_calls
                    )
                    for call in message.tool_calls:
                        self.ui.call_started(
                            call.get("id") or "", call["name"], call["args"], waiting=waits
                        )
                elif isinstance(message, ToolMessage):
                    text = text_of(message.content)
                    if node == "approve":
                        state, detail = "rejected", text
                    elif message.status == "error" or reports_failure(text):
                        state, detail = "error", _first_line(text)
                    else:
                        state, detail = "done", ""
                    self.ui.call_finished(message.tool_call_id, state, detail)

    def _record(self, record: ModelCallRecord) -> None:
        if self.trace_file is not None:
            self.trace_file.write(record.to_json() + "\n")
            self.trace_file.flush()
        if self.show_trace:
            self.ui.trace(record)

    # -- approvals

    def _decide(self, interrupts: Sequence[Any]) -> Any:
        """The resume value for ``interrupts``, asked at the terminal."""
        answers = {i.id: self._review(i.value) for i in interrupts}
        if len(interrupts) == 1:
            return next(iter(answers.values()))
        return answers

    def _review(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, Mapping) or "action_requests" not in request:
            raise CLIError(
                f"the graph paused with a question this command cannot answer: {request!r}"
            )
        actions = list(request["action_requests"])
        configs = list(request.get("review_configs") or [])
        decisions = []
        for i, action in enumerate(actions):
            allowed = ["approve", "edit", "reject"]
            if i < len(configs):
                allowed = list(configs[i].get("allowed_decisions") or allowed)
            decisions.append(self._decision(action, allowed))
        return {"decisions": decisions}

    def _decision(self, action: Mapping[str, Any], allowed: Sequence[str]) -> dict[str, Any]:
        keys = {"y": "approve", "e": "edit", "n": "reject"}
        offered = "/".join(k for k, v in keys.items() if v in allowed)
        name, args = action["name"], action.get("args") or {}
        question = f"run {name} {json.dumps(args, ensure_ascii=False)}? [{offered}] "
        try:
            while True:
                answer = self.ui.ask(question).strip().lower()[:1]
                kind = keys.get(answer)
                if kind is None or kind not in allowed:
                    continue
                if kind == "approve":
                    return {"type": "approve"}
                if kind == "reject":
                    reason = self.ui.ask("reason (sent to the model): ").strip()
                    return {"type": "reject", "message": reason or None}
                edited = self._edited_args(args)
                if edited is not None:
                    return {"type": "edit", "edited_action": {"name": name, "args": edited}}
        except EOFError as exc:
            raise CLIError(
                f"{name} needs approval and input has ended; the thread is saved: "
                f"answer later with --resume {self.thread_id}"
            ) from exc

    def _edited_args(self, current: Any) -> dict[str, Any] | None:
        text = self.ui.ask("new arguments as a JSON object (empty: keep them): ").strip()
        if not text:
            return dict(current)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            self.ui.note(f"not JSON ({exc}); try again")
            return None
        if not isinstance(value, dict):
            self.ui.note("the arguments must be a JSON object; try again")
            return None
        return value


def _last_question(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return text_of(message.content)
    return ""


# --------------------------------------------------------------------------- commands


@contextlib.contextmanager
def _trace_output(path: str | None) -> Iterator[IO[str] | None]:
    if path is None:
        yield None
        return
    try:
        handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise CLIError(f"trace file {path}: {exc.strerror or exc}") from exc
    with handle:
        yield handle


def _check_gated(names: Sequence[str], tools: Sequence[BaseTool]) -> None:
    known = {t.name for t in tools}
    unknown = [n for n in names if n not in known]
    if unknown:
        listed = ", ".join(sorted(known)) or "none (give --mcp)"
        raise CLIError(f"--approve {unknown[0]}: no such tool; tools: {listed}")


def _build_graph(
    args: argparse.Namespace, ui: UI, model: BaseChatModel, tools: list[BaseTool], saver: Any
) -> Any:
    from fncall_graph.graphs import create_fncall_graph
    from fncall_graph.graphs.factory import initial_dialect

    gated = list(dict.fromkeys(getattr(args, "approve", None) or []))
    _check_gated(gated, tools)
    options: dict[str, Any] = {}
    if gated:
        options["interrupt_on"] = dict.fromkeys(gated, True)
    dialect = initial_dialect(model, choose_dialect(args.dialect, getattr(args, "lang", None)))
    if args.command == "chat" or args.trace:
        names = ", ".join(t.name for t in tools) or "none (give --mcp)"
        ui.note(f"dialect {dialect.name} · {len(tools)} tools: {names}")
    return create_fncall_graph(
        model,
        tools,
        dialect=dialect,
        system_prompt=args.system,
        checkpointer=saver,
        **options,
    )


def _thread(args: argparse.Namespace) -> tuple[str, bool]:
    """The thread id and whether it must exist already (``--resume``)."""
    if args.resume and args.thread and args.resume != args.thread:
        raise CLIError("--thread and --resume name different threads; give one")
    if args.resume:
        return args.resume, True
    return args.thread or str(uuid.uuid4()), False


@contextlib.contextmanager
def _open_session(
    args: argparse.Namespace, ui: UI, thread_id: str, must_exist: bool, db: Path
) -> Iterator[Session]:
    """The model, MCP tools, checkpoints and trace output of ``chat`` and ``run``."""
    model = load_model(args.model, ui)
    with (
        mcp_tools(args.mcp) as tools,
        sqlite_checkpointer(db) as saver,
        _trace_output(args.trace_file) as trace_file,
    ):
        graph = _build_graph(args, ui, model, tools, saver)
        tracer = Tracer(args.system) if (args.trace or trace_file) else None
        session = Session(
            graph,
            thread_id,
            ui,
            tracer=tracer,
            trace_file=trace_file,
            show_trace=args.trace,
            gated=args.approve or [],
        )
        if must_exist and not session.exists():
            raise CLIError(f"--resume {thread_id}: no such thread in {db}")
        yield session


def cmd_chat(args: argparse.Namespace) -> int:
    """The interactive session."""
    ui = UI(sys.stdout)
    thread_id, must_exist = _thread(args)
    db = Path(args.db) if args.db else default_db_path()
    with _open_session(args, ui, thread_id, must_exist, db) as session:
        ui.note(f"thread {thread_id} (checkpoints in {db}); type /exit or Ctrl-D to leave")
        if session.pending():
            _report(ui, _guarded(ui, session.resume))
        while True:
            try:
                question = ui.ask("you> ").strip()
            except EOFError:
                ui.close()
                print(file=ui.stream)
                break
            except KeyboardInterrupt:
                print(file=ui.stream)
                continue
            if not question:
                continue
            if question in ("/exit", "/quit", "exit", "quit"):
                break
            _report(ui, _guarded(ui, lambda q=question: session.ask(q)))
    return 0


def _guarded(ui: UI, turn: Any) -> Outcome | None:
    """Run one chat turn; a failure is reported and the session goes on."""
    try:
        return turn()
    except KeyboardInterrupt:
        ui.close()
        ui.note("(turn interrupted)")
    except CLIError as exc:
        ui.close()
        ui.note(f"{PROG}: {exc}")
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        ui.close()
        ui.note(f"{PROG}: error: {describe_error(exc)}")
    return None


def _report(ui: UI, outcome: Outcome | None) -> None:
    if outcome is not None and outcome.stopped:
        ui.note(f"({outcome.stopped})")


def cmd_run(args: argparse.Namespace) -> int:
    """One question, non-interactive."""
    ui = UI(sys.stderr if args.json else sys.stdout, quiet=args.json)
    thread_id, must_exist = _thread(args)
    if not args.question and not must_exist:
        raise CLIError("give a question (or --resume THREAD to finish an interrupted turn)")
    db = Path(args.db) if args.db else default_db_path()
    with _open_session(args, ui, thread_id, must_exist, db) as session:
        outcome: Outcome | None = None
        if session.pending():
            outcome = session.resume()
        if args.question:
            outcome = session.ask(args.question)
        if args.json:
            document = {"thread_id": thread_id, "messages": messages_to_dict(session.messages())}
            print(json.dumps(document, ensure_ascii=False, indent=1))
    if outcome is None or outcome.stopped:
        why = outcome.stopped if outcome is not None else "the thread had nothing to resume"
        raise CLIError(f"no final answer: {why}")
    return 0


RECORDED_MODEL = "replay:database-assistant"
OWN_MODEL_HINT = """\
Run it on your own model:
  fncall-graph demo --model ollama:qwen3                      # Ollama (OLLAMA_HOST, default 127.0.0.1:11434)
  fncall-graph demo --model 'http://127.0.0.1:8000/v1#NAME'   # any OpenAI-compatible server (vLLM, llama.cpp, LM Studio)
  fncall-graph demo --model openai:gpt-4o-mini                # OPENAI_API_KEY
  fncall-graph chat --model ollama:qwen3 --mcp mcp.json       # your own MCP servers
Measure a model on this example, per dialect: python bench/real_model.py SPEC"""


def cmd_demo(args: argparse.Namespace) -> int:
    """The database-assistant example on a fresh database, printed as a transcript.

    Without --model: first the recorded replies of Qwen-Max to this example, played
    through the real parser, mcp-server-sqlite and a SQLite checkpointer; then the same
    questions live on the bundled local model; then how to use your own model.
    """
    ui = UI(sys.stdout)
    ui.heading("fncall-graph demo · the database-assistant example")
    spec = args.model or os.environ.get("FNCALL_MODEL")
    if spec:
        model = load_model(spec, ui, temperature=0, max_tokens=384)
        _demo_session(ui, model, args, f"live: {spec}")
    else:
        recorded = load_model(RECORDED_MODEL, ui)
        _demo_session(
            ui,
            recorded,
            args,
            "part 1 of 2 · RECORDED replies of Qwen-Max (not a live model) through the real "
            "parser, mcp-server-sqlite and a SQLite checkpointer",
        )
        local = load_model("local", ui, temperature=0, max_tokens=384)
        _demo_session(
            ui,
            local,
            args,
            "part 2 of 2 · LIVE: the bundled SmolLM2-135M on llama.cpp, a 135M-parameter "
            f"model: it calls real tools but {LOCAL_MODEL_SCORE}",
        )
    ui.heading(OWN_MODEL_HINT)
    return 0


#: What bench/real_model.py measured for the bundled model on this example (README).
LOCAL_MODEL_SCORE = "answers 0 of the 4 questions correctly (bench/real_model.py local)"


def _demo_session(ui: UI, model: BaseChatModel, args: argparse.Namespace, title: str) -> None:
    """Ask the example's questions in one thread over a fresh copy of its database."""
    from fncall_graph.examples import database_assistant as example
    from fncall_graph.graphs import create_fncall_graph
    from fncall_graph.graphs.factory import initial_dialect

    with tempfile.TemporaryDirectory(prefix="fncall-graph-demo-") as tmp:
        db = example.make_database(Path(tmp) / "test.db")
        try:
            config = example.sqlite_config(db)
        except FileNotFoundError as exc:
            raise CLIError(str(exc)) from exc
        with (
            mcp_tools(config) as tools,
            sqlite_checkpointer(Path(tmp) / "threads.sqlite") as saver,
            _trace_output(args.trace_file) as trace_file,
        ):
            dialect = initial_dialect(model, choose_dialect(args.dialect, None))
            graph = create_fncall_graph(
                model,
                tools,
                dialect=dialect,
                system_prompt=example.SYSTEM_PROMPT,
                checkpointer=saver,
                max_iterations=6,  # a small model that never answers stops in time
            )
            tracer = Tracer(example.SYSTEM_PROMPT) if (args.trace or trace_file) else None
            session = Session(
                graph, "demo", ui, tracer=tracer, trace_file=trace_file, show_trace=args.trace
            )
            ui.heading(f"── {title}")
            ui.heading(f"{len(tools)} MCP tools · dialect {dialect.name} · database {db}")
            ui.heading(f"system> {example.SYSTEM_PROMPT}")
            for number, question in enumerate(example.QUESTIONS, 1):
                ui.heading(f"Q{number}> {question}")
                outcome = session.ask(question)
                if outcome.stopped:
                    ui.note(f"({outcome.stopped})")
            rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM log").fetchone()[0]
            ui.heading(
                f"log rows now: {rows} (the example starts with 1; the last question adds one)"
            )


def cmd_prompt(args: argparse.Namespace) -> int:
    """Print the system prompt a dialect writes for the tools of an MCP config."""
    from fncall_graph.adapters import get_dialect

    options = {"lang": args.lang} if args.lang else {}
    try:
        dialect = get_dialect(args.dialect, **options)
    except (ValueError, TypeError) as exc:
        raise CLIError(f"--dialect {args.dialect}: {exc}") from exc
    with mcp_tools(args.mcp) as tools:
        if dialect.native:
            # native calling has no prompt text: the tools travel as the request's `tools`
            payload = [convert_to_openai_tool(t) for t in tools]
            print(json.dumps(payload, ensure_ascii=False, indent=1))
            return 0
        history = [SystemMessage(args.system)] if args.system else []
        rendered = dialect.render(history, tools)
    prompts = [text_of(m.content) for m in rendered if m.type == "system"]
    sys.stdout.write("\n\n".join(prompts) + "\n")
    sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------- errors


def describe_error(exc: BaseException) -> str:
    """One line saying what went wrong, for errors raised while a graph runs."""
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


# --------------------------------------------------------------------------- parser


def _model_options(p: argparse.ArgumentParser, *, demo: bool = False) -> None:
    p.add_argument(
        "--model",
        metavar="SPEC",
        help="model spec: 'ollama:NAME', 'openai:NAME', 'http://HOST:PORT/v1#NAME', "
        "'PROVIDER:NAME', 'replay:FILE' (or 'replay:database-assistant' for a bundled recording), "
        "'local' (default: $FNCALL_MODEL, else 'local')",
    )
    p.add_argument(
        "--dialect",
        choices=DIALECTS,
        default="auto",
        help="how tools reach the model: native function calling, or prompt text in "
        "hermes, qwen or react form; 'auto' = native when the model supports it, "
        "else react (a replay model: the dialect it was recorded in)" + " (default: auto)",
    )
    p.add_argument("--trace", action="store_true", help="print every model call's four views")
    p.add_argument(
        "--trace-file", metavar="F", help="write every model call's four views to F as JSON Lines"
    )


def _thread_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mcp", metavar="mcp.json", help='MCP servers: {"mcpServers": {...}}')
    p.add_argument("--system", metavar="PROMPT", help="system prompt")
    p.add_argument("--lang", choices=("zh", "en"), help="prompt language of the qwen dialect")
    p.add_argument("--thread", metavar="ID", help="thread to use (default: a new one)")
    p.add_argument("--resume", metavar="THREAD", help="continue an existing (interrupted) thread")
    p.add_argument(
        "--db",
        metavar="FILE",
        help=f"SQLite file for checkpoints (default: ${DB_ENV}, else "
        "$XDG_STATE_HOME/fncall-graph/checkpoints.sqlite)",
    )
    p.add_argument(
        "--approve",
        metavar="TOOL",
        action="append",
        help="ask before TOOL runs: y (run), e (edit arguments), n (reject, with a reason); "
        "repeatable",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Tool use over MCP servers for any chat model, with or without native "
        "function calling.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chat = commands.add_parser("chat", help="interactive session", description=cmd_chat.__doc__)
    _model_options(chat)
    _thread_options(chat)
    chat.set_defaults(handler=cmd_chat)

    run = commands.add_parser("run", help="answer one question", description=cmd_run.__doc__)
    _model_options(run)
    _thread_options(run)
    run.add_argument("--json", action="store_true", help="print the thread's messages as JSON")
    run.add_argument("question", nargs="?", help="the question")
    run.set_defaults(handler=cmd_run)

    demo = commands.add_parser(
        "demo", help="the database-assistant example", description=cmd_demo.__doc__
    )
    _model_options(demo, demo=True)
    demo.set_defaults(handler=cmd_demo)

    prompt = commands.add_parser(
        "prompt", help="print a dialect's system prompt", description=cmd_prompt.__doc__
    )
    prompt.add_argument("--dialect", required=True, choices=DIALECTS[1:])
    prompt.add_argument("--lang", choices=("zh", "en"), help="prompt language (qwen)")
    prompt.add_argument("--mcp", metavar="mcp.json", required=True, help="MCP servers")
    prompt.add_argument("--system", metavar="PROMPT", help="system prompt to put in front")
    prompt.set_defaults(handler=cmd_prompt)
    return parser


def _fail(message: str) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fncall-graph`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except CLIError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1  # the reader went away (e.g. `| head`): nothing left to say
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        _fail(describe_error(exc))


if __name__ == "__main__":
    sys.exit(main())
