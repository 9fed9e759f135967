"""The model boundary: which dialect a thread speaks now (:class:`DialectPlan`) and the model
bound for it (:class:`ModelBoundary`).

Shared by the ``adapter`` and ``model`` nodes (not a node itself), so that the prompt the
adapter renders is the one the model node's call would render: the same binding (tools,
grammar, token room), the same system prompt, the same call format; ``DialectMiddleware``
plans with the same :class:`DialectPlan`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableBinding
from langchain_core.tools import BaseTool

from fncall_graph.adapters import Dialect, get_dialect
from fncall_graph.adapters.formats.grammar import grammar_max_bytes
from fncall_graph.adapters.models import is_tools_unsupported_error, unreachable_server
from fncall_graph.adapters.models.call_format import CallFormat, resolve_call_format
from fncall_graph.adapters.models.chat_model import DialectChatModel, with_dialect
from fncall_graph.adapters.models.model_call import ModelCall
from fncall_graph.adapters.models.structured_output import requested_json
from fncall_graph.adapters.secrets import redact_exception, secrets_of

__all__ = []


@dataclass(frozen=True)
class DialectPlan:
    """The thread's first dialect and where it falls back to.

    The current dialect lives in the graph state (``state["dialect"]``) once a fallback
    happened, so a checkpointed thread never tries the failed way again.
    """

    initial: Dialect
    fallback: Dialect
    tools: Sequence[BaseTool]
    system_prompt: str | None = None
    unparsed_limit: int = 2
    _known: dict[str, Dialect] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._known.setdefault(self.initial.name, self.initial)
        self._known.setdefault(self.fallback.name, self.fallback)

    def current(self, state: Mapping[str, Any]) -> Dialect:
        """The dialect the thread speaks now."""
        name = state.get("dialect")
        return self.dialect(name) if name else self.initial

    def dialect(self, name: str) -> Dialect:
        """The dialect called ``name``, built once per graph."""
        if name not in self._known:
            # a thread saved by another graph may name a dialect this graph was not built with
            self._known[name] = get_dialect(name)
        return self._known[name]

    def fallback_for(self, dialect: Dialect, exc: Exception, model: Any) -> tuple[Dialect, str]:
        """The dialect to call ``model`` again in, and why, when it refused native calling
        in ``dialect`` (``exc``); any other failure is raised (a server that cannot be
        reached as :class:`~fncall_graph.adapters.models.ModelServerUnreachable`).
        Its message is redacted first: what LangGraph saves of a failed step (the
        checkpoint's ``__error__`` write) is its ``repr``, and a server may quote a key."""
        redact_exception(exc, secrets_of(model))
        unreachable = unreachable_server(exc, model)
        if unreachable is not None:
            raise unreachable from exc
        if not (dialect.native and is_tools_unsupported_error(exc)):
            raise exc
        # BaseChatModel.bind_tools raises a bare NotImplementedError: say what it means
        detail = str(exc) or f"{type(model).__name__} does not implement bind_tools"
        return self.fallback, f"native tool calling failed: {type(exc).__name__}: {detail}"

    def with_system(self, messages: Sequence[AnyMessage]) -> list[AnyMessage]:
        """The history with the graph's system prompt in front, unless it has its own."""
        msgs = list(messages)
        if self.system_prompt and not (msgs and isinstance(msgs[0], SystemMessage)):
            msgs.insert(0, SystemMessage(self.system_prompt))
        return msgs


def current_turn(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages since the last user message (the turn being worked on)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return list(messages[i + 1 :])
    return list(messages)


def model_calls_this_turn(messages: Sequence[AnyMessage]) -> int:
    return sum(isinstance(m, AIMessage) for m in current_turn(messages))


def unparsed_streak(messages: Sequence[AnyMessage]) -> int:
    """How many of this turn's last replies held only calls that could not be read."""
    streak = 0
    for m in reversed(current_turn(messages)):
        if not isinstance(m, AIMessage):
            continue
        if m.invalid_tool_calls and not m.tool_calls:
            streak += 1
        else:
            break
    return streak


@dataclass(frozen=True, slots=True)
class RenderedInput:
    """The history as the adapter rendered it for the next model call, and that call
    made ready (``call``: prepared once, in the adapter; the ``model`` node sends it).

    Carried from the ``adapter`` node to the ``model`` node in a channel LangGraph does not
    checkpoint; ``key`` says which call it was rendered for, so a model call never sends
    a prompt rendered for another history, dialect or binding.
    """

    messages: tuple[BaseMessage, ...]
    key: tuple[Any, ...]
    # Left out of what a server shows of the update (orjson skips a leading underscore)
    # and of copies (pickle, deepcopy): the call holds the model and its tools; a copy
    # is the rendering alone, and the model node makes its call ready again.
    _call: ModelCall | None = field(default=None, repr=False, compare=False)

    @property
    def call(self) -> ModelCall | None:
        """The call made ready with this rendering (``None`` in a copy)."""
        return self._call

    def __reduce__(self) -> tuple[Any, ...]:
        return (RenderedInput, (self.messages, self.key))

    def renders(self, state: dict[str, Any]) -> bool:
        """Whether this is a rendering of ``state``'s history as it stands (for whichever
        dialect and binding)."""
        return self.key[2:] == _history_end(state)


def _history_end(state: dict[str, Any]) -> tuple[int, str | None]:
    """Where a thread's history stands: its length and its last message's id."""
    messages = state["messages"]
    return len(messages), messages[-1].id if messages else None


def _room_for(grammar: str, model: BaseChatModel) -> dict[str, Any]:
    """A ``max_tokens`` that lets every reply the grammar admits finish, where the model's is less.

    A reply cut off by ``max_tokens`` half-way through a call is unreadable; a grammar
    whose replies are bounded (calls only) fits in its byte count, since every token
    writes at least one byte.
    """
    limit = getattr(model, "max_tokens", None)
    need = grammar_max_bytes(grammar)
    if isinstance(limit, int) and need is not None and limit < need:
        return {"max_tokens": need}
    return {}


class ModelBoundary:
    """The model, bound once per dialect, grammar and call format, for a graph's nodes.

    Args:
        model: any LangChain chat model.
        plan: the thread's dialects, tools and system prompt.
        constrained: send prompt dialects' grammars with each call (``extra_body``):
            ``False`` never, ``True`` always, ``"first_call"`` always, with the first
            call of each user turn held to tool calls only.
        call_format: the format the model writes calls into a native reply's text in, as
            declared; ``None``: resolved for the model, else learned in each thread.
        call_kwargs: what every call is bound with besides the tools, for a dialect's
            ``native`` (``response_format``'s strategy: the provider's
            ``response_format``, a ``tool_choice``); a JSON answer it asks for is held
            to its schema by a prompt dialect's grammar with the rest.
    """

    def __init__(
        self,
        model: BaseChatModel,
        plan: DialectPlan,
        *,
        constrained: bool | Literal["first_call"] = False,
        call_format: str | None = None,
        call_kwargs: Callable[[bool], Mapping[str, Any]] | None = None,
    ) -> None:
        self.model = model
        self.call_kwargs = call_kwargs
        self.plan = plan
        self.constrained = constrained
        self.call_format = call_format
        self._bindings: dict[tuple[str, bool, str | None], RunnableBinding] = {}

    def binding(
        self, dialect: Dialect, state: dict[str, Any], fmt: CallFormat | None = None
    ) -> RunnableBinding:
        """The wrapper bound to the tools for this thread's next call: its ``bound`` is
        the :class:`DialectChatModel`, its ``kwargs`` the call's arguments. ``fmt``: the
        thread's call format, when the caller has it already."""
        require_call = self.constrained == "first_call" and not model_calls_this_turn(
            state["messages"]
        )
        name = (fmt or self.format(dialect, state)).name if dialect.native else None
        key = (dialect.name, require_call, name)
        if key not in self._bindings:
            tools = list(self.plan.tools)
            given = dict(self.call_kwargs(dialect.native)) if self.call_kwargs else {}
            options: dict[str, Any] = {}
            grammar = None
            if self.constrained and not dialect.native:
                # the keywords only when needed: a custom dialect may predate them
                more: dict[str, Any] = {"require_call": True} if require_call else {}
                if (asked := requested_json(given.get("response_format"))) is not None:
                    more["answer_json"] = asked["schema"] or {"type": "object"}
                grammar = dialect.grammar(tools, **more)
            if grammar is not None:
                # passed on to the model's request; the model's own extra_body (if any) kept
                extra = {**(getattr(self.model, "extra_body", None) or {}), "grammar": grammar}
                options = {"extra_body": extra, **_room_for(grammar, self.model)}
            bound = with_dialect(self.model, dialect, call_format=name).bind_tools(
                tools, **given, **options
            )
            assert isinstance(bound, RunnableBinding)
            self._bindings[key] = bound
        return self._bindings[key]

    @staticmethod
    def wrapper(binding: RunnableBinding) -> DialectChatModel:
        wrapper = binding.bound
        assert isinstance(wrapper, DialectChatModel)
        return wrapper

    @staticmethod
    def key(dialect: Dialect, state: dict[str, Any], binding: RunnableBinding) -> tuple[Any, ...]:
        """Which call a rendering is for: the dialect, the binding and the history's end."""
        return (dialect.name, id(binding), *_history_end(state))

    def render(self, dialect: Dialect, state: dict[str, Any]) -> RenderedInput:
        """The thread's history (with the system prompt) as this call sends it, and the
        call made ready with it, without a config: the ``model`` node sends it with its
        own (:meth:`ModelCall.sent_with`), and a step's config is not kept past it."""
        binding = self.binding(dialect, state)
        history = self.plan.with_system(state["messages"])
        call = self.wrapper(binding).model_call(history, **binding.kwargs)
        return RenderedInput(tuple(call.rendered), self.key(dialect, state, binding), call)

    def format(self, dialect: Dialect, state: dict[str, Any]) -> CallFormat:
        """The thread's call format: a prompt dialect's own; one learned in the thread;
        else the model's (declared, from its server, by its name), resolved once."""
        learned = state.get("call_format")
        if dialect.native and learned and state.get("call_format_source") == "learned":
            return CallFormat(learned, "learned", "the thread's first call read")
        return resolve_call_format(self.model, dialect=dialect, declared=self.call_format)
