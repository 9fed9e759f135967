"""``BoundApprovalMiddleware``: LangChain's human-in-the-loop review, with each answer
bound to the review it answers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired, get_args

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.human_in_the_loop import DecisionType, InterruptOnConfig
from langchain.agents.middleware.types import AgentState, PrivateStateAttr, ToolCallRequest
from langchain_core.messages import AIMessage, ToolMessage, add_notification_metadata
from langgraph.config import get_config
from langgraph.runtime import Runtime

from fncall_graph.adapters.checkpoint.claims import claim_in_task
from fncall_graph.guarantees import (
    EditDecision,
    InterruptMode,
    RejectDecision,
    RespondDecision,
    check_option,
    error_answer,
)
from fncall_graph.nodes.approve import ApproveNode

__all__ = ["BoundApprovalMiddleware"]

# what ``interrupt_on={"tool": True}`` allows in HumanInTheLoopMiddleware
_ALL_DECISIONS: list[str] = list(get_args(DecisionType))
_DESCRIPTION_PREFIX = "Tool execution requires approval"
#: HumanInTheLoopMiddleware's state key: an edited call's replacement, by call id
_EDITS_KEY = "hitl_edited_tool_calls"

#: the words put before an edited call's result (HumanInTheLoopMiddleware's)
EDIT_NOTICE = (
    "Note: a human reviewer replaced this tool call before it ran. The call recorded in "
    "your message is the one you produced, not the one that executed. This was "
    "intentional and authorized. Do not re-issue your original call."
)


class _ApprovalState(AgentState[Any]):
    """The middleware's state: edits from ``after_model``, read by ``wrap_tool_call``."""

    hitl_edited_tool_calls: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


