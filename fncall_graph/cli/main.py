"""The commands (chat, run, demo, prompt), their options, and the entry point."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    SystemMessage,
    messages_to_dict,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from fncall_graph.adapters.formats.base import text_of
from fncall_graph.graphs import environment
from fncall_graph.nodes._repeats import DEFAULT_MAX_REPEATS
from fncall_graph.trace import Tracer

from .resources import (
    DB_ENV,
    DEBUG_ENV,
    DIALECTS,
    GRAMMAR_MODES,
    GRAMMAR_OFF,
    MCP_LOG,
    PROG,
    CLIError,
    choose_dialect,
    default_db_path,
    describe_error,
    load_model,
    mcp_toolkit,
    mcp_tools,
    sqlite_checkpointer,
)
from .session import Outcome, Session
from .terminal import UI

__all__ = ["main"]

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
    constrained = _constrained(args, dialect)
    if constrained is not None:
        options["constrained"] = constrained
    call_format = _call_format(args)
    if args.command == "chat" or args.trace:
        names = ", ".join(t.name for t in tools) or "none (give --mcp)"
        ui.note(f"dialect {dialect.name} · {len(tools)} tools: {names}")
        ui.note(call_format_note(model, dialect, call_format))
        if args.command == "chat" and not args.approve and gated:
            ui.note(
                f"asks before: {', '.join(gated)} (their servers do not mark them read-only; "
                "--approve TOOL chooses, --approve none asks before nothing)"
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
    tool whose annotations do not say it only reads (MCP's default is "may write")."""
    from fncall_graph.nodes.approve import unknown_tool
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


def _constrained(args: argparse.Namespace, dialect: Any) -> bool | str | None:
    """``constrained`` for ``--grammar`` (``None``: not given, the graph's default)."""
    if args.grammar is None:
        return None
    if dialect.native and args.grammar != GRAMMAR_OFF:
        raise CLIError(
            f"--grammar {args.grammar}: the dialect is native (the server's own tool calling), "
            "which a grammar does not constrain; give --dialect hermes (or qwen, react) too"
        )
    return GRAMMAR_MODES[args.grammar]


def _call_format(args: argparse.Namespace) -> str | None:
    """``--call-format``, checked: a format or a model family's name."""
    from fncall_graph.adapters.models.call_format import check_call_format

    given = getattr(args, "call_format", None)
    if given is None:
        return None
    try:
        return check_call_format(given, "--call-format")
    except ValueError as exc:
        raise CLIError(str(exc)) from exc


def call_format_note(model: BaseChatModel, dialect: Any, declared: str | None) -> str:
    """``call format NAME (where from)``: how the model's calls in text will be read."""
    from fncall_graph.adapters.models.call_format import resolve_call_format

    fmt = resolve_call_format(model, dialect=dialect, declared=declared)
    if fmt.name is None:
        return "call format: not known; learned from the thread's first call"
    return f"call format {fmt.name} ({fmt.source}: {fmt.detail})"


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
        _trace_output(args.trace_file) as trace_file,
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


RECORDED_MODEL = "replay:database-assistant"
OWN_MODEL_HINT = """\
Run it on your own model:
  fncall-graph demo --model ollama:qwen3                      # Ollama (OLLAMA_HOST, default 127.0.0.1:11434)
  fncall-graph demo --model 'http://127.0.0.1:8000/v1#NAME'   # any OpenAI-compatible server (vLLM, llama.cpp, LM Studio)
  fncall-graph demo --model openai:gpt-4o-mini                # OPENAI_API_KEY
  fncall-graph chat --model ollama:qwen3 --mcp mcp.json       # your own MCP servers
Measure a model on this example, per dialect: fncall-graph bench SPEC"""


