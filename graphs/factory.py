"""``create_fncall_graph``: wire the adapter, model, tools, approve and react_fallback nodes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_type_hints

from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, InvalidToolCall, ToolCall, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Checkpointer, Send

__all__ = ["APPROVE", "DEFAULT_MAX_ITERATIONS", "MODEL", "TOOLS", "create_fncall_graph"]

from langchain.agents.middleware.human_in_the_loop import InterruptOnConfig

from fncall_graph._compat import CONFIG_KEY_DURABILITY
from fncall_graph.adapters import Dialect, get_dialect
from fncall_graph.adapters.checkpoint.claims import (
    DEFAULT_LEASE,
    LEASE_KEY,
    MULTITASK_KEY,
    Multitask,
)
from fncall_graph.adapters.formats.registry import DialectName, PromptDialectName
from fncall_graph.adapters.models import accepts_grammar, initial_dialect, resolve_model
from fncall_graph.adapters.models.call_format import check_call_format
from fncall_graph.guarantees import (
    DEFAULT_MAX_REPEATS,
    DialectPlan,
    InterruptMode,
    ModelBoundary,
    last_ai_message,
    unknown_tool,
)
from fncall_graph.nodes.adapter import AdapterNode
from fncall_graph.nodes.approve import ApproveNode
from fncall_graph.nodes.hooks import HOOKS, HookNode, hook_name
from fncall_graph.nodes.model import DEFAULT_MAX_CALLS_PER_REPLY, STOP_REASON_KEY, ModelNode
from fncall_graph.nodes.react_fallback import ReactFallbackNode
from fncall_graph.nodes.structured_response import ResponseStrategy, StructuredResponseNode
from fncall_graph.nodes.tools import (
    DEFAULT_MAX_STORED_RESULT_CHARS,
    DEFAULT_TOOL_TIMEOUT,
    ToolDispatchNode,
    writes_by_annotation,
)

from .compiled import FncallGraph
from .hooks import Middleware
from .state import (
    FncallDebugState,
    FncallInput,
    FncallState,
    GraphDebugState,
    GraphState,
    with_fields,
)
from .steps import Route, RoutedStep, Step

#: Model calls allowed in one user turn by default (``max_iterations``), in every path
#: (the CLI's too): enough for a few dependent calls and an answer; a model that repeats
#: one call is stopped sooner by ``max_repeats``.
DEFAULT_MAX_ITERATIONS = 10

#: The graph's node names.
ADAPTER, MODEL, TOOLS, APPROVE = "adapter", "model", "tools", "approve"
REACT_FALLBACK, STRUCTURED = "react_fallback", "structured_response"
# supersteps one model call can take: the model (twice in a native graph's thread that
# switched dialect: it sends the call on to the adapter), the adapter, its approval, its tools
_STEPS_PER_ITERATION = 5


def _as_tools(tools: Sequence[BaseTool | Callable[..., Any]]) -> list[BaseTool]:
    out: list[BaseTool] = []
    for t in tools:
        if isinstance(t, BaseTool):
            out.append(t)
        elif callable(t):
            out.append(as_tool(t))
        else:
            raise TypeError(
                f"tools must be BaseTool instances or functions; got {type(t).__name__} "
                f"({t!r:.80}). Describe-only schemas cannot be executed."
            )
    names = [t.name for t in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"two tools share the name(s) {dupes}; tool names must be unique")
    return out


def _open_calls(
    ai: AIMessage, messages: Sequence[AnyMessage], schema_tools: frozenset[str]
) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    """``ai``'s calls (readable, unreadable) that no ``ToolMessage`` after it answers, as
    create_agent's edges find them (a schema tool's call is the model step's own)."""
    answered = set()
    for m in reversed(messages):  # the messages after ``ai`` only: a step's, a hook's
        if m is ai:
            break
        if isinstance(m, ToolMessage):
            answered.add(m.tool_call_id)
    calls = [
        c
        for c in ai.tool_calls
        if (c.get("id") or "") not in answered and c["name"] not in schema_tools
    ]
    invalid = [c for c in ai.invalid_tool_calls if (c.get("id") or "") not in answered]
    return calls, invalid


