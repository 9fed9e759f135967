"""A tool call run at most once per call id under its claim, and a cut result's whole kept
with the claim (the tools node's and ``AtMostOnceMiddleware``'s one flow)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolCall
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.prebuilt.tool_node import ToolCallRequest

from fncall_graph.adapters.checkpoint.claims import (
    DEFAULT_LEASE,
    ClaimKey,
    ClaimRow,
    TaskClaim,
    claim_in_task,
    claims_for,
)

from .error_answers import error_answer

__all__ = []


def _why_unknown(claim: ClaimRow) -> str:
    """What is known of why the call's outcome was not recorded, and no more."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(claim.created_at))
    who = f"{claim.holder.describe()}, which started the call at {when}"
    if claim.status == "abandoned":
        return (
            f"the run making this call ({who}) was cancelled, or could not record the "
            "call's outcome (its database write failed), before the outcome was recorded"
        )
    alive = claim.holder.process_alive()
    if alive is False:
        return f"the process running this call ({who}) exited before the call finished"
    if alive is None:
        return (
            f"the process running this call ({who}) is on another machine and stopped "
            "renewing its claim without recording an outcome"
        )
    if claim.holder.is_this_process():
        return f"the run making this call ({who}) ended without recording the call's outcome"
    last = time.strftime("%H:%M:%S UTC", time.gmtime(claim.renewed_at or claim.created_at))
    return (
        f"the run making this call ({who}) stopped renewing its claim at {last} and had "
        "not recorded an outcome; its process lives on (it may be frozen or stalled, and "
        "may still be running the call: if it wakes, it stops without recording anything)"
    )


def unknown_outcome(call: ToolCall, claim: ClaimRow) -> ToolMessage:
    """Answer a call whose outcome was never recorded: it may or may not have happened.

    The text says what is known of why (the process exited, its run was cancelled or
    could not write, another machine's claim timed out), not more."""
    return error_answer(
        call,
        f"Outcome unknown: {_why_unknown(claim)}. It may or may not have taken effect, "
        "and it was not run again. Check its effect (for example with a read) before "
        "repeating it, or tell the user.",
        {"outcome": "unknown", "started_at": claim.created_at},
    )


def call_claim(
    request: ToolCallRequest, *, lease: float | None = DEFAULT_LEASE
) -> TaskClaim | None:
    """The claim on the tool call ``request`` runs, in the graph task running it (its
    runtime's config names the thread, the step and the checkpointer); ``None`` outside
    a thread with a checkpointer, or for a call without an id."""
    return claim_in_task(request.runtime.config, request.tool_call.get("id"), stale_after=lease)


def _claim_terms(request: ToolCallRequest, idempotent: bool) -> dict[str, Any]:
    call = request.tool_call
    return {
        "tool": call["name"],
        "idempotent": idempotent,
        "unknown": partial(unknown_outcome, call),
    }


def run_claimed(
    claim: TaskClaim | None,
    request: ToolCallRequest,
    execute: Callable[[ToolCallRequest], Any],
    *,
    idempotent: bool,
) -> Any:
    """Run ``execute(request)`` at most once per call id under ``claim`` (see
    :func:`call_claim`; ``None``: just run it), its outcome stored with the claim.

    The one claim flow of a tool call, for the graph's tools node and for
    :class:`~fncall_graph.middleware.AtMostOnceMiddleware` alike: a call already claimed
    is answered from its stored outcome, as "outcome unknown" (unless ``idempotent``:
    it runs again), or refused with
    :class:`~fncall_graph.adapters.checkpoint.claims.ToolCallClaimed`.
    """
    if claim is None:
        return execute(request)
    outcome = claim.once(partial(execute, request), **_claim_terms(request, idempotent))
    return stored_once(claim, outcome)


async def arun_claimed(
    claim: TaskClaim | None,
    request: ToolCallRequest,
    execute: Callable[[ToolCallRequest], Awaitable[Any]],
    *,
    idempotent: bool,
) -> Any:
    """:func:`run_claimed` for an async ``execute``."""
    if claim is None:
        return await execute(request)
    outcome = await claim.aonce(partial(execute, request), **_claim_terms(request, idempotent))
    return stored_once(claim, outcome)


STORED_RESULT = "stored_result"
"""The key of a cut result's artifact that refers to the whole result kept with the
call's claim (see :func:`stored_result`)."""


def stored_once(claim: TaskClaim, result: Any) -> Any:
    """``result`` as the thread keeps it: a cut result's whole (stored with its claim)
    replaced by a reference, so no checkpoint, write or stream update copies it."""
    if not isinstance(result, ToolMessage) or not isinstance(result.artifact, dict):
        return result
    whole = result.artifact
    if "full_content" not in whole:
        return result
    key = claim.key
    reference = {
        STORED_RESULT: {
            "thread_id": key.thread_id,
            "checkpoint_ns": key.namespace,
            "call_id": key.call_id,
        },
        "full_length": whole.get("full_length"),
    }
    return result.model_copy(update={"artifact": reference})


def _stored_key(message: ToolMessage) -> ClaimKey:
    ref = message.artifact.get(STORED_RESULT) if isinstance(message.artifact, dict) else None
    if not isinstance(ref, dict):
        raise ValueError(
            f"tool message {message.tool_call_id!r}: its artifact refers to no stored result "
            f"(no {STORED_RESULT!r} key); a result that was not cut is whole in the message"
        )
    return ClaimKey(ref["thread_id"], ref["checkpoint_ns"], ref["call_id"])


def stored_result(checkpointer: BaseCheckpointSaver, message: ToolMessage) -> ToolMessage | None:
    """The whole of a cut tool result: ``message`` with its full text (up to
    ``max_stored_result_chars``) and the tool's own artifact, as kept with the call's
    claim in ``checkpointer`` (``graph.checkpointer``); ``None`` once the thread's claims
    are deleted.

    Raises:
        ValueError: ``message`` was not cut (its artifact refers to nothing stored).
    """
    key = _stored_key(message)
    return _whole(message, claims_for(checkpointer).stored(key))


async def astored_result(
    checkpointer: BaseCheckpointSaver, message: ToolMessage
) -> ToolMessage | None:
    """:func:`stored_result` for an async checkpointer."""
    key = _stored_key(message)
    return _whole(message, await claims_for(checkpointer).astored(key))


def _whole(message: ToolMessage, stored: Any) -> ToolMessage | None:
    if not isinstance(stored, ToolMessage) or not isinstance(stored.artifact, dict):
        return None
    return message.model_copy(
        update={"content": stored.artifact.get("full_content"), "artifact": stored.artifact}
    )
