"""The ``tools`` node: runs one tool call; the graph fans a turn's calls out with ``Send``.

Every failure becomes a ``ToolMessage(status="error")`` the model can act on, and the
loop goes on: an unknown tool, arguments that break the tool's schema, a tool that
raises, a call that times out, an MCP ``isError`` result, or a call the parser could not
read at all.

One task per call (LangGraph's ``Send``) rather than one task per turn: each finished
call is checkpointed on its own, so a thread resumed after a crash re-runs only the calls
that had not finished, never a sibling that had. A task carries only its call, as in
LangChain's ``create_agent``: ``ToolNode`` reads the state when a tool asks for it, so
a turn of K calls does not checkpoint K copies of the history.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolCallWrapper
from langgraph.types import Send

from fncall_graph._compat import has_own_async, run_tool_calls_here
from fncall_graph.adapters.checkpoint.claims import DEFAULT_LEASE, TaskClaim
from fncall_graph.adapters.mcp.errors import MCPCallOutcomeUnknown, MCPServerError
from fncall_graph.adapters.tool_effects import is_idempotent, is_read_only
from fncall_graph.guarantees import (
    DEFAULT_MAX_REPEATS,
    arun_claimed,
    call_claim,
    check_option,
    error_answer,
    in_daemon_thread,
    repeat_answers,
    run_claimed,
    run_in_daemon_thread,
    stored_result,
)

__all__ = [
    "DEFAULT_MAX_STORED_RESULT_CHARS",
    "DEFAULT_TOOL_TIMEOUT",
    "ToolDispatchNode",
    "invalid_call_message",
    "stored_result",
    "writes_by_annotation",
]

# a call answered before it runs (by the repeat guard), as dispatch sends it
_ANSWERED = "answered_tool_call"

DEFAULT_TOOL_TIMEOUT = 600.0
"""Seconds a tool call may take by default (``tool_timeout``); ``None`` waits for ever."""

DEFAULT_MAX_STORED_RESULT_CHARS = 1_000_000
"""Longest text of a cut tool result kept by default (``max_stored_result_chars``)."""


class ToolTimeoutError(TimeoutError):
    """A tool call ran longer than the graph's ``tool_timeout``."""


class ToolArgumentsError(ValueError):
    """Arguments that do not satisfy the tool's JSON schema."""


def tool_error_message(error: Exception) -> str:
    """The text the model sees for a failed call: what failed and what to do."""
    if isinstance(error, ToolTimeoutError | ToolArgumentsError):
        return f"Error: {error}"
    if isinstance(error, MCPCallOutcomeUnknown):
        return f"Error: {error}"
    if isinstance(error, MCPServerError):
        # nothing about the call can be fixed: say so, or the model retries in a loop
        return (
            f"Error: the tool is unavailable: {error}. The call itself may be fine; do not "
            "retry it now. Answer without this tool, or tell the user it is unavailable."
        )
    message = str(getattr(error, "message", None) or error) or type(error).__name__
    text = f"Error: {type(error).__name__}: {message}"
    # LangChain's argument errors already end with this advice; say it once
    if "try again" not in message.lower():
        text += "\nPlease fix the call and try again."
    return text


def still_running(call: ToolCall, timeout: float) -> ToolMessage:
    """Answer a sync call still running past its timeout: it cannot be stopped, so it may
    yet take effect; a retry now could do it twice."""
    return error_answer(
        call,
        f"Outcome unknown: tool {call['name']!r} did not finish within {timeout:g} s and "
        "is still running; its result will not be shown. Do not retry it: it may still "
        "take effect. Check its effect later (for example with a read), or tell the user.",
        {"outcome": "unknown", "still_running": True},
    )


def writes_by_annotation(tools: Sequence[BaseTool]) -> dict[str, bool]:
    """``interrupt_on`` for the tools not known to only read (by their own metadata, or
    the annotations of an MCP server the user trusts: ``tool_effects.is_read_only``): each
    asks for a decision before it runs (``create_fncall_graph(interrupt_on="annotations")``)."""
    return {t.name: True for t in tools if not is_read_only(t)}


def _without_optional_nulls(args: Any, schema: Mapping[str, Any]) -> Any:
    """``args`` less the optional parameters given as ``null``: a model (and an MCP
    client) often writes ``null`` for "not given", which the server takes as omitted;
    the check leaves that to the server and still refuses ``null`` for a required one."""
    if not isinstance(args, dict):
        return args
    required = set(schema.get("required") or ())
    return {k: v for k, v in args.items() if v is not None or k in required}


