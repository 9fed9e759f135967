"""What a command's model options make of its graph: ``--grammar`` (``constrained``),
``--call-format`` (and how the model's calls will be read), ``--trace-file``."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import IO, Any

from langchain_core.language_models import BaseChatModel

from fncall_graph.adapters.secrets import open_private

from .resources import GRAMMAR_MODES, GRAMMAR_OFF, CLIError

__all__ = []


@contextlib.contextmanager
def trace_output(path: str | None) -> Iterator[IO[str] | None]:
    """The file ``--trace-file`` names, open for writing (``None`` without the option)."""
    if path is None:
        yield None
        return
    try:
        handle = open_private(path, "w")  # prompts and results: this user's only
    except OSError as exc:
        raise CLIError(f"trace file {path}: {exc.strerror or exc}") from exc
    with handle:
        yield handle


def grammar_constraint(args: argparse.Namespace, dialect: Any) -> bool | str | None:
    """``constrained`` for ``--grammar`` (``None``: not given, the graph's default)."""
    if args.grammar is None:
        return None
    if dialect.native and args.grammar != GRAMMAR_OFF:
        raise CLIError(
            f"--grammar {args.grammar}: the dialect is native (the server's own tool calling), "
            "which a grammar does not constrain; give --dialect hermes (or qwen, react) too"
        )
    return GRAMMAR_MODES[args.grammar]


def declared_call_format(args: argparse.Namespace) -> str | None:
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
