"""Wiring only: the graph state and the factories that connect the nodes."""

from .factory import create_fncall_graph
from .state import FncallState

__all__ = ["FncallState", "create_fncall_graph"]
