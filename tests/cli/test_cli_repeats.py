"""The repeat guard in the ``fncall-graph`` command, against real MCP servers over stdio:
a replayed model that repeats a read of a trusted read-only tool (the example weather
server's ``get_weather``) is stopped; calls of ``mcp-server-sqlite``, whose tools may all
write (it annotates none), always run, so a count after an insert reads afresh and an
insert made twice writes twice."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import patience
import pytest
from langchain_core.messages import AIMessage, ToolMessage, messages_from_dict

from fncall_graph.examples.database_assistant import make_database, sqlite_config
from fncall_graph.graphs.factory import DEFAULT_MAX_ITERATIONS
from fncall_graph.graphs.studio import weather_config

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "fncall-graph")


def hermes(name: str, args: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


GET_WEATHER = hermes("weather-get_weather", {"city": "北京"})
LIST_TABLES = hermes("sqlite-list_tables", {})
COUNT = hermes("sqlite-read_query", {"query": "SELECT COUNT(*) AS n FROM students"})
INSERT = hermes("sqlite-write_query", {"query": "INSERT INTO students (name, age) VALUES ('x', 8)"})


def cli(*args: str) -> subprocess.CompletedProcess:
    return patience.run(
        [CLI, *args], capture_output=True, text=True, env=dict(os.environ), timeout=180
    )


def replayed(
    tmp_path: Path,
    config: dict[str, Any],
    outputs: list[str],
    *extra: str,
    json_output: bool = True,
) -> tuple[subprocess.CompletedProcess, list[Any]]:
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps(config), "utf-8")
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"dialect": "hermes", "outputs": outputs}))
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
        "answer the question",
    )
    if not json_output:
        return done, []
    assert done.stdout, done.stderr
    return done, messages_from_dict(json.loads(done.stdout)["messages"])


def server_results(messages: list[Any]) -> list[ToolMessage]:
    """The results that came from the server (the guard's answers carry its note)."""
    return [
        m for m in messages if isinstance(m, ToolMessage) and "fncall_repeat" not in str(m.artifact)
    ]


def test_run_stops_a_model_that_repeats_a_read(tmp_path: Path) -> None:
    done, messages = replayed(tmp_path, weather_config(), [GET_WEATHER] * 20)
    # the turn has no answer: said on one line, as at max_iterations
    assert done.returncode == 1
    assert "no final answer: I stopped: I called weather-get_weather again" in done.stderr
    assert len(server_results(messages)) == 1
    replies = [m for m in messages if isinstance(m, AIMessage)]
    assert len(replies) == 4  # three model calls and the message that ends the turn
    assert replies[-1].additional_kwargs["fncall_stop_reason"] == "max_repeats"


def test_run_max_repeats_0_lets_every_call_run(tmp_path: Path) -> None:
    done, messages = replayed(tmp_path, weather_config(), [GET_WEATHER] * 20, "--max-repeats", "0")
    assert done.returncode == 1
    assert len(server_results(messages)) == DEFAULT_MAX_ITERATIONS
    assert messages[-1].additional_kwargs["fncall_stop_reason"] == "max_iterations"


def test_a_repeat_is_shown_as_not_run(tmp_path: Path) -> None:
    done, _ = replayed(tmp_path, weather_config(), [GET_WEATHER] * 20, json_output=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("[tool]")]
    finished = [line for line in lines if " running " not in line and " waiting" not in line]
    assert len(finished) == 3, done.stdout
    assert " done " in finished[0]
    assert " repeated " in finished[1] and "not run again: earlier result" in finished[1]
    assert " repeated " in finished[2] and "Not run: weather-get_weather" in finished[2]


def test_calls_of_a_server_that_may_write_always_run(tmp_path: Path) -> None:
    """What the guard no longer stops: a loop on a tool not known to only read runs
    until max_iterations (mcp-server-sqlite annotates none of its tools)."""
    config = sqlite_config(make_database(tmp_path / "test.db"))
    done, messages = replayed(tmp_path, config, [LIST_TABLES] * 20)
    assert done.returncode == 1
    assert len(server_results(messages)) == DEFAULT_MAX_ITERATIONS
    assert messages[-1].additional_kwargs["fncall_stop_reason"] == "max_iterations"


def test_a_count_after_an_insert_reads_afresh(tmp_path: Path) -> None:
    db = make_database(tmp_path / "test.db")
    done, messages = replayed(tmp_path, sqlite_config(db), [COUNT, INSERT, COUNT, "done"])
    assert done.returncode == 0, done.stderr
    results = [m.content for m in messages if isinstance(m, ToolMessage)]
    assert len(server_results(messages)) == 3
    assert "2" in results[0] and "3" in results[2]  # not the stale count of 2


def test_an_insert_made_twice_writes_twice(tmp_path: Path) -> None:
    db = make_database(tmp_path / "test.db")
    done, messages = replayed(tmp_path, sqlite_config(db), [INSERT, INSERT, "inserted twice"])
    assert done.returncode == 0, done.stderr
    assert len(server_results(messages)) == 2
    assert messages[-1].content == "inserted twice"
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM students WHERE name = 'x'")
    assert rows.fetchone()[0] == 2
