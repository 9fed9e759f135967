"""What one tool call does with what its server sends during it (:class:`CallHooks`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mcp.types import ElicitRequestParams, ElicitResult

__all__ = []


@dataclass
class CallHooks:
    """What one tool call does with what its server sends during it.

    ``progress``: reports progress notifications; ``elicit``: answers the server's
    elicitation request at once, or returns ``None`` after recording in ``paused`` the
    interrupt that pauses the thread until a person answers; ``answer``: on resume, given
    every question of the call so far, the person's answer to the last one (``None``,
    with ``paused`` set, when there is none yet); ``key``: the call's thread and tool call id, under
    which a paused call is kept for its resume (``None``: it cannot be resumed into).
    """

    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None
    elicit: Callable[[ElicitRequestParams], ElicitResult | None] | None = None
    answer: Callable[[list[ElicitRequestParams]], ElicitResult | None] | None = None
    key: tuple[str, str] | None = None
    paused: BaseException | None = None
