"""Approval reviews: what a review covers, the decisions a person gives, and the answers
that bring them, checked before and after the run that brings them.

Not a node: the ``approve`` node asks with it, ``BoundApprovalMiddleware`` answers with
it, the graph's run wrapper checks answers with it, and clients bind their answers with it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.runnables import RunnableConfig
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    TypeAdapter,
    model_validator,
)

from fncall_graph._compat import resumed_by_id

if TYPE_CHECKING:
    # langchain.agents loads create_agent's whole module: imported where middleware
    # or a response_format is in use, not when the graph's face is imported
    from langchain.agents.middleware.human_in_the_loop import InterruptOnConfig

__all__ = ["ApprovalPending"]


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
class RunAnswer:
    """What one run brought to answer reviews, and whether a review took it."""

    sent: list[Any]
    taken: list[bool] = field(default_factory=list)
    # tied to the pending review by the ecosystem's own means (LangGraph's interrupt id,
    # or the checkpoint the client read): LangChain's plain decisions are taken then
    tied: bool = False


def answer_tied(config: RunnableConfig | None, index: int = 0) -> bool:
    """Whether the answer the node's interrupt number ``index`` gets is tied to it: the
    run ``config`` belongs to brought an answer tied to the review pending when it
    started (see :func:`resume_guard`), or answers that interrupt by its id
    (``Command(resume={interrupt.id: ...})``), which LangGraph hands to it alone."""
    mine = ((config or {}).get("configurable") or {}).get(_ANSWERS_KEY)
    return (isinstance(mine, RunAnswer) and mine.tied) or resumed_by_id(config, index)


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
    mine = RunAnswer(list(resume.values()) if by_id else [resume], tied=tied)
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


DecisionType = Literal["approve", "edit", "reject", "respond"]
InterruptMode = Literal["batched", "per_call"]
"""One interrupt per model reply listing its gated calls, or one per gated call."""
DEFAULT_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
"""What ``interrupt_on={"tool": True}`` allows."""

_KNOWN_DECISIONS = {"approve", "edit", "reject", "respond"}


def normalize_interrupt_on(
    interrupt_on: Mapping[str, bool | InterruptOnConfig],
) -> dict[str, InterruptOnConfig]:
    """Check ``interrupt_on`` and return a config for every gated tool.

    ``True`` allows approve, edit and reject; ``False`` leaves the tool ungated; a dict
    names its ``allowed_decisions`` and, optionally, a ``description`` (a string, or a
    function ``(tool_call, state, runtime) -> str``) and ``when``, LangChain's predicate
    ``(ToolCallRequest) -> bool``: a call is reviewed only when it returns ``True`` (it
    runs again on resume, so it must answer the same for the same call).

    Example:
        >>> normalize_interrupt_on({"sqlite-write_query": True, "sqlite-read_query": False})
        {'sqlite-write_query': {'allowed_decisions': ['approve', 'edit', 'reject']}}
    """
    out: dict[str, InterruptOnConfig] = {}
    for name, config in interrupt_on.items():
        if isinstance(config, bool):
            if config:
                out[name] = {"allowed_decisions": list(DEFAULT_DECISIONS)}  # an InterruptOnConfig
            continue
        if not isinstance(config, Mapping):
            raise ValueError(
                f"interrupt_on[{name!r}] must be True, False or a dict with "
                f"'allowed_decisions'; got {config!r}"
            )
        unknown_keys = set(config) - {"allowed_decisions", "description", "when"}
        if unknown_keys:
            # a key we do not apply must not pass silently
            raise ValueError(
                f"interrupt_on[{name!r}] has unsupported keys {sorted(unknown_keys)}; "
                "supported: 'allowed_decisions', 'description', 'when'"
            )
        if config.get("when") is not None and not callable(config["when"]):
            raise ValueError(
                f"interrupt_on[{name!r}]: 'when' must be a function (ToolCallRequest) -> bool"
            )
        allowed = config.get("allowed_decisions")
        if not allowed or isinstance(allowed, str):
            raise ValueError(
                f"interrupt_on[{name!r}]: 'allowed_decisions' must be a non-empty list of "
                f"{sorted(_KNOWN_DECISIONS)}; got {allowed!r}"
            )
        bad = [d for d in allowed if d not in _KNOWN_DECISIONS]
        if bad:
            raise ValueError(
                f"interrupt_on[{name!r}]: unknown decision types {bad}; "
                f"known: {sorted(_KNOWN_DECISIONS)}"
            )
        description = config.get("description")
        if description is not None and not (isinstance(description, str) or callable(description)):
            raise ValueError(
                f"interrupt_on[{name!r}]: 'description' must be a string or a function"
            )
        out[name] = dict(config)  # type: ignore[assignment]
        out[name]["allowed_decisions"] = list(dict.fromkeys(allowed))
    return out


def unknown_tool(names: Iterable[str], tool_names: Iterable[str]) -> str | None:
    """The first of ``names`` that names no tool, said with a close match and the tools.

    A gate on a name that is no tool would gate nothing, silently.

    Example:
        >>> unknown_tool(["write_query"], ["sqlite-write_query"])
        "'write_query', which is not one of the graph's tools; did you mean 'sqlite-write_query'? Tools: sqlite-write_query"
    """
    tools = sorted(set(tool_names))
    for name in names:
        if name in tools:
            continue
        close = difflib.get_close_matches(name, tools, n=1, cutoff=0.5)
        close += [t for t in tools if t.endswith(f"-{name}")][:1]
        hint = f"; did you mean {close[-1]!r}?" if close else "."
        listed = ", ".join(tools) or "none"
        return f"{name!r}, which is not one of the graph's tools{hint} Tools: {listed}"
    return None


def last_ai_message(messages: Sequence[AnyMessage]) -> AIMessage | None:
    """The latest ``AIMessage`` of the history (rejections may follow it)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None


