"""What the person sees: streamed answers, live tool lines, spinners, traces, questions."""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TextIO

from fncall_graph.trace import ModelCallRecord

__all__ = []


# What stays as it is in text of many lines (``lines=True``): its line breaks and tabs,
# spaces of other scripts (U+3000), and the joiners of emoji and of some scripts.
_LINE_TEXT = frozenset("\n\t\u200c\u200d")
# white space a terminal takes as a move, not a space: written out in any text
_BREAKS = frozenset("\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\u2028\u2029")


def shown(text: str, *, lines: bool = False) -> str:
    r"""``text`` from outside (a tool's name, arguments or result, a server's words) as
    the terminal may show it: every character a terminal would obey rather than show is
    written out as Python writes it in a string (``\x1b``, ``\r``, ``\u202e``), so it
    cannot move the cursor, erase or recolour a line, or reorder what follows.

    Written out: C0 and C1 controls and DEL, bidi controls (U+202A-U+202E, U+2066-U+2069,
    U+200E, U+200F, U+061C) and every other format character, line and paragraph
    separators, lone surrogates, unassigned and private-use characters, and spaces other
    than U+0020: what :meth:`str.isprintable` calls not printable. ``lines=True`` (text of
    many lines: an answer, a note) keeps line breaks, tabs, other spaces and the zero-width
    joiners. Rich's markup is not this function's job (see :func:`_escape`).

    Args:
        text: what to show.
        lines: keep its line breaks (and tabs, spaces, joiners).

    Example:
        >>> shown("drop_all\x1b[2K\rread_query \u202etxt")
        'drop_all\\x1b[2K\\rread_query \\u202etxt'
        >>> print(shown("line 1\nline\r2", lines=True))
        line 1
        line\r2
    """
    if text.isprintable():
        return text
    kept = _LINE_TEXT if lines else frozenset()
    out = []
    for c in text:
        if c.isprintable() or c in kept or (lines and c.isspace() and c not in _BREAKS):
            out.append(c)
        else:
            out.append(repr(c)[1:-1])  # a lone character's escape, quotes cut off
    return "".join(out)


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


def trace_text(record: ModelCallRecord) -> str:
    """A model call's four views for reading: each message's text as written, not as JSON.

    Prompts hold many lines and quotes; as JSON strings they would read as one line of
    ``\\n`` and ``\\"``. Each message is a ``[role]`` line, its text indented below.

    Example:
        >>> from fncall_graph.trace import ModelCallRecord
        >>> print(trace_text(ModelCallRecord(1, 1, "q", 1, "hermes",
        ...     [{"role": "user", "content": "a\\nb"}], [], "out", {"role": "assistant"})))
        raw input:
          [user]
            a
            b
        processed input:
          (none)
        raw output:
            out
        processed output:
          [assistant]
    """
    views = [
        ("raw input", record.raw_input),
        ("processed input", record.processed_input),
        ("raw output", record.raw_output),
        ("processed output", [record.processed_output]),
    ]
    lines: list[str] = []
    for title, view in views:
        lines.append(f"{title}:")
        if isinstance(view, str):
            lines += _indented(view, 4)
        elif isinstance(view, dict):
            lines += _message_lines(view)
        elif not view:
            lines.append("  (none)")
        else:
            for message in view:
                lines += _message_lines(message)
    return "\n".join(lines)


def _indented(text: str, by: int) -> list[str]:
    return [" " * by + line for line in text.splitlines()] or [" " * by]


def _message_lines(message: Any) -> list[str]:
    if not isinstance(message, dict):
        return _indented(json.dumps(message, ensure_ascii=False), 4)
    rest = dict(message)
    header = f"  [{rest.pop('role', rest.pop('type', '?'))}]"
    if "tool_call_id" in rest:
        header += f" (result of {rest.pop('tool_call_id')})"
    lines = [header]
    content = rest.pop("content", None)
    if isinstance(content, list):  # content blocks: their text, in order
        content = "".join(
            b if isinstance(b, str) else str(b.get("text") or "")
            for b in content
            if isinstance(b, str | dict)
        )
    if content:
        lines += _indented(str(content), 4)
    for call in rest.pop("tool_calls", None) or []:
        function = call.get("function") or call
        lines.append(f"    → {function.get('name')} {function.get('arguments')}")
    for key, value in rest.items():  # reasoning_content, invalid_tool_calls, …
        if value not in (None, "", [], {}):
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            lines.append(f"    {key}:")
            lines += _indented(text, 6)
    return lines


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
    progress: str = ""  # the server's latest progress report, as a bar

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def line(self) -> str:
        # the name, arguments and words of a server, each in one line with its controls
        # written out: a name cannot rewrite the line it is on
        text = f"{shown(self.name)} {shown(_short(self.args))} {self.state}"
        if self.state == "running" and self.progress:
            text += f" {shown(self.progress)}"
        if self.state != "waiting":
            text += f" {self.elapsed():.2f}s"
        if self.detail:
            text += f": {shown(_short(self.detail, 120))}"
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
        "repeated": "↺",
    }
    _STYLE: ClassVar[dict[str, str]] = {
        "running": "yellow",
        "waiting": "magenta",
        "done": "green",
        "error": "red",
        "rejected": "red",
        "repeated": "yellow",
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
        print(shown(text, lines=True), file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def working(self, text: str) -> Iterator[None]:
        """A spinner saying ``text`` while the block runs (one plain line off a terminal)."""
        if not self.tty:
            self.note(f"{text} ...")
            yield
            return
        self.end_answer()
        self._stop_live()
        with self.console.status(_escape(shown(text))):
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
        text = shown(text, lines=True)
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
        # the model may repeat what a tool's result holds: shown, not obeyed
        self._write(shown(text, lines=True))

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

    def calls_resumed(self, rejected: Collection[str] = ()) -> None:
        """The person has decided: waiting calls start now (their time starts here too),
        but for the ``rejected`` ones, which never run."""
        for call_id, call in self.calls.items():
            if call.state == "waiting" and call_id not in rejected:
                call.state, call.started = "running", time.monotonic()
                self._show(call_id)

    def call_progress(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        """An MCP server's progress report for a running call: its bar moves."""
        call = self.calls.get(call_id)
        if self.quiet or call is None or call.ended is not None:
            return
        if total:
            filled = max(0, min(10, round(10 * progress / total)))
            bar = f"[{'#' * filled}{'-' * (10 - filled)}] {progress:g}/{total:g}"
        else:
            bar = f"[{progress:g}]"
        call.progress = f"{bar} {message}" if message else bar
        if self.tty:
            self._show(call_id)  # the board redraws the line in place

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
        if record.call_format is not None:  # how calls in the reply's text were read
            title += f" · call format {record.call_format} ({record.call_format_source})"
        title, text = shown(title, lines=True), shown(trace_text(record), lines=True)
        if self.tty:
            self.console.rule(_escape(title))
            self.console.print(text, markup=False)
            self.console.rule()
        else:
            self._write(f"--- {title} ---\n{text}\n--- end of model call ---\n")

    # -- questions

    def ask(self, prompt: str) -> str:
        """A line typed by the user (``EOFError`` when input has ended).

        Ctrl-C while asking raises ``KeyboardInterrupt`` after ending the line, so what
        is said next does not follow the echoed ``^C`` on the same line.
        """
        self.end_answer()
        self._stop_live()
        prompt = shown(prompt, lines=True)
        try:
            if self.stream is sys.stdout:
                return input(prompt)
            self._write(prompt)
            line = sys.stdin.readline()
        except KeyboardInterrupt:
            self._write("\n")
            raise
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
