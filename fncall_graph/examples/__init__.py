__all__ = []
"""Small MCP servers that the ready-made graphs (and the notebooks) run."""
