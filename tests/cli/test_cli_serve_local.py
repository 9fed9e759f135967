"""``fncall-graph serve-local`` (the bundled model as an OpenAI-compatible endpoint) and
``--max-tokens``, against the real llama.cpp server the command starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import patience
import pytest
from ports import free_port

from fncall_graph.cli.resources import URL_MAX_TOKENS, load_model
from fncall_graph.cli.terminal import UI

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "fncall-graph")


def test_a_server_url_gets_a_max_tokens_by_default() -> None:
    ui = UI(sys.stderr)
    assert load_model("http://127.0.0.1:9/v1#m", ui).max_tokens == URL_MAX_TOKENS
    assert load_model("http://127.0.0.1:9/v1#m", ui, max_tokens=7).max_tokens == 7


def test_serve_local_serves_until_ctrl_c_and_max_tokens_reaches_it(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    port = free_port()
    server = subprocess.Popen(
        [CLI, "serve-local", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        first = server.stdout.readline()  # the line printed once it listens
        assert f"at http://127.0.0.1:{port}/v1" in first, first + server.stderr.read()
        usage = server.stdout.readline()
        spec = usage.split("--model '", 1)[1].split("'", 1)[0]
        assert spec == f"http://127.0.0.1:{port}/v1#smollm2-135m-instruct"
        # any OpenAI client can use it
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            data=json.dumps(
                {
                    "model": "smollm2-135m-instruct",
                    "messages": [{"role": "user", "content": "Say hello."}],
                    "max_tokens": 4,
                }
            ).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            body = json.loads(response.read())
        assert body["choices"][0]["message"]["role"] == "assistant"
        # and fncall-graph itself, with its reply held to --max-tokens
        done = patience.run(
            [
                CLI,
                "run",
                "--model",
                spec,
                "--max-tokens",
                "3",
                "--db",
                str(tmp_path / "t.sqlite"),
                "--json",
                "Write a long story about a cat.",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        last = json.loads(done.stdout)["messages"][-1]["data"]
        assert last["response_metadata"]["finish_reason"] == "length"
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=60) == 0
        assert "stopped" in server.stdout.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
