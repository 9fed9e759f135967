"""The ``approve`` node: pause before chosen tools run, and apply a person's decisions.

It sits between ``model`` and ``tools``. When the model's reply holds calls to gated
tools, ONE ``interrupt`` lists every gated call of the turn, in the shape LangChain's
``HumanInTheLoopMiddleware`` uses (batched mode)::

    {"action_requests": [{"name": ..., "args": {...}, "description": ...}, ...],
     "review_configs": [{"action_name": ..., "allowed_decisions": [...]}, ...]}

plus a ``tool_call_id`` in each action request and a ``review_token`` naming exactly
what was shown. ONE ``Command(resume={"decisions": [...], "review_token": ...})``
answers them all, in the same order (:func:`bind_decisions` writes it):

- ``{"type": "approve"}``: the call runs as the model wrote it;
- ``{"type": "edit", "edited_action": {"name": ..., "args": {...}}}``: the call in the
  ``AIMessage`` is replaced (same message id, same call id) and the edited call runs;
- ``{"type": "reject", "message": "..."}``: the call does not run; it is answered with
  ``ToolMessage(status="error")`` holding the message;
- ``{"type": "respond", "message": "..."}`` (only where a config allows it): the call
  does not run; the message is its result (``status="success"``).

The interrupt is the first thing the node does, and the node has no side effects: on
resume LangGraph runs the node again from the top, and nothing may happen twice. The
tools (gated or not) run only after the decisions, in the ``tools`` node, once each.

Answers are checked before LangGraph saves them (the interrupt's ``response_schema``):
a wrong count, a decision a tool does not allow, or an edit naming an unknown tool
raises ``pydantic.ValidationError`` from ``invoke`` and nothing is saved, so the same
interrupt can be answered again.

Every answer is bound to the review it answers. An answer whose ``review_token`` (or
whose decisions' ``tool_call_id``) is not that of the review pending now raises
:class:`StaleApproval` and runs nothing: a retried approve arriving after the thread
moved on to another write, a second reviewer's late answer, an answer to an interrupt
that is no longer pending, an answer when nothing is pending. An unbound answer (decisions
alone) is taken only when it cannot be meant for anything else: while the pending review
is the thread's first.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from langchain.agents.middleware.human_in_the_loop import (
    ActionRequest,
    HITLRequest,
    InterruptOnConfig,
    ReviewConfig,
)
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import interrupt
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    model_validator,
)

from fncall_graph._compat import pause, resumed_by_id, resumes_by_id
from fncall_graph.adapters.checkpoint.claims import TaskClaim, claim_in_task

from ._answers import (
    StaleApproval,
    _answer_tied,
    note_answer,
    own_answer_taken,
)
from ._error_answer import error_answer

__all__ = [
    "ApproveNode",
    "InterruptMode",
    "InterruptOnConfig",
    "StaleApproval",
    "bind_decisions",
    "normalize_interrupt_on",
    "review_token",
    "unanswered_calls",
    "unknown_tool",
]

DecisionType = Literal["approve", "edit", "reject", "respond"]
InterruptMode = Literal["batched", "per_call"]
"""One interrupt per model reply listing its gated calls, or one per gated call."""
DEFAULT_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
"""What ``interrupt_on={"tool": True}`` allows."""

_KNOWN_DECISIONS = {"approve", "edit", "reject", "respond"}
_DESCRIPTION_PREFIX = "Tool execution requires approval"


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
                out[name] = InterruptOnConfig(allowed_decisions=list(DEFAULT_DECISIONS))
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
    """Raise :class:`StaleApproval` unless the answer is for exactly ``calls``."""
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
            "only for a thread's first review, where it cannot be meant for another, or "
            "when it names the pending interrupt: "
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


def _rejection(call: ToolCall, message: str | None) -> ToolMessage:
    content = message or (
        f"The user rejected this call of `{call['name']}`; it was not run. Do not call it "
        "again unless the user asks."
    )
    return error_answer(call, content)


class ApproveNode:
    """Interrupt before gated tool calls run; apply the decisions the resume brings.

    Args:
        interrupt_on: tool name → ``True`` (approve, edit, reject), ``False`` (no
            review) or ``{"allowed_decisions": [...], "description": ...}``; see
            :func:`normalize_interrupt_on`.
        tool_names: the graph's tools; an ``edit`` may only name one of them
            (empty: not checked).
        tools: the graph's tools themselves (what a ``when`` predicate is given; their
            names count as ``tool_names``).
        interrupt_mode: ``"batched"``: one interrupt per reply; ``"per_call"``: one per
            gated call, in LangChain's ``ToolApprovalRequest`` shape.

    The update the node returns: the ``AIMessage`` again, with edited calls replaced
    (same ``id``, so ``add_messages`` replaces it in place), and a ``ToolMessage`` for
    every rejected (or responded) call. The graph then runs every call that has no
    answer yet — gated calls that were approved or edited, and the ungated ones.

    Example:
        ```python
        from langgraph.types import Command

        graph = create_fncall_graph(
            model, tools, interrupt_on={"sqlite-write_query": True}, checkpointer=saver
        )
        r = graph.invoke({"messages": [("user", "log it")]}, cfg)
        r["__interrupt__"][0].value["action_requests"]
        # [{'name': 'sqlite-write_query', 'args': {'query': 'INSERT ...'}, 'description': ...}]
        pending = r["__interrupt__"][0]
        graph.invoke(Command(resume=bind_decisions(pending.value, [{"type": "approve"}])), cfg)
        ```
    """

    def __init__(
        self,
        interrupt_on: Mapping[str, bool | InterruptOnConfig],
        *,
        tool_names: Iterable[str] = (),
        tools: Iterable[BaseTool] = (),
        interrupt_mode: InterruptMode = "batched",
    ) -> None:
        self.configs = normalize_interrupt_on(interrupt_on)
        self.tools = {t.name: t for t in tools}
        self.tool_names = frozenset(tool_names) | frozenset(self.tools)
        problem = unknown_tool(self.configs, self.tool_names) if self.tool_names else None
        if problem:
            raise ValueError(f"interrupt_on names {problem}")
        if interrupt_mode not in ("batched", "per_call"):
            raise ValueError(
                f"interrupt_mode must be 'batched' or 'per_call', got {interrupt_mode!r}"
            )
        self.interrupt_mode = interrupt_mode

    def gated(self, calls: Iterable[ToolCall], state: Mapping[str, Any]) -> list[ToolCall]:
        """The calls among ``calls`` that need a decision, in order (``when`` asked)."""
        return [c for c in calls if c["name"] in self.configs and self._when(c, state)]

    def _when(self, call: ToolCall, state: Mapping[str, Any]) -> bool:
        when = self.configs[call["name"]].get("when")
        if when is None:
            return True
        # the request LangChain's per_call mode gives it: the tool and its ToolRuntime
        from langgraph.config import get_config
        from langgraph.prebuilt.tool_node import ToolCallRequest, ToolRuntime
        from langgraph.runtime import get_runtime

        try:
            runtime: Any = get_runtime()
            config = get_config()
        except RuntimeError:  # outside a graph run
            runtime, config = None, {}
        tool_runtime = ToolRuntime(
            state=state,
            context=getattr(runtime, "context", None),
            config=config,
            stream_writer=getattr(runtime, "stream_writer", lambda _chunk: None),
            tool_call_id=call.get("id"),
            store=getattr(runtime, "store", None),
            tools=list(self.tools.values()),
        )
        request = ToolCallRequest(
            tool_call=call, tool=self.tools.get(call["name"]), state=state, runtime=tool_runtime
        )
        return bool(when(request))

    def needs_review(self, state: Mapping[str, Any]) -> bool:
        """Whether the latest reply has gated calls still waiting for a decision."""
        pending = unanswered_calls(state["messages"])
        return bool(pending and self.gated(pending[1], state))

    def _description(self, call: ToolCall, state: Mapping[str, Any]) -> str:
        description = self.configs[call["name"]].get("description")
        if callable(description):
            from langgraph.runtime import get_runtime

            return description(call, state, get_runtime())  # type: ignore[arg-type]
        if description is not None:
            return description
        return f"{_DESCRIPTION_PREFIX}\n\nTool: {call['name']}\nArgs: {call['args']}"

    def request(self, calls: Sequence[ToolCall], state: Mapping[str, Any]) -> HITLRequest:
        """The interrupt value for ``calls`` (the gated, unanswered calls of one reply)."""
        request = HITLRequest(
            action_requests=[
                ActionRequest(
                    name=c["name"], args=c["args"], description=self._description(c, state)
                )
                for c in calls
            ],
            review_configs=[
                ReviewConfig(
                    action_name=c["name"],
                    allowed_decisions=list(self.configs[c["name"]]["allowed_decisions"]),
                )
                for c in calls
            ],
        )
        # what binds an answer to this review (extra keys: LangChain's clients ignore them)
        for action, call in zip(request["action_requests"], calls, strict=True):
            action["tool_call_id"] = call.get("id") or ""  # type: ignore[typeddict-unknown-key]
        request["review_token"] = review_token(calls)  # type: ignore[typeddict-unknown-key]
        return request

    def first_review(self, state: Mapping[str, Any], ai: AIMessage) -> bool:
        """Whether no reply before ``ai`` had gated calls (so no earlier review)."""
        for m in state["messages"]:
            if m is ai:
                return True
            if isinstance(m, AIMessage) and self.gated(m.tool_calls, state):
                return False
        return True

    def invoke(self, state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        asked = self._ask(state, config)
        if asked is None:
            return {}
        ai, calls, decisions = asked
        if (claim := self._claim(calls, config)) is not None:
            claim.review()
        return self._apply(ai, calls, decisions)

    async def ainvoke(self, state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        asked = self._ask(state, config)
        if asked is None:
            return {}
        ai, calls, decisions = asked
        if (claim := self._claim(calls, config)) is not None:
            await claim.areview()
        return self._apply(ai, calls, decisions)

    def _ask(
        self, state: Mapping[str, Any], config: RunnableConfig
    ) -> tuple[AIMessage, list[ToolCall], Sequence[_Decision]] | None:
        """Interrupt for the open gated calls; on resume, the decisions that came back."""
        pending = unanswered_calls(state["messages"])
        if pending is None:
            return None
        ai, open_calls = pending
        calls = self.gated(open_calls, state)
        if not calls:
            return None
        first = self.first_review(state, ai)
        if self.interrupt_mode == "per_call":
            return ai, calls, self._ask_each(calls, state, config, first=first)
        value = self.request(calls, state)
        schema = _response_schema(
            calls,
            [self.configs[c["name"]]["allowed_decisions"] for c in calls],
            self.tool_names,
            token=value["review_token"],  # type: ignore[typeddict-item]
            first_review=first or _answer_tied(config),
        )
        if resumes_by_id(config) and not resumed_by_id(config, 0):
            # the run answers other interrupts: any answer this one would get is an
            # earlier run's, left without an id at the checkpoint (refused then)
            pause(config, value, 0, schema)
        # nothing above has effects: on resume the node runs again from the top
        response = interrupt(value, response_schema=schema)
        note_answer(config, schema, response)
        own_answer_taken(config)
        return ai, calls, response.decisions  # type: ignore[attr-defined]

    def _ask_each(
        self,
        calls: Sequence[ToolCall],
        state: Mapping[str, Any],
        config: RunnableConfig,
        *,
        first: bool,
    ) -> list[_Decision]:
        """``per_call``: one interrupt per gated call, in order, as LangChain's
        ``HumanInTheLoopMiddleware(interrupt_mode="per_call")`` raises them; on resume,
        the calls answered before return their answers again."""
        answers: list[_Decision] = []
        # A run answering by id names the interrupt it answers: those before it took
        # their answers in earlier runs (saved with the task, accepted then); those after
        # it pause, and never take an answer an earlier run left without an id.
        named = next((i for i in range(len(calls)) if resumed_by_id(config, i)), None)
        for i, call in enumerate(calls):
            value = {
                "type": "tool_approval",
                "tool_call_id": call.get("id") or "",
                "name": call["name"],
                "args": call["args"],
                "description": self._description(call, state),
                "review_token": review_token([call]),
            }
            schema = _decision_schema(
                call,
                self.configs[call["name"]]["allowed_decisions"],
                token=value["review_token"],
                # an unbound answer to a later call could be a retried answer to an earlier one
                first_review=(first and i == 0)
                or _answer_tied(config, i)
                or (named is not None and i <= named),
            )
            if named is not None and i > named and not resumed_by_id(config, i):
                pause(config, value, i, schema)
            answers.append(interrupt(value, response_schema=schema))
            note_answer(config, schema, answers[-1])
        own_answer_taken(config)
        return answers

    @staticmethod
    def _claim(calls: Sequence[ToolCall], config: RunnableConfig) -> TaskClaim | None:
        """The claim on answering this approval: of two runs resuming it, one goes on."""
        return claim_in_task(config, f"approval:{calls[0]['id']}")

    def _apply(
        self, ai: AIMessage, calls: Sequence[ToolCall], decisions: Sequence[_Decision]
    ) -> dict[str, Any]:
        edits: dict[str, EditedAction] = {}
        answers: list[ToolMessage] = []
        for call, decision in zip(calls, decisions, strict=True):
            if isinstance(decision, EditDecision):
                edits[call["id"] or ""] = decision.edited_action
            elif isinstance(decision, RejectDecision):
                answers.append(_rejection(call, decision.message))
            elif isinstance(decision, RespondDecision):
                answers.append(
                    ToolMessage(
                        content=decision.message,
                        name=call["name"],
                        tool_call_id=call["id"] or "",
                        status="success",
                    )
                )
        messages: list[AnyMessage] = []
        if edits:
            new_calls = [
                {**c, "name": edits[c["id"]].name, "args": edits[c["id"]].args}
                if c.get("id") in edits
                else c
                for c in ai.tool_calls
            ]
            kwargs = {k: v for k, v in ai.additional_kwargs.items() if k != "tool_calls"}
            # same id: add_messages replaces the reply in place
            messages.append(
                ai.model_copy(update={"tool_calls": new_calls, "additional_kwargs": kwargs})
            )
        messages += answers
        return {"messages": messages} if messages else {}
