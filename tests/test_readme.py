"""The README's quick-start snippets run as written, offline, in a fresh folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start_snippets() -> list[str]:
    text = README.read_text("utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def run_snippet(code: str, cwd: Path) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)  # mcp-server-sqlite, as an activated venv has it
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_quick_start_has_the_two_snippets() -> None:
    assert len(quick_start_snippets()) == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    ("index", "answer"),
    [(0, "北京的天气温度为23.4°C"), (1, "当前数据库中有三张表")],
    ids=["tools", "mcp"],
)
def test_snippet_runs_as_written(tmp_path: Path, index: int, answer: str) -> None:
    done = run_snippet(quick_start_snippets()[index], tmp_path)
    assert done.returncode == 0, done.stderr
    assert answer in done.stdout