def cmd_demo(args: argparse.Namespace) -> int:
    """The database-assistant example on a fresh database, printed as a transcript.

    Without --model: first the recorded replies of Qwen-Max to this example, played
    through the real parser, mcp-server-sqlite and a SQLite checkpointer; then the same
    questions live on the bundled local model; then how to use your own model. A live
    model's writes (write_query, create_table, append_insight) ask first; with input not
    from a terminal they are rejected, and the transcript says what would have run.
    """
    ui = UI(sys.stdout)
    ui.heading("fncall-graph demo · the database-assistant example")
    spec = environment.model_spec(args.model)
    if spec:
        model = load_model(
            spec, ui, max_tokens=args.max_tokens or 384, grammar=args.grammar, temperature=0
        )
        if spec.startswith("replay"):
            title = f"RECORDED replies ({spec}), not a live model"
        else:
            title = f"live: {spec}"
        _demo_session(ui, model, args, title)
    else:
        recorded = load_model(RECORDED_MODEL, ui)
        _demo_session(
            ui,
            recorded,
            args,
            "part 1 of 2 · RECORDED replies of Qwen-Max (not a live model) through the real "
            "parser, mcp-server-sqlite and a SQLite checkpointer",
        )
        local = load_model("local", ui, max_tokens=args.max_tokens or 384, temperature=0)
        _demo_session(
            ui,
            local,
            args,
            "part 2 of 2 · LIVE: the bundled SmolLM2-135M on llama.cpp, the protocol working "
            "on a toy model: its calls are parsed and run for real (writes ask first), but a "
            f"135M-parameter model {LOCAL_MODEL_SCORE}; do not read its answers as facts",
        )
    ui.heading(OWN_MODEL_HINT)
    return 0


#: What fncall-graph bench local measured for the bundled model (docs/local-model.md).
LOCAL_MODEL_SCORE = "answers 0 of the 4 questions correctly (fncall-graph bench local)"


def _demo_session(ui: UI, model: BaseChatModel, args: argparse.Namespace, title: str) -> None:
    """Ask the example's questions in one thread over a fresh copy of its database.

    A recording of this example's questions plays the recorded session, its one write
    included; any other model's writes are gated (see :func:`cmd_demo`).
    """
    from fncall_graph.adapters.models import accepts_grammar, initial_dialect
    from fncall_graph.examples import database_assistant as example
    from fncall_graph.graphs import create_fncall_graph
    from fncall_graph.nodes.tools import writes_by_annotation

    recorded = tuple(getattr(model, "questions", None) or ()) == example.QUESTIONS
    with tempfile.TemporaryDirectory(prefix="fncall-graph-demo-") as tmp:
        db = example.make_database(Path(tmp) / "test.db")
        at_start = example.table_rows(db)
        try:
            config = example.sqlite_config(db)
        except FileNotFoundError as exc:
            raise CLIError(str(exc)) from exc
        with (
            mcp_tools(config, ui, environment.state_dir() / MCP_LOG) as tools,
            sqlite_checkpointer(Path(tmp) / "threads.sqlite") as saver,
            _trace_output(args.trace_file) as trace_file,
        ):
            dialect = initial_dialect(model, choose_dialect(args.dialect, None))
            # the tools' annotations decide, as in chat and Studio; the server leaves its
            # reads unannotated, and the example knows them
            gated = [] if recorded else list(writes_by_annotation(example.mark_read_only(tools)))
            # small models otherwise answer without calling anything
            constrained = _constrained(args, dialect)
            if constrained is None:
                constrained = (
                    "first_call" if not dialect.native and accepts_grammar(model) else False
                )
            call_format = _call_format(args)
            graph = create_fncall_graph(
                model,
                tools,
                dialect=dialect,
                call_format=call_format,
                constrained=constrained,
                system_prompt=example.SYSTEM_PROMPT,
                checkpointer=saver,
                interrupt_on=dict.fromkeys(gated, True) or None,
            )
            tracer = Tracer(example.SYSTEM_PROMPT) if (args.trace or trace_file) else None
            session = Session(
                graph,
                "demo",
                ui,
                tracer=tracer,
                trace_file=trace_file,
                show_trace=args.trace,
                gated=gated,
                unattended=not sys.stdin.isatty(),
            )
            ui.heading(f"── {title}")
            setup = [
                f"{len(tools)} MCP tools",
                f"dialect {dialect.name}",
                call_format_note(model, dialect, call_format),
            ]
            if constrained == "first_call":
                setup.append("first call of each question constrained to tool calls (grammar)")
            elif constrained:
                setup.append("every reply constrained to calls or an answer (grammar)")
            if gated:
                setup.append(f"writes ask first ({', '.join(gated)})")
            elif recorded:
                setup.append("the recording's write runs as recorded")
            ui.heading(f"{' · '.join(setup)} · database {db}")
            ui.heading(f"system> {example.SYSTEM_PROMPT}")
            for number, question in enumerate(example.QUESTIONS, 1):
                ui.heading(f"Q{number}> {question}")
                outcome = session.ask(question)
                if outcome.stopped and outcome.answer is None:  # a stop message was shown
                    ui.note(f"({outcome.stopped})")
        now = example.table_rows(db)
        ui.heading(
            f"log rows now: {now.get('log', 0)} ({at_start['log']} at the start) · rows per "
            f"table: {', '.join(f'{name} {count}' for name, count in now.items())}"
        )


