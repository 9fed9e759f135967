"""The product's guarantees as LangChain v1 agent middleware, for ``create_agent``.

- :class:`AtMostOnceMiddleware`: each tool call runs at most once per call id, across
  processes (the claim in the checkpointer's database);
- :class:`BoundApprovalMiddleware`: ``HumanInTheLoopMiddleware``'s review, with each
  answer bound to the review it answers;
- :class:`DialectMiddleware`: tool calling through a dialect for any model, with the
  fallback to a prompt dialect when native calling is refused.

Each is the same code ``create_fncall_graph`` runs in its nodes.
"""

from .at_most_once import AtMostOnceMiddleware
from .bound_approval import BoundApprovalMiddleware
from .dialect import DialectMiddleware

__all__ = ["AtMostOnceMiddleware", "BoundApprovalMiddleware", "DialectMiddleware"]
