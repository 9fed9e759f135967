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

``interrupt_mode="per_call"`` asks in LangChain's per-call shape instead: one interrupt
per gated call (``{"type": "tool_approval", "tool_call_id", "name", "args",
"description", "review_token"}``), all raised in the same step, each answered with one
decision keyed by its id, ``Command(resume={interrupt.id: decision, ...})``, as
LangChain's per-call client loop sends them. A resume may answer some: their answers
are kept (bound to their calls) and the others stay pending under the same ids. Nothing
runs until every gated call of the reply is decided.

What a review covers (``interrupt_on``, the calls still unanswered), the decisions, their
binding and the response schemas that check them are
:mod:`fncall_graph.guarantees.approvals`'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import interrupt

from fncall_graph._compat import (
    pause,
    pause_all,
    plain_answer,
    resumed_by_id,
    resumes_by_id,
    task_answers,
    validate_answer,
)
from fncall_graph.adapters.checkpoint.claims import TaskClaim, claim_in_task
from fncall_graph.guarantees import (
    NOT_RUN_KEY,
    Decision,
    EditDecision,
    EditedAction,
    InterruptMode,
    RejectDecision,
    RespondDecision,
    answer_tied,
    calls_that_run,
    check_option,
    current_turn,
    decision_response_schema,
    decision_schema,
    error_answer,
    normalize_interrupt_on,
    note_answer,
    own_answer_taken,
    review_token,
    unanswered_calls,
    unknown_tool,
)

if TYPE_CHECKING:
    # langchain.agents loads create_agent's whole module: imported where middleware
    # or a response_format is in use, not when the graph's face is imported
    from langchain.agents.middleware.human_in_the_loop import (
        HITLRequest,
        InterruptOnConfig,
    )

__all__ = ["ApproveNode"]

_DESCRIPTION_PREFIX = "Tool execution requires approval"


