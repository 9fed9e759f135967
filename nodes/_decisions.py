"""A person's decisions on a review, and the answer that brings them: their types, the
answer bound to the review it answers (:func:`review_token`, :func:`bind_decisions`), and
the interrupt's response schema that checks an answer before LangGraph saves it.

Not a node: the ``approve`` node asks with it; clients bind their answers with it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from langchain_core.messages.tool import ToolCall
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    model_validator,
)

from ._answers import StaleApproval

__all__ = []


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


class _Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: str | None = None  # the call it answers (binds the answer)


class ApproveDecision(_Decision):
    type: Literal["approve"]


class EditedAction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any]


class EditDecision(_Decision):
    type: Literal["edit"]
    edited_action: EditedAction


class RejectDecision(_Decision):
    type: Literal["reject"]
    message: str | None = None


class RespondDecision(_Decision):
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


def _response_schema(
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


def _decision_schema(
    call: ToolCall, allowed: Sequence[str], *, token: str, first_review: bool
) -> Any:
    """The resume value's type for one call's interrupt (``per_call``): one decision,
    of a type the tool allows, bound to the call; an edit keeps the tool."""

    def check(decision: _Decision) -> _Decision:
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
