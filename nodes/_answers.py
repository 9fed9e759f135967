"""A run's answers to reviews, checked before and after the run that brings them.

An approval answer (``Command(resume=...)``) is checked against the thread's pending
reviews before its run starts (:func:`resume_guard`), and so is a new input, which is
refused while a review waits (:func:`new_turn_guard`, raising :class:`ApprovalPending`): an answer that answers nothing, or
a review no longer pending, raises :class:`StaleApproval` and nothing runs. The answer
rides with the run; the ``approve`` node notes when a review takes it
(:func:`note_answer`), and a run whose answer no review took (another run's answer
replaced it) is refused after (:func:`own_answer_taken`). Not a node: the graph's run
wrapper and the ``approve`` node share it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic import TypeAdapter

from fncall_graph._compat import resumed_by_id

__all__ = [
    "ApprovalPending",
    "new_turn_guard",
    "no_check",
    "note_answer",
    "own_answer_taken",
    "resume_guard",
]


class StaleApproval(RuntimeError):
    """An approval answer that does not answer the review pending now; nothing ran.

    Raised for an answer naming other calls or another review (``review_token``), an
    answer to an interrupt that is no longer pending, an answer when nothing is pending,
    and an unbound answer that could be meant for an earlier review. Read the thread
    with ``get_state``: its pending interrupt (if any) is what can be answered.

    Attributes:
        thread_id: the thread (``None`` when unknown).
        pending: the ``tool_call_id`` s of the review pending now (empty: none).
        answered: the ``tool_call_id`` s or review token the answer named, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        thread_id: str | None = None,
        pending: Sequence[str] = (),
        answered: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.pending, self.answered = tuple(pending), tuple(answered)


