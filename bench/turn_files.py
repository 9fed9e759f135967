"""Which product files one user turn enters, for the native and the Hermes graph.

One turn of ``bench/graph_overhead.py`` (a model call that asks for one tool, the tool, a
model call that answers), after three warm-up turns, with a profile hook on every thread:
each product module whose code runs in the turn is counted once, with how many calls
entered it. Fewer files on a turn's path is a path a reader follows in fewer places.
The replayed model (``adapters/models/replay.py``) stands in for the provider and is
not counted.

    python bench/turn_files.py [--dialect hermes|native|both] [--list]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import graph_overhead as bench

from fncall_graph import create_fncall_graph

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("adapters", "guarantees", "nodes", "middleware", "graphs", "fncall_graph")
STAND_IN = ROOT / "adapters" / "models" / "replay.py"


def files_entered(dialect: str) -> collections.Counter[str]:
    """Product files entered by one turn of a ``dialect`` graph, with their call counts."""
    turn = bench.hermes_turn() if dialect == "hermes" else bench.native_turn()
    graph = create_fncall_graph(bench.replay(turn, 4), [bench.WEATHER], dialect=dialect)
    for _ in range(3):
        graph.invoke(bench.QUESTION)
    roots = tuple(f"{ROOT / room}{os.sep}" for room in ROOMS)
    seen: collections.Counter[str] = collections.Counter()

    def hook(frame: Any, event: str, arg: Any) -> None:
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(roots) and name != str(STAND_IN):
            seen[os.path.relpath(name, ROOT)] += 1

    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        graph.invoke(bench.QUESTION)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialect", choices=("hermes", "native", "both"), default="both")
    parser.add_argument("--list", action="store_true", help="name each file and its calls")
    args = parser.parse_args()
    for dialect in ("native", "hermes") if args.dialect == "both" else (args.dialect,):
        seen = files_entered(dialect)
        print(f"{dialect}: {len(seen)} product files, {sum(seen.values())} calls into them")
        if args.list:
            for name, calls in sorted(seen.items()):
                print(f"  {calls:5d}  {name}")


if __name__ == "__main__":
    main()