def _rejection(call: ToolCall, message: str | None) -> ToolMessage:
    content = message or (
        f"The user rejected this call of `{call['name']}`; it was not run. Do not call it "
        "again unless the user asks."
    )
    return error_answer(call, content, {NOT_RUN_KEY: True})


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
            gated call, in LangChain's ``ToolApprovalRequest`` shape, all pending at
            once, each answered by its own id (a resume may answer some of them).
        rejection: the ``ToolMessage`` answering a rejected call, from the call and the
            reviewer's message (default: the product's words, the message as it is).
        max_repeats: the graph's repeat guard (``None``: none): a call the guard will
            answer instead of running is not asked about (see
            :func:`~fncall_graph.guarantees.repeat_answers`, which the tools node's
            dispatch applies to the same history).

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
        max_repeats: int | None = None,
        rejection: Callable[[ToolCall, str | None], ToolMessage] | None = None,
    ) -> None:
        self.rejection = rejection or _rejection
        self.configs = normalize_interrupt_on(interrupt_on)
        self.max_repeats = max_repeats
        self.tools = {t.name: t for t in tools}
        self.tool_names = frozenset(tool_names) | frozenset(self.tools)
        problem = unknown_tool(self.configs, self.tool_names) if self.tool_names else None
        if problem:
            raise ValueError(f"interrupt_on names {problem}")
        self.interrupt_mode = check_option("interrupt_mode", interrupt_mode)

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
        pending = self._open(state)
        return bool(pending and self.gated(pending[1], state))

    def _open(self, state: Mapping[str, Any]) -> tuple[AIMessage, list[ToolCall]] | None:
        """The latest reply and those of its calls that are unanswered and will run:
        the repeat guard's answers are left out, decided from the same history as the
        tools node's dispatch decides them."""
        pending = unanswered_calls(state["messages"])
        if pending is None:
            return None
        ai, calls = pending
        return ai, calls_that_run(ai, calls, state["messages"], self.max_repeats, self.tools)

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
        # LangChain's HITLRequest, ActionRequest and ReviewConfig (TypedDicts) written as
        # the dicts they build, so asking does not load langchain.agents
        request: HITLRequest = {
            "action_requests": [
                {"name": c["name"], "args": c["args"], "description": self._description(c, state)}
                for c in calls
            ],
            "review_configs": [
                {
                    "action_name": c["name"],
                    "allowed_decisions": list(self.configs[c["name"]]["allowed_decisions"]),
                }
                for c in calls
            ],
        }
        # what binds an answer to this review (extra keys: LangChain's clients ignore them)
        for action, call in zip(request["action_requests"], calls, strict=True):
            action["tool_call_id"] = call.get("id") or ""  # type: ignore[typeddict-unknown-key]
        request["review_token"] = review_token(calls)  # type: ignore[typeddict-unknown-key]
        return request

    def first_review(self, state: Mapping[str, Any], ai: AIMessage) -> bool:
        """Whether no reply of this user turn before ``ai`` had gated calls (so no answer
        was taken since the user's last message: a plain answer is for this review)."""
        for m in current_turn(state["messages"]):
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
    ) -> tuple[AIMessage, list[ToolCall], Sequence[Decision]] | None:
        """Interrupt for the open gated calls; on resume, the decisions that came back."""
        pending = self._open(state)
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
        schema = decision_response_schema(
            calls,
            [self.configs[c["name"]]["allowed_decisions"] for c in calls],
            self.tool_names,
            token=value["review_token"],  # type: ignore[typeddict-item]
            first_review=first or answer_tied(config),
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

    def decide(
        self, call: ToolCall, state: Mapping[str, Any], config: RunnableConfig
    ) -> Decision | None:
        """``per_call`` inside the call's own task (a tool call's, as LangChain's
        middleware reviews it): the decision on ``call``, asked in the task's interrupt,
        so every gated call of a reply waits at once; ``None``: not gated."""
        ai = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        if ai is None or not self.gated([call], state):
            return None
        gated = self.gated(ai.tool_calls, state)
        first = (
            self.first_review(state, ai) and bool(gated) and gated[0].get("id") == call.get("id")
        )
        [decision] = self._ask_each([call], state, config, first=first)
        return decision

    def _tool_approval(self, call: ToolCall, state: Mapping[str, Any]) -> dict[str, Any]:
        """The ``per_call`` interrupt value for one gated call: LangChain's
        ``ToolApprovalRequest`` plus the ``review_token`` that binds its answer."""
        return {
            "type": "tool_approval",
            "tool_call_id": call.get("id") or "",
            "name": call["name"],
            "args": call["args"],
            "description": self._description(call, state),
            "review_token": review_token([call]),
        }

    def _ask_each(
        self,
        calls: Sequence[ToolCall],
        state: Mapping[str, Any],
        config: RunnableConfig,
        *,
        first: bool,
    ) -> list[Decision]:
        """``per_call``: one interrupt per gated call, all raised together (as LangChain's
        ``HumanInTheLoopMiddleware(interrupt_mode="per_call")`` raises them, each in its
        call's tool task), each answered by its own id; a run may answer some of them,
        and the others are asked again with the same ids.

        Interrupt number ``i`` is call ``i``'s, whichever calls are answered, so its id
        does not change. The answers taken are saved with the task, bound to their calls,
        and the decisions return once every call has one.
        """
        values = [self._tool_approval(c, state) for c in calls]
        schemas = [
            decision_schema(
                call,
                self.configs[call["name"]]["allowed_decisions"],
                token=value["review_token"],
                # an unbound answer to a later call could be a retried answer to an earlier one
                first_review=(first and i == 0) or answer_tied(config, i),
            )
            for i, (call, value) in enumerate(zip(calls, values, strict=True))
        ]
        saved, brought = task_answers(config, len(calls))
        answers = [s if s is not None else brought.get(i) for i, s in enumerate(saved)]
        new = {i for i, s in enumerate(saved) if s is None and i in brought}
        if None in answers and not resumes_by_id(config):
            # an answer without an id: for the one call asked (LangGraph refuses it while
            # several are). A run answering by id never takes one: it would be an earlier
            # run's, left at the checkpoint because it was refused.
            plain = plain_answer(config)
            if plain is not None:
                new.add(answers.index(None))
                answers[answers.index(None)] = plain
        # every answer checked before any is saved: one refused, none is taken
        decisions = [
            None if a is None else validate_answer(schema, a)
            for a, schema in zip(answers, schemas, strict=True)
        ]
        for i in sorted(new):
            note_answer(config, schemas[i], decisions[i])
        if None in decisions:
            held = [
                None
                if d is None
                else {**d.model_dump(mode="json"), "tool_call_id": c.get("id") or ""}
                for d, c in zip(decisions, calls, strict=True)
            ]
            asks = [(values[i], i, schemas[i]) for i, d in enumerate(decisions) if d is None]
            pause_all(config, asks, held)
        own_answer_taken(config)
        return decisions  # type: ignore[return-value]

    @staticmethod
    def _claim(calls: Sequence[ToolCall], config: RunnableConfig) -> TaskClaim | None:
        """The claim on answering this approval: of two runs resuming it, one goes on."""
        return claim_in_task(config, f"approval:{calls[0]['id']}")

    def _apply(
        self, ai: AIMessage, calls: Sequence[ToolCall], decisions: Sequence[Decision]
    ) -> dict[str, Any]:
        edits: dict[str, EditedAction] = {}
        answers: list[ToolMessage] = []
        for call, decision in zip(calls, decisions, strict=True):
            if isinstance(decision, EditDecision):
                edits[call["id"] or ""] = decision.edited_action
            elif isinstance(decision, RejectDecision):
                answers.append(self.rejection(call, decision.message))
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