def cmd_serve_local(args: argparse.Namespace) -> int:
    """Serve the bundled SmolLM2-135M-Instruct with llama.cpp's OpenAI-compatible server on
    127.0.0.1, until Ctrl-C (or SIGTERM); any OpenAI client, or --model of another
    fncall-graph command, can then use it."""
    import signal

    from fncall_graph.adapters.models.local_server import (
        MODEL_ALIAS,
        LocalModelServer,
        LocalServerError,
    )

    # the child's port setting is applied after its default (0: the kernel chooses)
    server = LocalModelServer(extra_args=["--set", f"port={args.port}"])
    stop = {signal.SIGINT, signal.SIGTERM}
    try:
        server.start()
    except LocalServerError as exc:
        raise CLIError(f"serve-local --port {args.port}: {exc}") from exc
    try:
        url = server.base_url
        print(f"serving {MODEL_ALIAS} (OpenAI-compatible) at {url}", flush=True)
        print(f"use it with: --model '{url}#{MODEL_ALIAS}'   (Ctrl-C stops it)", flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, stop)
        signal.sigwait(stop)
    finally:
        server.stop()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stop)
    print("stopped", flush=True)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Measure a model in each dialect and say which dialect to use: on the
    database-assistant example (four questions per mode over the real mcp-server-sqlite),
    or with --tasks bfcl on the BFCL categories simple, multiple, parallel,
    parallel_multiple and irrelevance (the bench extra). Small models score by chance: a
    measurement, not a verdict on the product."""
    from fncall_graph.adapters.models import DEFAULT_SPEC, ModelSpecError
    from fncall_graph.bench import measure

    spec = environment.model_spec(args.model) or DEFAULT_SPEC
    modes = [m for m in (args.modes or "").split(",") if m] or None
    known = {"native", "hermes", "qwen", "react"}
    for mode in modes or ():
        dialect, _, constraint = mode.partition("+")
        if dialect not in known or constraint not in ("", "first_call", "always"):
            raise CLIError(
                f"--modes: {mode!r} is not DIALECT or DIALECT+first_call|always "
                f"(dialects: {', '.join(sorted(known))})"
            )
    if args.limit is not None and args.limit < 0:
        raise CLIError(f"--limit {args.limit}: give a number of items per category (0: all)")
    show = lambda line: print(line, flush=True)  # noqa: E731 - the same sink for both sets
    try:
        if args.tasks == "bfcl":
            from fncall_graph.bench import default_modes
            from fncall_graph.bfcl import BFCLDataError
            from fncall_graph.bfcl import measure as measure_bfcl

            try:
                limit = 20 if args.limit is None else (args.limit or None)
                measure_bfcl(spec, modes or default_modes(spec), limit=limit, show=show)
            except BFCLDataError as exc:
                raise CLIError(str(exc)) from exc
        else:
            if args.limit is not None:
                raise CLIError("--limit is for --tasks bfcl (the example has its four questions)")
            measure(spec, modes, show=show)
    except ModelSpecError as exc:
        raise CLIError(str(exc)) from exc
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    """Print the system prompt a dialect writes for the tools of an MCP config."""
    from fncall_graph.adapters import get_dialect

    options = {"lang": args.lang} if args.lang else {}
    try:
        dialect = get_dialect(args.dialect, **options)
    except (ValueError, TypeError) as exc:
        raise CLIError(f"--dialect {args.dialect}: {exc}") from exc
    call_format = _call_format(args)
    if args.model is not None:
        # how this model's calls will be read back, on stderr: stdout is the prompt
        model = load_model(args.model, UI(sys.stderr))
        print(call_format_note(model, dialect, call_format), file=sys.stderr, flush=True)
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


# --------------------------------------------------------------------------- parser


def _model_options(p: argparse.ArgumentParser) -> None:
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
        "hermes, qwen or react form. 'auto' (the default): the dialect the model declares "
        "('local': hermes; 'replay:…': the one it was recorded in); else native for models "
        "whose LangChain class binds tools ('ollama:', 'openai:', 'http://…'), switching to "
        "react for good in a thread where the server refuses tools; else react",
    )
    p.add_argument(
        "--call-format",
        metavar="NAME",
        help="how the model writes calls into its text when its server has no tool parser "
        "(native dialect): a format of docs/dialects.md ('mistral', 'harmony', 'hermes', ...) "
        "or a model family ('qwen3-coder'). Default: the model's own, told by the spec's "
        "?format=, the server's chat template or the model's name; else learned in the "
        "thread from its first call",
    )
    p.add_argument(
        "--max-tokens",
        metavar="N",
        type=_positive,
        help="the longest reply the model may write, in tokens (default: 1024 for a "
        "server URL, whose server may otherwise write until its context is full; 384 "
        "for 'local' in demo; else the model's own)",
    )
    p.add_argument(
        "--grammar",
        metavar="MODE",
        choices=tuple(GRAMMAR_MODES),
        help="the model's server applies GBNF grammars (llama.cpp's servers do): constrain "
        "a prompt dialect's replies to its call format and the tools' schemas. MODE "
        "first_call: the first reply of each question must call a tool; always: every "
        "reply is calls or an answer; off: no grammar. For a server URL with --dialect "
        "hermes, qwen or react; 'local' uses first_call unless told otherwise",
    )
    p.add_argument("--trace", action="store_true", help="print every model call's four views")
    p.add_argument(
        "--trace-file", metavar="F", help="write every model call's four views to F as JSON Lines"
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"give a whole number, 1 or more; got {text!r}")
    return value


def _at_least_zero(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"give a whole number, 0 or more; got {text!r}")
    return value


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
        "--max-repeats",
        metavar="N",
        type=_at_least_zero,
        default=DEFAULT_MAX_REPEATS,
        help="a call the model makes again with the same arguments in one question, after "
        "its result came back, is answered with that result instead of running; the Nth "
        f"such repeat ends the turn (default: {DEFAULT_MAX_REPEATS}; 0: calls always run)",
    )
    p.add_argument(
        "--approve",
        metavar="TOOL",
        action="append",
        help="ask before TOOL runs: y (run), e (edit arguments), n (reject, with a reason); "
        "repeatable. 'none': nothing asks. Default in chat: every tool whose MCP server "
        "does not annotate it read-only (readOnlyHint); in run: nothing asks",
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
    _model_options(demo)
    demo.set_defaults(handler=cmd_demo)

    serve = commands.add_parser(
        "serve-local",
        help="serve the bundled model as an OpenAI-compatible endpoint",
        description=cmd_serve_local.__doc__,
    )
    serve.add_argument(
        "--port", type=_positive, default=8080, help="port on 127.0.0.1 (default: 8080)"
    )
    serve.set_defaults(handler=cmd_serve_local)

    bench = commands.add_parser(
        "bench", help="which dialect suits a model, measured", description=cmd_bench.__doc__
    )
    bench.add_argument("model", nargs="?", help="model spec (default: $FNCALL_MODEL, else local)")
    bench.add_argument(
        "--modes",
        help="comma-separated DIALECT or DIALECT+first_call|always (default: every "
        "dialect, and the constrained modes where the model takes a grammar)",
    )
    bench.add_argument(
        "--tasks",
        choices=("database-assistant", "bfcl"),
        default="database-assistant",
        help="the task set: the database-assistant example (default), or BFCL's "
        "single-turn categories from the installed bfcl-eval package",
    )
    bench.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="with --tasks bfcl: the first N items of each category (default: 20; 0: all)",
    )
    bench.set_defaults(handler=cmd_bench)

    prompt = commands.add_parser(
        "prompt", help="print a dialect's system prompt", description=cmd_prompt.__doc__
    )
    prompt.add_argument("--dialect", required=True, choices=DIALECTS[1:])
    prompt.add_argument("--lang", choices=("zh", "en"), help="prompt language (qwen)")
    prompt.add_argument("--mcp", metavar="mcp.json", required=True, help="MCP servers")
    prompt.add_argument("--system", metavar="PROMPT", help="system prompt to put in front")
    prompt.add_argument(
        "--model",
        metavar="SPEC",
        help="also say (on stderr) the call format this model's replies are read in",
    )
    prompt.add_argument(
        "--call-format",
        metavar="NAME",
        help="with --model: the call format to declare (see chat --help)",
    )
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
