"""``--grammar MODE``: a server URL's llama.cpp server constrains a prompt dialect's replies
to calls in its format, from the command line. Against the real llama.cpp server that
``fncall-graph serve-local`` starts, and the real ``mcp-server-sqlite``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import patience
import pytest
from ports import free_port

from fncall_graph.examples.database_assistant import make_database, sqlite_config

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "fncall-graph")


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return patience.run(
        [CLI, *args], capture_output=True, text=True, env=dict(os.environ), timeout=timeout
    )


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The bundled model served by ``fncall-graph serve-local``; yields its ``--model`` spec."""
    pytest.importorskip("xllamacpp")
    server = subprocess.Popen(
        [CLI, "serve-local", "--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        server.stdout.readline()  # "serving ... at URL", printed once it listens
        usage = server.stdout.readline()
        assert "--model '" in usage, usage + server.stderr.read()
        yield usage.split("--model '", 1)[1].split("'", 1)[0]
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)


def test_grammar_first_call_makes_the_first_reply_a_call(served: str, tmp_path: Path) -> None:
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps(sqlite_config(make_database(tmp_path / "test.db"))), "utf-8")
    common = ["--mcp", str(mcp), "--db", str(tmp_path / "t.sqlite"), "--max-repeats", "1"]
    done = cli(
        "run",
        "--model",
        served,
        "--dialect",
        "hermes",
        "--grammar",
        "first_call",
        "--max-tokens",
        "256",
        *common,
        "--json",
        "How many tables does the database have?",
    )
    messages = json.loads(done.stdout)["messages"]
    first = messages[1]["data"]
    assert first["type"] == "ai"
    # the grammar let the 135M model write nothing but calls of listed tools
    assert first["tool_calls"], first
    assert {c["name"] for c in first["tool_calls"]} <= {
        "sqlite-read_query",
        "sqlite-write_query",
        "sqlite-create_table",
        "sqlite-list_tables",
        "sqlite-describe_table",
        "sqlite-append_insight",
    }
    assert not first.get("invalid_tool_calls")


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("ollama:qwen3", "--grammar first_call: ollama:qwen3 is not a server URL"),
        ("replay:database-assistant", "is not a server URL"),
        ("http://127.0.0.1:9/v1#m", "the dialect is native"),  # auto: native for a URL
    ],
)
def test_grammar_where_it_cannot_apply_is_one_clear_error(
    spec: str, said: str, tmp_path: Path
) -> None:
    done = cli("run", "--model", spec, "--grammar", "first_call", "--db", str(tmp_path / "t"), "hi")
    assert done.returncode == 1
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
