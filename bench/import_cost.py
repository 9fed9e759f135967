"""What importing the package's face costs, next to ``from langchain.agents import create_agent``.

Each entry point is imported in a fresh interpreter (a cold import: nothing of LangChain
loaded yet; bytecode caches warm, as after any first run), N times, the entry points
interleaved so that a busy machine slows them alike. The time is taken inside the child
around the import alone (interpreter start-up excluded). Printed per entry point: the
median, its ratio to ``create_agent``'s, and the heavy packages loaded — the MCP SDK,
provider clients and web stacks a user should pay for only when a model spec, URL or MCP
toolkit needs them (``sys.modules`` after the import; what ``create_agent`` itself loads,
LangGraph's SDK client and httpx, is listed too). Nothing is asserted here: the test on
which modules load is ``tests/house/test_import_cost.py``.

    python bench/import_cost.py [--repeats 9] [--python OTHER_PYTHON]

``--python`` adds the same entry points run by another interpreter (e.g. an older
checkout's virtual environment), side by side in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

#: Packages the face must not load until used (see tests/house/test_import_cost.py), then what
#: LangChain and LangGraph load themselves.
HEAVY = (
    "mcp",
    "langchain_mcp_adapters",
    "langchain_openai",
    "openai",
    "langchain_ollama",
    "ollama",
    "uvicorn",
    "starlette",
    "sse_starlette",
    "aiohttp",
    "psycopg",
    "langgraph_sdk",
    "httpx",
    "yaml",
    "psutil",
)

ENTRY_POINTS = {
    "create_agent (reference)": "from langchain.agents import create_agent",
    "import fncall_graph": "import fncall_graph",
    "create_fncall_graph": "from fncall_graph import create_fncall_graph",
    "with_dialect": "from fncall_graph import with_dialect",
    "normalize": "from fncall_graph import normalize",
    "fncall-graph --help": (
        "from fncall_graph.cli.main import build_parser; build_parser().format_help()"
    ),
}

_CHILD = """
import json, sys, time
start = time.perf_counter()
{statement}
elapsed = time.perf_counter() - start
heavy = {heavy!r}
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))
print(json.dumps({{"seconds": elapsed, "loaded": loaded}}))
"""


def measure(python: str, statement: str) -> dict:
    code = _CHILD.format(statement=statement, heavy=HEAVY)
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=False, cwd="/"
    )
    if done.returncode != 0:
        raise SystemExit(f"{python} -c {statement!r} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="cold imports of each")
    parser.add_argument("--python", help="another interpreter whose entry points run side by side")
    args = parser.parse_args(argv)

    pythons = {"": sys.executable}
    if args.python:
        pythons = {"this: ": sys.executable, "other: ": args.python}
    runs = [
        (label, label + name, python, statement)
        for label, python in pythons.items()
        for name, statement in ENTRY_POINTS.items()
    ]
    times: dict[str, list[float]] = {name: [] for _, name, _, _ in runs}
    loaded: dict[str, list[str]] = {}
    for _ in range(args.repeats):
        for _, name, python, statement in runs:
            result = measure(python, statement)
            times[name].append(result["seconds"])
            loaded[name] = result["loaded"]

    reference = {
        label: statistics.median(times[label + "create_agent (reference)"]) for label in pythons
    }
    print(f"cold import, median of {args.repeats} fresh interpreters each")
    print(f"{'entry point':<34} {'median s':>9} {'ratio':>6}  heavy packages loaded")
    for label, name, _, _ in runs:
        median = statistics.median(times[name])
        ratio = median / reference[label]
        print(f"{name:<34} {median:>9.2f} {ratio:>6.2f}  {', '.join(loaded[name]) or '-'}")


if __name__ == "__main__":
    main()
