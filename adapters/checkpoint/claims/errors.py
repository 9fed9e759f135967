"""What a run that lost a claim is told: it stopped, and ran (or wrote) nothing."""

from __future__ import annotations

__all__ = [
    "ThreadAlreadyResumed",
    "ToolCallAlreadyRan",
    "ToolCallClaimed",
    "ToolCallInProgress",
    "ToolCallTakenOver",
]


class ToolCallClaimed(RuntimeError):
    """Another run of the same thread holds this tool call; this run stopped without
    running it. Nothing was lost: read the thread with ``get_state`` once the other run
    is done."""

    def __init__(self, message: str, *, thread_id: str, call_id: str, tool: str) -> None:
        super().__init__(message)
        self.thread_id, self.call_id, self.tool = thread_id, call_id, tool


class ThreadAlreadyResumed(ToolCallClaimed):
    """The approval this run answers was already answered by another run of the thread."""


class ToolCallInProgress(ToolCallClaimed):
    """The tool call is running right now in another run of the thread."""


class ToolCallAlreadyRan(ToolCallClaimed):
    """The tool call already ran in another run of the thread; it is not run again."""


class ToolCallTakenOver(ToolCallClaimed):
    """This run lost its claim on a tool call while the call ran: it stopped renewing
    the claim for longer than the lease (its process was frozen, or the tool blocked
    the event loop and the heartbeat), another run took the call over and answered it,
    and the thread moved on. This run stops without writing anything to the thread:
    what it would write would fork the thread and hide the run that took over."""