class BoundApprovalMiddleware(AgentMiddleware):
    """Pause the agent so a person can review tool calls before they run, and apply an
    answer only to the review it was given for.

    A drop-in for LangChain's ``HumanInTheLoopMiddleware``: the same constructor
    (``interrupt_on``: ``True``, ``False``, or ``{"allowed_decisions": [...],
    "description": ..., "when": ...}`` per tool; ``description_prefix``,
    ``edit_notice``, ``interrupt_mode``), the same interrupt value (``action_requests``
    and ``review_configs``; in ``"per_call"`` mode a ``"tool_approval"`` request per
    call, all of a reply's waiting at once, each in its call's own task), the same
    answers (``Command(resume={"decisions": [...]})`` with ``approve``, ``edit``,
    ``reject`` and ``respond`` decisions, one per gated call, in order; per call, one
    decision keyed by the interrupt's id), and the same history after them: the model's
    message keeps its calls as it wrote them; an edited call runs as edited and its
    result starts with ``edit_notice`` and the call that ran; a rejected call is
    answered ``"User rejected the tool call for ..."`` (``status="error"``), a responded
    one with the reviewer's text.

    What it adds is that an answer runs only what was reviewed. Each action request
    also carries the call's ``tool_call_id`` and the interrupt a ``review_token``; an
    answer is taken when it is tied to the review pending now, and otherwise raises
    :class:`~fncall_graph.StaleApproval` before anything is saved or run:

    - bound answers (:func:`~fncall_graph.bind_decisions` writes them: the review's
      token and each decision's call id) are taken by that review only; sent again
      after the thread moved on (a retried request, a second reviewer's late answer),
      they run nothing;
    - answers keyed by the interrupt's id (``Command(resume={interrupt.id:
      {"decisions": [...]}})``, as LangGraph and LangChain's clients send them) are
      tied by LangGraph itself;
    - plain ``{"decisions": [...]}`` (agent-chat-ui's, Studio's resume box's) is taken
      for the first review of a user's turn, with one decision per pending call: no
      answer was taken since the user's last message, so it cannot be another review's
      sent again. On a later review of the same turn it could be, and it is refused
      saying how to answer (by the interrupt's id).

    Two runs answering one review at the same instant (two workers, a double click):
    one goes on, the other stops with
    :class:`~fncall_graph.ThreadAlreadyResumed` and runs nothing (the answer is claimed
    in the checkpointer's database, as tool calls are by
    :class:`~fncall_graph.middleware.AtMostOnceMiddleware`; across processes with the
    SQLite and PostgreSQL savers).

    Answers are checked against the calls before LangGraph saves them: a wrong count, a
    decision type a tool does not allow, an edit to an unknown tool raise
    ``pydantic.ValidationError`` and the same review can be answered again.

    It is the review ``create_fncall_graph(interrupt_on=...)`` makes (the same
    :class:`~fncall_graph.nodes.approve.ApproveNode`), run in ``after_model``; in
    ``"per_call"`` mode in ``wrap_tool_call``, as LangChain's: a call runs as soon as its
    own decision is in (list this middleware before retrying ones, as LangChain says).
    The agent needs a checkpointer.

    Args:
        interrupt_on: tool name → ``True`` (every decision allowed: approve, edit,
            reject, respond), ``False`` (no review), or an ``InterruptOnConfig``:
            ``allowed_decisions`` (non-empty), optionally ``description`` (a string, or
            ``(tool_call, state, runtime) -> str``) and ``when`` (``(ToolCallRequest) ->
            bool``: review only when it returns ``True``; it runs again on resume, so it
            must answer the same for the same call). Unknown keys and decision types
            raise ``ValueError``.
        description_prefix: the first line of the text shown for a call whose config
            has no ``description`` (LangChain's default).
        edit_notice: the text put before an edited call's result, followed by the call
            that ran (LangChain's words by default; ``None``: nothing).
        interrupt_mode: ``"batched"`` (default): one interrupt per model reply, listing
            its gated calls; ``"per_call"``: one interrupt per gated call, raised as the
            call starts.

    Example:
        ```python
        from langchain.agents import create_agent
        from langgraph.types import Command
        from fncall_graph import BoundApprovalMiddleware, bind_decisions

        agent = create_agent(
            model,
            [send_email, read_inbox],
            middleware=[BoundApprovalMiddleware(interrupt_on={"send_email": True})],
            checkpointer=saver,
        )
        config = {"configurable": {"thread_id": "1"}}
        out = agent.invoke({"messages": [("user", "Email Alice")]}, config)
        review = out["__interrupt__"][0]
        # bound to this review: sent twice, or after the thread moved on, it runs nothing
        agent.invoke(Command(resume=bind_decisions(review.value, [{"type": "approve"}])), config)
        # or LangChain's own form, keyed by the interrupt's id
        # agent.invoke(Command(resume={review.id: {"decisions": [{"type": "approve"}]}}), config)
        ```

        >>> from langchain.agents import create_agent
        >>> from langchain_core.tools import tool
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from langgraph.types import Command
        >>> from fncall_graph import StaleApproval, bind_decisions
        >>> from fncall_graph.replay import ReplayChatModel
        >>> @tool
        ... def log(entry: str) -> str:
        ...     '''Append an entry to the log.'''
        ...     return "logged"
        >>> turns = [{"tool_calls": [{"name": "log", "args": {"entry": e}, "id": e}]} for e in "ab"]
        >>> model = ReplayChatModel([turns[0], "done", turns[1], "done"])
        >>> agent = create_agent(
        ...     model, [log], checkpointer=InMemorySaver(),
        ...     middleware=[BoundApprovalMiddleware(interrupt_on={"log": True})],
        ... )
        >>> config = {"configurable": {"thread_id": "1"}}
        >>> first = agent.invoke({"messages": [("user", "log a")]}, config)["__interrupt__"][0]
        >>> answer = bind_decisions(first.value, [{"type": "approve"}])
        >>> agent.invoke(Command(resume=answer), config)["messages"][-1].content
        'done'
        >>> second = agent.invoke({"messages": [("user", "log b")]}, config)["__interrupt__"][0]
        >>> try:  # the first answer, sent again: it runs nothing
        ...     agent.invoke(Command(resume=answer), config)
        ... except StaleApproval as e:
        ...     print(str(e)[:40])
        this answer is for review '...
        >>> agent.invoke(Command(resume={second.id: {"decisions": [{"type": "approve"}]}}), config)["messages"][-2].content
        'logged'
    """

    state_schema = _ApprovalState  # type: ignore[assignment]

    def __init__(
        self,
        interrupt_on: Mapping[str, bool | InterruptOnConfig],
        *,
        description_prefix: str = _DESCRIPTION_PREFIX,
        edit_notice: str | None = EDIT_NOTICE,
        interrupt_mode: InterruptMode = "batched",
    ) -> None:
        super().__init__()
        # the rules create_fncall_graph applies to the same arguments
        check_option("interrupt_on", interrupt_on)
        check_option("interrupt_mode", interrupt_mode)
        if edit_notice is not None and not isinstance(edit_notice, str):
            raise TypeError(f"edit_notice must be a string or None; got {edit_notice!r}")
        configs: dict[str, Any] = {
            name: {"allowed_decisions": list(_ALL_DECISIONS)} if config is True else config
            for name, config in interrupt_on.items()
        }
        # LangChain's config may carry ``args_schema``, which its middleware never uses
        configs = {
            name: {k: v for k, v in config.items() if k != "args_schema"}
            if isinstance(config, Mapping)
            else config
            for name, config in configs.items()
        }
        if description_prefix != _DESCRIPTION_PREFIX:
            configs = {
                name: _with_prefix(config, description_prefix) for name, config in configs.items()
            }
        self.review = ApproveNode(configs, interrupt_mode=interrupt_mode, rejection=_rejected)
        self.interrupt_on = self.review.configs
        self.interrupt_mode = interrupt_mode
        self.description_prefix = description_prefix
        self.edit_notice = edit_notice

    # -- batched: one review per reply, in after_model

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Interrupt for the gated calls of the model's reply; on resume, check the
        answer against them and apply it: rejections and responses answer their calls,
        edits are kept for the tool calls (the model's message stays as it wrote it)."""
        if self.interrupt_mode == "per_call":
            return None  # asked in each call's own task (wrap_tool_call)
        return self._kept(state, self.review.invoke(state, get_config()))

    async def aafter_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`after_model` for an async run."""
        if self.interrupt_mode == "per_call":
            return None
        return self._kept(state, await self.review.ainvoke(state, get_config()))

    @staticmethod
    def _kept(state: Any, update: dict[str, Any]) -> dict[str, Any] | None:
        """The review's update as LangChain's middleware writes it: the model's message
        as it is, an edited call's replacement under ``hitl_edited_tool_calls``."""
        messages = list(update.get("messages") or [])
        edited = next((m for m in messages if isinstance(m, AIMessage)), None)
        edits: dict[str, dict[str, Any]] = {}
        if edited is not None:
            messages.remove(edited)
            original = next(m for m in reversed(state["messages"]) if m.id == edited.id)
            before = {c.get("id"): c for c in original.tool_calls}
            for call in edited.tool_calls:
                was = before.get(call.get("id"))
                if was is not None and (was["name"], was["args"]) != (call["name"], call["args"]):
                    edits[call["id"] or ""] = {"name": call["name"], "args": call["args"]}
        if not messages and not edits:
            # an earlier turn's edits never apply to this turn's calls
            return {_EDITS_KEY: {}} if state.get(_EDITS_KEY) else None
        out: dict[str, Any] = {_EDITS_KEY: edits}
        if messages:
            out["messages"] = messages
        return out

    # -- the tool call: an edit applied; in per_call mode, the review itself

    def _resolve(self, request: ToolCallRequest) -> tuple[ToolCallRequest, Any] | ToolMessage:
        """The request to run (an edit applied) and the edit, or the call's answer."""
        call = request.tool_call
        if self.interrupt_mode == "per_call":
            config = get_config()
            decision = self.review.decide(call, request.state, config)
            if decision is None:
                return request, None
            if (claim := claim_in_task(config, f"approval:{call['id']}")) is not None:
                claim.review()
            if isinstance(decision, EditDecision):
                executed = decision.edited_action.model_dump()
                return self._edited(request, executed), executed
            if isinstance(decision, RejectDecision):
                return _rejected(call, decision.message)
            if isinstance(decision, RespondDecision):
                return _answered(call, decision.message)
            return request, None
        executed = (request.state.get(_EDITS_KEY) or {}).get(call.get("id") or "")
        if executed is None:
            return request, None
        return self._edited(request, executed), executed

    @staticmethod
    def _edited(request: ToolCallRequest, executed: Mapping[str, Any]) -> ToolCallRequest:
        call = {**request.tool_call, "name": executed["name"], "args": executed["args"]}
        if executed["name"] == request.tool_call["name"]:
            return request.override(tool_call=call)
        tools = list(getattr(request.runtime, "tools", None) or [])
        tool = next((t for t in tools if t.name == executed["name"]), None)
        if tool is None:
            raise ValueError(
                f"the reviewer edited tool call {request.tool_call['id']!r} into "
                f"{executed['name']!r}, which is no tool of the agent: "
                f"{', '.join(sorted(t.name for t in tools)) or 'none'}"
            )
        return request.override(tool_call=call, tool=tool)

    def _noted(self, result: Any, executed: Mapping[str, Any] | None) -> Any:
        """``result`` with the edit notice before its text, as LangChain's middleware
        writes it."""
        if not self.edit_notice or executed is None or not isinstance(result, ToolMessage):
            return result
        notice = (
            f"{self.edit_notice} Executed instead: {executed['name']} with arguments "
            f"{json.dumps(executed['args'], default=str)}."
        )
        if isinstance(result.content, str):
            text = f"{notice}\n\nTool response:\n{result.content}" if result.content else notice
            return result.model_copy(update={"content": text})
        blocks = result.content
        head: Any = (
            f"{notice}\n\nTool response:"
            if blocks and all(isinstance(b, str) for b in blocks)
            else {"type": "text", "text": f"{notice}\n\nTool response:"}
        )
        return result.model_copy(update={"content": [head, *blocks]})

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]
    ) -> Any:
        """Run the call as the reviewer decided: an edited call as edited, its result
        saying so (``edit_notice``); in ``per_call`` mode, ask first."""
        resolved = self._resolve(request)
        if isinstance(resolved, ToolMessage):
            return resolved
        to_run, executed = resolved
        return self._noted(handler(to_run), executed)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """:meth:`wrap_tool_call` for an async run."""
        resolved = self._resolve(request)
        if isinstance(resolved, ToolMessage):
            return resolved
        to_run, executed = resolved
        return self._noted(await handler(to_run), executed)


def _rejected(call: Any, message: str | None) -> ToolMessage:
    """A rejected call's answer, in LangChain's words."""
    content = (
        f"User rejected the tool call for `{call['name']}` with reason: {message}"
        if message
        else f"User rejected the tool call for `{call['name']}` with id {call['id']}. The "
        "tool was not executed. Do not retry this tool call unless the user explicitly "
        "requests it."
    )
    return add_notification_metadata(
        error_answer(call, content), source="hitl_interrupt_decision", data={"decision": "reject"}
    )


def _answered(call: Any, message: str) -> ToolMessage:
    """A call the reviewer answered in its place (``respond``)."""
    answer = ToolMessage(
        content=message, name=call["name"], tool_call_id=call["id"] or "", status="success"
    )
    return add_notification_metadata(
        answer, source="hitl_interrupt_decision", data={"decision": "respond"}
    )


def _with_prefix(config: Any, prefix: str) -> Any:
    """``config`` showing ``prefix`` above a call that has no description of its own."""
    if not isinstance(config, Mapping) or config.get("description") is not None:
        return config

    def describe(call: Any, state: Any, runtime: Any) -> str:
        return f"{prefix}\n\nTool: {call['name']}\nArgs: {call['args']}"

    return {**config, "description": describe}
