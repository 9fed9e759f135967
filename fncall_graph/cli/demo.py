"""The ``demo`` command: the database-assistant example on a fresh database, printed as
a transcript (recorded replies first, then the bundled local model live)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from fncall_graph.graphs import environment
from fncall_graph.trace import Tracer

from .model_options import (
    call_format_note,
    declared_call_format,
    grammar_constraint,
    trace_output,
)
from .resources import MCP_LOG, CLIError, choose_dialect, load_model, mcp_tools, sqlite_checkpointer
from .session import Session
from .terminal import UI

__all__ = []


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
            trace_output(args.trace_file) as trace_file,
        ):
            dialect = initial_dialect(model, choose_dialect(args.dialect, None))
            # the tools' annotations decide, as in chat and Studio; the server leaves its
            # reads unannotated, and the example knows them
            gated = [] if recorded else list(writes_by_annotation(example.mark_read_only(tools)))
            # small models otherwise answer without calling anything
            constrained = grammar_constraint(args, dialect)
            if constrained is None:
                constrained = (
                    "first_call" if not dialect.native and accepts_grammar(model) else False
                )
            call_format = declared_call_format(args)
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