class ApprovalPending(RuntimeError):
    """A new input sent to a thread while an approval review waits; nothing ran and
    nothing was saved.

    A new message is no answer to the review, and taking it would leave the reviewed
    calls without a result in the history (which native providers refuse). Answer the
    review first, with ``Command(resume=...)`` (:func:`~fncall_graph.bind_decisions`
    writes one: approve, edit or reject each call), then send the message again.

    Attributes:
        thread_id: the thread (``None`` when unknown).
        pending: the ``tool_call_id`` s of the calls the pending review asks about.
        names: their tool names, in the same order.
    """

    def __init__(
        self,
        message: str,
        *,
        thread_id: str | None = None,
        pending: Sequence[str] = (),
        names: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.pending, self.names = tuple(pending), tuple(names)


def _pending_reviews(state: Any) -> tuple[list[Any], list[Any], list[Mapping[str, Any]]]:
    """The thread's pending interrupts, those that are approval reviews, and the calls
    those ask about (``action_requests``; a ``per_call`` review is one call itself)."""
    pending = list(getattr(state, "interrupts", ()) or ())
    reviews = [i for i in pending if isinstance(i.value, Mapping) and i.value.get("review_token")]
    asked = [a for i in reviews for a in i.value.get("action_requests", [i.value])]
    return pending, reviews, asked


def new_turn_guard(state: Any, config: RunnableConfig | None) -> None:
    """Refuse a new input (not an answer) to a thread whose approval review is pending:
    raise :class:`ApprovalPending`, naming the calls asked about and how to answer.

    ``state`` is the thread's ``StateSnapshot`` (``None``: nothing saved, nothing
    pending).
    """
    _, _, asked = _pending_reviews(state)
    if not asked:
        return
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    ids = [a.get("tool_call_id", "") for a in asked]
    names = [a.get("name", "") for a in asked]
    listed = ", ".join(f"{n} ({i})" for n, i in zip(names, ids, strict=True))
    raise ApprovalPending(
        f"thread {thread_id!r} is waiting for an approval of {listed}: a new input is "
        "refused until it is answered, and nothing was run or saved. Answer it with "
        "Command(resume=bind_decisions(interrupt.value, [...])), a decision for each call "
        "(approve, edit or reject; read the interrupt with get_state(config).interrupts), "
        "then send the new input again",
        thread_id=thread_id,
        pending=ids,
        names=names,
    )


# -- answers that reach no review: checked around the run (see ``resume_guard``)

_ANSWERS_KEY = "__fncall_approval_answers"  # "__": kept out of checkpoint metadata
_INTERRUPT_ID = re.compile(r"[0-9a-f]{32}")


@dataclass
class _RunAnswer:
    """What one run brought to answer reviews, and whether a review took it."""

    sent: list[Any]
    taken: list[bool] = field(default_factory=list)
    # tied to the pending review by the ecosystem's own means (LangGraph's interrupt id,
    # or the checkpoint the client read): LangChain's plain decisions are taken then
    tied: bool = False


def _answer_tied(config: RunnableConfig | None, index: int = 0) -> bool:
    """Whether the answer the node's interrupt number ``index`` gets is tied to it: the
    run ``config`` belongs to brought an answer tied to the review pending when it
    started (see :func:`resume_guard`), or answers that interrupt by its id
    (``Command(resume={interrupt.id: ...})``), which LangGraph hands to it alone."""
    mine = ((config or {}).get("configurable") or {}).get(_ANSWERS_KEY)
    return (isinstance(mine, _RunAnswer) and mine.tied) or resumed_by_id(config, index)


def note_answer(config: RunnableConfig | None, schema: Any, answer: Any) -> None:
    """Note that a review took ``answer``, if it is the one the run ``config`` belongs to
    brought (see :func:`own_answer_taken`)."""
    mine = ((config or {}).get("configurable") or {}).get(_ANSWERS_KEY)
    if mine is None or mine.taken:
        return
    for sent in mine.sent:
        try:
            if TypeAdapter(schema).validate_python(sent) == answer:
                mine.taken.append(True)
                return
        except Exception:  # sent for another review: not this one
            continue


def own_answer_taken(config: RunnableConfig | None) -> None:
    """Raise :class:`StaleApproval` unless a review took the answer this run brought.

    Two runs answering one review at the same instant write their answers to the same
    checkpoint, and the later write replaces the earlier: a run must not apply (and
    report as its own) the answer another run sent.
    """
    mine = ((config or {}).get("configurable") or {}).get(_ANSWERS_KEY)
    if mine is None or mine.taken:  # None: a run that did not go through the guard
        return
    raise StaleApproval(
        "another answer to this review arrived at the same time and replaced this one; "
        "this answer was not applied and nothing was run. Read the thread with get_state",
        thread_id=((config or {}).get("configurable") or {}).get("thread_id"),
    )


def no_check() -> None:
    """No check after a run that needs none."""


def _ran_before(state: Any, config: RunnableConfig | None) -> bool:
    """Did this run (LangGraph Server's ``run_id``) save the thread's last checkpoint?"""
    run_id = ((config or {}).get("metadata") or {}).get("run_id")
    saved_by = (getattr(state, "metadata", None) or {}).get("run_id")
    return run_id is not None and str(run_id) == str(saved_by)


def resume_guard(
    state: Any, resume: Any, config: RunnableConfig | None, *, head: str | None = None
) -> tuple[RunnableConfig | None, Callable[[], None]]:
    """Check a ``Command(resume=...)`` against the thread's pending interrupts before
    the run; return the run's config and a check for after it.

    ``state`` is the thread's ``StateSnapshot``. Raises :class:`StaleApproval` when
    nothing is pending, when an interrupt-id answer names interrupts that are not
    pending, or when a bound answer's token is no pending review's. The check after the
    run raises it when the pending reviews were all approvals and none took the answer
    (another run answered them between the check and the run).

    ``head`` is the thread's latest checkpoint id: an answer whose run names that very
    checkpoint (the one its client read) is tied to the review pending there.
    """
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    pending, reviews, asked = _pending_reviews(state)
    ids = [a.get("tool_call_id", "") for a in asked]
    if not pending and getattr(state, "next", ()):
        # the last run stopped mid-way after its answer was taken (a replica killed, a
        # run cancelled by another; a server retries the same run): go on from there,
        # as invoke(None) would; this answer is not used
        return config, no_check
    if not pending and _ran_before(state, config):
        # this very run took the answer and finished, then a server ran it again (a run
        # cancelled as it ended is retried): it is done; nothing runs twice
        return config, no_check
    if not pending:
        raise StaleApproval(
            f"thread {thread_id!r} has no pending interrupt: this answer answers nothing "
            "(already answered, or never asked); nothing was run",
            thread_id=thread_id,
        )
    by_id = (
        isinstance(resume, Mapping)
        and bool(resume)
        and all(isinstance(k, str) and _INTERRUPT_ID.fullmatch(k) for k in resume)
    )
    if by_id:
        unknown = sorted(set(resume) - {i.id for i in pending})
        if unknown:
            raise StaleApproval(
                f"thread {thread_id!r}: interrupt(s) {unknown} are not pending (pending: "
                f"{sorted(i.id for i in pending)}); nothing was run",
                thread_id=thread_id,
                pending=ids,
                answered=unknown,
            )
    elif isinstance(resume, Mapping) and resume.get("review_token") is not None:
        tokens = {i.value["review_token"] for i in reviews}
        if resume["review_token"] not in tokens:
            raise StaleApproval(
                f"thread {thread_id!r}: this answer is for review {resume['review_token']!r}, "
                f"which is not pending (pending: {sorted(tokens) or 'none'}, calls {ids}); "
                "nothing was run",
                thread_id=thread_id,
                pending=ids,
                answered=[resume["review_token"]],
            )
    # the checkpoint the client read (LangGraph Server passes it with the run) is the one
    # whose review is pending: the answer cannot be meant for another
    read = ((config or {}).get("configurable") or {}).get("checkpoint_id")
    tied = by_id or (read is not None and read == head)
    mine = _RunAnswer(list(resume.values()) if by_id else [resume], tied=tied)
    run_config: dict[str, Any] = dict(config or {})
    run_config["configurable"] = {**(run_config.get("configurable") or {}), _ANSWERS_KEY: mine}
    if len(reviews) != len(pending):
        mine.taken.append(True)  # an interrupt of another kind may take the answer

    def after() -> None:
        if not mine.taken:
            raise StaleApproval(
                f"thread {thread_id!r}: the review this answers ({ids}) was answered by "
                "another run meanwhile; this answer was not used and nothing was run",
                thread_id=thread_id,
                pending=ids,
            )

    return run_config, after  # type: ignore[return-value]
