"""One LangGraph node per file: model, tools, approve."""

from .approve import ApproveNode
from .model import ModelNode
from .tools import ToolDispatchNode

__all__ = ["ApproveNode", "ModelNode", "ToolDispatchNode"]
