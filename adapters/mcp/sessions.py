"""MCP sessions: one persistent session per server, owned by one task on one loop.

A session that dies is started again (and the call retried once, if it may run twice:
otherwise its outcome is unknown); a server that cannot start is reported at once with
its cause (:class:`MCPServerError`). A call during which the server asks the person
something is kept open, waiting for the answer its thread resumes with (:class:`_KeptCall`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pydantic
from langchain_core.tools import ToolException
from mcp.types import (
    CONNECTION_CLOSED,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    InitializeResult,
    ListRootsResult,
    Root,
)

from ..secrets import redact, remember_secrets, secrets_of
from .call_hooks import CallHooks
from .connections import Connection
from .errors import (
    Disconnected,
    MCPAuthError,
    MCPCallOutcomeUnknown,
    MCPServerError,
    MCPToolTimeoutError,
)
from .failures import DISCONNECT_ERRORS, UNSENT_ERRORS, auth_refusal, leaf_errors, startup_cause
from .listing import callable_tools, check_tool_names, paginate
from .server_logs import log_server_message
from .stack import Handlers, MCPError, http_refusal, open_session

__all__ = []

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Link:
    """One live session of a server, owned by one task (the owner)."""

    def __init__(
        self,
        session: Any,
        init: InitializeResult,
        owner: asyncio.Task[None],
        stop: asyncio.Event,
    ) -> None:
        self.session = session
        self.init = init
        self.owner = owner
        self.stop = stop
        self.alive = True
        self.ended: BaseException | None = None  # why the session ended, when it did
        self.suspect = False  # a call timed out: ping before the next one
        self.inflight: set[asyncio.Timeout] = set()

    def lost(self) -> None:
        """The owner left the session: wake the calls still waiting on it."""
        self.alive = False
        loop = asyncio.get_running_loop()
        for timeout in list(self.inflight):
            timeout.reschedule(loop.time())


class Server:
    """One MCP server: its session, restarts, timeouts and cross-loop calls.

    The session is opened and closed inside one owner task (anyio requires a
    cancel scope to be exited by the task that entered it); calls from any task
    use it while the owner waits for its stop event.
    """

    def __init__(
        self,
        name: str,
        connection: Connection,
        *,
        call_timeout: float | None,
        startup_timeout: float,
        sample: Callable[..., Awaitable[Any]] | None = None,
        roots: list[dict[str, str]] | None = None,
    ) -> None:
        self.name = name
        self.sample = sample  # answers the server's sampling requests, if allowed
        self.roots = roots  # what the server may see, if anything
        self.active: list[_KeptCall] = []  # the calls running now
        # calls whose thread paused on a server's question, by (thread, tool call id)
        self.kept: dict[tuple[str, str], _KeptCall] = {}
        self.connection = connection
        # its URL's token, its headers' keys: masked wherever a line might quote them
        remember_secrets(*secrets_of(connection))
        self.call_timeout = call_timeout
        self.startup_timeout = startup_timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self.link: Link | None = None
        self.restarts = 0
        self._lock: asyncio.Lock | None = None
        self._closed = False

    # -- lifecycle (owner loop only)

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._lock = asyncio.Lock()
        self.link = await self._open()

    async def _open(self) -> Link:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Link] = loop.create_future()
        # a restart happens inside a call's task: the session's own tasks (which get a
        # 2025-11-25 server's questions) must not take that call for theirs
        context = contextvars.copy_context()
        context.run(_ASKING.set, None)
        owner = loop.create_task(self._own(ready), name=f"mcp-server:{self.name}", context=context)
        try:
            async with asyncio.timeout(self.startup_timeout):
                return await asyncio.shield(ready)
        except TimeoutError:
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
            raise MCPServerError(
                self.name,
                f"failed to start: no answer to initialization within {self.startup_timeout:g} s",
            ) from None
        except BaseException:
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
            raise

    def _handlers(self) -> Handlers:
        """What the server may send unasked: its log messages go to Python logging; an
        elicitation request goes to the person through the running call's thread;
        sampling and roots only where allowed."""

        async def log(params: Any) -> None:
            log_server_message(self.name, params)

        return Handlers(
            logging=log,
            elicitation=self._elicit,
            sampling=self.sample,
            list_roots=self._list_roots if self.roots is not None else None,
        )

    async def _list_roots(self, context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(**r) for r in self.roots or ()])  # type: ignore[arg-type]

    async def _elicit(self, context: Any, params: ElicitRequestParams) -> Any:
        # On 2026-07-28 the question is part of the call's own result and the SDK asks it
        # from inside the call's task: it is that call's. On a 2025-11-25 session it
        # arrives on the session's task and MCP does not say which running call it
        # belongs to: the latest one that can ask.
        call = _ASKING.get()
        if call is None:
            call = next((c for c in reversed(self.active) if c.hooks.elicit is not None), None)
        if call is None or call.hooks.elicit is None:
            return ElicitResult(action="decline")
        call.asked.append(params)  # each question is one interrupt of the call's thread
        answer = call.hooks.elicit(params)
        if answer is not None:
            return answer
        if call.hooks.key is None:  # no thread to resume into: the call runs again
            return ElicitResult(action="cancel")
        return await call.wait_for_person(self.call_timeout)

    async def _own(self, ready: asyncio.Future[Link]) -> None:
        """The owner task: open the session, hand it out, close it when told."""
        link: Link | None = None
        try:
            async with open_session(self.connection, self._handlers()) as (session, init):
                link = Link(session, init, asyncio.current_task(), asyncio.Event())  # type: ignore[arg-type]
                ready.set_result(link)
                await link.stop.wait()
        except Exception as exc:
            if not ready.done():
                error = MCPAuthError if auth_refusal(exc) is not None else MCPServerError
                cause = redact(startup_cause(exc, self.connection), secrets_of(self.connection))
                ready.set_exception(error(self.name, cause))
            else:
                logger.debug("MCP server %r: session ended with %s", self.name, redact(repr(exc)))
                if link is not None:
                    link.ended = exc
        finally:
            if not ready.done():
                ready.cancel()
            if link is not None:
                link.lost()

    async def close(self, timeout: float = 10.0) -> None:
        self._closed = True
        link, self.link = self.link, None
        if link is not None:
            await self._close_link(link, timeout)
        kept, self.kept = list(self.kept.values()), {}
        for call in kept:  # their questions go unanswered
            call.task.cancel()
        await asyncio.gather(*(c.task for c in kept), return_exceptions=True)

    async def _close_link(self, link: Link, timeout: float = 10.0) -> None:
        link.stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(link.owner), timeout)
        except TimeoutError:
            logger.warning(
                "MCP server %r did not close within %g s; cancelling", self.name, timeout
            )
            link.owner.cancel()
            await asyncio.gather(link.owner, return_exceptions=True)
        except Exception:  # the owner already logged why the session ended
            pass

    async def _restart(self, failed: Link, cause: object) -> Link:
        assert self._lock is not None
        async with self._lock:
            current = self.link
            if current is not None and current is not failed and current.alive:
                return current  # another call restarted it already
            if self._closed:
                raise MCPServerError(self.name, "the toolkit is closed")
            logger.warning(
                "MCP server %r: connection lost (%s); restarting", self.name, redact(str(cause))
            )
            self.link = None
            await self._close_link(failed, timeout=5.0)
            try:
                link = self.link = await self._open()
                # the session checks a call's result against the tool's output schema,
                # listing the tools first if it has not: a request after the call that
                # could find the session dead. List them now, before any call.
                await self._attempt(
                    link,
                    "tools/list",
                    lambda s: paginate(lambda c: s.list_tools(cursor=c), "tools"),
                )
            except MCPServerError as exc:
                raise MCPServerError(
                    self.name, f"connection lost ({cause}) and restart {exc.reason}"
                ) from exc
            except (Disconnected, ToolException) as exc:
                refused = auth_refusal(link.ended)
                if refused is not None:
                    raise MCPAuthError(
                        self.name, f"restarted, but tools/list refused the credentials: {refused}"
                    ) from exc
                raise MCPServerError(
                    self.name, f"connection lost ({cause}); restarted, but tools/list failed: {exc}"
                ) from exc
            self.restarts += 1
            return self.link

    # -- calls

    async def request(
        self, what: str, op: Callable[[Any], Awaitable[T]], *, retry: bool = True
    ) -> T:
        """Run `op(session)` on the owner loop, with timeout and one restart.

        A session lost during `op` is restarted; `op` runs again only with `retry` (an
        operation that may safely happen twice), else :class:`MCPCallOutcomeUnknown`."""
        loop = self.loop
        if loop is None or self._closed:
            raise MCPServerError(
                self.name, "not running (the toolkit is not started or already closed)"
            )
        if asyncio.get_running_loop() is loop:
            return await self._request(what, op, retry)
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._request(what, op, retry), loop)
        )

    async def list_tools(self) -> list[dict[str, Any]]:
        """The server's tools (every page) that this client can call."""
        try:
            listed: list[dict[str, Any]] = await self.request(
                "tools/list", lambda s: paginate(lambda c: s.list_tools(cursor=c), "tools")
            )
        except pydantic.ValidationError as exc:  # mcp 2.x checks every tool of a page
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise MCPServerError(
                self.name,
                f"its tools/list answer does not follow the MCP schema, and this MCP SDK "
                f"refuses it whole: {where}: {first['msg']}",
            ) from exc
        check_tool_names(self.name, listed)
        return callable_tools(self.name, listed)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        hooks: CallHooks | None = None,
        *,
        retry: bool = False,
    ) -> CallToolResult:
        """Call tool ``name``; what the server sends during the call goes to ``hooks``.

        A call the server died in is run again after the restart only with ``retry``
        (a read-only or idempotent tool); otherwise its outcome is unknown and
        :class:`MCPCallOutcomeUnknown` says so.

        A question the server asks during the call (elicitation) pauses the thread: the
        request is kept open, waiting, and the same call made again on resume (same thread
        and tool call id, in this process) answers it with the person's answer and returns
        the kept call's result; nothing is sent twice. A question left unanswered for
        ``call_timeout`` is answered ``cancel``, and the call then runs again on resume.

        Raises:
            BaseException: the interrupt in ``hooks.paused`` when the server asked the
                person something (the thread pauses until a person answers).
        """
        what = f"tool {name!r}"
        if hooks is None:
            return await self.request(what, lambda s: s.call_tool(name, arguments), retry=retry)
        loop = self.loop
        if loop is None or asyncio.get_running_loop() is loop:
            return await self._call_kept(name, arguments, hooks, retry)
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._call_kept(name, arguments, hooks, retry), loop)
        )

    async def _call_kept(
        self, name: str, arguments: dict[str, Any], hooks: CallHooks, retry: bool
    ) -> CallToolResult:
        call = self.kept.pop(hooks.key, None) if hooks.key is not None else None
        if call is not None and not call.waiting():
            logger.info(
                "MCP server %r: the call of %r that asked a question ended before the "
                "answer came; calling it again",
                self.name,
                name,
            )
            call = None
        if call is not None:
            call.hooks = hooks
            answer = hooks.answer(call.asked) if hooks.answer is not None else None
            if answer is None:  # resumed without an answer: still waiting
                self.kept[hooks.key] = call  # type: ignore[index]
                if hooks.paused is None:
                    raise RuntimeError(f"tool {name!r} was resumed without an answer")
                raise hooks.paused
            call.answered(answer)
        else:
            call = _KeptCall(hooks)
            # the call's task knows it is this call: what the SDK does inside it (asking
            # a 2026-07-28 server's question) is attributed to it, whatever runs beside
            context = contextvars.copy_context()
            context.run(_ASKING.set, call)
            call.task = asyncio.create_task(
                self._request(
                    f"tool {name!r}",
                    lambda s: s.call_tool(name, arguments, progress_callback=call.progress),
                    retry,
                    call,
                ),
                context=context,
            )
            # a kept call dropped unanswered ends unread: its outcome is not an error to log
            call.task.add_done_callback(lambda t: t.cancelled() or t.exception())
        self.active.append(call)
        paused = asyncio.create_task(call.paused.wait())
        try:
            await asyncio.wait({call.task, paused}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.task.cancel()
            raise
        finally:
            paused.cancel()
            self.active.remove(call)
        if not call.task.done():
            # the thread pauses; the request stays open for the answer on resume
            self.kept[hooks.key] = call  # type: ignore[index]
            assert hooks.paused is not None
            raise hooks.paused
        if hooks.paused is not None and hooks.key is None:
            raise hooks.paused  # answered `cancel`: the thread pauses, the call runs again
        return call.task.result()

    async def _request(
        self,
        what: str,
        op: Callable[[Any], Awaitable[T]],
        retry: bool,
        call: _KeptCall | None = None,
    ) -> T:
        link = self.link
        if link is None or not link.alive:
            if self._closed:
                raise MCPServerError(self.name, "the toolkit is closed")
            link = (
                await self._restart(link, "session ended")
                if link is not None
                else await self._reopen()
            )
        if link.suspect:
            link = await self._checked(link)
        try:
            return await self._attempt(link, what, op, call)
        except Disconnected as first:
            refused = auth_refusal(link.ended)
            if refused is not None:  # credentials, not a lost connection: no restart
                raise MCPAuthError(
                    self.name, f"{what} refused the credentials: {refused}"
                ) from first
            if not retry and not first.unsent:
                # the request went out: the server may have done it before it died
                with contextlib.suppress(MCPServerError):  # the next call says why
                    await self._restart(link, first)
                raise MCPCallOutcomeUnknown(self.name, what, first) from first
            link = await self._restart(link, first)
        try:
            return await self._attempt(link, what, op, call)
        except Disconnected as second:
            raise MCPServerError(
                self.name, f"connection lost during {what}, again after a restart: {second}"
            ) from second

    async def _checked(self, link: Link) -> Link:
        """After a call timed out, the session may be stuck: ping it, replace it if silent."""
        wait = min(self.call_timeout or 5.0, 5.0)
        try:
            async with asyncio.timeout(wait):
                await link.session.send_ping()
        except (TimeoutError, MCPError, *DISCONNECT_ERRORS) as exc:
            logger.warning(
                "MCP server %r: no answer to a ping within %g s after a call timed out; "
                "restarting it",
                self.name,
                wait,
            )
            return await self._restart(link, exc)
        link.suspect = False
        return link

    async def _reopen(self) -> Link:
        assert self._lock is not None
        async with self._lock:
            if self.link is None or not self.link.alive:
                self.link = await self._open()
            return self.link

    async def _attempt(
        self,
        link: Link,
        what: str,
        op: Callable[[Any], Awaitable[T]],
        call: _KeptCall | None = None,
    ) -> T:
        timeout = asyncio.timeout(self.call_timeout)
        if call is not None:
            call.timeout = timeout
        try:
            async with timeout:
                link.inflight.add(timeout)
                try:
                    return await op(link.session)
                finally:
                    link.inflight.discard(timeout)
        except TimeoutError as exc:
            if not link.alive:
                raise Disconnected("the session ended") from exc
            if self.call_timeout is not None and timeout.expired():
                link.suspect = True  # checked before the next call
                raise MCPToolTimeoutError(self.name, what, self.call_timeout) from None
            raise
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                raise Disconnected(exc) from exc
            refused = auth_refusal(http_refusal(link.session))
            if refused is not None:
                raise MCPAuthError(self.name, f"{what} refused the credentials: {refused}") from exc
            raise ToolException(
                f"MCP server {self.name!r}: {what} failed: {exc.error.message}"
            ) from exc
        except DISCONNECT_ERRORS as exc:
            raise Disconnected(exc, unsent=isinstance(exc, UNSENT_ERRORS)) from exc
        except BaseExceptionGroup as group:
            leaves = leaf_errors(group)
            if all(isinstance(e, DISCONNECT_ERRORS) for e in leaves):
                unsent = all(isinstance(e, UNSENT_ERRORS) for e in leaves)
                raise Disconnected(group, unsent=unsent) from group
            raise


class _KeptCall:
    """A tool call in flight, kept open while its thread waits for a person's answer."""

    def __init__(self, hooks: CallHooks) -> None:
        self.hooks = hooks  # those of the latest run of the call (first, then each resume)
        self.task: asyncio.Task[CallToolResult]
        self.timeout: asyncio.Timeout | None = None
        self.asked: list[ElicitRequestParams] = []
        self.paused = asyncio.Event()
        self._answer: asyncio.Future[ElicitResult] | None = None

    async def progress(self, done: float, total: float | None, message: str | None) -> None:
        if self.hooks.progress is not None:
            await self.hooks.progress(done, total, message)

    def waiting(self) -> bool:
        """Whether the request is still open, waiting for a person's answer."""
        return not self.task.done() and self._answer is not None and not self._answer.done()

    async def wait_for_person(self, limit: float | None) -> ElicitResult:
        """Pause the thread and wait (at most ``limit`` seconds) for the answer given on
        resume; the call's own timeout does not run meanwhile."""
        loop = asyncio.get_running_loop()
        self._answer = loop.create_future()
        if self.timeout is not None:
            self.timeout.reschedule(None)
        self.paused.set()
        try:
            async with asyncio.timeout(limit):
                return await self._answer
        except TimeoutError:
            return ElicitResult(action="cancel")  # the call runs again on resume
        finally:
            self._answer.cancel()  # no-op when answered
            self.paused.clear()
            if self.timeout is not None and limit is not None:
                self.timeout.reschedule(loop.time() + limit)

    def answered(self, answer: ElicitResult) -> None:
        assert self._answer is not None
        self.paused.clear()  # before the call waits again
        self._answer.set_result(answer)


#: The tool call whose task this code runs in (set for each call's task only)
_ASKING: contextvars.ContextVar[_KeptCall | None] = contextvars.ContextVar(
    "fncall_mcp_asking_call", default=None
)
