"""The guarantees the graph's nodes, the agent middleware and the graph's run share.

One flow for each, whichever runs it (a node of :func:`~fncall_graph.create_fncall_graph`
or a middleware of ``create_agent``), imported from here by its name:

* **approvals** — what a review covers (``interrupt_on``), the decisions a person gives,
  answers bound to the review they answer (:func:`bind_decisions`, :class:`StaleApproval`),
  a new input refused while a review waits (:class:`ApprovalPending`);
* **claimed_calls** — a tool call run at most once per id under its claim
  (:func:`run_claimed`), a cut result's whole kept with the claim;
* **daemon_workers** — sync tool calls on daemon threads, so one past its timeout is left
  running without holding up the interpreter's exit;
* **error_answers** — the one shape of a call that failed, was refused or not run;
* **repeats** — the repeat guard: a read made again in the same turn answered from the
  history;
* **boundary** — the thread's dialect now (:class:`DialectPlan`) and the model bound for it
  (:class:`ModelBoundary`), shared by the ``adapter`` and ``model`` nodes;
* **options** — one rule per option (:func:`check_option`), so the factory
  (:class:`GraphOptions`, checked once) and the middleware refuse a bad value alike.

Example:
    >>> from fncall_graph.guarantees import error_answer
    >>> error_answer({"name": "log", "args": {}, "id": "c1"}, "not allowed").status
    'error'
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .approvals import (
        ApprovalPending,
        Decision,
        EditDecision,
        EditedAction,
        InterruptMode,
        RejectDecision,
        RespondDecision,
        StaleApproval,
        answer_tied,
        bind_decisions,
        decision_response_schema,
        decision_schema,
        last_ai_message,
        new_turn_guard,
        no_check,
        normalize_interrupt_on,
        note_answer,
        own_answer_taken,
        resume_guard,
        review_token,
        unanswered_calls,
        unknown_tool,
    )
    from .boundary import (
        DialectPlan,
        ModelBoundary,
        RenderedInput,
        current_turn,
        model_calls_this_turn,
        unparsed_streak,
    )
    from .claimed_calls import (
        arun_claimed,
        call_claim,
        run_claimed,
        stored_result,
    )
    from .daemon_workers import (
        in_daemon_thread,
        run_in_daemon_thread,
    )
    from .error_answers import (
        NOT_RUN_KEY,
        error_answer,
    )
    from .options import GraphOptions, check_option
    from .repeats import (
        DEFAULT_MAX_REPEATS,
        REPEAT_KEY,
        calls_that_run,
        repeat_answers,
        repeat_stop,
    )

# Lazy, so importing one guarantee (the middleware's, say) does not import the others.
_HOMES = {
    "ApprovalPending": "approvals",
    "Decision": "approvals",
    "EditDecision": "approvals",
    "EditedAction": "approvals",
    "InterruptMode": "approvals",
    "RejectDecision": "approvals",
    "RespondDecision": "approvals",
    "StaleApproval": "approvals",
    "answer_tied": "approvals",
    "bind_decisions": "approvals",
    "decision_response_schema": "approvals",
    "decision_schema": "approvals",
    "last_ai_message": "approvals",
    "new_turn_guard": "approvals",
    "no_check": "approvals",
    "normalize_interrupt_on": "approvals",
    "note_answer": "approvals",
    "own_answer_taken": "approvals",
    "resume_guard": "approvals",
    "review_token": "approvals",
    "unanswered_calls": "approvals",
    "unknown_tool": "approvals",
    "DialectPlan": "boundary",
    "ModelBoundary": "boundary",
    "RenderedInput": "boundary",
    "current_turn": "boundary",
    "model_calls_this_turn": "boundary",
    "unparsed_streak": "boundary",
    "arun_claimed": "claimed_calls",
    "call_claim": "claimed_calls",
    "run_claimed": "claimed_calls",
    "stored_result": "claimed_calls",
    "in_daemon_thread": "daemon_workers",
    "run_in_daemon_thread": "daemon_workers",
    "NOT_RUN_KEY": "error_answers",
    "error_answer": "error_answers",
    "GraphOptions": "options",
    "check_option": "options",
    "DEFAULT_MAX_REPEATS": "repeats",
    "REPEAT_KEY": "repeats",
    "calls_that_run": "repeats",
    "repeat_answers": "repeats",
    "repeat_stop": "repeats",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "DEFAULT_MAX_REPEATS",
    "NOT_RUN_KEY",
    "REPEAT_KEY",
    "ApprovalPending",
    "Decision",
    "DialectPlan",
    "EditDecision",
    "EditedAction",
    "GraphOptions",
    "InterruptMode",
    "ModelBoundary",
    "RejectDecision",
    "RenderedInput",
    "RespondDecision",
    "StaleApproval",
    "answer_tied",
    "arun_claimed",
    "bind_decisions",
    "call_claim",
    "calls_that_run",
    "check_option",
    "current_turn",
    "decision_response_schema",
    "decision_schema",
    "error_answer",
    "in_daemon_thread",
    "last_ai_message",
    "model_calls_this_turn",
    "new_turn_guard",
    "no_check",
    "normalize_interrupt_on",
    "note_answer",
    "own_answer_taken",
    "repeat_answers",
    "repeat_stop",
    "resume_guard",
    "review_token",
    "run_claimed",
    "run_in_daemon_thread",
    "stored_result",
    "unanswered_calls",
    "unknown_tool",
    "unparsed_streak",
]
