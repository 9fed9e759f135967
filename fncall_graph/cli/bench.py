"""The ``bench`` command: which dialect suits a model, measured."""

from __future__ import annotations

import argparse

from fncall_graph.graphs import environment

from .resources import CLIError

__all__ = []


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
