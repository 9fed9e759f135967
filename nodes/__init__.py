"""One LangGraph node per file: adapter, model, tools, approve, react_fallback."""

from .adapter import AdapterNode
from .approve import ApproveNode
from .model import ModelNode
from .react_fallback import ReactFallbackNode
from .tools import ToolDispatchNode

__all__ = [
    "AdapterNode",
    "ApproveNode",
    "ModelNode",
    "ReactFallbackNode",
    "ToolDispatchNode",
]
