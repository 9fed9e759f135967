"""How long a test waits for a process: in seconds of a quiet machine, not of the wall.

A test that waits for a command (``subprocess``, ``pexpect``) needs a bound, or a stuck
command hangs the suite; a wall-clock bound, though, fails a correct command on a busy
machine, where every process runs several times slower. :class:`Patience` counts the
time waited as a quiet machine would have spent it: each second of the wall counts
``1 / slowdown()``, where :func:`slowdown` is the run queue per core (1 on a quiet
machine, 8 on 2 cores at load 16). A command that is merely slow still finishes; one
that is stuck is still stopped, later on a busy machine.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import pexpect

__all__ = ["Patience", "Spawn", "run", "slowdown"]

SLICE = 1.0  # seconds of the wall between two looks at the machine's load


def slowdown() -> float:
    """How many times slower than on a quiet machine a process runs now: the run queue
    (the last minute's load average) per core, at least 1."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


class Patience:
    """A wait of ``seconds`` as a quiet machine counts them (see the module's docstring)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent = 0.0
        self.last = time.monotonic()

    def over(self) -> bool:
        """Whether the wait is used up, counting the wall time since the last look."""
        now = time.monotonic()
        self.spent += (now - self.last) / slowdown()
        self.last = now
        return self.spent >= self.seconds


def run(command: list[str], *, timeout: float, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(command, **kwargs)``, stopped once it ran ``timeout`` quiet seconds
    (raises ``subprocess.TimeoutExpired`` then, as ``subprocess.run`` does)."""
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    patience = Patience(timeout)
    with subprocess.Popen(command, **kwargs) as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=SLICE)  # a second call goes on reading
                break
            except subprocess.TimeoutExpired:
                if patience.over():
                    proc.kill()
                    proc.communicate()
                    raise subprocess.TimeoutExpired(
                        command, timeout, output=None, stderr=None
                    ) from None
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


class Spawn(pexpect.spawn):
    """``pexpect.spawn`` whose ``expect`` and ``expect_exact`` wait ``timeout`` quiet
    seconds (the spawn's own ``timeout`` unless a call gives one)."""

    def _patiently(self, expect: Any, pattern: Any, timeout: float | None, **kwargs: Any) -> Any:
        wanted = self.timeout if timeout == -1 else timeout
        patterns = pattern if isinstance(pattern, list) else [pattern]
        if wanted is None or pexpect.TIMEOUT in patterns:  # the caller handles its own wait
            return expect(pattern, timeout=wanted, **kwargs)
        patience = Patience(wanted)
        while True:
            try:
                return expect(pattern, timeout=SLICE, **kwargs)
            except pexpect.TIMEOUT:
                if patience.over():
                    raise

    def expect(self, pattern: Any, timeout: float | None = -1, **kwargs: Any) -> int:
        return self._patiently(super().expect, pattern, timeout, **kwargs)

    def expect_exact(self, pattern: Any, timeout: float | None = -1, **kwargs: Any) -> int:
        return self._patiently(super().expect_exact, pattern, timeout, **kwargs)
