"""``BoundApprovalMiddleware``: LangChain's human-in-the-loop review, with each answer
bound to the review it answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.human_in_the_loop import DecisionType
from langchain.agents.middleware.types import AgentState
from langgraph.config import get_config
from langgraph.runtime import Runtime

from fncall_graph.nodes.approve import ApproveNode, InterruptMode, InterruptOnConfig

__all__ = ["BoundApprovalMiddleware"]

# what ``interrupt_on={"tool": True}`` allows in HumanInTheLoopMiddleware
_ALL_DECISIONS: list[str] = list(get_args(DecisionType))


class BoundApprovalMiddleware(AgentMiddleware):
    """Pause the agent so a person can review tool calls before they run, and apply an
    answer only to the review it was given for.

    A drop-in for LangChain's ``HumanInTheLoopMiddleware``: the same ``interrupt_on``
    (``True``, ``False``, or ``{"allowed_decisions": [...], "description": ...,
    "when": ...}`` per tool), the same interrupt value (``action_requests`` and
    ``review_configs``; in ``"per_call"`` mode a ``"tool_approval"`` request per call),
    and the same answers: ``Command(resume={"decisions": [...]})`` with ``approve``,
    ``edit``, ``reject`` and ``respond`` decisions, one per gated call, in order.

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
    - plain ``{"decisions": [...]}`` is taken for a thread's first review, where it
      cannot be meant for another; on a later review the error says how to answer.

    Two runs answering one review at the same instant (two workers, a double click):
    one goes on, the other stops with
    :class:`~fncall_graph.ThreadAlreadyResumed` and runs nothing (the answer is claimed
    in the checkpointer's database, as tool calls are by
    :class:`~fncall_graph.middleware.AtMostOnceMiddleware`; across processes with the
    SQLite and PostgreSQL savers).

    Answers are checked against the calls before LangGraph saves them: a wrong count, a
    decision type a tool does not allow, an edit to an unknown tool raise
    ``pydantic.ValidationError`` and the same review can be answered again. An edit
    replaces the call in the model's message (same message id, same call id), so the
    history shows the call that ran; a rejected or answered call gets its
    ``ToolMessage`` and does not run.

    It is the review ``create_fncall_graph(interrupt_on=...)`` makes (the same
    :class:`~fncall_graph.nodes.approve.ApproveNode`), run in ``after_model``. In
    ``"per_call"`` mode its interrupts come one call at a time, all before any of the
    turn's tools runs. The agent needs a checkpointer.

    Args:
        interrupt_on: tool name → ``True`` (every decision allowed: approve, edit,
            reject, respond), ``False`` (no review), or an ``InterruptOnConfig``:
            ``allowed_decisions`` (non-empty), optionally ``description`` (a string, or
            ``(tool_call, state, runtime) -> str``) and ``when`` (``(ToolCallRequest) ->
            bool``: review only when it returns ``True``; it runs again on resume, so it
            must answer the same for the same call). Unknown keys and decision types
            raise ``ValueError``.
        description_prefix: the first line of the text shown for a call whose config
            has no ``description``.
        interrupt_mode: ``"batched"`` (default): one interrupt per model reply, listing
            its gated calls; ``"per_call"``: one interrupt per gated call.

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

    def __init__(
        self,
        interrupt_on: Mapping[str, bool | InterruptOnConfig],
        *,
        description_prefix: str | None = None,
        interrupt_mode: InterruptMode = "batched",
    ) -> None:
        super().__init__()
        if not isinstance(interrupt_on, Mapping):
            raise TypeError(
                "interrupt_on must be a dict of tool name -> True, False or "
                f"{{'allowed_decisions': [...]}}; got {type(interrupt_on).__name__}"
            )
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
        if description_prefix is not None:
            configs = {
                name: _with_prefix(config, description_prefix) for name, config in configs.items()
            }
        self.review = ApproveNode(configs, interrupt_mode=interrupt_mode)
        self.interrupt_on = self.review.configs
        self.interrupt_mode = interrupt_mode

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Interrupt for the gated calls of the model's reply; on resume, check the
        answer against them and apply it (edits, rejections, responses)."""
        return self.review.invoke(state, get_config()) or None

    async def aafter_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`after_model` for an async run."""
        return await self.review.ainvoke(state, get_config()) or None


def _with_prefix(config: Any, prefix: str) -> Any:
    """``config`` showing ``prefix`` above a call that has no description of its own."""
    if not isinstance(config, Mapping) or config.get("description") is not None:
        return config

    def describe(call: Any, state: Any, runtime: Any) -> str:
        return f"{prefix}\n\nTool: {call['name']}\nArgs: {call['args']}"

    return {**config, "description": describe}