def unanswered_calls(messages: Sequence[AnyMessage]) -> tuple[AIMessage, list[ToolCall]] | None:
    """The latest ``AIMessage`` and those of its calls no ``ToolMessage`` answers yet."""
    ai = last_ai_message(messages)
    if ai is None:
        return None
    index = max(i for i, m in enumerate(messages) if m is ai)
    answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
    return ai, [c for c in ai.tool_calls if c.get("id") not in answered]


def review_token(calls: Iterable[ToolCall]) -> str:
    """The token of a review of ``calls``: their ids, names and arguments, hashed.

    The node computes it again when the run resumes, so it depends on nothing else.
    """
    shown = [[c.get("id"), c["name"], c["args"]] for c in calls]
    text = json.dumps(shown, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def bind_decisions(request: Mapping[str, Any], decisions: Sequence[Mapping[str, Any]]) -> dict:
    """The resume value answering ``request`` (an approval interrupt's value) with
    ``decisions``, bound to it: each decision names its call, and the answer the review.

    Example:
        >>> request = {"action_requests": [{"name": "w", "args": {}, "tool_call_id": "c1"}],
        ...            "review_configs": [], "review_token": "t"}
        >>> bind_decisions(request, [{"type": "approve"}])
        {'decisions': [{'type': 'approve', 'tool_call_id': 'c1'}], 'review_token': 't'}
    """
    actions = request.get("action_requests") or []
    if len(decisions) != len(actions):
        raise ValueError(
            f"{len(decisions)} decision(s) for {len(actions)} action request(s): give one "
            "decision per action request, in order"
        )
    bound = [
        {**d, "tool_call_id": a["tool_call_id"]} if a.get("tool_call_id") else dict(d)
        for d, a in zip(decisions, actions, strict=True)
    ]
    out: dict[str, Any] = {"decisions": bound}
    if request.get("review_token"):
        out["review_token"] = request["review_token"]
    return out


# --------------------------------------------------------------------------- decisions
# Pydantic models rather than LangChain's TypedDicts so the interrupt's response_schema
# can check count and allowed types before LangGraph saves the answer.


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: str | None = None  # the call it answers (binds the answer)


class ApproveDecision(Decision):
    type: Literal["approve"]


class EditedAction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any]


class EditDecision(Decision):
    type: Literal["edit"]
    edited_action: EditedAction


class RejectDecision(Decision):
    type: Literal["reject"]
    message: str | None = None


class RespondDecision(Decision):
    type: Literal["respond"]
    message: str


_AnyDecision = Annotated[
    ApproveDecision | EditDecision | RejectDecision | RespondDecision, Discriminator("type")
]


