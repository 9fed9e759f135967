"""``AtMostOnceMiddleware``: each tool call of a thread runs at most once, across processes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from fncall_graph.adapters.checkpoint.claims import DEFAULT_LEASE
from fncall_graph.adapters.tool_effects import is_idempotent
from fncall_graph.guarantees import arun_claimed, call_claim, check_option, run_claimed

__all__ = ["AtMostOnceMiddleware"]


class AtMostOnceMiddleware(AgentMiddleware):
    """Run each tool call at most once per call id, whichever processes resume the thread.

    Before a tool call runs, its id is claimed in the agent's checkpointer's own
    database (a table beside LangGraph's, one atomic insert): of two runs resuming the
    same step, in one process or two, one claims the call and runs it; the other runs
    nothing and stops with a
    :class:`~fncall_graph.adapters.checkpoint.claims.ToolCallClaimed` error
    (:class:`~fncall_graph.adapters.checkpoint.claims.ToolCallInProgress` while the call
    runs, :class:`~fncall_graph.adapters.checkpoint.claims.ToolCallAlreadyRan` once it
    ran). The call's outcome is stored with its claim: a run that died after the call,
    before its checkpoint was saved, is answered from it on resume, and a call whose run
    died inside it is answered "outcome unknown" rather than run again (unless the tool
    is idempotent). A run whose claim was taken over while its call ran (its process
    froze past the lease) stops with
    :class:`~fncall_graph.adapters.checkpoint.claims.ToolCallTakenOver`.

    It is the claim ``create_fncall_graph``'s tools node makes (the same flow,
    :func:`~fncall_graph.guarantees.run_claimed`), as ``wrap_tool_call`` for
    ``create_agent``. Claims live with the SQLite and PostgreSQL savers (those of
    ``langgraph-checkpoint-sqlite``/``-postgres``, sync or async, and the product's own,
    which also delete a thread's claims with the thread); with another saver they hold
    within one process. Without a checkpointer (or a ``thread_id``) calls just run.

    List it first among the tool-call middleware: it wraps those after it, so a retry
    inside it happens under one claim, and a pause raised inside it (``interrupt``)
    gives the claim up until the call runs on resume.

    Args:
        idempotent_tools: names of tools that may run again when a run died during their
            call (so its outcome is unknown). Tools marked
            ``metadata={"idempotent": True}`` (or ``{"readOnlyHint": True}``), and MCP
            tools a server the user trusts annotates as read-only or idempotent, count as
            such too (an untrusted server's annotations do not: see
            :mod:`~fncall_graph.adapters.tool_effects`); any other call is answered with
            an error ``ToolMessage`` saying its outcome is unknown and what to check.
        lease: seconds a running call's claim counts as held after its process last
            renewed it (the process renews it every ``lease / 4`` seconds while the call
            runs). A claim not renewed for that long has lost its holder and another run
            may take it over. ``None``: held until its process is known to be gone,
            which only the same machine can tell.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from fncall_graph import AtMostOnceMiddleware
        from fncall_graph.adapters.checkpoint import sqlite_saver

        with sqlite_saver("checkpoints.db") as saver:
            agent = create_agent(
                model,
                [send_email],
                middleware=[
                    AtMostOnceMiddleware(),
                    HumanInTheLoopMiddleware(interrupt_on={"send_email": True}),
                ],
                checkpointer=saver,
            )
            # two workers resuming the same approval at once: the email goes out once;
            # the other run raises ToolCallInProgress or ToolCallAlreadyRan
        ```
    """

    def __init__(
        self, *, idempotent_tools: Sequence[str] = (), lease: float | None = DEFAULT_LEASE
    ) -> None:
        super().__init__()
        # the rules create_fncall_graph applies to the same arguments
        self.idempotent_tools = frozenset(check_option("idempotent_tools", idempotent_tools))
        self.lease = check_option("lease", lease)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Claim the call, run it through ``handler`` unless it is claimed already, and
        store its outcome with the claim."""
        idempotent = is_idempotent(request.tool, self.idempotent_tools)
        return run_claimed(
            call_claim(request, lease=self.lease), request, handler, idempotent=idempotent
        )

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """:meth:`wrap_tool_call` for an async run (``ainvoke``, ``astream``)."""
        idempotent = is_idempotent(request.tool, self.idempotent_tools)
        return await arun_claimed(
            call_claim(request, lease=self.lease), request, handler, idempotent=idempotent
        )