def invalid_call_message(call: InvalidToolCall) -> ToolMessage:
    """Answer a call the parser could not read, so the model sees why and can retry."""
    raw = call.get("args") or ""
    error = call.get("error") or ""
    if error.startswith("Not run: "):  # readable, but past a bound (max_calls_per_reply)
        return error_answer(call, f"Error: {error}\nThe call was: {raw[:500]}")
    return error_answer(
        call,
        f"Error: the tool call could not be read: {call.get('error') or 'unknown error'}.\n"
        f"The call was: {raw[:500]}\n"
        "Write the call again in the required format, with arguments as a JSON object.",
    )


class ToolDispatchNode:
    """Execute one tool call with LangGraph's ``ToolNode``, bounded in time.

    Args:
        tools: the tools the model may call.
        timeout: seconds one call may take (default :data:`DEFAULT_TOOL_TIMEOUT`), or
            ``None`` for no limit.
        max_result_chars: longest result text the model is shown; a longer one is cut
            with a note saying how much, and the whole result is kept once: in a saved
            thread, with the call's claim, the message's ``artifact`` only referring to
            it (read it with :func:`stored_result`), so checkpoints do not copy it;
            without a checkpointer, in the ``artifact``
            (``{"full_content": ..., "artifact": <the tool's own>, "full_length": N}``).
            ``None``: no limit.
        max_stored_result_chars: longest text of such a result that is kept (default
            :data:`DEFAULT_MAX_STORED_RESULT_CHARS`; ``None``: all of it); the tool's
            own artifact is kept with it unless it is longer than that too.
        idempotent_tools: tools that may run again when a process died during their
            call (see :func:`~fncall_graph.adapters.tool_effects.is_idempotent`); other calls then get an "outcome unknown"
            answer.
        lease: seconds a running call's claim counts as held after its process last
            renewed it (see :class:`~fncall_graph.adapters.checkpoint.claims.CallClaims`);
            a run that lost a claim this way stops with ``ToolCallTakenOver``.
        max_repeats: how often one read (same tool, same arguments) may be made again
            in a user turn after it succeeded, with nothing written since: a repeat is
            answered with the earlier result instead of running, and the
            ``max_repeats``-th repeat ends the turn; a write always runs (see
            :mod:`~fncall_graph.guarantees`); ``None``: calls always run.
        name: this node's name in the graph, where :meth:`dispatch` sends each call.
        wrappers: LangChain ``wrap_tool_call``/``awrap_tool_call`` hooks (an
            ``AgentMiddleware``'s), outermost first; they run inside the claim and the
            answer layers (a retry they make stays one claimed call, an exception they
            let through is answered) and outside the argument check.

    In a thread with a checkpointer, each call is claimed in the checkpointer's database
    before it runs (:mod:`fncall_graph.adapters.checkpoint.claims`), so a call id runs at
    most once, whichever processes resume the thread.

    ``ToolNode`` does the execution (argument injection, ``Command`` results, content
    conversion); this node adds what it lacks, as a chain of layers on ToolNode's
    ``wrap_tool_call``/``awrap_tool_call``, outermost first:

    1. claim: the call runs at most once per call id (its outcome stored with the claim);
    2. answer: every exception becomes a ``ToolMessage(status="error")``, and a result
       too long for the model is cut;
    3. check arguments: JSON-schema validation for dict schemas (MCP tools carry those
       and LangChain does not validate them);
    4. time limit: an async call past ``timeout`` is cancelled and answered with an
       error saying its outcome is unknown.

    The sync chain has the time limit outermost instead: a sync call cannot be stopped,
    so past ``timeout`` the model is told it is still running and not to retry it, while
    the call runs on in its thread, its claim held (``running``) until it really ends and
    then settled with its real outcome.

    Calls the parser could not read are answered before the chain.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool],
        *,
        timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        max_result_chars: int | None = 100_000,
        max_stored_result_chars: int | None = DEFAULT_MAX_STORED_RESULT_CHARS,
        idempotent_tools: Sequence[str] = (),
        lease: float | None = DEFAULT_LEASE,
        max_repeats: int | None = DEFAULT_MAX_REPEATS,
        name: str = "tools",
        wrappers: Sequence[tuple[Callable[..., Any] | None, Callable[..., Any] | None]] = (),
    ) -> None:
        self.name = name
        self.max_repeats = check_option("max_repeats", max_repeats)
        self.lease = lease
        self.timeout = timeout
        self.max_result_chars = max_result_chars
        self.max_stored_result_chars = max_stored_result_chars
        self.idempotent_tools = frozenset(idempotent_tools)
        # a hook is layer(request, execute); LangChain's is hook(request, handler)
        sync_hooks = [_layer(w) for w, _ in wrappers if w is not None]
        async_hooks = [_layer(a) for _, a in wrappers if a is not None]
        self.tool_node = ToolNode(
            list(tools),
            handle_tool_errors=False,  # the answer layer does it, inside the claim
            wrap_tool_call=chain(
                self._timed, self._claimed, self._answered, *sync_hooks, self._check_args
            ),
            awrap_tool_call=chain(
                self._aclaimed, self._aanswered, *async_hooks, self._check_args, self._atimed
            ),
        )

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        return self.tool_node.tools_by_name

    # -- fan-out

    def dispatch(self, message: AIMessage, history: Sequence[AnyMessage] = ()) -> list[Send]:
        """One ``Send`` per call of ``message``, unreadable calls included, in call order.

        Each carries ``[call]`` only (an ``InvalidToolCall`` for a call that could not
        be read), the shape ``ToolNode`` takes without a copy of the state; a call the
        repeat guard answers from ``history`` (the thread) carries its answer instead,
        and does not run.
        """
        answers = repeat_answers(message, history, self.max_repeats, self.tools_by_name)
        calls: list[Any] = [
            {"type": _ANSWERED, "message": answers[c["id"] or ""]}
            if (c["id"] or "") in answers
            else c
            for c in message.tool_calls
        ]
        calls += message.invalid_tool_calls
        return [Send(self.name, [call]) for call in calls]

    # -- node

    def invoke(self, payload: list[Any], config: RunnableConfig) -> Any:
        call = payload[-1]
        if call.get("type") == "invalid_tool_call":
            return {"messages": [invalid_call_message(call)]}
        if call.get("type") == _ANSWERED:
            return {"messages": [call["message"]]}
        if self.timeout is not None:
            # the sync chain runs the call in a daemon thread (its timeout layer): not
            # in ToolNode's pool first, a second thread per call
            return run_tool_calls_here(self.tool_node, payload, config)
        return self.tool_node.invoke(payload, config)

    async def ainvoke(self, payload: list[Any], config: RunnableConfig) -> Any:
        call = payload[-1]
        if call.get("type") == "invalid_tool_call":
            return {"messages": [invalid_call_message(call)]}
        if call.get("type") == _ANSWERED:
            return {"messages": [call["message"]]}
        tool = self.tools_by_name.get(call.get("name"))
        if self.timeout is not None and tool is not None and not has_own_async(tool):
            # A sync tool's ainvoke runs in the event loop's default executor, and a call
            # stuck there would hold up the loop's shutdown (asyncio.run never returns).
            # Run the sync chain in a thread nothing waits for; it applies the timeout.
            return await asyncio.wrap_future(in_daemon_thread(self.invoke, payload, config))
        return await self.tool_node.ainvoke(payload, config)

    # -- the layers, each ``(request, execute) -> result``; sync and async twins differ
    #    only where they wait for ``execute``

    def _claim(self, request: ToolCallRequest) -> TaskClaim | None:
        """The claim on this call; ``None`` outside a saved thread."""
        return call_claim(request, lease=self.lease)

    def _idempotent(self, request: ToolCallRequest) -> bool:
        return is_idempotent(
            self.tools_by_name.get(request.tool_call["name"]), self.idempotent_tools
        )

    def _claimed(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        claim = self._claim(request)
        return run_claimed(claim, request, execute, idempotent=self._idempotent(request))

    async def _aclaimed(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        claim = self._claim(request)
        return await arun_claimed(claim, request, execute, idempotent=self._idempotent(request))

    def _answered(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        try:
            result = execute(request)
        except GraphBubbleUp:  # a pause inside the tool is no failure
            raise
        except Exception as exc:
            result = self._error_message(request, exc)
        return self._bounded(result)

    async def _aanswered(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        try:
            result = await execute(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            result = self._error_message(request, exc)
        return self._bounded(result)

    @staticmethod
    def _error_message(request: ToolCallRequest, error: Exception) -> ToolMessage:
        return error_answer(request.tool_call, tool_error_message(error))

    def _check_args(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]
    ) -> Any:
        """Serves both chains: it only checks before handing the request on."""
        tool, call = request.tool, request.tool_call
        # unknown tools are answered by ToolNode; pydantic schemas validate themselves
        if tool is not None and isinstance(tool.args_schema, Mapping):
            import jsonschema  # ~0.1 s to import: loaded by the first call with a JSON schema

            schema = dict(tool.args_schema)
            try:
                jsonschema.validate(_without_optional_nulls(call["args"], schema), schema)
            except jsonschema.ValidationError as exc:
                where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
                raise ToolArgumentsError(
                    f"invalid arguments for tool {call['name']!r} at {where}: {exc.message}. "
                    f"Arguments given: {json.dumps(call['args'], ensure_ascii=False)[:300]}. "
                    "Expected schema: "
                    f"{json.dumps(dict(tool.args_schema), ensure_ascii=False)[:500]}"
                ) from None
        return execute(request)

    def _timeout_error(self, call: ToolCall) -> ToolTimeoutError:
        return ToolTimeoutError(
            f"tool {call['name']!r} did not finish within {self.timeout:g} s and was "
            "cancelled; it may or may not have taken effect (an MCP server, for one, may "
            "still finish it). Check its effect before repeating it, or ask for less."
        )

    def _timed(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        """Sync chain, outermost: a sync call cannot be stopped, so past the timeout it is
        left running with its claim, which it settles with its real outcome when it ends;
        the model is told the outcome is unknown (a retry could do it twice)."""
        if self.timeout is None:
            return execute(request)
        try:
            return run_in_daemon_thread(execute, request, timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            return still_running(request.tool_call, self.timeout)

    async def _atimed(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        if self.timeout is None:
            return await execute(request)
        try:
            return await asyncio.wait_for(execute(request), self.timeout)
        except TimeoutError:
            raise self._timeout_error(request.tool_call) from None

    def _storable(self, artifact: Any) -> Any:
        """The tool's own artifact of a cut result, unless it is over the stored limit
        too (a server's ``structuredContent`` often repeats the whole text)."""
        if artifact is None or self.max_stored_result_chars is None:
            return artifact
        size = len(json.dumps(artifact, ensure_ascii=False, default=str))
        if size <= self.max_stored_result_chars:
            return artifact
        return {"left_out": f"the tool's artifact, {size:,} characters as JSON"}

    def _bounded(self, result: Any) -> Any:
        """A result too long for the model, cut with a note; the whole of it stays attached.

        Bytes become their text when they decode as UTF-8, else a short note.
        """
        if not isinstance(result, ToolMessage):
            return result
        result = binary_as_text(result)
        if self.max_result_chars is None:
            return result
        text = result.content if isinstance(result.content, str) else None
        if text is None or len(text) <= self.max_result_chars:
            return result
        cut = len(text) - self.max_result_chars
        note = (
            f"\n\n[result truncated: {cut:,} of {len(text):,} characters left out; the "
            "full result is kept with the thread. Ask for less, e.g. with a filter "
            "or a limit.]"
        )
        artifact = {
            "full_content": text[: self.max_stored_result_chars],
            "artifact": self._storable(result.artifact),
            "full_length": len(text),
        }
        return result.model_copy(
            update={"content": text[: self.max_result_chars] + note, "artifact": artifact}
        )


def _layer(hook: Callable[..., Any]) -> Callable[..., Any]:
    """A LangChain ``wrap_tool_call`` hook (``hook(request, handler)``) as a layer."""

    def layer(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        return hook(request, execute)

    return layer


def chain(*layers: Callable[..., Any]) -> ToolCallWrapper:
    """One ``wrap_tool_call`` of ``layers``, the first outermost (the order of LangChain's
    middleware). Each layer is ``layer(request, execute)`` and calls ``execute`` to hand
    the request on; for ``awrap_tool_call``, ``execute`` returns an awaitable."""

    def wrapped(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        for layer in reversed(layers):
            execute = partial(layer, execute=execute)
        return execute(request)

    return wrapped


_BYTES_REPR = re.compile(r"""b(?:'[^\n]*'|"[^\n]*")""", re.DOTALL)


def binary_as_text(message: ToolMessage) -> ToolMessage:
    """A result that was ``bytes``: its text, or ``[binary: N bytes]`` with the bytes kept.

    LangChain turns a tool's non-text return value into ``str(value)`` before any hook
    sees it, so bytes arrive as their repr (``b'...'``); read them back from it.
    """
    text = message.content
    if not isinstance(text, str) or not _BYTES_REPR.fullmatch(text):
        return message
    try:
        raw = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return message
    if not isinstance(raw, bytes):
        return message
    try:
        return message.model_copy(update={"content": raw.decode("utf-8")})
    except UnicodeDecodeError:
        note = f"[binary: {len(raw):,} bytes; not shown]"
        artifact = {"bytes": raw, "artifact": message.artifact}
        return message.model_copy(update={"content": note, "artifact": artifact})
