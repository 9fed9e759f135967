"""The ``chat`` and ``run`` commands: a thread's turns, asked at the terminal (``chat``,
with its ``/`` commands) or one question at a time (``run``)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import messages_to_dict
from langchain_core.tools import BaseTool

from fncall_graph.trace import Tracer

from .model_options import (
    call_format_note,
    declared_call_format,
    grammar_constraint,
    trace_output,
)
from .resources import (
    DEBUG_ENV,
    MCP_LOG,
    PROG,
    CLIError,
    choose_dialect,
    default_db_path,
    describe_error,
    load_model,
    mcp_toolkit,
    sqlite_checkpointer,
)
from .session import Outcome, Session
from .terminal import UI

__all__ = []


def _build_graph(
    args: argparse.Namespace, ui: UI, model: BaseChatModel, tools: list[BaseTool], saver: Any
) -> Any:
    from fncall_graph.adapters.models import initial_dialect
    from fncall_graph.graphs import create_fncall_graph

    gated = _gated_tools(args, tools)
    options: dict[str, Any] = {}
    if gated:
        options["interrupt_on"] = dict.fromkeys(gated, True)
    dialect = initial_dialect(model, choose_dialect(args.dialect, getattr(args, "lang", None)))
    constrained = grammar_constraint(args, dialect)
    if constrained is not None:
        options["constrained"] = constrained
    call_format = declared_call_format(args)
    if args.command == "chat" or args.trace:
        names = ", ".join(t.name for t in tools) or "none (give --mcp)"
        ui.note(f"dialect {dialect.name} · {len(tools)} tools: {names}")
        ui.note(call_format_note(model, dialect, call_format))
        if args.command == "chat" and not args.approve and gated:
            ui.note(
                f"asks before: {', '.join(gated)} (not marked read-only by a server trusted "
                'with "trust": "annotations"; --approve TOOL chooses, --approve none asks '
                "before nothing)"
            )
    return create_fncall_graph(
        model,
        tools,
        dialect=dialect,
        system_prompt=args.system,
        checkpointer=saver,
        call_format=call_format,
        max_repeats=args.max_repeats or None,
        **options,
    )


#: ``--approve none``: no tool asks first.
NO_APPROVALS = "none"


def _gated_tools(args: argparse.Namespace, tools: Sequence[BaseTool]) -> list[str]:
    """The tools whose calls ask first: those ``--approve`` names; else, in ``chat``, every
    tool not known to only read (MCP's default is "may write", and a server's annotations
    count only where its entry says ``"trust": "annotations"``)."""
    from fncall_graph.guarantees import unknown_tool
    from fncall_graph.nodes.tools import writes_by_annotation

    named = list(dict.fromkeys(getattr(args, "approve", None) or []))
    if named == [NO_APPROVALS]:
        return []
    if NO_APPROVALS in named:
        raise CLIError("--approve none cannot be given with tool names")
    if named:
        problem = unknown_tool(named, [t.name for t in tools])
        if problem:
            raise CLIError(f"--approve names {problem}" + ("" if tools else " (give --mcp)"))
        return named
    return list(writes_by_annotation(tools)) if args.command == "chat" else []


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
    model = load_model(args.model, ui, max_tokens=args.max_tokens, grammar=args.grammar)
    with (
        mcp_toolkit(args.mcp, ui, db.parent / MCP_LOG) as toolkit,
        sqlite_checkpointer(db) as saver,
        trace_output(args.trace_file) as trace_file,
    ):
        tools = toolkit.tools if toolkit is not None else []
        graph = _build_graph(args, ui, model, tools, saver)
        tracer = Tracer(args.system) if (args.trace or trace_file) else None
        session = Session(
            graph,
            thread_id,
            ui,
            tracer=tracer,
            trace_file=trace_file,
            show_trace=args.trace,
            gated=_gated_tools(args, tools),
            toolkit=toolkit,
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
                continue
            if not question:
                continue
            if question in ("exit", "quit"):
                break
            command, _, rest = question.partition(" ")
            if not _COMMAND.fullmatch(command):
                _report(ui, _guarded(ui, lambda q=question: session.ask(q)))
            elif command in ("/exit", "/quit"):
                break
            elif command == "/help":
                ui.note(CHAT_HELP)
            elif command == "/prompts":
                _list_prompts(ui, session)
            elif command == "/prompt" and rest.strip():
                name, _, words = rest.strip().partition(" ")
                _report(ui, _guarded(ui, lambda n=name, w=words: session.open_with(n, w)))
            elif command == "/prompt":
                ui.note(
                    "give the prompt's name: /prompt NAME [ARG=VALUE ...] (/prompts lists them)"
                )
            else:
                ui.note(f"unknown command {command}; /help lists the commands")
    return 0


# A chat line whose first word looks like this is a command, not a question (a path
# such as /etc/hosts is a question).
_COMMAND = re.compile(r"/[A-Za-z][\w-]*")

#: What /help prints in ``chat``.
CHAT_HELP = """\
commands (anything else is a question for the model):
  /help                          this list
  /prompts                       the MCP servers' prompts
  /prompt NAME [ARG=VALUE ...]   start a turn with an MCP prompt (or its arguments as JSON)
  /exit, /quit, Ctrl-D           leave (the thread is kept: --resume THREAD continues it)
Ctrl-C interrupts the answer being written, or a question being asked."""


def _list_prompts(ui: UI, session: Session) -> None:
    prompts = session.toolkit.prompts if session.toolkit is not None else []
    if not prompts:
        ui.note("no MCP prompts (none of the servers offers any)")
    for p in prompts:
        names = [a["name"] + ("" if a.get("required") else "?") for a in p.arguments]
        ui.note(f"/prompt {p.name} {' '.join(f'{n}=…' for n in names)}  {p.description}".rstrip())


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
    # said after the turn, so that a failed run still ends with its one error line
    no_tools = "no tools: without --mcp the model answers from what it knows"
    if outcome is None or outcome.stopped:
        why = outcome.stopped if outcome is not None else "the thread had nothing to resume"
        raise CLIError(f"no final answer: {why}" + (f" ({no_tools})" if not args.mcp else ""))
    if not args.mcp:
        ui.note(f"{PROG}: warning: {no_tools}")
    return 0
