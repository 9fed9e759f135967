"""The wheel installs adapters/, nodes/, middleware/ and graphs/ inside the one import package."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_holds_one_import_package_that_imports(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("fncall_graph-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert top == {"fncall_graph"}, top
    for module in (
        "adapters/formats/hermes.py",
        "adapters/mcp/toolkit.py",
        "adapters/models/specs.py",
        "adapters/checkpoint/savers.py",
        "cli/main.py",
        "nodes/tools.py",
        "middleware/at_most_once.py",
        "graphs/factory.py",
    ):
        assert f"fncall_graph/{module}" in names
    assert "fncall_graph/data/database-assistant_qwen-max_hermes.json" in names

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import fncall_graph, fncall_graph.adapters.formats.hermes, fncall_graph.nodes.tools, "
        "fncall_graph.graphs.factory, fncall_graph.adapters.models, fncall_graph.middleware\n"
        "print(fncall_graph.__file__)\n"
        "print(fncall_graph.adapters.models.packaged_recording('database-assistant'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(site), "PATH": ""},
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert out[0].startswith(str(site)), out  # the wheel's copy, not the editable checkout
    assert out[1].startswith(str(site))


def test_editable_install_maps_the_rooms() -> None:
    import fncall_graph.adapters
    import fncall_graph.graphs
    import fncall_graph.guarantees
    import fncall_graph.middleware
    import fncall_graph.nodes

    assert Path(fncall_graph.adapters.__file__).parent == ROOT / "adapters"
    assert Path(fncall_graph.guarantees.__file__).parent == ROOT / "guarantees"
    assert Path(fncall_graph.nodes.__file__).parent == ROOT / "nodes"
    assert Path(fncall_graph.graphs.__file__).parent == ROOT / "graphs"
    assert Path(fncall_graph.middleware.__file__).parent == ROOT / "middleware"
