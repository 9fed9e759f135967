"""Strip outputs from notebooks, or check that none are left.

    python tests/strip_notebooks.py notebooks/*.ipynb          # strip in place
    python tests/strip_notebooks.py --check notebooks/*.ipynb  # exit 1 if any has outputs

Outputs, execution counts and per-cell execution metadata are removed; sources, cell ids
and notebook metadata stay.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import nbformat


def has_outputs(nb: nbformat.NotebookNode) -> bool:
    """Whether any code cell carries outputs, an execution count or execution metadata."""
    return any(
        cell.get("outputs")
        or cell.get("execution_count") is not None
        or "execution" in cell.metadata
        for cell in nb.cells
        if cell.cell_type == "code"
    )


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` without outputs (changed in place and returned)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    return nb


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report notebooks with outputs")
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    dirty = []
    for path in args.paths:
        nb = nbformat.read(path, as_version=4)
        if not has_outputs(nb):
            continue
        dirty.append(path)
        if not args.check:
            nbformat.write(strip(nb), path)
    for path in dirty:
        print(f"{path}: {'has outputs' if args.check else 'stripped'}")
    return 1 if args.check and dirty else 0


if __name__ == "__main__":
    sys.exit(main())
