"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# -- pytest-xdist: `make test` runs `pytest -n 2 --dist loadgroup`
#
# These run on one worker, one after the other in the order collected: they share what
# their module starts once (a module-scoped fixture: a cluster, a server, the model
# server), or they build from the repository's own folder. Every other test goes to
# whichever worker is free. Named here by node id (a file, or a file's test function):
# the group an xdist_group mark adds to a node id on the worker does not reach the
# scheduler on pytest 9, whose node ids are no longer the string xdist rewrites.
XDIST_GROUPS = {
    "tests/models/test_call_format.py": "call-format",  # llama.cpp server
    "tests/cli/test_cli_grammar.py": "cli-grammar",  # fncall-graph serve-local
    "tests/e2e/test_cluster.py": "cluster",  # PostgreSQL, Redis, two replicas
    "tests/graphs/test_constrained_graph.py": "constrained-graph",  # llama.cpp server
    "tests/models/test_local_server.py": "local-server",  # llama.cpp server
    "tests/mcp/test_mcp_conformance.py::test_client_scenario_2026_07_28": "conformance-2026",
    "tests/mcp/test_mcp_non_object_result.py": "mcp-non-object-result",  # MCP servers
    "tests/mcp/test_mcp_stacks.py": "mcp-stacks",  # two weather servers
    "tests/mcp/test_server_everything.py": "server-everything",  # server-everything
    "tests/models/test_standard_chat_model.py": "standard-chat-model",  # llama.cpp servers
    "tests/models/test_structured_output_with_tools.py": "structured-output",  # llama.cpp server
    "tests/e2e/test_studio.py": "studio",  # langgraph dev
    # a wheel built in the repository (build/, *.egg-info) beside pip reading it
    "tests/e2e/test_packaging.py": "repo-build",
    "tests/e2e/test_install_output.py": "repo-build",
}


def xdist_group(nodeid: str) -> str | None:
    """The group of ``nodeid`` in :data:`XDIST_GROUPS`, if it has one."""
    path, _, rest = nodeid.partition("::")
    function = rest.split("[", 1)[0]
    return XDIST_GROUPS.get(f"{path}::{function}") or XDIST_GROUPS.get(path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with the groups of :data:`XDIST_GROUPS`."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class Grouped(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = xdist_group(nodeid)
            return f"group:{group}" if group else super()._split_scope(nodeid)

    return Grouped(config, log)
