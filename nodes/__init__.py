"""One LangGraph node per file: adapter, model, tools, react_fallback."""

from .adapter import AdapterNode
from .model import ModelNode
from .react_fallback import ReactFallbackNode
from .tools import ToolDispatchNode

__all__ = ["AdapterNode", "ModelNode", "ReactFallbackNode", "ToolDispatchNode"]
