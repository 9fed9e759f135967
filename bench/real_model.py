"""How well does a model do the database-assistant example, per dialect and constraint mode?

    python bench/real_model.py SPEC [--modes native,hermes,hermes+first_call,...]

The same as ``fncall-graph bench SPEC``: see :mod:`fncall_graph.bench` for what each
column means. Small models score by chance: a benchmark to choose a dialect with.
"""

from __future__ import annotations

import sys

from fncall_graph.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
