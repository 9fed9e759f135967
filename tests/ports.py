"""A free TCP port on loopback, for servers the tests start (scripts/serve_cluster.py's)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from serve_cluster import free_port

__all__ = ["free_port"]
