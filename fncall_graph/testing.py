"""The replay model under its earlier name; :mod:`fncall_graph.replay` is where it lives now."""

from fncall_graph.adapters.models.replay import ReplayChatModel, ReplayExhausted

__all__ = ["ReplayChatModel", "ReplayExhausted"]
