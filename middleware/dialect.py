"""``DialectMiddleware``: the model boundary of ``create_fncall_graph`` as ``wrap_model_call``."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Literal, NotRequired

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import (
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langgraph.types import Command

from fncall_graph.adapters import Dialect, get_dialect
from fncall_graph.adapters.formats.registry import DialectName, PromptDialectName
from fncall_graph.adapters.models import initial_dialect
from fncall_graph.adapters.models.chat_model import DialectChatModel, with_dialect
from fncall_graph.guarantees import DialectPlan, check_option
from fncall_graph.nodes.model import DEFAULT_MAX_CALLS_PER_REPLY, bounded_calls
from fncall_graph.nodes.react_fallback import REASON_KEY, ReactFallbackNode
from fncall_graph.nodes.tools import invalid_call_message

__all__ = ["DialectMiddleware"]

_WRAPPERS_KEPT = 16  # wrapped models kept per middleware (a router may switch among a few)


class DialectState(AgentState[Any]):
    """The agent's state with the thread's dialect, once it had to change."""

    dialect: NotRequired[str]
    """The dialect the thread speaks since a fallback (``"react"`` after native calling
    was refused); unset while it speaks the one it started in."""

    fallback_reason: NotRequired[str]
    """Why the thread changed dialect."""


class DialectMiddleware(AgentMiddleware[DialectState, Any, Any]):
    """Give the agent's model tool calling through a dialect, whatever the model supports.

    Each model call goes to the model through
    :func:`~fncall_graph.adapters.with_dialect`, the boundary ``create_fncall_graph``
    uses: for a prompt dialect (``"hermes"``, ``"qwen"``, ``"react"``) the tools and the
    history (earlier calls and their results) are written into the prompt as that
    dialect writes them, and the reply is read back into an ``AIMessage`` with
    ``tool_calls`` (calls the reader cannot read come back as ``invalid_tool_calls``
    with the reason, and the model is told to write them again). With ``"native"`` the
    tools go to the model's own ``bind_tools``, and calls a server left as markup in
    the reply's text are read in the model's own call format. The history in the
    agent's state stays canonical whatever the dialect: ``AIMessage.tool_calls`` and
    one ``ToolMessage`` per call.

    When native calling is refused (the model has no ``bind_tools``, or its server
    answers that it takes no ``tools``), the same call is made again at once in
    ``fallback``, and the thread speaks ``fallback`` from then on: the switch and its
    reason are saved in the agent's state (``dialect``, ``fallback_reason``), as in
    ``create_fncall_graph``. A server that cannot be reached raises
    :class:`~fncall_graph.ModelServerUnreachable` instead.

    Put it last in ``middleware`` (innermost): middleware before it that swap the model
    (``ModelFallbackMiddleware``, a router) then get each of their models spoken to in
    the dialect too.

    Args:
        dialect: ``"auto"`` (default): the dialect the model declares (a recording, the
            bundled model), else ``"native"`` when it implements ``bind_tools``, else
            ``fallback``; or ``"native"``, ``"hermes"`` (alias ``"nous"``),
            ``"qwen"``, ``"react"``, or a
            :class:`~fncall_graph.adapters.formats.base.Dialect` (e.g.
            ``get_dialect("qwen", lang="zh")``). A model already wrapped with
            ``with_dialect`` keeps its own dialect under ``"auto"``.
        fallback: the prompt dialect to use when native calling is refused.
        call_format: with ``"native"``, the format the model writes calls into its
            text in (``"hermes"``, ``"mistral"``, a family such as ``"qwen3-coder"``;
            see :func:`~fncall_graph.adapters.with_dialect`); ``None``: the model's own,
            asked of its server or told by its name.
        max_calls_per_reply: calls of one reply that go on to run (default 32, as in
            ``create_fncall_graph``); those past it become ``invalid_tool_calls`` saying
            why, which the agent never runs and answers for the model as it answers
            every unreadable call. ``None``: no bound.

    Raises:
        ValueError: an unknown dialect or call format, or a ``fallback`` that is not a
            prompt dialect.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_ollama import ChatOllama
        from fncall_graph import DialectMiddleware

        # a model whose server has no tool parser: it writes <tool_call> markup
        agent = create_agent(
            ChatOllama(model="qwen2.5:0.5b"),
            [get_weather],
            middleware=[DialectMiddleware("hermes")],
        )
        agent.invoke({"messages": [("user", "Weather in Paris?")]})
        ```

        >>> from langchain.agents import create_agent
        >>> from langchain_core.tools import tool
        >>> from fncall_graph.replay import ReplayChatModel
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> model = ReplayChatModel(  # a model that writes its calls as Hermes markup
        ...     ['<tool_call>\\n{"name": "add", "arguments": {"a": 1, "b": 2}}\\n</tool_call>',
        ...      "It is 3."]
        ... )
        >>> agent = create_agent(model, [add], middleware=[DialectMiddleware("hermes")])
        >>> [m.content or m.tool_calls[0]["args"] for m in agent.invoke({"messages": [("user", "1+2?")]})["messages"]]
        ['1+2?', {'a': 1, 'b': 2}, '3', 'It is 3.']
    """

    state_schema = DialectState

    def __init__(
        self,
        dialect: Literal["auto"] | DialectName | Dialect = "auto",
        *,
        fallback: PromptDialectName | Dialect = "react",
        call_format: str | None = None,
        max_calls_per_reply: int | None = DEFAULT_MAX_CALLS_PER_REPLY,
    ) -> None:
        super().__init__()
        # the rules create_fncall_graph applies to the same arguments
        self.max_calls_per_reply = check_option("max_calls_per_reply", max_calls_per_reply)
        auto = isinstance(dialect, str) and dialect == "auto"
        self.dialect: Dialect | None = None if auto else get_dialect(dialect)
        self.fallback: Dialect = check_option("fallback", fallback)
        self.call_format = check_option("call_format", call_format)
        self._plans: dict[str, DialectPlan] = {}
        self._wrapped: OrderedDict[tuple[int, str], tuple[Any, DialectChatModel]] = OrderedDict()
        self._lock = threading.Lock()

    # -- which dialect, which model

    def _plan(self, model: BaseChatModel) -> DialectPlan:
        """The thread's dialects for ``model``: where it starts, where it falls back to."""
        if self.dialect is not None:
            first = self.dialect
        elif isinstance(model, DialectChatModel):
            first = model.dialect
        else:
            first = initial_dialect(model, "auto", self.fallback)
        with self._lock:
            plan = self._plans.get(first.name)
            if plan is None or plan.initial is not first:
                plan = self._plans[first.name] = DialectPlan(first, self.fallback, ())
        return plan

    def _speaking(self, model: BaseChatModel, dialect: Dialect) -> DialectChatModel:
        """``model`` spoken to in ``dialect`` (one wrapper per model and dialect)."""
        inner: Any = model.model if isinstance(model, DialectChatModel) else model
        key = (id(inner), dialect.name)
        with self._lock:
            kept = self._wrapped.get(key)
            if kept is not None and kept[0] is inner and kept[1].dialect is dialect:
                self._wrapped.move_to_end(key)
                return kept[1]
        fmt = self.call_format if dialect.native else None
        if fmt is None and dialect.native and isinstance(model, DialectChatModel):
            fmt = model.call_format
        wrapped = with_dialect(inner, dialect, call_format=fmt)
        with self._lock:
            self._wrapped[key] = (inner, wrapped)  # the model kept: its id stays its own
            while len(self._wrapped) > _WRAPPERS_KEPT:
                self._wrapped.popitem(last=False)
        return wrapped

    # -- the hook

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """Call the model in the thread's dialect; when native calling is refused, call
        it again in ``fallback`` and save the switch in the state."""
        plan = self._plan(request.model)
        dialect = plan.current(request.state)
        try:
            response = handler(request.override(model=self._speaking(request.model, dialect)))
        except Exception as exc:
            dialect, reason = plan.fallback_for(dialect, exc, request.model)
        else:
            return self._bounded(response)
        response = handler(request.override(model=self._speaking(request.model, dialect)))
        return _switched(self._bounded(response), plan, reason)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """:meth:`wrap_model_call` for an async run."""
        plan = self._plan(request.model)
        dialect = plan.current(request.state)
        try:
            speaking = self._speaking(request.model, dialect)
            response = await handler(request.override(model=speaking))
        except Exception as exc:
            dialect, reason = plan.fallback_for(dialect, exc, request.model)
        else:
            return self._bounded(response)
        response = await handler(request.override(model=self._speaking(request.model, dialect)))
        return _switched(self._bounded(response), plan, reason)

    def _bounded(self, response: Any) -> Any:
        """``response`` with its reply's calls past ``max_calls_per_reply`` made
        unreadable calls that say why (:func:`~fncall_graph.nodes.model.bounded_calls`),
        each answered in the reply's result as the graph answers it (the agent would
        tell the model its arguments were malformed)."""
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        if isinstance(response, ExtendedModelResponse):
            return dataclasses.replace(
                response, model_response=self._bounded(response.model_response)
            )
        if not isinstance(response, ModelResponse):
            return response
        result: list[Any] = []
        for message in response.result:
            if not isinstance(message, AIMessage):
                result.append(message)
                continue
            bounded = bounded_calls(message, self.max_calls_per_reply)
            over = bounded.invalid_tool_calls[len(message.invalid_tool_calls) :]
            result += [bounded, *(invalid_call_message(c) for c in over)]
        return dataclasses.replace(response, result=result)


def _switched(
    response: ModelResponse[Any], plan: DialectPlan, reason: str
) -> ExtendedModelResponse[Any]:
    """``response``, saving with it that the thread speaks ``plan.fallback`` from now on
    (the update the graph's ``react_fallback`` node makes)."""
    update = ReactFallbackNode(plan).invoke({REASON_KEY: reason}, {})
    return ExtendedModelResponse(model_response=response, command=Command(update=update))
