"""``create_fncall_graph``: wire the adapter, model, tools, approve and react_fallback nodes.

The options are checked by :class:`~fncall_graph.guarantees.GraphOptions` (the rules the
middleware apply too), the edges that read the state are :mod:`.routes`'; this module
builds the nodes and draws the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Checkpointer

if TYPE_CHECKING:
    # langchain.agents loads create_agent's whole module: imported where middleware
    # or a response_format is in use, not when the graph's face is imported
    from langchain.agents.middleware import AgentMiddleware
    from langchain.agents.middleware.human_in_the_loop import InterruptOnConfig

__all__ = ["APPROVE", "DEFAULT_MAX_ITERATIONS", "MODEL", "TOOLS", "create_fncall_graph"]


from fncall_graph._compat import CONFIG_KEY_DURABILITY
from fncall_graph.adapters import Dialect
from fncall_graph.adapters.checkpoint.claims import (
    DEFAULT_LEASE,
    LEASE_KEY,
    MULTITASK_KEY,
    Multitask,
)
from fncall_graph.adapters.formats.registry import DialectName, PromptDialectName
from fncall_graph.adapters.models import accepts_grammar, initial_dialect, resolve_model
from fncall_graph.guarantees import (
    DEFAULT_MAX_REPEATS,
    DialectPlan,
    GraphOptions,
    InterruptMode,
    ModelBoundary,
    unknown_tool,
)
from fncall_graph.nodes.adapter import AdapterNode
from fncall_graph.nodes.approve import ApproveNode
from fncall_graph.nodes.hooks import HOOKS, HookNode, hook_name
from fncall_graph.nodes.model import DEFAULT_MAX_CALLS_PER_REPLY, ModelNode
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
from .routes import (
    ADAPTER,
    APPROVE,
    MODEL,
    REACT_FALLBACK,
    STRUCTURED,
    TOOLS,
    Route,
    RoutedStep,
    Routes,
    Step,
)
from .state import (
    FncallDebugState,
    FncallInput,
    FncallState,
    GraphDebugState,
    GraphState,
    with_fields,
)

#: Model calls allowed in one user turn by default (``max_iterations``), in every path
#: (the CLI's too): enough for a few dependent calls and an answer; a model that repeats
#: one call is stopped sooner by ``max_repeats``.
DEFAULT_MAX_ITERATIONS = 10

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


def _builder(debug_state: bool, schemas: list[type], context_schema: type | None) -> StateGraph:
    """The graph's builder: its state, input and output with the extra fields."""
    return StateGraph(
        with_fields(GraphDebugState if debug_state else GraphState, schemas, "State"),
        context_schema=context_schema,
        # the graph's own fields (and create_agent's jump_to) are never input
        input_schema=with_fields(
            FncallInput, schemas, "Input", exclude={*get_type_hints(GraphDebugState), "jump_to"}
        ),
        output_schema=with_fields(
            FncallDebugState if debug_state else FncallState, schemas, "Output"
        ),
    )


def _add_hooks(
    builder: StateGraph,
    hooks: Middleware,
    chains: dict[str, list[str]],
    routes: Routes,
    everywhere: list[str],
) -> None:
    """A node per middleware hook, each chain in create_agent's order, and the edge after
    each (its ``jump_to`` may go to the model, the tools or the end)."""
    for hook, chain in chains.items():
        for i, node in enumerate(chain):
            middleware_of = next(m for m in hooks.with_hook(hook) if hook_name(m, hook) == node)
            builder.add_node(node, Step.of(node, HookNode(middleware_of, hook)))
            following = chain[i + 1] if i + 1 < len(chain) else None
            targets = [*everywhere, *chain[i + 1 : i + 2], STRUCTURED, END]
            if not routes.structured:
                targets.remove(STRUCTURED)
            route = Route(routes.after_hook(hook, following))
            builder.add_conditional_edges(node, route, list(dict.fromkeys(targets)))


