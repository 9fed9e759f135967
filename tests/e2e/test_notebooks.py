"""Every notebook runs top to bottom without an error, and is committed without outputs.

The notebooks run with nbclient on a kernel of this Python (a kernelspec installed into a
temporary Jupyter path, so no global one is needed), with ``FNCALL_MODEL=replay``: the
recorded replies make every run the same. MCP servers start for real.

The notebooks only show; what they show is checked here, on the executed outputs of the
cells tagged ``check:NAME`` (see ``EXPECTED``), so the tutorials carry no test code.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
from strip_notebooks import has_outputs

from fncall_graph.examples.database_assistant import SYSTEM_PROMPT

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
# What each tagged cell must show when the notebook runs on the recorded replies.
EXPECTED: dict[str, dict[str, list[str]]] = {
    "01_dialects": {
        "round1-input": [
            "messages: ['system', 'human']",
            "\n" + SYSTEM_PROMPT + "\n\n# Tools\n",  # the prompt first, then the tools
            '{"type": "function", "function": {"name": "sqlite-read_query"',
        ],
        "streaming": ["same as parse(): True"],
    },
    "02_sqlite_mcp_agent": {
        "round-1": ["sqlite-list_tables"],
        "round-2": ["SELECT COUNT(*) FROM students"],
        "round-3": ["sqlite-describe_table"],
        "round-4": ["sqlite-write_query"],
        "summary": ["model calls per round: [2, 2, 2, 3]", "查询了韩梅梅的年龄"],
    },
    "03_pause_and_resume": {
        "approved": ["log: [(1, '创建数据库'), (2, '查询了韩梅梅的年龄')]"],
        "edited": ["(3, '查询了韩梅梅的年龄(已审核)')]"],
        "rejected": ["log unchanged: True"],
        "checkpoints": ["approve  next=()", "edit     next=()", "reject   next=()"],
    },
    "04_react_fallback": {
        "first-question": [
            "the first request carried tools: True",
            "[tool] 晴天,温度 22°C",
            "[tool] 小雨,温度 28°C",
            "dialect now: react",
        ],
        "second-question": [">>> 深圳阴天,26°C。", "tools sent again: False", "dialect: react"],
    },
}
# The nodes each notebook's drawing must show: the graph as it is built, nothing more.
GRAPH_NODES = {"__start__", "adapter", "model", "react_fallback", "tools", "__end__"}
KERNEL = "fncall-graph-test"
CELL_TIMEOUT = 300


def test_notebooks_are_there() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01_dialects.ipynb",
        "02_sqlite_mcp_agent.ipynb",
        "03_pause_and_resume.ipynb",
        "04_react_fallback.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert not has_outputs(nb), f"run: python tests/strip_notebooks.py {path.name}"


@pytest.fixture(scope="module")
def jupyter_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Jupyter data dir holding a kernelspec for this Python."""
    from ipykernel.kernelspec import install

    prefix = tmp_path_factory.mktemp("jupyter")
    install(kernel_name=KERNEL, prefix=str(prefix), display_name="fncall-graph (test)")
    spec = prefix / "share" / "jupyter" / "kernels" / KERNEL / "kernel.json"
    assert sys.executable in spec.read_text(), spec.read_text()
    return prefix / "share" / "jupyter"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(
    path: Path, jupyter_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_path))
    monkeypatch.setenv("FNCALL_MODEL", "replay")
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    # Without PYTEST_CURRENT_TEST the kernel sets up its stdout/stderr as it does under
    # Jupyter (with a file descriptor, which MCP stdio servers inherit for their logs).
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    client.execute(env=env)  # raises CellExecutionError on the first failing cell
    errors = [
        f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert not errors, errors
    for name, texts in EXPECTED[path.stem].items():
        shown = _shown(nb, name)
        for text in texts:
            assert text in shown, f"{path.name}, cell check:{name} does not show {text!r}:\n{shown}"
    # each draws its graph as a picture, not as printed source, with the nodes it has
    pictures = [out["data"]["image/svg+xml"] for out in _outputs(nb, "graph")]
    assert pictures and "<svg" in pictures[0], f"{path.name} shows no picture of its graph"
    drawn = set(re.findall(r'<g id="node\d+" class="node">\s*<title>([^<]+)</title>', pictures[0]))
    gated = path.stem == "03_pause_and_resume"
    assert drawn == GRAPH_NODES | ({"approve"} if gated else set()), drawn


def _outputs(nb: nbformat.NotebookNode, name: str) -> list[dict]:
    cells = [c for c in nb.cells if f"check:{name}" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"one cell must be tagged check:{name}, found {len(cells)}"
    return list(cells[0].outputs)


def _shown(nb: nbformat.NotebookNode, name: str) -> str:
    """What the tagged cell printed and displayed, as text."""
    parts = []
    for out in _outputs(nb, name):
        if out.output_type == "stream":
            parts.append(out.text)
        data = out.get("data", {})
        parts.append(data.get("text/html") or data.get("text/plain") or "")
    return "\n".join(parts)
