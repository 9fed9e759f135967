"""An ``mcpServers`` entry with ``"command": "python"`` runs the Python this package runs
in (``sys.executable``), not the first ``python`` on PATH, which may lack the server's
package. Against the real example weather server, with a real other Python on PATH."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from fncall_graph.adapters.mcp import MCPToolkit

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("command", ["python", "python3"])
def test_python_is_the_packages_own(command: str, tmp_path: Path, monkeypatch) -> None:
    other = shutil.which("python3", path="/usr/bin:/bin")
    if other is None or Path(other).resolve() == Path(sys.executable).resolve():
        pytest.skip("no other Python on this machine to put first on PATH")
    first = tmp_path / "bin"
    first.mkdir()
    for name in ("python", "python3"):
        (first / name).symlink_to(other)  # PATH's python: one without this package
    monkeypatch.setenv("PATH", f"{first}:/usr/bin:/bin")
    server = {"command": command, "args": ["-m", "fncall_graph.examples.weather_server"]}
    with MCPToolkit.from_config({"mcpServers": {"weather": server}}) as toolkit:
        [get_weather] = [t for t in toolkit.tools if t.name == "weather-get_weather"]
        assert "晴天" in str(get_weather.invoke({"city": "北京"}))
