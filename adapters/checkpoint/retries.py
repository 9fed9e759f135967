"""Trying a failed write again: how many times, which errors, and what is said meanwhile.

One rule for the writes of this package that may fail for a moment: a checkpoint write
that found the SQLite file locked (:mod:`.savers`), and the outcome a tool call's claim
stores (:mod:`.claims`). Each failure before the last is logged as a warning that names
the attempt; the last failure, and any error not to be retried, goes to the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Retries"]

T = TypeVar("T")


def _any(exc: Exception) -> bool:
    return True


@dataclass(frozen=True)
class Retries:
    """Up to ``attempts`` tries of one write.

    Args:
        attempts: tries in all.
        log: where a failure that is tried again is said.
        what: what failed, as a ``%``-format of the caller's arguments; the warning adds
            ``(attempt i of n): the error; trying again``.
        retryable: which errors are tried again (an ``Exception``, never a cancel).

    Example:
        >>> import logging
        >>> flaky = iter([OSError("busy"), "saved"])
        >>> def write():
        ...     step = next(flaky)
        ...     if isinstance(step, Exception):
        ...         raise step
        ...     return step
        >>> Retries(3, logging.getLogger("demo"), "save of %s").run(write, "t1")
        'saved'
    """

    attempts: int
    log: logging.Logger
    what: str
    retryable: Callable[[Exception], bool] = _any

    def again(self, attempt: int, exc: BaseException, *args: Any) -> bool:
        """After try ``attempt`` (from 1) failed with ``exc``: whether to try again (said
        in the log when so). ``args`` fill :attr:`what`."""
        if attempt >= self.attempts or not isinstance(exc, Exception) or not self.retryable(exc):
            return False
        self.log.warning(
            self.what + " (attempt %d of %d): %s; trying again",
            *args,
            attempt,
            self.attempts,
            exc,
        )
        return True

    def run(self, write: Callable[[], T], *args: Any) -> T:
        """``write()``, tried again as :meth:`again` says; its last error is raised."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return write()
            except Exception as exc:
                if not self.again(attempt, exc, *args):
                    raise

    async def arun(self, write: Callable[[], Awaitable[T]], *args: Any) -> T:
        """:meth:`run` for an async ``write``."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await write()
            except Exception as exc:
                if not self.again(attempt, exc, *args):
                    raise
