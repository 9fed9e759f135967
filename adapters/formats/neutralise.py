"""Markup in text the model did not write, broken so that no reader sees it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["ZERO_WIDTH_SPACE"]

#: What breaks a marker: the model reads the same characters, no reader sees the marker.
ZERO_WIDTH_SPACE = "\u200b"


def neutralise(text: str, markers: Sequence[str]) -> str:
    """``text`` with every one of ``markers`` broken by a zero-width space.

    Text the model did not write (a tool result, a user's message) may hold call markup
    of any format the readers know, or ChatML turn markers; echoed by the model, it would
    read as a call of the model's own. Broken, the model still reads the same characters
    and no reader sees a marker in them (the dialects pass every format's markers,
    :data:`~fncall_graph.adapters.formats.readers.KNOWN_MARKUP`, and their own).

    Example:
        >>> neutralise("[TOOL_CALLS][]", ["[TOOL_CALLS]"]) == "[\u200bTOOL_CALLS][]"
        True
    """
    pattern = _breaker(tuple(markers))
    if pattern is None:
        return text
    while True:  # a marker inside a longer one (``<tool_call>`` in MiniMax's) too
        broken = pattern.sub(_break, text)
        if broken == text:
            return text
        text = broken


def _break(match: re.Match[str]) -> str:
    marker = match.group()
    return marker[0] + ZERO_WIDTH_SPACE + marker[1:]


@lru_cache(maxsize=16)
def _breaker(markers: tuple[str, ...]) -> re.Pattern[str] | None:
    # a one-character marker cannot be broken (and no format has one)
    usable = sorted({m for m in markers if len(m.strip()) > 1}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, usable))) if usable else None
