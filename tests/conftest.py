"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from ports import free_port

WEATHER_SERVER = Path(__file__).parent / "servers" / "weather_server.py"


@pytest.fixture(scope="session", autouse=True)
def own_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The CLI's state (threads, MCP server logs) in a folder of the test run, never in
    the user's ``~/.local/state``; commands the tests start inherit it."""
    state = tmp_path_factory.mktemp("state")
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(state)
    yield state
    if before is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = before


@pytest.fixture(scope="session")
def weather_http() -> Iterator[str]:
    """Seed 003's weather server over streamable HTTP on a free loopback port; yields its URL.

    The server is stateless, so one process serves every test of the session.
    """
    port = free_port()
    # on mcp 1.x: a run on the mcp 2.x stack names the main environment's Python for it
    python = os.environ.get("FNCALL_TEST_MCP1_PYTHON") or sys.executable
    proc = subprocess.Popen(
        [python, str(WEATHER_SERVER), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = threading.Event()
    log: list[str] = []

    def drain() -> None:
        # Read stderr for ever, so the server never blocks on a full pipe.
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            if "Uvicorn running on" in line:
                started.set()
        started.set()  # EOF: the server exited; the check below reports it

    threading.Thread(target=drain, daemon=True).start()
    try:
        assert started.wait(30), "weather server did not start within 30 s"
        assert proc.poll() is None, "weather server exited:\n" + "".join(log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="session")
def vocab():
    """The bundled GGUF's vocabulary, for compiling grammars with llama.cpp's own parser."""
    import llama_cpp

    from fncall_graph.adapters.models.local_server import bundled_gguf_path

    model = llama_cpp.Llama(str(bundled_gguf_path()), vocab_only=True, verbose=False)
    yield model._model.vocab
    model.close()
