"""What answers an MCP server's requests and notifications (see :mod:`.stack`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = []


@dataclass(frozen=True)
class Handlers:
    """What answers a server's requests and notifications, in the SDKs' callback shapes
    (the same in both): ``logging(params)``, ``elicitation(context, params)``,
    ``sampling(context, params)`` and ``list_roots(context)``; a capability whose
    handler is ``None`` is not announced."""

    logging: Callable[[Any], Awaitable[None]]
    elicitation: Callable[[Any, Any], Awaitable[Any]]
    sampling: Callable[[Any, Any], Awaitable[Any]] | None = None
    list_roots: Callable[[Any], Awaitable[Any]] | None = None
