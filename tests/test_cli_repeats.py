"""The repeat guard in the ``fncall-graph`` command: a replayed model that makes the same
call twenty times, against the real ``mcp-server-sqlite``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage, messages_from_dict

from fncall_graph.examples.database_assistant import make_database, sqlite_config
from fncall_graph.graphs.factory import DEFAULT_MAX_ITERATIONS

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "fncall-graph")
LIST_TABLES = '<tool_call>\n{"name": "sqlite-list_tables", "arguments": {}}\n</tool_call>'


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, env=dict(os.environ), timeout=180
    )


def twenty_repeats(
    tmp_path: Path, *extra: str, json_output: bool = True
) -> tuple[subprocess.CompletedProcess, list[Any]]:
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps(sqlite_config(make_database(tmp_path / "test.db"))), "utf-8")
    replay = tmp_path / "repeats.json"
    replay.write_text(json.dumps({"dialect": "hermes", "outputs": [LIST_TABLES] * 20}))
    done = cli(
        "run",
        "--model",
        f"replay:{replay}",
        "--mcp",
        str(mcp),
        "--db",
        str(tmp_path / "t.sqlite"),
        *(["--json"] if json_output else []),
        *extra,
        "which tables are there?",
    )
    if not json_output:
        return done, []
    return done, messages_from_dict(json.loads(done.stdout)["messages"])


def server_results(messages: list[Any]) -> list[ToolMessage]:
    """The results that came from the server (the guard's answers carry its note)."""
    return [
        m for m in messages if isinstance(m, ToolMessage) and "fncall_repeat" not in str(m.artifact)
    ]


def test_run_stops_a_model_that_repeats_its_call(tmp_path: Path) -> None:
    done, messages = twenty_repeats(tmp_path)
    # the turn has no answer: said on one line, as at max_iterations
    assert done.returncode == 1
    assert "no final answer: I stopped: I called sqlite-list_tables again" in done.stderr
    assert len(server_results(messages)) == 1
    replies = [m for m in messages if isinstance(m, AIMessage)]
    assert len(replies) == 4  # three model calls and the message that ends the turn
    assert replies[-1].additional_kwargs["fncall_stop_reason"] == "max_repeats"


def test_run_max_repeats_0_lets_every_call_run(tmp_path: Path) -> None:
    done, messages = twenty_repeats(tmp_path, "--max-repeats", "0")
    assert done.returncode == 1
    assert len(server_results(messages)) == DEFAULT_MAX_ITERATIONS
    assert messages[-1].additional_kwargs["fncall_stop_reason"] == "max_iterations"


def test_a_repeat_is_shown_as_not_run(tmp_path: Path) -> None:
    done, _ = twenty_repeats(tmp_path, json_output=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("[tool]")]
    finished = [line for line in lines if " running " not in line and " waiting" not in line]
    assert len(finished) == 3, done.stdout
    assert " done " in finished[0]
    assert " repeated " in finished[1] and "not run again: earlier result" in finished[1]
    assert " repeated " in finished[2] and "Not run: sqlite-list_tables" in finished[2]
