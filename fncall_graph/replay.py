"""Recorded model outputs played back: the model behind the ``replay:`` spec.

:class:`ReplayChatModel` serves the product's offline examples (``replay:database-assistant``,
``replay:weather``) and stands in for a real model in graph tests, the way LangChain's
``GenericFakeChatModel`` does. See :mod:`fncall_graph.adapters.models.replay`.
"""

from fncall_graph.adapters.models.replay import ReplayChatModel, ReplayExhausted

__all__ = ["ReplayChatModel", "ReplayExhausted"]