def _run_config(options: GraphOptions) -> dict[str, Any]:
    """The config every run of the graph starts from (``invoke``'s own goes over it)."""
    run_config: dict[str, Any] = {
        "recursion_limit": options.max_iterations * _STEPS_PER_ITERATION + 12,
        "max_concurrency": options.max_concurrency,
    }
    if options.saves:
        # the graph-level default LangGraph reads when invoke() gets no durability
        run_config["configurable"] = {
            CONFIG_KEY_DURABILITY: options.durability,
            MULTITASK_KEY: options.multitask,
            LEASE_KEY: options.lease,
        }
    return run_config


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
            ``"per_call"``: one interrupt per gated call, all pending at once, shaped
            like LangChain's ``HumanInTheLoopMiddleware(interrupt_mode="per_call")``
            (``{"type": "tool_approval", "tool_call_id", "name", "args", "description"}``
            and a ``response_schema`` for one decision), answered by id with one
            decision each, together or some at a time
            (``Command(resume={interrupt.id: {"type": "approve"}, ...})``); the reply's
            calls run once every gated one is decided.
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

    Raises:
        ValueError: a value an option's rule refuses (each argument is checked by its one
            rule, :func:`~fncall_graph.guarantees.check_option`, the middleware's too),
            naming the argument; ``interrupt_on`` with ``checkpointer=False``; two tools
            of one name; an ``idempotent_tools`` or ``interrupt_on`` name that is no tool.
        TypeError: a tool that is neither a ``BaseTool`` nor a function,
            ``idempotent_tools`` given as a string, ``interrupt_on`` that is no mapping.

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
    options = GraphOptions(
        max_iterations=max_iterations,
        max_repeats=max_repeats,
        max_calls_per_reply=max_calls_per_reply,
        max_concurrency=max_concurrency,
        max_result_chars=max_result_chars,
        max_stored_result_chars=max_stored_result_chars,
        multitask=multitask,
        lease=lease,
        tool_timeout=tool_timeout,
        constrained=constrained,
        durability=durability,
        interrupt_mode=interrupt_mode,
        interrupt_on=interrupt_on,
        idempotent_tools=idempotent_tools,
        fallback=fallback,
        call_format=call_format,
        checkpointer=checkpointer,
    )
    chat_model = model if isinstance(model, BaseChatModel) else resolve_model(model)
    hooks = Middleware(middleware)
    tool_list = _as_tools([*tools, *hooks.tools])
    gates = options.interrupt_on
    if gates == "annotations":
        gates = writes_by_annotation(tool_list) or None
    problem = unknown_tool(options.idempotent_tools, [t.name for t in tool_list])
    if problem:
        raise ValueError(f"idempotent_tools names {problem}")
    # create_agent's ToolStrategy/ProviderStrategy, on the model step (else None's)
    strategy = ResponseStrategy(response_format)
    clash = sorted(strategy.names & {t.name for t in tool_list})
    if clash:
        raise ValueError(f"response_format's schema tool(s) {clash} share a tool's name")
    initial = initial_dialect(chat_model, dialect, options.fallback)
    plan = DialectPlan(
        initial=initial,
        fallback=options.fallback,
        tools=[*tool_list, *strategy.tools],
        system_prompt=system_prompt,
        unparsed_limit=unparsed_limit,
    )
    grammar = options.constrained
    if grammar is None:
        grammar = "first_call" if accepts_grammar(chat_model) else False
    boundary = ModelBoundary(
        chat_model,
        plan,
        constrained=grammar,
        call_format=options.call_format,
        call_kwargs=strategy.call_kwargs if strategy.active else None,
    )
    # middleware hooks, each a node, in create_agent's order: before_agent at the start,
    # before_model before each model call, after_model after it, after_agent at the end
    chains = {hook: [hook_name(m, hook) for m in hooks.with_hook(hook)] for hook in HOOKS}
    before_agent, before_model = chains["before_agent"], chains["before_model"]
    after_model, after_agent = chains["after_model"], chains["after_agent"]
    tools_node = ToolDispatchNode(
        tool_list,
        timeout=options.tool_timeout,
        max_result_chars=options.max_result_chars,
        max_stored_result_chars=options.max_stored_result_chars,
        idempotent_tools=options.idempotent_tools,
        lease=options.lease,
        max_repeats=options.max_repeats,
        name=TOOLS,
        wrappers=hooks.tool_wrappers,
    )
    approve_node = None
    if gates:
        approve_node = ApproveNode(
            gates,
            tools=tool_list,
            interrupt_mode=options.interrupt_mode,
            max_repeats=options.max_repeats,
        )
    structured_node = None
    if response_format is not None and not strategy.active:
        structured_node = StructuredResponseNode(boundary, response_format)
    routes = Routes(
        plan=plan,
        strategy=strategy,
        tools=tools_node,
        approve=approve_node,
        structured=structured_node is not None,
        before_model=before_model[0] if before_model else None,
        after_agent=after_agent[0] if after_agent else None,
        native=initial.native,
    )
    first, entries, ends = routes.first, routes.entries, routes.ends
    model_node = ModelNode(
        boundary,
        max_iterations=options.max_iterations,
        fallback_node=REACT_FALLBACK,
        render_node=ADAPTER if first == MODEL else None,
        wrap_model_call=hooks.wrap_model_call,
        awrap_model_call=hooks.awrap_model_call,
        max_calls_per_reply=options.max_calls_per_reply,
        strategy=strategy if strategy.active else None,
    )

    builder = _builder(keep_model_input, hooks.state_schemas(state_schema), context_schema)
    calls = [APPROVE, TOOLS] if approve_node is not None else [TOOLS]
    # drawn: the hand-over when native calling fails; in a native graph, a call of a
    # thread that switched to a prompt dialect, to be rendered first
    handovers = [REACT_FALLBACK, ADAPTER] if model_node.render_node else [REACT_FALLBACK]
    if after_model:
        model_step = Step.of(MODEL, model_node)
    else:
        # the model's reply says where the run goes: its calls (to approval or the
        # tools), the structured answer, the end, or the model again (its calls all
        # answered in the step: a schema tool's, a wrap_model_call's answers)
        model_step = RoutedStep.of(MODEL, model_node, route=routes.route_after_model)
        handovers += [*calls, *ends, *([STRUCTURED] if structured_node is not None else [])]
        if strategy.names or hooks.wrap_model_call is not None:
            handovers += entries  # as create_agent draws it
    builder.add_node(ADAPTER, Step.of(ADAPTER, AdapterNode(boundary)))
    builder.add_node(MODEL, model_step, destinations=tuple(dict.fromkeys(handovers)))
    builder.add_node(REACT_FALLBACK, Step.of(REACT_FALLBACK, ReactFallbackNode(plan)))
    builder.add_node(TOOLS, Step.of(TOOLS, tools_node))
    builder.add_edge(ADAPTER, MODEL)
    builder.add_edge(REACT_FALLBACK, ADAPTER)
    _add_hooks(builder, hooks, chains, routes, [*entries, ADAPTER, MODEL, *calls, *ends])
    builder.add_edge(START, before_agent[0] if before_agent else first)
    if structured_node is not None:
        builder.add_node(STRUCTURED, Step.of(STRUCTURED, structured_node))
        builder.add_conditional_edges(STRUCTURED, Route(routes.leave), ends)
    if approve_node is not None:
        builder.add_node(APPROVE, Step.of(APPROVE, approve_node))
        builder.add_conditional_edges(APPROVE, Route(routes.route_after_approve), [TOOLS, *entries])
    if after_model:
        builder.add_edge(MODEL, after_model[0])
    if strategy.names:
        builder.add_conditional_edges(TOOLS, Route(routes.after_tools), [first, *ends])
    else:
        builder.add_edge(TOOLS, first)

    graph = builder.compile(checkpointer=checkpointer, store=store, name=name, debug=debug)
    return FncallGraph.of(
        graph.with_config(**_run_config(options)),
        input_keys=frozenset(get_type_hints(builder.input_schema)),
        pauses=approve_node is not None,
    )
