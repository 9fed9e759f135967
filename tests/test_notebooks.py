"""Every notebook runs top to bottom without an error, and is committed without outputs.

The notebooks run with nbclient on a kernel of this Python (a kernelspec installed into a
temporary Jupyter path, so no global one is needed), with ``FNCALL_MODEL=replay``: the
recorded replies make every run the same. MCP servers start for real.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from strip_notebooks import has_outputs

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
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
    # each draws its graph as a picture, not as printed source
    pictures = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if "image/svg+xml" in out.get("data", {})
    ]
    assert pictures, f"{path.name} shows no picture of its graph"
    assert "<svg" in pictures[0]["data"]["image/svg+xml"]
    assert "model" in pictures[0]["data"]["image/svg+xml"]
