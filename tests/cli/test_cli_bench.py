"""``fncall-graph bench``: the turn limit it measures under is the graph's one default, and
the mode it recommends for a recording is the dialect the recording was made in. Over
the real ``mcp-server-sqlite``; the models are replays."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import patience
import pytest

from fncall_graph.bench import run_mode
from fncall_graph.graphs.factory import DEFAULT_MAX_ITERATIONS

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "fncall-graph")


def test_bench_turns_run_to_the_graphs_default_limit(tmp_path: Path) -> None:
    """A model that never stops calling (each call new, so no repeat) is stopped by the
    same max_iterations as every command, not a limit of the bench's own."""
    calls = [
        '<tool_call>\n{"name": "sqlite-read_query", "arguments": '
        f'{{"query": "SELECT {i}"}}}}\n</tool_call>'
        for i in range(4 * DEFAULT_MAX_ITERATIONS + 8)
    ]
    replay = tmp_path / "endless.json"
    replay.write_text(json.dumps({"dialect": "hermes", "outputs": calls}), "utf-8")
    score = run_mode(f"replay:{replay}", "hermes")
    # each of the 4 questions: DEFAULT_MAX_ITERATIONS model calls, then the stop message
    assert score["model_calls"] == 4 * (DEFAULT_MAX_ITERATIONS + 1)


def test_bench_recommends_a_recordings_own_dialect() -> None:
    done = patience.run(
        [CLI, "bench", "replay:database-assistant", "--modes", "native,react,qwen,hermes"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1]
    # every mode answers alike on a recording: the tie goes to its own dialect
    assert last.startswith("use: hermes ("), done.stdout
