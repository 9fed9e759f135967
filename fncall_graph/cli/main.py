"""The command line: its commands and options (:func:`build_parser`), and the entry
point that runs one (:func:`main`). Each command is a module of its own: :mod:`.chat`
(``chat``, ``run``), :mod:`.demo`, :mod:`.serve_local`, :mod:`.bench`, :mod:`.prompt`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from fncall_graph.guarantees import DEFAULT_MAX_REPEATS

from .bench import cmd_bench
from .chat import cmd_chat, cmd_run
from .demo import cmd_demo
from .prompt import cmd_prompt
from .resources import DB_ENV, DEBUG_ENV, DIALECTS, GRAMMAR_MODES, PROG, CLIError, describe_error
from .serve_local import cmd_serve_local

__all__ = []


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


def _at_least(minimum: int) -> Callable[[str], int]:
    """An option's type: a whole number, ``minimum`` or more."""

    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"give a whole number, {minimum} or more; got {text!r}"
            )
        return value

    return whole_number


_positive = _at_least(1)
_at_least_zero = _at_least(0)


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
        "repeatable. 'none': nothing asks. Default in chat: every tool not annotated "
        "read-only (readOnlyHint) by an MCP server trusted in its entry "
        '("trust": "annotations"); in run: nothing asks',
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