def create_fncall_graph(
    model: BaseChatModel | str | None,
    tools: Sequence[BaseTool | Callable[..., Any]],
    *,
    dialect: Literal["auto"] | DialectName | Dialect = "auto",
    fallback: PromptDialectName | Dialect = "react",
    system_prompt: str | None = None,
    checkpointer: Checkpointer = None,
    interrupt_on: Mapping[str, bool | InterruptOnConfig] | Literal["annotations"] | None = None,
    interrupt_mode: InterruptMode = "batched",
    durability: Literal["sync", "async", "exit"] = "sync",
    store: BaseStore | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    max_repeats: int | None = DEFAULT_MAX_REPEATS,
    max_calls_per_reply: int | None = DEFAULT_MAX_CALLS_PER_REPLY,
    max_concurrency: int = 8,
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    max_result_chars: int | None = 100_000,
    max_stored_result_chars: int | None = DEFAULT_MAX_STORED_RESULT_CHARS,
    idempotent_tools: Sequence[str] = (),
    lease: float | None = DEFAULT_LEASE,
    multitask: Multitask = "enqueue",
    unparsed_limit: int = 2,
    constrained: bool | Literal["first_call"] | None = None,
    keep_model_input: bool = False,
    call_format: str | None = None,
    middleware: Sequence[AgentMiddleware] = (),
    response_format: Any = None,
    state_schema: type | None = None,
    context_schema: type | None = None,
    name: str = "fncall_graph",
    debug: bool = False,
) -> FncallGraph:
    """Create a tool-calling graph that works with any chat model.

    The graph keeps the canonical history (``AIMessage.tool_calls`` and one
    ``ToolMessage`` per call) and speaks a *dialect* only at the model boundary: native
    ``tools`` for models with function calling, or Hermes ``<tool_call>``, Qwen
    ``✿FUNCTION✿`` or ReAct ``Action:`` prompt text for models without. Independent calls
    of one turn run in parallel; dependent calls run in later turns, one after another.

    Nodes, as drawn in LangGraph Studio and by ``get_graph()``: ``adapter`` (for a prompt
    dialect, render the canonical history as the dialect's prompt text once; its update
    shows it as ``model_input``; native threads skip it) → ``model`` (send exactly that,
    or the history with the tools bound natively; read the reply once: the provider's own
    run is the only chat-model run) → ``tools`` (one task per call, run concurrently,
    each carrying only its call) → back to ``adapter``/``model``; ``approve`` (with
    ``interrupt_on``) pauses between ``model`` and ``tools`` for a person's decision on
    chosen tools; ``react_fallback`` is entered when native tool calling is refused: it
    switches the thread to ``fallback`` and the adapter renders for it. Two switches come
    back with the reply that caused them: to the prompt dialect a native reply writes its
    calls in, and to ReAct when a prompt dialect's calls keep coming out unreadable;
    ``fallback_reason`` records why. A reply with no calls ends the turn.

    Args:
        model: a LangChain chat model, or a model spec such as ``"ollama:qwen3"``,
            ``"openai:gpt-4o-mini"``, ``"local"`` or ``"replay:FILE"``
            (``None``: the ``FNCALL_MODEL`` environment variable).
        tools: LangChain tools (MCP tools included) or plain functions.
        dialect: ``"auto"`` (the dialect the model declares in a ``dialect`` attribute,
            as replay recordings and the bundled ``local`` model do; else native when the
            model implements ``bind_tools``, with the fallback below), ``"native"``, ``"hermes"`` (alias ``"nous"``), ``"qwen"``,
            ``"react"``, or a :class:`~fncall_graph.adapters.Dialect` instance
            (e.g. ``get_dialect("qwen", lang="zh")``).
        fallback: the prompt dialect a thread switches to when native calling fails: the
            provider refuses tools (Ollama's "does not support tools", an OpenAI-compatible
            400/422 about ``tools``) or ``bind_tools`` is not implemented. The switch is
            kept in the thread's state.
        system_prompt: put in front of the history when it has no system message.
        checkpointer: a LangGraph checkpointer, for threads that persist and resume
            (see :mod:`fncall_graph.adapters.checkpoint` for SQLite and PostgreSQL).
            ``None`` inside a parent graph: the graph saves to the parent's (approvals
            too); a run with approvals and no checkpointer at all raises ``ValueError``.
        interrupt_on: tools that need a person's decision before they run, shaped like
            LangChain's ``HumanInTheLoopMiddleware``: ``{"tool": True}`` (approve, edit
            or reject) or ``{"tool": {"allowed_decisions": [...], "description": ...}}``.
            One interrupt per model reply lists all its gated calls
            (``{"action_requests": [...], "review_configs": [...], "review_token": ...}``);
            resume with ``Command(resume=bind_decisions(interrupt.value, [...]))``, one
            decision per call, in order; an answer for another review raises
            :class:`~fncall_graph.StaleApproval`. Needs a checkpointer. A config's
            ``when`` (LangChain's ``(ToolCallRequest) -> bool``) reviews only the calls it
            returns ``True`` for. ``"annotations"``: every tool not known to only read
            asks first: known from its own metadata (``readOnlyHint``) or from the MCP
            annotations of a server the user trusts (``"trust": "annotations"``); an
            untrusted server's word counts for nothing, and a tool that says nothing may
            write, as MCP's defaults have it (see
            :mod:`~fncall_graph.adapters.tool_effects`).
        interrupt_mode: ``"batched"`` (default): one interrupt per reply, as above;
            ``"per_call"``: one interrupt per gated call, in order, shaped like
            LangChain's ``HumanInTheLoopMiddleware(interrupt_mode="per_call")``
            (``{"type": "tool_approval", "tool_call_id", "name", "args", "description"}``
            and a ``response_schema`` for one decision), each answered with one decision
            (``Command(resume={interrupt.id: {"type": "approve"}})``).
        durability: when a step's checkpoint is saved (LangGraph's ``durability``):
            ``"sync"`` (default) saves it before the next step starts, so after a crash
            only the step that was running re-runs (a tool call in flight is not run
            again, see ``idempotent_tools``); ``"async"`` saves while the next step runs
            (faster; a crash can lose finished steps, whose model and tool calls then run
            again); ``"exit"`` saves only when the run ends. ``invoke(..., durability=)``
            overrides it per run.
        store: a LangGraph store, passed to tools that ask for it.
        max_iterations: model calls allowed in one user turn (default 10,
            ``DEFAULT_MAX_ITERATIONS``); at the limit the turn ends with an assistant
            message saying so (never ``GraphRecursionError``).
        max_repeats: the repeat guard (default 2). A read (a tool that is read-only
            by :func:`~fncall_graph.adapters.tool_effects.is_read_only`) with the same
            arguments (compared as JSON with sorted keys) as one that already has a
            result in this user turn is not run again, unless a write that may touch it
            (a tool of the same MCP server, or any tool that is no MCP server's) was made
            since: the model is answered with a note and that result. The
            ``max_repeats``-th repeat of one read ends the turn with an assistant message
            saying why (``fncall_stop_reason: "max_repeats"`` in its
            ``additional_kwargs``; that reply's other calls are answered "not run" too).
            A write always runs (and is asked about, when gated); a read that failed
            runs once more; a new user turn starts afresh; no approval is asked for a
            call the guard answers (see :mod:`~fncall_graph.guarantees`). ``None``:
            calls always run.
        max_calls_per_reply: calls of one model reply that run (or are asked about)
            (default 32, ``DEFAULT_MAX_CALLS_PER_REPLY``); the calls past it are kept as
            unreadable calls (``invalid_tool_calls``) that never run, each answered with
            an error telling the model it was not run and why. ``None``: no bound.
        max_concurrency: tool calls of one turn running at once.
        tool_timeout: seconds one tool call may take (default 600, ``DEFAULT_TOOL_TIMEOUT``;
            ``None``: no limit). An async call past it is cancelled; a sync one cannot be
            stopped and runs on, its claim held until it ends. Either way the model is
            told the outcome is unknown and not to repeat the call unchecked (a sync call
            "is still running"). MCP calls also have the toolkit's ``call_timeout``.
        max_result_chars: longest tool result the model sees; a longer one is cut with a
            note saying how much was left out, and the whole result is kept once: with a
            checkpointer, beside the call's claim, the ``ToolMessage``'s ``artifact``
            only referring to it (``fncall_graph.nodes.tools.stored_result(
            graph.checkpointer, message)`` reads it), so checkpoints do not copy it;
            without one, in the ``artifact`` (``None``: no limit).
        max_stored_result_chars: longest text of a cut result that is kept (default
            1,000,000; ``None``: all); the tool's own artifact of a cut result is kept
            with it unless it is longer than that as JSON.
        idempotent_tools: tools whose calls may run again when the process running them
            died mid-call (the outcome of such a call is unknown). Every other call runs
            at most once per call id, across processes: a resumed thread answers it
            "outcome unknown" instead (see docs/pause-and-resume.md). Tools marked
            ``metadata={"idempotent": True}``, and MCP tools annotated ``readOnlyHint``
            or ``idempotentHint`` by a server the user trusts, count as listed.
        lease: seconds a running tool call's claim counts as held after its process last
            renewed it (default 60, ``DEFAULT_LEASE``); the process renews it four times
            as often while the call runs, from a thread of its own (a tool blocking the
            event loop does not stop it). A process frozen past the lease (stopped, a
            paused VM, a long stall) loses the call: another run of the thread may take
            it over and answer it "outcome unknown"; when the frozen run wakes it stops
            with :class:`~fncall_graph.ToolCallTakenOver` and writes nothing more to the
            thread. ``None``: a claim is held until its process is known to be gone,
            which only its own machine can tell.
        multitask: what a run does when its thread already has a run in progress, in
            this process or another (two runs at once would fork the thread, and one
            turn would vanish from it): ``"enqueue"`` (default, as LangGraph Server's
            default) waits until that run ends, then starts from the thread as it left
            it; ``"reject"`` raises :class:`~fncall_graph.ThreadBusy` at once and runs
            nothing. A run may choose for itself with
            ``{"configurable": {"fncall_multitask": "reject"}}``. Needs a checkpointer
            (a thread without one keeps nothing to fork).
        unparsed_limit: replies in a row whose calls cannot be read before a prompt
            dialect gives way to ``"react"``.
        constrained: constrained decoding for the prompt dialects: each model call
            carries the dialect's GBNF grammar (``extra_body={"grammar": ...}``, which
            llama.cpp's servers apply), so the reply is either an answer or calls in the
            dialect's format that name listed tools with arguments valid for their
            schemas. ``True``: on, the model chooses between calls and an answer;
            ``"first_call"``: on, and the first reply of each user turn must be tool calls
            (small models otherwise tend to answer without calling anything; a turn that
            needs no tool then costs one call); ``False``: off; ``None`` (default):
            ``"first_call"`` when the model declares that it accepts grammars (the
            ``local`` model does; a ``CompatibleChatOpenAI(accepts_grammar=True)`` or
            ``resolve_model(url, accepts_grammar=True)`` for another llama.cpp server),
            else off. The model must take ``extra_body`` (``ChatOpenAI`` does); the
            native dialect is never constrained.
        keep_model_input: also checkpoint ``model_input`` and ``model_output``, the exact
            input and the raw reply of the latest model call, so ``get_state`` and
            LangGraph Studio show them for a saved thread.
            Off by default: it is the history once more, in the dialect's form, and
            would double what every checkpoint stores. The ``updates`` and ``values``
            stream modes show it either way while a run goes on.
        call_format: how the model writes calls into its text when it speaks ``native``
            through a server without a tool parser: a format name (``"mistral"``,
            ``"harmony"``, ``"hermes"``, … as in docs/dialects.md) or a model family's
            name (``"qwen3-coder"``); those calls are read in that format. ``None``
            (default): the model's own, told by its spec's ``?format=``, its server's chat
            template or its name, once per process; else learned in each thread from
            its first call read. The state's ``call_format`` and ``call_format_source``
            say which format and where from.
        middleware: LangChain ``AgentMiddleware``, as ``create_agent`` takes it (outermost
            first): ``wrap_model_call`` wraps the model node's call (a changed request is
            rendered for the thread's dialect), ``wrap_tool_call`` runs inside each tool
            call's claim, ``before_agent``/``before_model``/``after_model``/
            ``after_agent`` are graph nodes named ``"<name>.<hook>"`` that may
            ``jump_to`` ``"model"``, ``"tools"`` or ``"end"``; their ``tools`` and
            ``state_schema`` join the graph's. After the hooks the run goes on as in
            ``create_agent``: the reply's calls that no hook answered (a
            ``HumanInTheLoopMiddleware`` rejection, a ``ToolCallLimitMiddleware`` block
            answer theirs) to approval and the tools, the model again when all are
            answered.
        response_format: what the turn's answer is kept as, in the state's
            ``structured_response``. LangChain's ``ToolStrategy(Schema)``: as in
            ``create_agent``, the schema is a tool bound beside the others (listed in a
            prompt dialect's prompt); the model's call of it that fits ends the run, one
            that does not is answered with ``handle_errors``' text. ``ProviderStrategy(
            Schema)``: its ``response_format`` goes with every model call to a model
            with structured output of its own; any other is asked for the JSON in the
            prompt, held to the schema by the dialect's grammar where the server takes
            one. A bare pydantic model, ``TypedDict`` or JSON schema: when the model
            ends a turn with an answer, a ``structured_response`` step asks it once more
            for that answer in this shape, through the thread's dialect.
        state_schema: a ``TypedDict`` of more state fields (e.g. a subclass of
            :class:`~fncall_graph.graphs.state.FncallState` or LangChain's
            ``AgentState``): they are part of the thread, may be given as input and are
            read by tools with ``InjectedState``; the graph's own fields stay its own.
        context_schema: the type of the run's ``context=`` (LangGraph's runtime
            context), read by tools through ``ToolRuntime``.
        name: the compiled graph's name.
        debug: LangGraph debug output.

    Returns:
        A compiled LangGraph graph: ``invoke``/``ainvoke``/``stream``/``astream`` with
        ``{"messages": [...]}``, every stream mode, ``get_state``, ``get_state_history``,
        and threads via ``{"configurable": {"thread_id": ...}}``.

    Example:
        ```python
        from langchain_core.tools import tool
        from langgraph.checkpoint.memory import InMemorySaver
        from fncall_graph import create_fncall_graph

        @tool
        def get_weather(city: str) -> str:
            \"\"\"获取指定城市的天气信息\"\"\"
            return f"{city}: 晴, 25°C"

        graph = create_fncall_graph(
            "ollama:qwen3", [get_weather], dialect="hermes", checkpointer=InMemorySaver()
        )
        config = {"configurable": {"thread_id": "1"}}
        result = graph.invoke({"messages": [("user", "上海天气如何?")]}, config)
        print(result["messages"][-1].content)
        ```
    """
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
    if max_repeats is not None and max_repeats < 1:
        raise ValueError(f"max_repeats must be at least 1 or None, got {max_repeats}")
    if max_calls_per_reply is not None and max_calls_per_reply < 1:
        raise ValueError(
            f"max_calls_per_reply must be at least 1 or None, got {max_calls_per_reply}"
        )
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
    if max_result_chars is not None and max_result_chars < 1:
        raise ValueError(f"max_result_chars must be at least 1 or None, got {max_result_chars}")
    if max_stored_result_chars is not None and max_stored_result_chars < 1:
        raise ValueError(
            f"max_stored_result_chars must be at least 1 or None, got {max_stored_result_chars}"
        )
    if multitask not in ("enqueue", "reject"):
        raise ValueError(f"multitask must be 'enqueue' or 'reject', got {multitask!r}")
    if lease is not None and not lease > 0:
        raise ValueError(f"lease must be positive seconds or None, got {lease!r}")
    if tool_timeout is not None and tool_timeout <= 0:
        raise ValueError(f"tool_timeout must be positive seconds or None, got {tool_timeout}")

    if constrained not in (None, True, False, "first_call"):
        raise ValueError(
            f"constrained must be None, True, False or 'first_call', got {constrained!r}"
        )
    if durability not in ("sync", "async", "exit"):
        raise ValueError(f"durability must be 'sync', 'async' or 'exit', got {durability!r}")
    if interrupt_on and checkpointer is False:
        raise ValueError(
            "interrupt_on needs a checkpointer: the paused thread must be saved to be resumed "
            "with Command(resume=...); checkpointer=False refuses even a parent graph's. "
            "Pass checkpointer=None inside a graph that has one, or a saver."
        )

    chat_model = model if isinstance(model, BaseChatModel) else resolve_model(model)
    hooks = Middleware(middleware)
    tool_list = _as_tools([*tools, *hooks.tools])
    schemas = hooks.state_schemas(state_schema)
    if isinstance(interrupt_on, str):
        if interrupt_on != "annotations":
            raise ValueError(
                f"interrupt_on must be a mapping of tool names or 'annotations', got {interrupt_on!r}"
            )
        interrupt_on = writes_by_annotation(tool_list) or None
    fallback_dialect = get_dialect(fallback)
    if fallback_dialect.native:
        raise ValueError("fallback must be a prompt dialect (hermes, qwen or react), not native")
    initial = initial_dialect(chat_model, dialect, fallback_dialect)

    # create_agent's ToolStrategy/ProviderStrategy, on the model step (else None's)
    strategy = ResponseStrategy(response_format)
    clash = sorted(strategy.names & {t.name for t in tool_list})
    if clash:
        raise ValueError(f"response_format's schema tool(s) {clash} share a tool's name")
    plan = DialectPlan(
        initial=initial,
        fallback=fallback_dialect,
        tools=[*tool_list, *strategy.tools],
        system_prompt=system_prompt,
        unparsed_limit=unparsed_limit,
    )
    if constrained is None:
        constrained = "first_call" if accepts_grammar(chat_model) else False
    if call_format is not None:
        call_format = check_call_format(call_format)
    boundary = ModelBoundary(
        chat_model,
        plan,
        constrained=constrained,
        call_format=call_format,
        call_kwargs=strategy.call_kwargs if strategy.active else None,
    )
    # middleware hooks, each a node, in create_agent's order: before_agent at the start,
    # before_model before each model call, after_model after it, after_agent at the end
    chains = {hook: [hook_name(m, hook) for m in hooks.with_hook(hook)] for hook in HOOKS}
    before_agent, before_model = chains["before_agent"], chains["before_model"]
    after_model, after_agent = chains["after_model"], chains["after_agent"]
    # where the run and each tool round go on, by plain edges (LangGraph takes them
    # without reading the state): a prompt dialect's graph at the adapter (its thread
    # never speaks native again, as a switch goes to another prompt dialect; a thread
    # another graph saved native passes the adapter, which leaves it as it is); a native
    # graph at the model, which sends a thread that switched dialect on to the adapter
    first = before_model[0] if before_model else (MODEL if initial.native else ADAPTER)
    adapter_node = AdapterNode(boundary)
    model_node = ModelNode(
        boundary,
        max_iterations=max_iterations,
        fallback_node=REACT_FALLBACK,
        render_node=ADAPTER if first == MODEL else None,
        wrap_model_call=hooks.wrap_model_call,
        awrap_model_call=hooks.awrap_model_call,
        max_calls_per_reply=max_calls_per_reply,
        strategy=strategy if strategy.active else None,
    )
    fallback_node = ReactFallbackNode(plan)
    structured_node = (
        StructuredResponseNode(boundary, response_format)
        if response_format is not None and not strategy.active
        else None
    )
    problem = unknown_tool(idempotent_tools, [t.name for t in tool_list])
    if problem:
        raise ValueError(f"idempotent_tools names {problem}")
    tools_node = ToolDispatchNode(
        tool_list,
        timeout=tool_timeout,
        max_result_chars=max_result_chars,
        max_stored_result_chars=max_stored_result_chars,
        idempotent_tools=idempotent_tools,
        lease=lease,
        max_repeats=max_repeats,
        name=TOOLS,
        wrappers=hooks.tool_wrappers,
    )
    approve_node = (
        ApproveNode(
            interrupt_on, tools=tool_list, interrupt_mode=interrupt_mode, max_repeats=max_repeats
        )
        if interrupt_on
        else None
    )

    def to_model(state: dict[str, Any]) -> str:
        # a prompt dialect's thread is rendered by the adapter first; native skips it
        return MODEL if plan.current(state).native else ADAPTER

    def enter_model(state: dict[str, Any]) -> str:
        return before_model[0] if before_model else to_model(state)

    def leave(state: dict[str, Any]) -> str:
        return after_agent[0] if after_agent else END

    def to_tools(ai: AIMessage, state: dict[str, Any]) -> str | list[Send]:
        # the reply's calls no answer has yet, each to the tools; none: the model again
        calls, invalid = _open_calls(ai, state["messages"], strategy.names)
        pending = ai.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid})
        return tools_node.dispatch(pending, state["messages"]) or enter_model(state)

    def calls_of(ai: AIMessage, state: dict[str, Any]) -> str | list[Send]:
        if approve_node is not None and approve_node.needs_review(state):
            return APPROVE
        return to_tools(ai, state)

    def route_after_model(state: dict[str, Any]) -> str | list[Send]:
        # as create_agent's model-to-tools edge: the latest reply's calls that no answer
        # (a hook's, a structured answer's) has yet go on; all answered: the model again,
        # unless a structured answer ended the run; no calls: the end
        messages = state["messages"]
        ai = last_ai_message(messages)
        if ai is None:
            return leave(state)
        if not (ai.tool_calls or ai.invalid_tool_calls):
            if (
                structured_node is not None
                and ai is messages[-1]
                and not ai.additional_kwargs.get(STOP_REASON_KEY)
            ):
                return STRUCTURED  # the model's answer, in the shape asked for
            return leave(state)
        if any(_open_calls(ai, messages, strategy.names)):
            return calls_of(ai, state)
        if strategy.answered(state):
            return leave(state)  # the schema tool's call, taken: the structured answer
        return enter_model(state)

    def route_after_approve(state: dict[str, Any]) -> str | list[Send]:
        # run every call not answered by a rejection; all rejected: back to the model
        ai = last_ai_message(state["messages"])
        return enter_model(state) if ai is None else to_tools(ai, state)

    def after_hook(
        then: Callable[[dict[str, Any]], Any], *, ending: bool = False
    ) -> Callable[[dict[str, Any]], Any]:
        # a hook's jump_to goes first (as in create_agent); else the chain goes on
        def route(state: dict[str, Any]) -> Any:
            jump = state.get("jump_to")
            if jump == "end":
                return END if ending else leave(state)
            if jump == "model":
                return enter_model(state)
            if jump == "tools":
                ai = last_ai_message(state["messages"])
                return calls_of(ai, state) if ai is not None else enter_model(state)
            return then(state)

        return route

    builder = StateGraph(
        with_fields(GraphDebugState if keep_model_input else GraphState, schemas, "State"),
        context_schema=context_schema,
        # the graph's own fields (and create_agent's jump_to) are never input
        input_schema=with_fields(
            FncallInput, schemas, "Input", exclude={*get_type_hints(GraphDebugState), "jump_to"}
        ),
        output_schema=with_fields(
            FncallDebugState if keep_model_input else FncallState, schemas, "Output"
        ),
    )
    ends = [after_agent[0]] if after_agent else [END]
    calls = [APPROVE, TOOLS] if interrupt_on else [TOOLS]
    # drawn: the hand-over when native calling fails; in a native graph, a call of a
    # thread that switched to a prompt dialect, to be rendered first
    handovers = [REACT_FALLBACK, ADAPTER] if model_node.render_node else [REACT_FALLBACK]
    # where a model call starts: where an edge chooses (it reads the state anyway), the
    # adapter for a prompt dialect's thread, else the model
    if before_model:
        entries = [before_model[0]]
    else:
        entries = [ADAPTER, MODEL] if initial.native else [ADAPTER]
    if after_model:
        model: Step = Step(MODEL, model_node.invoke, model_node.ainvoke)
    else:
        # the model's reply says where the run goes: its calls (to approval or the
        # tools), the structured answer, the end, or the model again (its calls all
        # answered in the step: a schema tool's, a wrap_model_call's answers)
        model = RoutedStep(MODEL, model_node.invoke, model_node.ainvoke, route_after_model)
        handovers += [*calls, *ends, *([STRUCTURED] if structured_node is not None else [])]
        if strategy.names or hooks.wrap_model_call is not None:
            handovers += entries  # as create_agent draws it
    builder.add_node(ADAPTER, Step(ADAPTER, adapter_node.invoke, adapter_node.ainvoke))
    builder.add_node(MODEL, model, destinations=tuple(dict.fromkeys(handovers)))
    builder.add_node(
        REACT_FALLBACK, Step(REACT_FALLBACK, fallback_node.invoke, fallback_node.ainvoke)
    )
    builder.add_node(TOOLS, Step(TOOLS, tools_node.invoke, tools_node.ainvoke))
    builder.add_edge(ADAPTER, MODEL)
    builder.add_edge(REACT_FALLBACK, ADAPTER)
    everywhere = [*entries, ADAPTER, MODEL, *calls, *ends]
    for hook, chain in chains.items():
        for i, node in enumerate(chain):
            middleware_of = next(m for m in hooks.with_hook(hook) if hook_name(m, hook) == node)
            hook_node = HookNode(middleware_of, hook)
            builder.add_node(node, Step(node, hook_node.invoke, hook_node.ainvoke))
            nxt = chain[i + 1] if i + 1 < len(chain) else None
            if hook == "before_agent":
                then: Callable[[dict[str, Any]], Any] = (
                    (lambda s, n=nxt: n) if nxt else enter_model  # type: ignore[misc]
                )
            elif hook == "before_model":
                then = (lambda s, n=nxt: n) if nxt else to_model  # type: ignore[misc]
            elif hook == "after_model":
                then = (lambda s, n=nxt: n) if nxt else route_after_model  # type: ignore[misc]
            else:
                then = lambda s, n=nxt: n or END  # type: ignore[misc]  # noqa: E731
            targets = [*everywhere, *(chain[i + 1 : i + 2] or []), STRUCTURED, END]
            if structured_node is None:
                targets.remove(STRUCTURED)
            route = after_hook(then, ending=hook == "after_agent")
            builder.add_conditional_edges(node, Route(route), list(dict.fromkeys(targets)))
    builder.add_edge(START, before_agent[0] if before_agent else first)
    if structured_node is not None:
        builder.add_node(
            STRUCTURED, Step(STRUCTURED, structured_node.invoke, structured_node.ainvoke)
        )
        builder.add_conditional_edges(STRUCTURED, Route(leave), ends)
    if approve_node is not None:
        builder.add_node(APPROVE, Step(APPROVE, approve_node.invoke, approve_node.ainvoke))
        builder.add_conditional_edges(APPROVE, Route(route_after_approve), [TOOLS, *entries])
    if after_model:
        builder.add_edge(MODEL, after_model[0])
    if strategy.names:
        # a reply's schema call gave the answer: the run ends once its tools ran
        def after_tools(state: dict[str, Any]) -> str:
            return leave(state) if strategy.answered(state) else first

        builder.add_conditional_edges(TOOLS, Route(after_tools), [first, *ends])
    else:
        builder.add_edge(TOOLS, first)

    graph = builder.compile(checkpointer=checkpointer, store=store, name=name, debug=debug)
    run_config: dict[str, Any] = {
        "recursion_limit": max_iterations * _STEPS_PER_ITERATION + 12,
        "max_concurrency": max_concurrency,
    }
    if checkpointer is not None and checkpointer is not False:
        # the graph-level default LangGraph reads when invoke() gets no durability
        run_config["configurable"] = {
            CONFIG_KEY_DURABILITY: durability,
            MULTITASK_KEY: multitask,
            LEASE_KEY: lease,
        }
    return FncallGraph.of(
        graph.with_config(**run_config),
        input_keys=frozenset(get_type_hints(builder.input_schema)),
        pauses=approve_node is not None,
    )