def _check_bound(
    calls: Sequence[ToolCall],
    token: str,
    answer_token: str | None,
    named: Sequence[str | None],
    *,
    first_review: bool,
) -> None:
    """Raise :class:`StaleApproval` unless the answer is for exactly ``calls``.

    ``first_review``: whether an answer tied to nothing (decisions alone, LangChain's
    plain ``{"decisions": [...]}``) can be for this review only: it is the first review
    of the user's turn (no answer was taken since the user's last message, so the
    answer cannot be another review's, sent again), and the first call of it in
    ``per_call``; the answer then needs one decision per pending call.
    """
    ids = [c.get("id") or "" for c in calls]
    shown = ", ".join(f"{c['name']} ({i})" for c, i in zip(calls, ids, strict=True))
    if answer_token is not None and answer_token != token:
        raise StaleApproval(
            f"this answer is for review {answer_token!r}, but the review pending now is "
            f"{token!r} ({shown}); nothing was run. Read the pending interrupt with "
            "get_state and answer it",
            pending=ids,
            answered=[answer_token],
        )
    wrong = [
        (i, n) for i, n in enumerate(named) if n is not None and (i >= len(ids) or ids[i] != n)
    ]
    if wrong:
        i, n = wrong[0]
        raise StaleApproval(
            f"decision {i} answers tool call {n!r}, which is not pending here; the calls "
            f"pending review now are: {shown}; nothing was run",
            pending=ids,
            answered=[n for n in named if n is not None],
        )
    if answer_token is None and not any(named) and not first_review:
        raise StaleApproval(
            "an answer naming neither its calls nor its review (decisions alone) is taken "
            "for the first review of a user's turn, where it cannot be another review's "
            "answer sent again; this review comes after an answer taken in this turn, so it "
            "could be. Name the pending interrupt: "
            "Command(resume={interrupt.id: {'decisions': [...]}}), as LangChain's clients "
            f"can send it; pending now: {shown}. Or answer with the review's token and call "
            "ids (fncall_graph.bind_decisions(interrupt.value, decisions)); nothing was run",
            pending=ids,
        )


def decision_response_schema(
    calls: Sequence[ToolCall],
    allowed: Sequence[Sequence[str]],
    tool_names: frozenset[str],
    *,
    token: str,
    first_review: bool,
) -> type[BaseModel]:
    """The resume value's type for one interrupt: decisions matching the calls one to one,
    bound to them (see :func:`_check_bound`)."""

    class HITLResponse(BaseModel):
        """``{"decisions": [...], "review_token": ...}``: one decision per gated call, in
        order."""

        model_config = ConfigDict(extra="forbid")
        decisions: list[_AnyDecision]
        review_token: str | None = None

        @model_validator(mode="after")
        def _match_calls(self) -> HITLResponse:
            # StaleApproval is no ValueError: pydantic lets it through as it is
            _check_bound(
                calls,
                token,
                self.review_token,
                [d.tool_call_id for d in self.decisions],
                first_review=first_review,
            )
            names = [c["name"] for c in calls]
            if len(self.decisions) != len(calls):
                raise ValueError(
                    f"{len(self.decisions)} decision(s) for {len(calls)} pending tool call(s) "
                    f"{names}: give one decision per action request, in order"
                )
            for i, (decision, call, ok) in enumerate(
                zip(self.decisions, calls, allowed, strict=True)
            ):
                if decision.type not in ok:
                    raise ValueError(
                        f"decision {i} ({decision.type!r}) is not allowed for tool "
                        f"{call['name']!r}; allowed: {list(ok)}"
                    )
                if (
                    isinstance(decision, EditDecision)
                    and tool_names
                    and decision.edited_action.name not in tool_names
                ):
                    raise ValueError(
                        f"decision {i} edits the call into unknown tool "
                        f"{decision.edited_action.name!r}; tools: {sorted(tool_names)}"
                    )
            return self

    return HITLResponse


def decision_schema(
    call: ToolCall, allowed: Sequence[str], *, token: str, first_review: bool
) -> Any:
    """The resume value's type for one call's interrupt (``per_call``): one decision,
    of a type the tool allows, bound to the call; an edit keeps the tool."""

    def check(decision: Decision) -> Decision:
        _check_bound([call], token, None, [decision.tool_call_id], first_review=first_review)
        kind = decision.type  # type: ignore[attr-defined]
        if kind not in allowed:
            raise ValueError(
                f"{kind!r} is not allowed for {call['name']!r}; allowed: {list(allowed)}"
            )
        if isinstance(decision, EditDecision) and decision.edited_action.name != call["name"]:
            raise ValueError(
                f"an edit keeps the tool {call['name']!r}; got {decision.edited_action.name!r}"
            )
        return decision

    return Annotated[_AnyDecision, AfterValidator(check)]
