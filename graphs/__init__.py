"""Wiring only: the graph state and the factories that connect the nodes."""

from fncall_graph.adapters.models.capabilities import supports_native_tools

from .factory import create_fncall_graph
from .state import FncallState

__all__ = ["FncallState", "create_fncall_graph", "supports_native_tools"]
