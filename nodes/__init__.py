"""One LangGraph node per file: adapter, model, tools, approve, react_fallback."""

__all__ = []
